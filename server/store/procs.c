#include "server/store/procs.h"

#include "server/clock.h"
#include "server/store/db.h"

int64_t procs_db_begin(struct store *st, const struct op_record *op, mp_err *e)
{
	return history_insert(st, op, e);
}

int procs_db_finish(struct store *st, int64_t id, const char *status, int err_no, const char *error,
		    json_t *result, mp_err *e)
{
	struct op_outcome out = { status, clk_wall_ns(), err_no, error, result };

	return history_finish(st, id, &out, e);
}

int64_t procs_db_record(struct store *st, const struct op_record *op, mp_err *e)
{
	return history_insert(st, op, e);
}
