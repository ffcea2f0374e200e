# trace: the event recorder the runtime and trainer write to (below the
# runtime; src/timeline turns its records into timelines)
libftmesh_la_SOURCES += src/trace/trace.c src/trace/trace_int.h
ftmeshinclude_HEADERS += include/ftmesh/trace.h

check_PROGRAMS += tests/test_trace
TESTS += tests/test_trace
THREADED_TESTS += tests/test_trace
tests_test_trace_SOURCES = tests/test_trace.c
tests_test_trace_CFLAGS = $(TEST_CFLAGS)
tests_test_trace_LDADD = $(TEST_LIBS)
