# costmodel: modeled time of a schedule (a deterministic replay)
libftmesh_la_SOURCES += src/costmodel/costmodel.c
ftmeshinclude_HEADERS += include/ftmesh/costmodel.h

check_PROGRAMS += tests/test_costmodel
TESTS += tests/test_costmodel
tests_test_costmodel_SOURCES = tests/test_costmodel.c
tests_test_costmodel_CFLAGS = $(TEST_CFLAGS)
tests_test_costmodel_LDADD = $(TEST_LIBS)
