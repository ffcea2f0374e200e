# router: rings and paths around holes, validation, quality, and the 2-D
# allreduce's band plan (plan2d.h: row bands and their rings)
libftmesh_la_SOURCES += src/router/router.c src/router/ring_build.c \
	src/router/ring_improve.c src/router/path.c src/router/ring_check.c \
	src/router/plan2d.c
noinst_HEADERS += src/router/router_int.h
ftmeshinclude_HEADERS += include/ftmesh/router.h include/ftmesh/plan2d.h

check_PROGRAMS += tests/test_router
TESTS += tests/test_router
tests_test_router_SOURCES = tests/test_router.c
tests_test_router_CFLAGS = $(TEST_CFLAGS)
tests_test_router_LDADD = $(TEST_LIBS)
