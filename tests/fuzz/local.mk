# Fuzz targets (libFuzzer, clang only): `make fuzz FUZZ_SECONDS=60` builds
# them from the sources and runs each for that long (tests/fuzz/run.sh).
FUZZ_SECONDS = 60
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/fuzz_faults.c tests/fuzz/fuzz_checkpoint.c \
	tests/fuzz/ckpt_seed.c tests/fuzz/seeds

fuzz:
	$(srcdir)/tests/fuzz/run.sh $(FUZZ_SECONDS)
.PHONY: fuzz
