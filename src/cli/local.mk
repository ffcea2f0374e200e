# cli: the ftmesh command (the only code that prints or exits)
ftmesh_SOURCES += src/cli/main.c src/cli/cli.h src/cli/opts.c src/cli/output.c \
	src/cli/json.c src/cli/cmd_rings.c src/cli/cmd_allreduce.c src/cli/cmd_sweep.c \
	src/cli/cmd_train.c src/cli/train_report.c src/cli/train_report.h

# End-to-end runs of the command (exit codes, errors, JSON keys).
TESTS += tests/cli.sh
EXTRA_DIST += tests/cli.sh
