# core: errors, mesh topology and faults, counter-based random numbers,
# per-thread memos (internal), files written whole (file.h)
libftmesh_la_SOURCES += src/core/error.c src/core/mesh.c src/core/faults.c src/core/faults_random.c \
	src/core/faults_merge.c src/core/faults_check.c src/core/tls_memo.c src/core/file.c
noinst_HEADERS += src/core/util.h src/core/tls_memo.h src/core/heap.h src/core/faults_int.h
ftmeshinclude_HEADERS += include/ftmesh/export.h include/ftmesh/error.h include/ftmesh/mesh.h include/ftmesh/rng.h \
	include/ftmesh/faults.h include/ftmesh/file.h

check_PROGRAMS += tests/test_mesh
TESTS += tests/test_mesh
tests_test_mesh_SOURCES = tests/test_mesh.c
tests_test_mesh_CFLAGS = $(TEST_CFLAGS)
tests_test_mesh_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_faults
TESTS += tests/test_faults
tests_test_faults_SOURCES = tests/test_faults.c
tests_test_faults_CFLAGS = $(TEST_CFLAGS)
tests_test_faults_LDADD = $(TEST_LIBS)
