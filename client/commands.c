/* THE command table of mempolicyctl: every command, its positional arguments and its options,
 * declared once. The parser (client/args.c), the usage line, `--help` at every level and the
 * command list are all generated from these lines; docs/DESIGN.md says how to add one. */
#include "client/cli.h"

/* Handlers, one file per command group (client/cmd_<group>.c). */
int cmd_status(struct cli *c, const struct command *cmd, struct args *a);
int cmd_topology(struct cli *c, const struct command *cmd, struct args *a);
int cmd_knob_list(struct cli *c, const struct command *cmd, struct args *a);
int cmd_knob_get(struct cli *c, const struct command *cmd, struct args *a);
int cmd_knob_set(struct cli *c, const struct command *cmd, struct args *a);
int cmd_history_list(struct cli *c, const struct command *cmd, struct args *a);
int cmd_history_export(struct cli *c, const struct command *cmd, struct args *a);
int cmd_history_show(struct cli *c, const struct command *cmd, struct args *a);
int cmd_history_stats(struct cli *c, const struct command *cmd, struct args *a);
int cmd_history_compare(struct cli *c, const struct command *cmd, struct args *a);
int cmd_probe_list(struct cli *c, const struct command *cmd, struct args *a);
int cmd_probe_run(struct cli *c, const struct command *cmd, struct args *a);
int cmd_pool_list(struct cli *c, const struct command *cmd, struct args *a);
int cmd_pool_resize(struct cli *c, const struct command *cmd, struct args *a);
int cmd_pool_avail(struct cli *c, const struct command *cmd, struct args *a);
int cmd_job_list(struct cli *c, const struct command *cmd, struct args *a);
int cmd_job_show(struct cli *c, const struct command *cmd, struct args *a);
int cmd_job_cancel(struct cli *c, const struct command *cmd, struct args *a);
int cmd_schedule_add(struct cli *c, const struct command *cmd, struct args *a);
int cmd_schedule_list(struct cli *c, const struct command *cmd, struct args *a);
int cmd_schedule_show(struct cli *c, const struct command *cmd, struct args *a);
int cmd_schedule_rm(struct cli *c, const struct command *cmd, struct args *a);
int cmd_run(struct cli *c, const struct command *cmd, struct args *a);
int cmd_proc_migrate(struct cli *c, const struct command *cmd, struct args *a);
int cmd_proc_collapse(struct cli *c, const struct command *cmd, struct args *a);
int cmd_proc_show(struct cli *c, const struct command *cmd, struct args *a);
int cmd_proc_watch(struct cli *c, const struct command *cmd, struct args *a);
int cmd_cgroup_show(struct cli *c, const struct command *cmd, struct args *a);
int cmd_cgroup_mems(struct cli *c, const struct command *cmd, struct args *a);
int cmd_token_create(struct cli *c, const struct command *cmd, struct args *a);
int cmd_token_list(struct cli *c, const struct command *cmd, struct args *a);
int cmd_token_revoke(struct cli *c, const struct command *cmd, struct args *a);
int cmd_profile_list(struct cli *c, const struct command *cmd, struct args *a);
int cmd_profile_show(struct cli *c, const struct command *cmd, struct args *a);
int cmd_profile_diff(struct cli *c, const struct command *cmd, struct args *a);
int cmd_profile_apply(struct cli *c, const struct command *cmd, struct args *a);
int cmd_profile_verify(struct cli *c, const struct command *cmd, struct args *a);
int cmd_profile_drift(struct cli *c, const struct command *cmd, struct args *a);
int cmd_experiment_run(struct cli *c, const struct command *cmd, struct args *a);
int cmd_experiment_list(struct cli *c, const struct command *cmd, struct args *a);
int cmd_experiment_show(struct cli *c, const struct command *cmd, struct args *a);
int cmd_experiment_samples(struct cli *c, const struct command *cmd, struct args *a);
int cmd_experiment_cancel(struct cli *c, const struct command *cmd, struct args *a);
int cmd_advise(struct cli *c, const struct command *cmd, struct args *a);

#define END { NULL, NULL, NULL, OPT_TEXT, 0, 0, 0, NULL }

