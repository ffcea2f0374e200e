# collective: the allreduce algorithms that build schedules, their
# registry, --algo auto and the scenario sweep (above the cost model), and
# the run-and-verify harness (above the runtime)
libftmesh_la_SOURCES += src/collective/rows.c src/collective/rows.h src/collective/ring.c src/collective/registry.c src/collective/run.c src/collective/run_script.c src/collective/run_int.h \
	src/collective/tree.c src/collective/trees.c src/collective/trees_pick.c src/collective/trees_balance.c src/collective/trees_just.c src/collective/trees_chunks.c \
	src/collective/trees_int.h src/collective/keep.c src/collective/keep.h src/collective/pieces.c src/collective/pieces.h src/collective/auto.c src/collective/sweep.c src/collective/throughput.c \
	src/collective/scenarios.c
ftmeshinclude_HEADERS += include/ftmesh/collective.h include/ftmesh/sweep.h include/ftmesh/throughput.h
libftmesh_la_SOURCES += include/ftmesh/test_hooks.h

# the 2-D allreduce family
libftmesh_la_SOURCES += src/collective/allreduce_2d.c \
	src/collective/allreduce_2d_share.c src/collective/allreduce_2d_col.c \
	src/collective/allreduce_2d_conc.c src/collective/allreduce_2d_fallback.c \
	src/collective/allreduce_2d_lines.c src/collective/allreduce_2d_line_steps.c \
	src/collective/allreduce_2d_segs.c src/collective/allreduce_2d_pick.c
noinst_HEADERS += src/collective/allreduce_2d_int.h src/collective/allreduce_2d_lines.h

# make bench: the trees schedule's steps against their lower bound
EXTRA_PROGRAMS += bench/trees_steps
bench_trees_steps_SOURCES = bench/trees_steps.c
bench_trees_steps_LDADD = libftmesh.la $(PTHREAD_LIBS) -lm

check_PROGRAMS += tests/test_allreduce
# tests/test_allreduce: in TESTS from Makefile.am (the longest first)
THREADED_TESTS += tests/test_allreduce
tests_test_allreduce_SOURCES = tests/test_allreduce.c
tests_test_allreduce_CFLAGS = $(TEST_CFLAGS)
tests_test_allreduce_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_2d # in TESTS from Makefile.am (the longest first)
THREADED_TESTS += tests/test_2d
tests_test_2d_SOURCES = tests/test_2d.c tests/test_2d_util.h
tests_test_2d_CFLAGS = $(TEST_CFLAGS)
tests_test_2d_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_2d_model
TESTS += tests/test_2d_model
tests_test_2d_model_SOURCES = tests/test_2d_model.c tests/test_2d_util.h
tests_test_2d_model_CFLAGS = $(TEST_CFLAGS)
tests_test_2d_model_LDADD = $(TEST_LIBS)

# The pod-scale bounds and graceful degradation (model only).
check_PROGRAMS += tests/test_pod
TESTS += tests/test_pod
tests_test_pod_SOURCES = tests/test_pod.c tests/test_2d_util.h
tests_test_pod_CFLAGS = $(TEST_CFLAGS)
tests_test_pod_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_trees
TESTS += tests/test_trees
THREADED_TESTS += tests/test_trees
tests_test_trees_SOURCES = tests/test_trees.c
tests_test_trees_CFLAGS = $(TEST_CFLAGS)
tests_test_trees_LDADD = $(TEST_LIBS)
