# runtime: chip threads, link mailboxes, forwarding, watchdog
libftmesh_la_SOURCES += src/runtime/mailbox.c src/runtime/bell.c src/runtime/chip.c src/runtime/expo.c src/runtime/barrier.c src/runtime/stop.c src/runtime/runtime.c src/runtime/inject.c src/runtime/script.c src/runtime/rt_internal.h
ftmeshinclude_HEADERS += include/ftmesh/runtime.h

check_PROGRAMS += tests/test_runtime
TESTS += tests/test_runtime
THREADED_TESTS += tests/test_runtime
tests_test_runtime_SOURCES = tests/test_runtime.c
tests_test_runtime_CFLAGS = $(TEST_CFLAGS)
tests_test_runtime_LDADD = $(TEST_LIBS)

# the doorbell protocol alone (white box: compiled with bell.c)
check_PROGRAMS += tests/test_bell
TESTS += tests/test_bell
THREADED_TESTS += tests/test_bell
tests_test_bell_SOURCES = tests/test_bell.c src/runtime/bell.c
tests_test_bell_CFLAGS = $(TEST_CFLAGS)
tests_test_bell_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