static const struct opt knob_set_opts[] = {
	{ "--dry-run", NULL, "show the plan, change nothing", OPT_FLAG_IN(dry_run), 0, NULL },
	{ "--force", NULL, "write (and record) a knob that already has the value", OPT_FLAG_IN(force), 0, NULL },
	END,
};

static const struct opt profile_apply_opts[] = {
	{ "--dry-run", NULL, "show what an apply would do (the diff), change nothing", OPT_FLAG_IN(dry_run), 0, NULL },
	{ "--deadline", "D", "how long the pools may take, compacting and retrying (default 60s)",
	  OPT_TEXT_IN(deadline), 0, NULL },
	{ "--no-wait", NULL, "print the job id and return; follow with `job show ID --wait`", OPT_FLAG_IN(no_wait), 0, NULL },
	END,
};

static const struct opt profile_verify_opts[] = {
	{ "--exit-code", NULL, "exit 0 in sync, 1 drift or degraded (or no profile applied), 2 usage, 3 unreachable",
	  OPT_FLAG_IN(exit_code), 0, NULL },
	END,
};

static const struct opt profile_drift_opts[] = {
	{ "--key", "KEY", "only this managed key's drifts (thp.defrag, hugepages.2M.node0)", OPT_TEXT_IN(key), 0, NULL },
	{ "--limit", "N", "at most N drifts (1..1000, default 50)", OPT_NUM_IN(limit, 1), 0, NULL },
	{ "--cursor", "C", "the next page, as printed after a full page", OPT_TEXT_IN(cursor), 0, NULL },
	END,
};

static const struct opt history_opts[] = {
	{ "--kind", "K", "only operations of this kind (e.g. knobs.set)", OPT_TEXT_IN(kind), 0, NULL },
	{ "--status", "S", "only this status (ok, failed, rolled_back, ...)", OPT_TEXT_IN(status), 0, NULL },
	{ "--since", "T", "started at or after T (RFC 3339 UTC, e.g. 2026-01-02T10:00:00Z, or ns)",
	  OPT_TEXT_IN(since), 0, NULL },
	{ "--until", "T", "started before T", OPT_TEXT_IN(until), 0, NULL },
	{ "--limit", "N", "at most N operations (1..1000, default 50)", OPT_NUM_IN(limit, 1), 0, NULL },
	{ "--cursor", "C", "the next page, as printed after a full page", OPT_TEXT_IN(cursor), 0, NULL },
	END,
};

static const struct opt history_export_opts[] = {
	{ "--kind", "K", "only operations of this kind (e.g. knobs.set)", OPT_TEXT_IN(kind), 0, NULL },
	{ "--status", "S", "only this status (ok, failed, rolled_back, ...)", OPT_TEXT_IN(status), 0, NULL },
	{ "--since", "T", "started at or after T (RFC 3339 UTC, e.g. 2026-01-02T10:00:00Z, or ns)",
	  OPT_TEXT_IN(since), 0, NULL },
	{ "--until", "T", "started before T", OPT_TEXT_IN(until), 0, NULL },
	END,
};

static const struct opt history_stats_opts[] = {
	{ "--size", "SIZE", "only batches of this page size (2M, 1G)", OPT_TEXT_IN(size), 0, NULL },
	{ "--node", "N", "only batches that wrote node N's pool", OPT_TEXT_IN(node), 0, NULL },
	{ "--since", "T", "batches started at or after T (RFC 3339 UTC or ns)", OPT_TEXT_IN(since), 0, NULL },
	{ "--until", "T", "batches started before T", OPT_TEXT_IN(until), 0, NULL },
	{ "--direction", "D", "grow (default: allocation latency) or shrink", OPT_TEXT_IN(direction), 0, NULL },
	{ "--kind", "K", "hugepages.resize (the only kind with batches)", OPT_TEXT_IN(kind), 0, NULL },
	END,
};

