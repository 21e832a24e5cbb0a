/* The privileged helper's state as the request layer sees it: api/ asks here, not server/priv/
 * (the arrows: api -> ops -> priv), before a route that acts through the helper and for health. */
#ifndef MPD_OPS_HELPER_STATE_H
#define MPD_OPS_HELPER_STATE_H

#include <stdbool.h>

/* True once the helper is lost for good (server/priv/act.h, act_helper_lost). */
bool ops_helper_lost(void);
/* "none" (no privilege separation), "running" or "lost" (act_helper_state). Static text. */
const char *ops_helper_state(void);

#endif
