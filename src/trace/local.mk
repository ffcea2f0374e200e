# trace: the event recorder the runtime and trainer write to (below the
# runtime), and timelines on the wall or modeled clock (above the cost model)
libftmesh_la_SOURCES += src/trace/trace.c src/trace/timeline.c
ftmeshinclude_HEADERS += include/ftmesh/trace.h include/ftmesh/timeline.h

check_PROGRAMS += tests/test_trace
TESTS += tests/test_trace
THREADED_TESTS += tests/test_trace
tests_test_trace_SOURCES = tests/test_trace.c
tests_test_trace_CFLAGS = $(TEST_CFLAGS)
tests_test_trace_LDADD = $(TEST_LIBS)
