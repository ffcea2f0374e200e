# router module: sources, public header, tests
