# train module: sources, public header, tests
