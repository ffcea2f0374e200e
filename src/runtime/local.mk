# runtime: chip threads, link mailboxes, forwarding, watchdog
libftmesh_la_SOURCES += src/runtime/mailbox.c src/runtime/chip.c src/runtime/runtime.c src/runtime/inject.c src/runtime/script.c src/runtime/rt_internal.h
ftmeshinclude_HEADERS += include/ftmesh/runtime.h

check_PROGRAMS += tests/test_runtime
TESTS += tests/test_runtime
THREADED_TESTS += tests/test_runtime
tests_test_runtime_SOURCES = tests/test_runtime.c
tests_test_runtime_CFLAGS = $(TEST_CFLAGS)
tests_test_runtime_LDADD = $(TEST_LIBS)
