# nn module: layers (nn.h), models (model.h), optimizers (optim.h), data (data.h), tests
libftmesh_la_SOURCES += src/nn/gemm.c src/nn/conv.c src/nn/conv_direct.c \
	src/nn/conv_direct.h src/nn/conv_direct_simd.c src/nn/nn_clones.h src/nn/layers.c \
	src/nn/transformer.c
ftmeshinclude_HEADERS += include/ftmesh/nn.h

check_PROGRAMS += tests/test_nn
TESTS += tests/test_nn
tests_test_nn_SOURCES = tests/test_nn.c tests/test_nn_grad.c tests/test_nn_util.c tests/test_nn_util.h
tests_test_nn_CFLAGS = $(TEST_CFLAGS)
tests_test_nn_LDADD = $(TEST_LIBS)

# model replicas, optimizers (optim.h), data (data.h); the models
# themselves are in models/local.mk
libftmesh_la_SOURCES += src/nn/model.c src/nn/model_impl.h src/nn/optim.c \
	src/nn/data.c src/nn/xsum.c
ftmeshinclude_HEADERS += include/ftmesh/model.h include/ftmesh/optim.h \
	include/ftmesh/xsum.h include/ftmesh/data.h

# benchmarks and drivers, built only by `make bench` (or by name)
EXTRA_PROGRAMS += bench/nn_train bench/sgemm_bench bench/train_step
bench_nn_train_SOURCES = bench/nn_train.c
bench_nn_train_LDADD = libftmesh.la $(OPENBLAS_LIBS) $(PTHREAD_LIBS) -lm

check_PROGRAMS += tests/test_model
TESTS += tests/test_model
tests_test_model_SOURCES = tests/test_model.c tests/test_model_data.c \
	tests/test_nn_util.c tests/test_nn_util.h
tests_test_model_CFLAGS = $(TEST_CFLAGS)
tests_test_model_LDADD = $(TEST_LIBS)
bench_sgemm_bench_SOURCES = bench/sgemm_bench.c
bench_sgemm_bench_LDADD = libftmesh.la $(OPENBLAS_LIBS) $(PTHREAD_LIBS) -lm
bench_train_step_SOURCES = bench/train_step.c
bench_train_step_LDADD = libftmesh.la $(OPENBLAS_LIBS) $(PTHREAD_LIBS) -lm

check_PROGRAMS += tests/test_xsum
TESTS += tests/test_xsum
tests_test_xsum_SOURCES = tests/test_xsum.c
tests_test_xsum_CFLAGS = $(TEST_CFLAGS)
tests_test_xsum_LDADD = $(TEST_LIBS)
