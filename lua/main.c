#include <stdio.h>
int main(void) { puts("kiln"); return 0; }
