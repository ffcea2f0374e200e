# timeline: a recorded trace on the wall clock or on the cost model's
# replay of the same schedules (above the trace recorder and the cost model)
libftmesh_la_SOURCES += src/timeline/timeline.c
ftmeshinclude_HEADERS += include/ftmesh/timeline.h
