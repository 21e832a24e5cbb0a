/* The registry of problem codes: every code the daemon can answer with, its kind and its meaning,
 * in one table. Lower layers fail with a code from here (mp_fail(e, MPE_KNOB_UNKNOWN, ...)); the
 * kind says what went wrong in terms any caller understands, and only server/api/ turns a kind
 * into an HTTP status (server/api/problem.c). schema/openapi.yaml and docs/reference/errors.md
 * list the same codes; tests/e2e/test_errors.py fails when they disagree with this table or when
 * a code string appears anywhere else in server/ or common/.
 *
 * To add a code: one X(...) line here, in its resource's block, then the two lists above (the
 * test prints what is missing). Never rename or reuse a code: clients match on it. */
#ifndef MPD_ERRCODES_H
#define MPD_ERRCODES_H

/*   X(ENUM_SUFFIX,                 "code",                        KIND,          "meaning") */
#define MP_ERROR_CODES(X) \
	X(REQUEST_NOT_FOUND,            "request.not_found",            NOT_FOUND,     "no route matches the path") \
	X(REQUEST_METHOD_NOT_ALLOWED,   "request.method_not_allowed",   METHOD,        "the path exists but not with this method (Allow lists the methods)") \
	X(REQUEST_TOO_LARGE,            "request.too_large",            TOO_LARGE,     "the body is larger than 64 KiB") \
	X(REQUEST_URI_TOO_LONG,         "request.uri_too_long",         URI_TOO_LONG,  "the URL is longer than 1 KiB") \
	X(REQUEST_UNSUPPORTED_MEDIA_TYPE, "request.unsupported_media_type", MEDIA_TYPE, "a body that is not application/json in UTF-8 (no Content-Type, another type, or a charset other than utf-8)") \
	X(REQUEST_EMPTY_BODY,           "request.empty_body",           INVALID,       "the route needs a JSON body and none was sent") \
	X(REQUEST_MALFORMED_JSON,       "request.malformed_json",       INVALID,       "the body is not valid JSON") \
	X(REQUEST_DUPLICATE_KEY,        "request.duplicate_key",        INVALID,       "a JSON object names the same key twice") \
	X(REQUEST_NOT_AN_OBJECT,        "request.not_an_object",        INVALID,       "the body is JSON but not an object") \
	X(REQUEST_INVALID,              "request.invalid",              INVALID,       "the body is well-formed but says nothing to do, or too much") \
	X(REQUEST_UNKNOWN_FIELD,        "request.unknown_field",        INVALID,       "the body has a member the route does not take") \
	X(REQUEST_MISSING_FIELD,        "request.missing_field",        INVALID,       "the body lacks a required member") \
	X(REQUEST_WRONG_TYPE,           "request.wrong_type",           INVALID,       "a member has the wrong JSON type") \
	X(REQUEST_UNKNOWN_QUERY,        "request.unknown_query",        INVALID,       "a query parameter the route does not take") \
	X(REQUEST_BAD_QUERY,            "request.bad_query",            INVALID,       "a query parameter's value is malformed or out of range") \
	X(REQUEST_MISSING_QUERY,        "request.missing_query",        INVALID,       "a required query parameter is absent") \
	X(REQUEST_CURSOR_MISMATCH,      "request.cursor_mismatch",      INVALID,       "a cursor given out for other filters") \
	X(REQUEST_BAD_PATH,             "request.bad_path",             INVALID,       "a path with a malformed escape, a NUL or control character, or an escaped '/'") \
	X(REQUEST_DUPLICATE_QUERY,      "request.duplicate_query",      INVALID,       "a query parameter given more than once") \
	X(REQUEST_BAD_HEADER,           "request.bad_header",           INVALID,       "a header with a NUL byte, or more than one Host") \
	X(REQUEST_MISSING_HOST,         "request.missing_host",         INVALID,       "an HTTP/1.1 request without a Host header") \
	X(REQUEST_BAD_FRAMING,          "request.bad_framing",          INVALID,       "conflicting or malformed Content-Length, or Content-Length with Transfer-Encoding") \
	X(REQUEST_UNSUPPORTED_TRANSFER_ENCODING, "request.unsupported_transfer_encoding", NOT_IMPLEMENTED, "a transfer coding other than chunked") \
	X(REQUEST_MISDIRECTED,          "request.misdirected",          MISDIRECTED,   "over TCP, a Host that is not one of the listener's names (DNS rebinding)") \
	X(AUTH_CROSS_ORIGIN,            "auth.cross_origin",            FORBIDDEN,     "a browser's cross-origin request (Origin or Sec-Fetch-Site)") \
	X(AUTH_FORBIDDEN,               "auth.forbidden",               FORBIDDEN,     "a change by a caller that is neither root nor in the admin group") \
	X(AUTH_UNAUTHENTICATED,         "auth.unauthenticated",         UNAUTHORIZED,  "over TLS, a request without a valid bearer token (missing, malformed, unknown, wrong, expired or revoked)") \
	X(AUTH_SCOPE,                   "auth.scope",                   FORBIDDEN,     "the bearer token's scope does not cover the route (a read token on a change)") \
	X(AUTH_CLIENT_CERTIFICATE,      "auth.client_certificate",      FORBIDDEN,     "with --tls-client-ca, a TLS client without a certificate that CA signed and that is valid now") \
	X(AUTH_RATE_LIMITED,            "auth.rate_limited",            TOO_MANY,      "too many failed authentications from this peer address; Retry-After says when to try again") \
	X(TOKEN_NOT_FOUND,              "token.not_found",              NOT_FOUND,     "no token has this name") \
	X(TOKEN_EXISTS,                 "token.exists",                 CONFLICT,      "a token with this name exists (revoked names stay taken: history names them)") \
	X(TOKEN_BAD_REQUEST,            "token.bad_request",            UNPROCESSABLE, "a token name, scope or expiry out of range") \
	X(TOKEN_LIMIT,                  "token.limit",                  CONFLICT,      "the daemon holds 1000 tokens, revoked ones included; no more can be created") \
	X(TOKEN_ROOT_ONLY,              "token.root_only",              FORBIDDEN,     "tokens are created, listed and revoked by root on the Unix socket only") \
	X(KNOB_UNKNOWN,                 "knob.unknown",                 NOT_FOUND,     "no knob has this name") \
	X(KNOB_UNAVAILABLE,             "knob.unavailable",             CONFLICT,      "this kernel lacks the knob") \
	X(KNOB_VALUE_NOT_ALLOWED,       "knob.value_not_allowed",       UNPROCESSABLE, "the value is not in the kernel's list for the knob") \
	X(KNOB_OUT_OF_RANGE,            "knob.out_of_range",            UNPROCESSABLE, "an integer outside the knob's range") \
	X(KNOB_KERNEL_REFUSED,          "knob.kernel_refused",          KERNEL,        "the kernel refused a write; the knobs written before it were restored") \
	X(KNOB_READBACK_MISMATCH,       "knob.readback_mismatch",       KERNEL,        "a write was accepted but reads back differently; earlier writes restored") \
	X(KNOB_ROLLBACK_FAILED,         "knob.rollback_failed",         KERNEL,        "a write failed and restoring an earlier one failed too") \
	X(HISTORY_NOT_FOUND,            "history.not_found",            NOT_FOUND,     "no operation has this id") \
	X(STATS_UNKNOWN_KIND,           "stats.unknown_kind",           UNPROCESSABLE, "statistics of a kind that records no batches") \
	X(HUGEPAGES_UNKNOWN_SIZE,       "hugepages.unknown_size",       NOT_FOUND,     "the kernel has no hugetlb pool of this page size") \
	X(HUGEPAGES_READ,               "hugepages.read",               INTERNAL,      "a pool's sysfs files could not be read") \
	X(RESIZE_BAD_REQUEST,           "resize.bad_request",           INVALID,       "a resize target that is malformed (both or neither of total and nodes, bad types)") \
	X(RESIZE_BAD_NODE,              "resize.bad_node",              UNPROCESSABLE, "a node that does not exist or has no memory") \
	X(RESIZE_BAD_COUNT,             "resize.bad_count",             UNPROCESSABLE, "a page count beyond what the node's memory could hold") \
	X(RESIZE_BAD_BATCH,             "resize.bad_batch",             UNPROCESSABLE, "a batch size out of range") \
	X(RESIZE_BAD_DEADLINE,          "resize.bad_deadline",          UNPROCESSABLE, "a deadline out of range") \
	X(JOB_NOT_FOUND,                "job.not_found",                NOT_FOUND,     "no job has this id") \
	X(JOB_CONFLICT,                 "job.conflict",                 CONFLICT,      "a job on the same resource is queued or running (its id in the problem)") \
	X(JOB_FINISHED,                 "job.finished",                 CONFLICT,      "cancelling a job that has already ended") \
	X(JOB_STARTING,                 "job.starting",                 UNAVAILABLE,   "the job runner has not started yet") \
	X(JOB_STOPPING,                 "job.stopping",                 UNAVAILABLE,   "the daemon is stopping and takes no new jobs") \
	X(JOB_THREAD,                   "job.thread",                   INTERNAL,      "a job-runner thread could not be started") \
	X(SCHEDULE_NOT_FOUND,           "schedule.not_found",           NOT_FOUND,     "no schedule has this id") \
	X(SCHEDULE_BAD_CRON,            "schedule.bad_cron",            UNPROCESSABLE, "a cron expression that is not five valid fields or a known @name") \
	X(SCHEDULE_BAD_TIMEZONE,        "schedule.bad_timezone",        UNPROCESSABLE, "a time zone other than UTC or a fixed offset") \
	X(SCHEDULE_BAD_GRACE,           "schedule.bad_grace",           UNPROCESSABLE, "a misfire grace period out of range") \
	X(SCHEDULE_LIMIT,               "schedule.limit",               CONFLICT,      "the daemon holds as many schedules as max-schedules allows; delete one first") \
	X(SCHEDULE_NO_RUNNER,           "schedule.no_runner",           UNAVAILABLE,   "the scheduler cannot start without the job runner") \
	X(SCHEDULE_THREAD,              "schedule.thread",              INTERNAL,      "the scheduler thread could not be started") \
	X(PROCESS_BAD_POLICY,           "process.bad_policy",           UNPROCESSABLE, "an unknown policy mode, or nodes or flags the mode does not take") \
	X(PROCESS_BAD_CPUS,             "process.bad_cpus",             UNPROCESSABLE, "CPUs or CPU nodes this host does not have") \
	X(PROCESS_BAD_USER,             "process.bad_user",             UNPROCESSABLE, "a user that does not exist") \
	X(PROCESS_UNSUPPORTED,          "process.unsupported",          CONFLICT,      "this kernel lacks the policy mode, flag or control asked for (the detail says which)") \
	X(PROCESS_EXEC_FAILED,          "process.exec_failed",          UNPROCESSABLE, "the program could not be executed (not found, not executable); recorded") \
	X(PROCESS_SETUP_FAILED,         "process.setup_failed",         KERNEL,        "the kernel refused a step of the child's set-up (policy, affinity, identity, cwd); recorded") \
	X(PROCESS_TOO_MANY,             "process.too_many",             UNAVAILABLE,   "the daemon already tracks as many launched processes as it may") \
	X(NODES_MALFORMED,              "nodes.malformed",              INVALID,       "a node list that is not the kernel's list form (0-1,3): empty, a sign, 0-, 3-1, 1,,2, a huge number") \
	X(NODES_NOT_IN_TOPOLOGY,        "nodes.not_in_topology",        UNPROCESSABLE, "a node that is not online or has no memory") \
	X(PROCESS_BAD_PID,              "process.bad_pid",              INVALID,       "a pid that is not a decimal number from 1 to 4194304") \
	X(PROCESS_NOT_FOUND,            "process.not_found",            NOT_FOUND,     "no process has this pid, or it exited while being read") \
	X(PROCESS_CHANGED,              "process.changed",              CONFLICT,      "the pid now names another process than the start time given (pids are reused), or the process is no longer the caller's (it exec'd a set-uid program after the request)") \
	X(PROCESS_DENIED,               "process.denied",               KERNEL,        "the kernel refuses the daemon the process's files (another namespace, not dumpable)") \
	X(PROCESS_UNREADABLE,           "process.unreadable",           INTERNAL,      "the process's procfs files have a shape the daemon does not know, or could not be read") \
	X(CGROUP_BAD_PATH,              "cgroup.bad_path",              INVALID,       "a cgroup path with .., an empty or hidden segment, a NUL, or a symlink out of the mount") \
	X(CGROUP_NOT_FOUND,             "cgroup.not_found",             NOT_FOUND,     "no cgroup has this path") \
	X(CGROUP_UNAVAILABLE,           "cgroup.unavailable",           CONFLICT,      "no cpuset controller is mounted (cgroup v2 with cpuset, or v1 cpuset)") \
	X(CGROUP_ROOT,                  "cgroup.root",                  CONFLICT,      "the root cgroup's mems cannot be set") \
	X(CGROUP_BAD_NODES,             "cgroup.bad_nodes",             UNPROCESSABLE, "mems outside the parent cgroup's effective mems") \
	X(CGROUP_KERNEL_REFUSED,        "cgroup.kernel_refused",        KERNEL,        "the kernel refused the cpuset.mems write (a child uses other nodes, a populated cgroup emptied...)") \
	X(MAINT_THREAD,                 "maint.thread",                 INTERNAL,      "start-up: the maintenance (retention) thread could not be started") \
	X(PROBE_UNKNOWN,                "probe.unknown",                NOT_FOUND,     "no probe of this kind (GET /v1/probes lists them)") \
	X(PROBE_BAD_PARAM,              "probe.bad_param",              UNPROCESSABLE, "a probe parameter out of range (size, threads, duration, node, timeout)") \
	X(PROBE_TOO_LARGE,              "probe.too_large",              CONFLICT,      "the probe would take more than its share of free memory (the detail says how much is allowed)") \
	X(PROBE_WORKLOAD_FAILED,        "probe.workload_failed",        KERNEL,        "a probe's workload failed in its child (the detail says which step, errno kept); recorded") \
	X(PROFILE_NOT_FOUND,            "profile.not_found",            NOT_FOUND,     "no profile NAME.conf in the profiles directory (or a name no profile file can have)") \
	X(PROFILE_SYNTAX,               "profile.syntax",               UNPROCESSABLE, "a profile line does not parse; the detail names file:line:column and what was expected") \
	X(PROFILE_UNKNOWN_SECTION,      "profile.unknown_section",      UNPROCESSABLE, "a [section] a profile cannot have, or a hugepage size that does not parse") \
	X(PROFILE_UNKNOWN_KEY,          "profile.unknown_key",          UNPROCESSABLE, "a key its section does not take (no knob has the name, not total/nodeN, not mems)") \
	X(PROFILE_BAD_VALUE,            "profile.bad_value",            UNPROCESSABLE, "a value the key does not allow: not in the knob's list, out of its range, not a number or node list, or a comparator the key cannot have") \
	X(PROFILE_DUPLICATE_KEY,        "profile.duplicate_key",        UNPROCESSABLE, "one file sets (or removes) the same key twice") \
	X(PROFILE_REMOVE_UNSET,         "profile.remove_unset",         UNPROCESSABLE, "a -key line removes a key no included profile sets") \
	X(PROFILE_INCLUDE_LOOP,         "profile.include_loop",         UNPROCESSABLE, "profiles include each other in a loop") \
	X(PROFILE_INCLUDE_ESCAPE,       "profile.include_escape",       UNPROCESSABLE, "a profile file, or a symlink on its way, leads outside the profiles directory") \
	X(PROFILE_INCLUDE_MISSING,      "profile.include_missing",      UNPROCESSABLE, "an include names a profile the directory does not hold") \
	X(PROFILE_LIMIT,                "profile.limit",                UNPROCESSABLE, "a profile file, line, key count or include chain beyond its limit") \
	X(PROFILE_UNREADABLE,           "profile.unreadable",           INTERNAL,      "a profile file or the profiles directory cannot be read (not a regular file, or an I/O error)") \
	/* h-apply: activating a profile (ops/profile_apply.c) */ \
	X(PROFILE_CHANGED,              "profile.changed",              CONFLICT,      "the profile's files changed between validation and the first write of its apply: nothing was applied") \
	X(TOPOLOGY_UNREADABLE,          "topology.unreadable",          INTERNAL,      "the NUMA topology could not be read from sysfs") \
	X(STORE_FULL,                   "store.full",                   STORE_FULL,    "the database's disk is full; nothing was changed") \
	X(STORE_BUSY,                   "store.busy",                   STORE_BUSY,    "the database is locked by another process; nothing was changed") \
	X(STORE_READONLY,               "store.readonly",               STORE_BUSY,    "the database cannot be written; nothing was changed") \
	X(STORE_ERROR,                  "store.error",                  INTERNAL,      "the database failed otherwise") \
	X(STORE_BAD_ROW,                "store.bad_row",                INTERNAL,      "a row the daemon wrote cannot be read back") \
	X(STORE_OPEN,                   "store.open",                   INTERNAL,      "start-up: the database cannot be opened") \
	X(STORE_MIGRATE,                "store.migrate",                INTERNAL,      "start-up: a schema migration failed") \
	X(STORE_SCHEMA,                 "store.schema",                 INTERNAL,      "start-up: the database lacks a table or column its schema version promises") \
	X(STORE_TOO_NEW,                "store.too_new",                INTERNAL,      "start-up: the database is newer than this binary") \
	X(CONFIG_SOCKET,                "config.socket",                INVALID,       "start-up: the Unix socket path cannot be used") \
	X(CONFIG_LISTEN_TCP,            "config.listen_tcp",            INVALID,       "start-up: --listen-tcp is malformed or not a loopback address") \
	X(CONFIG_TLS,                   "config.tls",                   INVALID,       "start-up: a TLS certificate, key or client CA cannot be read or used, or TLS options without --listen-tcp") \
	X(CONFIG_TEST_CLOCK,            "config.test_clock",            INVALID,       "start-up (test builds only): --test-clock's file cannot be read or holds no time") \
	X(CONFIG_LIMITS,                "config.limits",                INVALID,       "start-up: a connection limit or timeout is out of range, or needs more open files than the hard limit") \
	X(CONFIG_DB_IN_USE,             "config.db_in_use",             CONFLICT,      "start-up: another daemon already serves this database") \
	X(CONFIG_USER,                  "config.user",                  INVALID,       "start-up: --user (default mempolicyd as root) names no user or another uid 0, or the database's directory is not writable by it") \
	X(PRIV_START,                   "priv.start",                   INTERNAL,      "start-up: the privileged helper could not be started, or the daemon could not drop its privileges") \
	X(PRIV_LOST,                    "priv.lost",                    UNAVAILABLE,   "the privileged helper is gone (a channel to it closed): no change is made; the daemon answers what is in flight, exits non-zero and its service manager starts it again") \
	X(HTTP_LISTEN,                  "http.listen",                  INTERNAL,      "start-up: a listening socket cannot be made") \
	X(HTTP_START,                   "http.start",                   INTERNAL,      "start-up: libmicrohttpd failed to start") \
	X(HTTP_TOO_MANY_CONNECTIONS,    "http.too_many_connections",    UNAVAILABLE,   "the caller's uid (over TCP, its address) holds all the connections it may, or only those kept for root and the admin group are left") \
	/* experiments (branch h-exp) */ \
	X(EXPERIMENT_NOT_FOUND,         "experiment.not_found",         NOT_FOUND,     "no experiment has this id (GET /v1/experiments lists them)") \
	X(EXPERIMENT_TOO_FEW_ARMS,      "experiment.too_few_arms",      UNPROCESSABLE, "an experiment compares at least two arms") \
	X(EXPERIMENT_DUPLICATE_ARM,     "experiment.duplicate_arm",     UNPROCESSABLE, "two arms have the same name") \
	X(EXPERIMENT_IDENTICAL_ARMS,    "experiment.identical_arms",    UNPROCESSABLE, "two arms have the same settings (an A/A check says \"allow_identical\": true)") \
	X(EXPERIMENT_BAD_ARM,           "experiment.bad_arm",           UNPROCESSABLE, "an arm's name is malformed, or the arms set more knobs than an experiment can save") \
	X(EXPERIMENT_PROFILE_UNSUPPORTED, "experiment.profile_unsupported", UNPROCESSABLE, "an arm's profile fragment says what an arm cannot set: an include, a pool or cgroup section, >= or <=, alternatives a|b, a -key, on-drift or required") \
	X(EXPERIMENT_KNOB_TWICE,        "experiment.knob_twice",        UNPROCESSABLE, "an arm sets one knob both under \"knobs\" and in its \"profile\"") \
	X(EXPERIMENT_BAD_ROUNDS,        "experiment.bad_rounds",        UNPROCESSABLE, "rounds outside 1..1000, warm-up rounds outside 0..10, or a time bound outside 1..600 s") \
	X(INTERNAL_NOMEM,               "internal.nomem",               NOMEM,         "the daemon ran out of memory; nothing was changed") \
	X(INTERNAL_ERROR,               "internal.error",               INTERNAL,      "a handler failed without saying why (a bug)")