static const struct opt pool_resize_opts[] = {
	{ "--total", "N", "target pages for the whole pool (the global nr_hugepages), or", OPT_NUM_IN(total, 0),
	  OPT_EITHER, NULL },
	{ "--node", "N=COUNT", "target pages on node N (repeat; nodes not named keep their size)",
	  OPT_NODE_COUNTS_IN(), 0, NULL },
	{ "--batch", "B", "pages per write (default 10, 1 for 1G pages)", OPT_NUM_IN(batch, 1), 0, NULL },
	{ "--deadline", "D", "stop after D (500ms, 30s, 2m; plain numbers are ms): the job ends partial",
	  OPT_TEXT_IN(deadline), 0, NULL },
	{ "--compact", NULL, "when a batch gains nothing, compact memory once and retry it", OPT_FLAG_IN(compact), 0, NULL },
	{ "--dry-run", NULL, "show the plan, change nothing", OPT_FLAG_IN(dry_run), 0, NULL },
	{ "--no-wait", NULL, "print the job id and return; follow with `job show ID --wait`", OPT_FLAG_IN(no_wait), 0, NULL },
	END,
};

static const struct opt pool_avail_opts[] = {
	{ "--count", "K", "how many pages are wanted (required)", OPT_NUM_IN(count, 1), OPT_REQUIRED, NULL },
	{ "--node", "N", "on node N (default: the pool as a whole)", OPT_NUM_IN(node_id, 0), 0, NULL },
	END,
};

static const struct opt job_list_opts[] = {
	{ "--kind", "K", "only jobs of this kind (e.g. hugepages.resize)", OPT_TEXT_IN(kind), 0, NULL },
	{ "--status", "S", "only this status (queued, running, ok, partial, failed, ...)", OPT_TEXT_IN(status), 0, NULL },
	{ "--limit", "N", "at most N jobs (1..1000, default 50)", OPT_NUM_IN(limit, 1), 0, NULL },
	{ "--cursor", "C", "the next page, as printed after a full page", OPT_TEXT_IN(cursor), 0, NULL },
	END,
};

static const struct opt schedule_list_opts[] = {
	{ "--limit", "N", "at most N schedules (1..1000, default 100)", OPT_NUM_IN(limit, 1), 0, NULL },
	{ "--cursor", "C", "the next page, as printed after a full page", OPT_TEXT_IN(cursor), 0, NULL },
	END,
};

static const struct opt probe_run_opts[] = {
	{ "--no-wait", NULL, "print the job id and return; follow with `job show ID --wait`", OPT_FLAG_IN(no_wait), 0, NULL },
	END,
};

static const struct opt experiment_run_opts[] = {
	{ "--arm", "NAME:SET", "an arm: NAME:knob=value[,knob=value...] (also policy.mode=, policy.nodes=,\n"
	  "cpus=, cpunodes= for the workload; profile=FILE: a profile fragment's [knobs]);\n"
	  "repeat, the first is the baseline", OPT_LIST_IN(arms), OPT_REQUIRED, NULL },
	{ "--probe", "KIND", "the workload is this probe (its NAME=VALUE parameters follow), else\n"
	  "the program after the options, run as you", OPT_TEXT_IN(probe), 0, NULL },
	{ "--rounds", "N", "measured rounds, each arm once per round (1..1000, default 10)", OPT_NUM_IN(rounds, 0), 0, NULL },
	{ "--warmup", "N", "warm-up rounds, run first and kept apart (0..10, default 1)", OPT_NUM_IN(warmup, 0), 0, NULL },
	{ "--seed", "N", "the seed of the order within each ABBA block (default: random, recorded)", OPT_NUM_IN(seed, 0), 0, NULL },
	{ "--timeout", "S", "a run's time bound in seconds (1..600, default 60): longer is killed, failed", OPT_NUM_IN(timeout, 0), 0, NULL },
	{ "--aa", NULL, "allow arms with the same settings (an A/A check of the noise)", OPT_FLAG_IN(aa), 0, NULL },
	{ "--no-wait", NULL, "print the id and return; follow with `experiment show ID`", OPT_FLAG_IN(no_wait), 0, NULL },
	END,
};

static const struct opt advise_opts[] = {
	{ "--floor", "PCT", "the smallest median difference worth advising (1..100, default 5)", OPT_NUM_IN(floor, 1), 0, NULL },
	{ "--apply", "NAME", "the profile NAME (with the fragments put in it) through the profile\n"
	  "apply's dry run: what it would write, and which advice it lacks", OPT_TEXT_IN(apply), 0, NULL },
	END,
};

