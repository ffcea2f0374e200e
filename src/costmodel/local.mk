# costmodel: modeled time of a schedule (a deterministic replay)
libftmesh_la_SOURCES += src/costmodel/costmodel.c src/costmodel/bound.c src/costmodel/cost_lib.h
ftmeshinclude_HEADERS += include/ftmesh/costmodel.h

check_PROGRAMS += tests/test_costmodel
TESTS += tests/test_costmodel
tests_test_costmodel_SOURCES = tests/test_costmodel.c
tests_test_costmodel_CFLAGS = $(TEST_CFLAGS)
tests_test_costmodel_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_build_modes # in TESTS from Makefile.am (the longest first)
tests_test_build_modes_SOURCES = tests/test_build_modes.c
tests_test_build_modes_CFLAGS = $(TEST_CFLAGS)
tests_test_build_modes_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_bound
TESTS += tests/test_bound
tests_test_bound_SOURCES = tests/test_bound.c
tests_test_bound_CFLAGS = $(TEST_CFLAGS)
tests_test_bound_LDADD = $(TEST_LIBS)
