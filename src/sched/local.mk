# sched: the schedule format (a collective as data), the block split, the
# reduction kernel and the sequential executor; below the runtime and the
# cost model, which both read schedules
libftmesh_la_SOURCES += src/sched/sched_mem.c src/sched/sched_pack.c src/sched/sched.c src/sched/sched_read.c src/sched/sched_merge.c \
	src/sched/sched_int.h src/sched/sched_lib.h src/sched/sched_code.h \
	src/sched/exec.c
ftmeshinclude_HEADERS += include/ftmesh/sched.h