static const struct opt job_show_opts[] = {
	{ "--wait", NULL, "wait until the job ends, then show it (exit 1 unless it ended ok)", OPT_FLAG_IN(wait), 0, NULL },
	END,
};

static const struct opt schedule_add_opts[] = {
	{ "--cron", "EXPR", "five fields: minute hour day-of-month month day-of-week (or @daily, ...)",
	  OPT_TEXT_IN(cron), OPT_REQUIRED, NULL },
	{ "--size", "SIZE", "page size: 2M, 1G, 2048kB", OPT_TEXT_IN(size), OPT_REQUIRED, NULL },
	{ "--total", "N", "target pages for the whole pool, or", OPT_NUM_IN(total, 0), OPT_EITHER, NULL },
	{ "--node", "N=COUNT", "target pages on node N (repeat for several nodes)", OPT_NODE_COUNTS_IN(), 0, NULL },
	{ "--timezone", "TZ", "UTC (default) or a fixed offset like +02:00", OPT_TEXT_IN(timezone), 0, NULL },
	{ "--grace", "S", "a run missed while the daemon was down still runs if at most S seconds\n"
	  "late (default 3600); older ones are skipped and recorded", OPT_NUM_IN(grace, 0), 0, NULL },
	{ "--batch", "B", "pages per write of the resize", OPT_NUM_IN(batch, 0), 0, NULL },
	END,
};

static const struct opt token_create_opts[] = {
	{ "--name", "NAME", "what the token is for (letters, digits, . _ -; up to 48): history\n"
	  "records its changes as token:NAME", OPT_TEXT_IN(name), OPT_REQUIRED, NULL },
	{ "--scope", "SCOPE", "read (GET only) or admin (changes too)", OPT_TEXT_IN(scope), OPT_REQUIRED, NULL },
	{ "--expires", "DUR", "expires after DUR: 30d, 12h, 90m, 3600s (default: never)", OPT_TEXT_IN(expires), 0, NULL },
	END,
};

/* numactl's option names, long and short, so an operator's fingers already know them. */
static const struct opt run_opts[] = {
	{ "--membind", "NODES", "allocate only from NODES (bind)", OPT_TEXT_IN(membind), 0, "-m" },
	{ "--preferred", "NODE", "prefer NODE, fall back to others", OPT_TEXT_IN(preferred), 0, "-p" },
	{ "--preferred-many", "NODES", "prefer NODES, fall back to others (5.15)", OPT_TEXT_IN(preferred_many), 0, NULL },
	{ "--interleave", "NODES", "interleave pages over NODES", OPT_TEXT_IN(interleave), 0, "-i" },
	{ "--weighted-interleave", "NODES", "interleave by the nodes' weights (6.9)",
	  OPT_TEXT_IN(weighted_interleave), 0, NULL },
	{ "--localalloc", NULL, "allocate on the node of the CPU that runs", OPT_FLAG_IN(localalloc), 0, "-l" },
	{ "--cpunodebind", "NODES", "run on the CPUs of NODES", OPT_TEXT_IN(cpunodebind), 0, "-N" },
	{ "--physcpubind", "CPUS", "run on CPUS", OPT_TEXT_IN(physcpubind), 0, "-C" },
	{ "--thp", "MODE", "disable (or except-advised, 6.18): PR_SET_THP_DISABLE for the program",
	  OPT_TEXT_IN(thp), 0, NULL },
	{ "--detach", NULL, "the daemon starts CMD instead, in its own session, output to /dev/null;\n"
	  "this command returns once it runs (what a caller off the host's terminal gets)",
	  OPT_FLAG_IN(detach), 0, NULL },
	{ "--watch", NULL, "with --detach: record its placement every second until it exits", OPT_FLAG_IN(watch), 0,
	  NULL },
	{ "--interval", "MS", "watch, sampling every MS milliseconds (100..3600000)", OPT_NUM_IN(interval, 1), 0, NULL },
	END,
};

static const struct opt proc_migrate_opts[] = {
	{ "--from", "NODES", "move the pages on these nodes ...", OPT_TEXT_IN(from), OPT_REQUIRED, NULL },
	{ "--to", "NODES", "... to these nodes", OPT_TEXT_IN(to), OPT_REQUIRED, NULL },
	{ "--start-time", "T", "only if the pid still names the process started at T", OPT_NUM_IN(start_time, 1), 0, NULL },
	{ "--no-wait", NULL, "print the job id and return", OPT_FLAG_IN(no_wait), 0, NULL },
	END,
};

