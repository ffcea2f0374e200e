# train module: data-parallel training on the mesh (train.h), the train
# subcommand, tests and the CLI end-to-end script
libftmesh_la_SOURCES += src/train/events.c
libftmesh_la_SOURCES += src/train/train.c src/train/attempt.c src/train/rejoin.c src/train/build.c src/train/check.c \
	src/train/checkpoint.c src/train/ckpt_train.c src/train/train_int.h \
	src/train/agree.c src/train/trainer.h
ftmeshinclude_HEADERS += include/ftmesh/train.h include/ftmesh/checkpoint.h

check_PROGRAMS += tests/test_train
TESTS += tests/test_train tests/train_cli.sh
THREADED_TESTS += tests/test_train
tests_test_train_SOURCES = tests/test_train.c
tests_test_train_CFLAGS = $(TEST_CFLAGS)
tests_test_train_LDADD = $(TEST_LIBS)
EXTRA_DIST += tests/train_cli.sh bench/train.sh

check_PROGRAMS += tests/test_checkpoint
TESTS += tests/test_checkpoint
tests_test_checkpoint_SOURCES = tests/test_checkpoint.c
tests_test_checkpoint_CFLAGS = $(TEST_CFLAGS)
tests_test_checkpoint_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_recovery
TESTS += tests/test_recovery
THREADED_TESTS += tests/test_recovery
tests_test_recovery_SOURCES = tests/test_recovery.c
tests_test_recovery_CFLAGS = $(TEST_CFLAGS)
tests_test_recovery_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_repair
TESTS += tests/test_repair
THREADED_TESTS += tests/test_repair
tests_test_repair_SOURCES = tests/test_repair.c
tests_test_repair_CFLAGS = $(TEST_CFLAGS)
tests_test_repair_LDADD = $(TEST_LIBS)
