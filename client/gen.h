/* Generated from the command table (client/gen.c): the man page, shell completion, and the
 * daemon's words the completion offers. */
#ifndef MPD_CLIENT_GEN_H
#define MPD_CLIENT_GEN_H

#include <stdio.h>

struct cli;

int cli_man(FILE *f);                               /* mempolicyctl(1) in roff; 0 or -1 */
int cli_completion(FILE *f, const char *shell);     /* "bash" or "zsh"; an exit code */
int cli_complete(struct cli *c, const char *what);  /* knobs, sizes, nodes; an exit code */

#endif
