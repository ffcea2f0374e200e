# lesson: a recorded allreduce with small integers read back as frames, and
# the self-contained HTML page that animates it (ftmesh demo)
libftmesh_la_SOURCES += src/lesson/lesson.c src/lesson/lesson_order.c src/lesson/html.c \
	src/lesson/html_js.c src/lesson/lesson_html.h
ftmeshinclude_HEADERS += include/ftmesh/lesson.h
