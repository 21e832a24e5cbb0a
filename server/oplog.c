/* Operations as log events (see oplog.h). Which fields, and why each is safe to log, is
 * docs/reference/logs.md: ids, the kind, statuses, the actor's uid and name (a token's name, not
 * its secret), times, errno and the daemon's own error text. Never the request or the result: a
 * launch's request is the program's whole argv and environment. */
#include "server/oplog.h"

#include <inttypes.h>
#include <string.h>

#include "server/log.h"

/* One fixed id per kind, made once at random (never derived, never reused): journalctl
 * MESSAGE_ID=... finds every operation of the kind across versions. A new kind gets a new line
 * (tests/e2e/test_logs.py fails for a kind of --list-kinds that has none). */
static const struct { const char *kind, *id; } ids[] = {
	{ "hugepages.resize",    "9716a5b266f547a3a91586d66bcf0947" },
	{ "process.migrate",     "8dc48b168b8241c2a7d09df1d3a490fb" },
	{ "process.collapse",    "be38b01c152a4ce28376137f598b7ace" },
	{ "probe.touch",         "c28864d4d1444ced8b9ea79446dbab41" },
	{ "probe.thp-fault",     "f9c393303b7642bb8dd929205b2c5063" },
	{ "probe.hugetlb-alloc", "74c6645b3af448219ab87e030bc2fbcc" },
	{ "probe.sparse-touch",  "96a52f06b29a4893ab1733a9dcfdf0a0" },
	{ "probe.remote-access", "49aeb9a686af4348a3919dbcac99b71c" },
	{ "probe.numa-hinting",  "8028f7974030423bbd72cd8f303ec01a" },
	{ "probe.fragment",      "6d1ac3ec8f0344cbb91c94f3c5c17471" },
	{ "knobs.set",           "ecb0e65dd63f4c8b824b799b8725a5f0" },
	{ "cgroup.mems",         "65d3d2208dec4d37994812e982b40f9c" },
	{ "process.launch",      "a3c87d7a974a4558adf2d70833f2651a" },
	{ "process.sample",      "922764bf37a84be19c337d35d5d253f4" },
	{ "schedule.run",        "159bb652f8fa42a097af5b6eef9f4f58" },
	{ "probe.restore",       "ff6d9241aa5343af8ef449e5f513e2dd" },
	{ "profile.apply",       "1ba928ba5991411fb416427f10462e24" },
	{ "profile.drift",       "5c3d33fcf9fd43a5aff7ab332ad47a0e" },
	{ "experiment.run",      "43acd13a61a4411dab052307cf3df1bc" },
};
#define OTHER_ID "2eae46c33491430183331acff0423686"

const char *oplog_message_id(const char *kind)
{
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
		if (!strcmp(ids[i].kind, kind))
			return ids[i].id;
	return OTHER_ID;
}

int oplog_list_ids(FILE *f)
{
	int rc = 0;

	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
		rc |= fprintf(f, "%s\t%s\n", ids[i].kind, ids[i].id) < 0;
	rc |= fprintf(f, "*\t%s\n", OTHER_ID) < 0;
	return fflush(f) == 0 && !rc ? 0 : -1;
}

/* Statuses that are not a success are warnings: a log pipeline's level filter keeps them. */
static enum log_level level_of(const char *status)
{
	return !strcmp(status, "ok") ? LOG_LVL_INFO : LOG_LVL_WARN;
}

void oplog_operation(const struct op_event *ev)
{
	char id[24], uid[24], errno_s[16], started[24], finished[24], duration[32];
	const char *actor = ev->actor_name && *ev->actor_name ? ev->actor_name : NULL;
	struct log_field f[] = {
		{ "MPD_OPERATION_ID", id, true },
		{ "MPD_KIND", ev->kind, false },
		{ "MPD_STATUS", ev->status, false },
		{ "MPD_SOURCE", ev->source, false },
		{ "MPD_ACTOR", actor, false },
		{ "MPD_ACTOR_UID", ev->has_actor ? uid : NULL, true },
		{ "MPD_STARTED_NS", started, true },
		{ "MPD_FINISHED_NS", ev->finished_ns ? finished : NULL, true },
		{ "MPD_DURATION_S", ev->finished_ns ? duration : NULL, true },
		{ "MPD_ERRNO", ev->err_no ? errno_s : NULL, true },
		{ "MPD_ERROR", ev->error && *ev->error ? ev->error : NULL, false },
	};
	char who[96];

	snprintf(id, sizeof id, "%" PRId64, ev->id);
	snprintf(uid, sizeof uid, "%u", (unsigned)ev->actor_uid);
	snprintf(errno_s, sizeof errno_s, "%d", ev->err_no);
	snprintf(started, sizeof started, "%" PRId64, ev->started_ns);
	snprintf(finished, sizeof finished, "%" PRId64, ev->finished_ns);
	snprintf(duration, sizeof duration, "%.6f",
		 ev->finished_ns > ev->started_ns ? (double)(ev->finished_ns - ev->started_ns) / 1e9 : 0.0);
	if (actor)
		snprintf(who, sizeof who, " by %.80s", actor);
	else if (ev->has_actor)
		snprintf(who, sizeof who, " by uid %u", (unsigned)ev->actor_uid);
	else
		snprintf(who, sizeof who, " by the %.40s", ev->source ? ev->source : "daemon");
	log_event(level_of(ev->status), oplog_message_id(ev->kind), f, sizeof f / sizeof f[0],
		  "operation %" PRId64 " %s %s%s%s%.200s", ev->id, ev->kind, ev->status, who,
		  ev->error && *ev->error ? ": " : "", ev->error ? ev->error : "");
}
