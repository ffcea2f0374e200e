# svg: pictures of meshes, rings and link loads
libftmesh_la_SOURCES += src/svg/svg.c
ftmeshinclude_HEADERS += include/ftmesh/svg.h
check_PROGRAMS += tests/test_svg
TESTS += tests/test_svg
tests_test_svg_SOURCES = tests/test_svg.c
tests_test_svg_CFLAGS = $(TEST_CFLAGS)
tests_test_svg_LDADD = $(TEST_LIBS)
