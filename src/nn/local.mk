# nn module: sources, public header, tests
