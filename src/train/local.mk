# train module: data-parallel training on the mesh (train.h), the train
# subcommand, tests and the CLI end-to-end script
libftmesh_la_SOURCES += src/train/train.c src/train/build.c src/train/check.c \
	src/train/train_int.h
ftmeshinclude_HEADERS += include/ftmesh/train.h

check_PROGRAMS += tests/test_train
TESTS += tests/test_train tests/train_cli.sh
THREADED_TESTS += tests/test_train
tests_test_train_SOURCES = tests/test_train.c
tests_test_train_CFLAGS = $(TEST_CFLAGS)
tests_test_train_LDADD = $(TEST_LIBS)
EXTRA_DIST += tests/train_cli.sh bench/train.sh
