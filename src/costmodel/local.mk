# costmodel module: modeled time (replay of schedules), --algo auto, the
# paper's scenario sweep. The 2-D allreduce (src/collective/allreduce_2d*.c)
# is listed here too: it was built with the cost model (one library either
# way).
libftmesh_la_SOURCES += src/costmodel/costmodel.c src/costmodel/auto.c src/costmodel/sweep.c
ftmeshinclude_HEADERS += include/ftmesh/costmodel.h include/ftmesh/sweep.h
# training throughput at pod scale (ftmesh sweep --throughput)
libftmesh_la_SOURCES += src/costmodel/throughput.c
ftmeshinclude_HEADERS += include/ftmesh/throughput.h

check_PROGRAMS += tests/test_costmodel
TESTS += tests/test_costmodel
tests_test_costmodel_SOURCES = tests/test_costmodel.c
tests_test_costmodel_CFLAGS = $(TEST_CFLAGS)
tests_test_costmodel_LDADD = $(TEST_LIBS)

# 2-D allreduce (owned with the cost model; see the note above)
libftmesh_la_SOURCES += src/collective/plan2d.c src/collective/allreduce_2d.c \
	src/collective/allreduce_2d_share.c src/collective/allreduce_2d_col.c \
	src/collective/allreduce_2d_conc.c \
	src/collective/twod_share.h
ftmeshinclude_HEADERS += include/ftmesh/plan2d.h

check_PROGRAMS += tests/test_2d
TESTS += tests/test_2d
THREADED_TESTS += tests/test_2d
tests_test_2d_SOURCES = tests/test_2d.c
tests_test_2d_CFLAGS = $(TEST_CFLAGS)
tests_test_2d_LDADD = $(TEST_LIBS)
