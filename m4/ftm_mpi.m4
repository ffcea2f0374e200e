# FTM_CHECK_MPI
# --with-mpi[=MPICC]: the MPI transport (src/mpi). The compiler stays the
# same; the flags come from the MPI compiler wrapper (Open MPI's
# --showme:compile/--showme:link, MPICH's -compile-info/-link-info), else
# from pkg-config's mpi-c, and a link test with MPI_Init_thread checks them.
# Sets MPI_CFLAGS, MPI_LIBS, the HAVE_MPI define and the HAVE_MPI
# automake conditional. Without --with-mpi nothing is looked for.
AC_DEFUN([FTM_CHECK_MPI], [
AC_ARG_WITH([mpi],
  [AS_HELP_STRING([--with-mpi@<:@=MPICC@:>@],
    [spread runs over MPI processes (mpirun -np K ftmesh ...); MPICC: the MPI compiler wrapper (default mpicc)])],
  [], [with_mpi=no])
have_mpi=no
MPI_CFLAGS=""
MPI_LIBS=""
AS_IF([test "x$with_mpi" != xno], [
  AS_IF([test "x$with_mpi" = xyes], [AC_PATH_PROGS([MPICC], [mpicc mpicc.openmpi mpicc.mpich])],
        [MPICC=$with_mpi])
  AS_IF([test -n "$MPICC"], [
    AC_MSG_CHECKING([MPI flags from $MPICC])
    AS_IF([MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null` && MPI_LIBS=`$MPICC --showme:link 2>/dev/null`],
          [AC_MSG_RESULT([Open MPI style])],
          [AS_IF([MPI_CFLAGS=`$MPICC -compile-info 2>/dev/null | cut -d' ' -f2-` &&
                  MPI_LIBS=`$MPICC -link-info 2>/dev/null | cut -d' ' -f2-`],
                 [AC_MSG_RESULT([MPICH style])],
                 [MPI_CFLAGS=""; MPI_LIBS=""; AC_MSG_RESULT([none])])])
  ])
  AS_IF([test -z "$MPI_LIBS"],
    [PKG_CHECK_MODULES([MPI], [mpi-c], [], [MPI_LIBS=""])])
  save_CFLAGS=$CFLAGS; save_LIBS=$LIBS
  CFLAGS="$CFLAGS $MPI_CFLAGS"; LIBS="$MPI_LIBS $LIBS"
  AC_MSG_CHECKING([whether MPI programs link])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
      [[int p; MPI_Init_thread(0, 0, MPI_THREAD_MULTIPLE, &p); MPI_Finalize();]])],
    [have_mpi=yes], [have_mpi=no])
  AC_MSG_RESULT([$have_mpi])
  CFLAGS=$save_CFLAGS; LIBS=$save_LIBS
  AS_IF([test "x$have_mpi" = xno],
    [AC_MSG_ERROR([--with-mpi: no working MPI found: install one (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev) or give its wrapper, --with-mpi=/path/to/mpicc])])
  AC_DEFINE([HAVE_MPI], [1], [Built with the MPI transport (src/mpi)])
  AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [mpirun])
])
AC_SUBST([MPI_CFLAGS])
AC_SUBST([MPI_LIBS])
AC_SUBST([MPIRUN])
AM_CONDITIONAL([HAVE_MPI], [test "x$have_mpi" = xyes])
])
