/* See helper_state.h. */
#include "server/ops/helper_state.h"

#include "server/priv/act.h"

bool ops_helper_lost(void)
{
	return act_helper_lost();
}

const char *ops_helper_state(void)
{
	return act_helper_state();
}
