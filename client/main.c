/* Placeholder until the client lands. */
#include <stdio.h>
int main(void) { fputs("mempolicyctl: not built yet\n", stderr); return 2; }
