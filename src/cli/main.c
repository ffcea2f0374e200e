#include <stdio.h>
int main(void) { puts("ftmesh"); return 0; }
