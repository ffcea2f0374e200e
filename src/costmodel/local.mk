# costmodel module: sources, public header, tests
