#include "server/store/procs.h"

#include "server/store/db.h"

int64_t procs_db_begin(struct store *st, const struct op_record *op, mp_err *e)
{
	int64_t id;

	store_lock(st);
	id = history_insert(st, op, e);
	store_unlock(st);
	return id;
}

int procs_db_finish(struct store *st, int64_t id, const char *status, int err_no, const char *error,
		    json_t *result, mp_err *e)
{
	int rc;

	store_lock(st);
	rc = history_finish(st, id, status, store_now_ns(), err_no, error, result, e);
	store_unlock(st);
	return rc;
}

int64_t procs_db_record(struct store *st, const struct op_record *op, mp_err *e)
{
	return procs_db_begin(st, op, e);
}