/* What went wrong, in terms every layer shares. server/api/problem.c maps each to a status. */
#define MP_ERROR_KINDS(X) \
	X(INVALID, "invalid")                  /* malformed request: 400 */ \
	X(UNAUTHORIZED, "unauthorized")        /* no valid credentials: 401 + WWW-Authenticate */ \
	X(FORBIDDEN, "forbidden")              /* 403 */ \
	X(NOT_FOUND, "not_found")              /* 404 */ \
	X(METHOD, "method")                    /* 405 */ \
	X(MISDIRECTED, "misdirected")          /* 421 */ \
	X(CONFLICT, "conflict")                /* the resource's state forbids it now: 409 */ \
	X(TOO_LARGE, "too_large")              /* 413 */ \
	X(URI_TOO_LONG, "uri_too_long")        /* 414 */ \
	X(MEDIA_TYPE, "media_type")            /* 415 */ \
	X(UNPROCESSABLE, "unprocessable")      /* well-formed but not acceptable: 422 */ \
	X(TOO_MANY, "too_many")                /* slow down: 429 + Retry-After */ \
	X(KERNEL, "kernel")                    /* the kernel refused: 422 for EINVAL/ERANGE, else 409 */ \
	X(NOMEM, "nomem")                      /* 500 */ \
	X(INTERNAL, "internal")                /* 500 */ \
	X(NOT_IMPLEMENTED, "not_implemented")  /* 501 */ \
	X(UNAVAILABLE, "unavailable")          /* not now (starting, stopping): 503 */ \
	X(STORE_BUSY, "store_busy")            /* 503 */ \
	X(STORE_FULL, "store_full")            /* 507 */

enum mp_kind {
#define MP_KIND_ENUM(k, name) MPK_##k,
	MP_ERROR_KINDS(MP_KIND_ENUM)
#undef MP_KIND_ENUM
	MPK__COUNT
};

enum mp_code {
	MPE_NONE = 0,
#define MP_CODE_ENUM(id, str, kind, meaning) MPE_##id,
	MP_ERROR_CODES(MP_CODE_ENUM)
#undef MP_CODE_ENUM
	MPE__COUNT
};

#endif