static const struct opt proc_collapse_opts[] = {
	{ "--start", "ADDR", "collapse only [ADDR, ADDR+LEN) (decimal bytes) ...", OPT_NUM_IN(start, 0), 0, NULL },
	{ "--length", "LEN", "... default: every anonymous mapping", OPT_NUM_IN(length, 1), 0, NULL },
	{ "--start-time", "T", "only if the pid still names the process started at T", OPT_NUM_IN(start_time, 1), 0, NULL },
	{ "--no-wait", NULL, "print the job id and return", OPT_FLAG_IN(no_wait), 0, NULL },
	END,
};

static const struct opt proc_show_opts[] = {
	{ "--mappings", NULL, "also every mapping: range, policy, page size, pages per node, THP, file",
	  OPT_FLAG_IN(mappings), 0, NULL },
	{ "--start-time", "T", "refuse if PID now names another process than the one started at T\n"
	  "(clock ticks after boot, as shown)", OPT_NUM_IN(start_time, 1), 0, NULL },
	END,
};

static const struct opt proc_watch_opts[] = {
	{ "--start-time", "T", "the process started at T (default: the one with PID now, else the\n"
	  "last one sampled)", OPT_NUM_IN(start_time, 1), 0, NULL },
	{ "--limit", "N", "the newest N samples (1..10000, default 100)", OPT_NUM_IN(limit, 1), 0, NULL },
	END,
};

/* Before the command; --json and --socket may also follow it. The transport's three (--url,
 * --cacert, --token-file) are client/remote.c's. */
const struct global_opt cli_global_opts[] = {
	{ "--socket", "PATH", "the daemon's socket (else $MEMPOLICYD_SOCKET, else " CLI_DEFAULT_SOCKET ")" },
	{ "--url", "URL", "a daemon over the network, https://HOST:PORT (else $MEMPOLICYD_URL)" },
	{ "--cacert", "FILE", "the CA that signed the daemon's certificate (default: the system's)" },
	{ "--token-file", "FILE", "the bearer token, else $MEMPOLICYD_TOKEN (never on the command line)" },
	{ "--json", NULL, "print the daemon's JSON answer instead of a table (errors: its problem JSON)" },
	{ "--help", NULL, "this help; COMMAND --help for a command" },
	{ "--version", NULL, "the client's version and its libcurls" },
	{ NULL, NULL, NULL },
};

const struct env_var cli_env_vars[] = {
	{ "MEMPOLICYD_SOCKET", "the daemon's socket when --socket is not given" },
	{ "MEMPOLICYD_URL", "the daemon's URL (https://HOST:PORT) when --url is not given" },
	{ "MEMPOLICYD_TOKEN", "the bearer token for --url when --token-file is not given" },
	{ "NO_COLOR", "set: no bold table header on a terminal" },
	{ NULL, NULL },
};

