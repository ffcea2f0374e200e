# viz module: sources, public header, tests
