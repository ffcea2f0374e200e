# doc: the man page and the README's pictures
man_MANS = doc/ftmesh.1
PICTURES = doc/ring-8x8-hole.svg doc/ring-8x8-hole.txt doc/ring-8x8-torus-faults.svg \
	doc/2d-torus-dead-host.svg doc/2d-torus-dead-host.txt \
	doc/bidir-6x6-hole.svg doc/bidir-6x6-hole.txt doc/tree-6x6-hole.svg doc/tree-6x6-hole.txt \
	doc/2d-concurrent-8x8-torus-hole.svg doc/2d-concurrent-8x8-torus-hole.txt \
	doc/allreduce-2d-heat.svg doc/train-chip-dies.svg
EXTRA_DIST += doc/ftmesh.1 doc/pictures.sh doc/repair.md doc/trees.md doc/allreduce-2d.md doc/commands.md doc/design.md \
	doc/results.md doc/bound.md doc/results_tables.py doc/training.md doc/mpi.md bench/README.md $(PICTURES)

# The man page names the same options as every command's --help.
TESTS += tests/man.sh
EXTRA_DIST += tests/man.sh

# Regenerates the README's pictures in the source tree from the program.
pictures: ftmesh$(EXEEXT)
	$(srcdir)/doc/pictures.sh $(abs_top_builddir)/ftmesh$(EXEEXT) $(srcdir)/doc
.PHONY: pictures