const struct command cli_commands[] = {
	{ "status", "", cmd_status, "", 0, NULL,
	  "daemon health, kernel, THP mode and node count", NULL },
	{ "topology", "", cmd_topology, "", 0, NULL,
	  "NUMA nodes: CPUs, memory, hugepage sizes, distances", NULL },
	{ "knob", "list", cmd_knob_list, "", 0, NULL,
	  "every kernel knob the daemon manages, with value and allowed values", NULL },
	{ "knob", "get", cmd_knob_get, "NAME", 1, NULL,
	  "one knob in full", NULL },
	{ "knob", "set", cmd_knob_set, "NAME=VALUE [NAME=VALUE...]", -1, knob_set_opts,
	  "change knobs; several at once are all-or-nothing",
	  "One NAME=VALUE is a PUT /v1/knobs/NAME; several are one PATCH /v1/knobs, applied in the\n"
	  "order given and rolled back together if the kernel refuses one. A VALUE of decimal digits\n"
	  "(optionally with '-') is sent as a JSON integer, anything else as a string. A knob that\n"
	  "already has its value is not written; when every one has, nothing is written or recorded\n"
	  "and the answer says unchanged (exit 0), so a retry is harmless.\n"
	  "Example: mempolicyctl knob set thp.enabled=madvise thp.khugepaged.pages_to_scan=4096" },
	{ "profile", "list", cmd_profile_list, "", 0, NULL,
	  "the profiles directory: each profile's state (ok, degraded, invalid with file:line:column)", NULL },
	{ "profile", "show", cmd_profile_show, "NAME", 1, NULL,
	  "one profile merged with its includes: every key, its comparator, on-drift and source line", NULL },
	{ "profile", "diff", cmd_profile_diff, "NAME", 1, NULL,
	  "dry run: each key now and wanted, in sync or not, and what an apply would do (nothing is written)",
	  "Example: mempolicyctl profile diff db" },
	{ "profile", "apply", cmd_profile_apply, "NAME", 1, profile_apply_opts,
	  "activate a profile: its knobs, cgroup mems and pools made so, as one profile.apply job",
	  "Validates the whole profile first: an invalid one changes nothing (its file:line:column is\n"
	  "printed). Keys already in sync are not written; keys this kernel lacks are reported\n"
	  "unsupported. Waits for the job and prints each key's outcome; exit 1 unless it ended ok\n"
	  "(partial: a pool short of its target at the deadline, with why). Ctrl-C stops waiting,\n"
	  "not the job.\n"
	  "Example: mempolicyctl profile apply db" },
	{ "profile", "verify", cmd_profile_verify, "", 0, profile_verify_opts,
	  "the profile in force against the kernel now: every key out of sync, expected and actual",
	  "Each managed key is read again now. Without --exit-code the exit status is 0 whenever the\n"
	  "daemon answered; with it, 0 means every key in sync and the profile applied.\n"
	  "Example: mempolicyctl profile verify --exit-code" },
	{ "profile", "drift", cmd_profile_drift, "", 0, profile_drift_opts,
	  "the drift history: each managed key that left the profile, who changed it, what its policy did",
	  "Newest first. CAUSE is the writing process (pid, comm, its systemd unit) when a write event named\n"
	  "it, kernel when the value changed with no write (a pool shrunk, min_free_kbytes raised), unknown\n"
	  "otherwise; ACTION is restored (written back), reported, yielded (no longer managed until the next\n"
	  "apply) or restore_failed. A drift that lasts is one line, COUNT the times it was seen.\n"
	  "Example: mempolicyctl profile drift --key thp.defrag" },
	{ "history", "", cmd_history_list, "", 0, history_opts,
	  "recorded operations, newest first", NULL },
	{ "history", "show", cmd_history_show, "ID", 1, NULL,
	  "one operation in full, with its knob changes", NULL },
	{ "history", "export", cmd_history_export, "", 0, history_export_opts,
	  "every operation in full as JSON lines, newest first (keep them before retention removes them)",
	  "Streamed a page at a time, so it works on a history of any size: mempolicyctl history export > ops.jsonl" },
	{ "history", "stats", cmd_history_stats, "", 0, history_stats_opts,
	  "per-page resize latency: min, quartiles, max, mean, stddev (mmtests style, ms)",
	  "Quartiles are floor nearest rank without interpolation, stddev is the sample one (n-1)." },
	{ "history", "compare", cmd_history_compare, "ID[:ID...] ID[:ID...] [...]", 16, NULL,
	  "operations side by side: a row per metric, a column per run, change vs the first in %",
	  "Probes give their figures per pass, resizes pages and per-page latency quartiles, every\n"
	  "operation its counter deltas (vmstat.*, numastat.NODE.*).\n"
	  "A column may be several runs, ID:ID:ID (several runs of one probe): their figures are\n"
	  "samples, the cell shows their median, its change vs the first column's median in % with\n"
	  "that change's 95% interval [lo, hi] beside it (Hodges-Lehmann), starred when the\n"
	  "difference is proven (Mann-Whitney U p < 0.05); fewer than 9 runs is unreliable.\n"
	  "Example: mempolicyctl history compare 12 15 19\n"
	  "Example: mempolicyctl history compare 12:14:16:18:20:22:24:26:28 13:15:17:19:21:23:25:27:29" },
	{ "probe", "list", cmd_probe_list, "", 0, NULL,
	  "the probe kinds (measurements the daemon runs in a child)", NULL },
	{ "probe", "run", cmd_probe_run, "KIND [NAME=VALUE...]", -1, probe_run_opts,
	  "run a probe as a job and wait for its figures",
	  "NAME=VALUE members of the request: policy.mode=preferred policy.nodes=1 nests one level;\n"
	  "a VALUE starting with [ or { is JSON; digits are integers (cpus, cpunodes and policy.nodes\n"
	  "stay lists). Exit 1 unless it ended ok.\n"
	  "Example: mempolicyctl probe run touch size=64M cpus=0 policy.mode=bind policy.nodes=0" },
	{ "experiment", "run", cmd_experiment_run, "[--] CMD [ARGS...] | NAME=VALUE...", -1, experiment_run_opts,
	  "which setting is faster, with 95 % confidence: arms compared on a probe or your program",
	  "Rounds are interleaved in ABBA blocks (the order within a block random, from the recorded\n"
	  "seed), warm-ups kept apart; every knob is saved first and put back on every path, a crash\n"
	  "included (at the next start). Each arm is compared with the first per metric: the change of\n"
	  "medians with its 95 % interval, Mann-Whitney's p, ministat's verdict. A program runs as you,\n"
	  "under the arm's policy, only while this command waits: Ctrl-C ends its experiment at the next\n"
	  "run (a probe's goes on: `experiment cancel ID`).\n"
	  "Example: mempolicyctl experiment run --arm always:thp.enabled=always --arm madvise:thp.enabled=madvise \\\n"
	  "           --rounds 10 -- ./my-bench --size 4G\n"
	  "         mempolicyctl experiment run --arm always:thp.enabled=always --arm never:thp.enabled=never \\\n"
	  "           --probe sparse-touch threads=2 size=256M" },
	{ "experiment", "list", cmd_experiment_list, "", 0, NULL,
	  "experiments, newest first", NULL },
	{ "experiment", "show", cmd_experiment_show, "ID", 1, NULL,
	  "one experiment: its comparisons computed again from the stored samples", NULL },
	{ "experiment", "samples", cmd_experiment_samples, "ID", 1, NULL,
	  "an experiment's raw samples, per run and metric (warm-ups marked)", NULL },
	{ "experiment", "cancel", cmd_experiment_cancel, "ID", 1, NULL,
	  "stop an experiment before its next run; its settings are put back", NULL },
	{ "advise", "", cmd_advise, "", 0, advise_opts,
	  "settings this host's experiments found better beyond a floor, with evidence and costs",
	  "From experiments on this kernel release and topology only. Each piece of advice names the\n"
	  "experiments, rounds, interval and p, what it cost where it was worse, and the profile\n"
	  "fragment that would apply it; a setting better on one workload and worse on another is\n"
	  "shown as a contradiction. Nothing is applied: --apply NAME runs the profile apply's dry run\n"
	  "(POST /v1/profile) of a profile you put the fragments in, and says which advice it lacks;\n"
	  "`profile apply NAME` then applies it." },
	{ "pool", "list", cmd_pool_list, "", 0, NULL,
	  "hugetlb pools: every page size, with pages and free pages per node", NULL },
	{ "pool", "resize", cmd_pool_resize, "SIZE", 1, pool_resize_opts,
	  "grow or shrink a pool in batches, measuring the latency per page",
	  "Waits for the job (a progress bar on a terminal) and prints per node what was asked, what\n"
	  "the kernel gave and the latency per page. Exit 1 unless the job ended ok. Ctrl-C stops\n"
	  "waiting, not the job: use `job cancel ID`.\n"
	  "Example: mempolicyctl pool resize 2M --node 0=512 --node 1=512 --batch 16" },
	{ "pool", "avail", cmd_pool_avail, "SIZE", 1, pool_avail_opts,
	  "can K pages be had now: from free pages, or how much the pool must grow", NULL },
	{ "job", "list", cmd_job_list, "", 0, job_list_opts,
	  "jobs (pool resizes), newest first", NULL },
	{ "job", "show", cmd_job_show, "ID", 1, job_show_opts,
	  "one job: status, progress, per-node outcome (--wait: until it ends)", NULL },
	{ "job", "cancel", cmd_job_cancel, "ID", 1, NULL,
	  "cancel a job; a running resize stops before its next batch", NULL },
	{ "run", "", cmd_run, "[--] CMD [ARGS...]", -1, run_opts,
	  "run CMD under a memory policy, as numactl does: here, as you, its exit status yours",
	  "As numactl: the daemon checks the policy and CPUs and records the launch (one request),\n"
	  "then this process sets them on itself and execs CMD, which keeps this terminal, stdin,\n"
	  "stdout, stderr and environment; the exit status is CMD's (127: not found, 126: not\n"
	  "executable). Nothing is recorded when CMD cannot be found. Options end at CMD.\n"
	  "Example: mempolicyctl run -m 1 -N 1 -- ./bench --size 4G\n"
	  "         mempolicyctl run --detach --membind 1 --watch -- ./bench --size 4G" },
	{ "proc", "migrate", cmd_proc_migrate, "PID", 1, proc_migrate_opts,
	  "move a process's pages between nodes (migrate_pages), before/after recorded",
	  "Waits for the job (a progress bar on a terminal) and prints the pages per node before and\n"
	  "after. Root, the admin group, or the process's own user.\n"
	  "Example: mempolicyctl proc migrate 4242 --from 0 --to 1" },
	{ "proc", "collapse", cmd_proc_collapse, "PID", 1, proc_collapse_opts,
	  "collapse a process's anonymous memory into huge pages (MADV_COLLAPSE)", NULL },
	{ "proc", "show", cmd_proc_show, "PID", 1, proc_show_opts,
	  "where a process's memory is: per node base, THP and hugetlb pages; policies, locality",
	  "Read from /proc/PID/numa_maps, smaps and status by the daemon. Root and the admin group may\n"
	  "read any process, other users their own. Record it with `curl .../v1/processes/PID?sample=true`\n"
	  "or launch with `run --watch`; `proc watch` shows the records." },
	{ "proc", "watch", cmd_proc_watch, "PID", 1, proc_watch_opts,
	  "a process's placement over time: its recorded samples, per node, THP, locality", NULL },
	{ "schedule", "add", cmd_schedule_add, "", 0, schedule_add_opts,
	  "resize a hugetlb pool on a cron schedule",
	  "Example: mempolicyctl schedule add --cron \"0 2 * * *\" --size 2M --node 0=4096" },
	{ "schedule", "list", cmd_schedule_list, "", 0, schedule_list_opts,
	  "schedules with their next and last run, by id, a page at a time", NULL },
	{ "schedule", "show", cmd_schedule_show, "ID", 1, NULL,
	  "one schedule in full", NULL },
	{ "schedule", "rm", cmd_schedule_rm, "ID", 1, NULL,
	  "delete a schedule (jobs it started stay in history)", NULL },
	{ "cgroup", "show", cmd_cgroup_show, "PATH", 1, NULL,
	  "a cgroup's cpuset mems (v2 or v1), effective mems, processes and children (PATH / is the root)",
	  NULL },
	{ "cgroup", "mems", cmd_cgroup_mems, "PATH NODES", 2, NULL,
	  "set a cgroup's cpuset.mems (root or the admin group); recorded as cgroup.mems",
	  "NODES is a node list such as 0-1,3 (\"\" empties it: on cgroup v2 that inherits the parent's).\n"
	  "On v2 the kernel migrates the tasks' pages; on v1 only with cpuset.memory_migrate = 1.\n"
	  "Example: mempolicyctl cgroup mems system.slice/db.service 1" },
	{ "token", "create", cmd_token_create, "", 0, token_create_opts,
	  "a bearer token for the TLS listener (root only); the secret is printed once",
	  "The secret goes alone to stdout, so `token create ... > FILE` makes a --token-file.\n"
	  "Example: mempolicyctl token create --name ci --scope admin --expires 30d > ci-token" },
	{ "token", "list", cmd_token_list, "", 0, NULL,
	  "tokens (never their secrets): scope, expiry, last use, revocation (root only)", NULL },
	{ "token", "revoke", cmd_token_revoke, "NAME", 1, NULL,
	  "revoke a token at once; its name stays taken (root only)", NULL },
};
const size_t cli_ncommands = sizeof cli_commands / sizeof cli_commands[0];
