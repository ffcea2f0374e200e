# runtime module: sources, public header, tests
