# nn module: layers (nn.h), models and optimizers and data (model.h), tests
libftmesh_la_SOURCES += src/nn/gemm.c src/nn/conv.c src/nn/layers.c \
	src/nn/transformer.c
ftmeshinclude_HEADERS += include/ftmesh/nn.h

check_PROGRAMS += tests/test_nn
TESTS += tests/test_nn
tests_test_nn_SOURCES = tests/test_nn.c tests/test_nn_grad.c tests/test_nn_util.c tests/test_nn_util.h
tests_test_nn_CFLAGS = $(TEST_CFLAGS)
tests_test_nn_LDADD = $(TEST_LIBS)
