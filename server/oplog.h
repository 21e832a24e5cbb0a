/* Every operation as a structured log event (server/log.h), once, when it has its final status:
 * in the journal with MESSAGE_ID (one fixed id per kind, the table in oplog.c and
 * docs/reference/logs.md) and MPD_* fields, in JSON logs as members. Called from one place, the
 * store's events (server/observe.c), so no operation kind can be recorded and not logged. */
#ifndef MPD_OPLOG_H
#define MPD_OPLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* An operation that ended: what the history row holds, less its request and result (which may
 * hold a launched program's argv and environment: they are never logged). Strings borrowed. */
struct op_event {
	int64_t id;
	const char *kind;
	const char *source;          /* "api", "scheduler", ... */
	const char *status;
	bool has_actor;
	uid_t actor_uid;
	const char *actor_name;      /* NULL/"" for none; "token:NAME" for a token (its name, never its secret) */
	int64_t started_ns, finished_ns;   /* the daemon's clock; finished_ns 0 when unknown */
	int err_no;
	const char *error;           /* the daemon's own wording of the failure, or NULL */
};

void oplog_operation(const struct op_event *ev);

/* The MESSAGE_ID of kind (32 hex digits): its own, or the id of kinds the table does not list. */
const char *oplog_message_id(const char *kind);

/* Lines "kind<TAB>message_id" for every kind with its own id, then "*<TAB>id" for the rest
 * (mempolicyd --list-message-ids). 0 or -1. */
int oplog_list_ids(FILE *f);

#endif
