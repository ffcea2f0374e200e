# cli: the ftmesh command
ftmesh_SOURCES += src/cli/main.c
