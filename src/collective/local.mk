# collective: schedules and the allreduce algorithms that build them
libftmesh_la_SOURCES += src/collective/sched.c src/collective/ring.c src/collective/registry.c src/collective/run.c src/collective/tree.c
libftmesh_la_SOURCES += src/collective/allreduce_2d_fallback.c
ftmeshinclude_HEADERS += include/ftmesh/sched.h include/ftmesh/collective.h

check_PROGRAMS += tests/test_allreduce
TESTS += tests/test_allreduce
THREADED_TESTS += tests/test_allreduce
tests_test_allreduce_SOURCES = tests/test_allreduce.c
tests_test_allreduce_CFLAGS = $(TEST_CFLAGS)
tests_test_allreduce_LDADD = $(TEST_LIBS)
