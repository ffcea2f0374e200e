# collective: schedules and the allreduce algorithms that build them
libftmesh_la_SOURCES += src/collective/sched.c
ftmeshinclude_HEADERS += include/ftmesh/sched.h
