# viz module: ASCII pictures of the mesh and its rings
libftmesh_la_SOURCES += src/viz/ring_ascii.c
ftmeshinclude_HEADERS += include/ftmesh/viz.h

check_PROGRAMS += tests/test_viz
TESTS += tests/test_viz
tests_test_viz_SOURCES = tests/test_viz.c
tests_test_viz_CFLAGS = $(TEST_CFLAGS)
tests_test_viz_LDADD = $(TEST_LIBS)
