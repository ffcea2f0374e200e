# collective: schedules and the allreduce algorithms that build them
libftmesh_la_SOURCES += src/collective/sched.c src/collective/ring.c src/collective/registry.c src/collective/run.c
ftmeshinclude_HEADERS += include/ftmesh/sched.h include/ftmesh/collective.h
