# mpi: runs spread over MPI processes (./configure --with-mpi). The tests
# run the command under mpirun with 2 and 4 ranks; without MPI they skip.
EXTRA_DIST += src/mpi/mpi.c src/mpi/progress.c src/mpi/state.c src/mpi/watch.c src/mpi/mpi_int.h \
	include/ftmesh/mpi.h
if HAVE_MPI
libftmesh_la_SOURCES += src/mpi/mpi.c src/mpi/progress.c src/mpi/state.c src/mpi/watch.c \
	src/mpi/mpi_int.h
ftmeshinclude_HEADERS += include/ftmesh/mpi.h
libftmesh_la_LIBADD += $(MPI_LIBS)
ftmesh_LDADD += $(MPI_LIBS)
# run by tests/mpi_hang.sh under mpirun
check_PROGRAMS += tests/mpi_hang
tests_mpi_hang_SOURCES = tests/mpi_hang.c
tests_mpi_hang_CFLAGS = $(AM_CFLAGS)
tests_mpi_hang_LDADD = libftmesh.la $(MPI_LIBS) $(PTHREAD_LIBS)
endif
TESTS += tests/mpi_allreduce.sh tests/mpi_train.sh tests/mpi_hang.sh
EXTRA_DIST += tests/mpi_allreduce.sh tests/mpi_train.sh tests/mpi_lib.sh tests/mpi_hang.sh \
	tests/mpi_hang.c
AM_TESTS_ENVIRONMENT += MPIRUN='$(MPIRUN)'; export MPIRUN;
