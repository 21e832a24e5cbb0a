#include "server/ops/drift_cause.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/kernel/proc.h"
#include "server/priv/act.h"

void drift_unit_of(const char *cgpath, char *unit, size_t len)
{
	const char *p = cgpath;

	unit[0] = '\0';
	while (p && *p) {
		const char *end;
		size_t n;
		p += strspn(p, "/");
		end = p + strcspn(p, "/");
		n = (size_t)(end - p);
		if ((n > 8 && !strncmp(end - 8, ".service", 8)) || (n > 6 && !strncmp(end - 6, ".scope", 6)))
			snprintf(unit, len, "%.*s", (int)n, p);
		p = end;
	}
}

/* The first line of text that starts with prefix, without it, into out. */
static bool line_after(const char *text, const char *prefix, char *out, size_t len)
{
	size_t pl = strlen(prefix);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, prefix, pl)) {
			snprintf(out, len, "%.*s", (int)strcspn(l + pl, "\n"), l + pl);
			return true;
		}
	return false;
}

/* The program's path: exe opened O_PATH where the privilege is (another user's process needs the
 * helper's ptrace access), then the handle's own name. */
static void read_exe(const char *procfs_root, pid_t pid, char *out, size_t len)
{
	char link[64];
	ssize_t n;
	int fd = act_proc_open(procfs_root, pid, PROC_EXE);

	out[0] = '\0';
	if (fd < 0)
		return;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if ((n = readlink(link, out, len - 1)) < 0)
		n = 0;
	out[n] = '\0';
	close(fd);
}

static void read_details(const char *procfs_root, pid_t pid, struct drift_writer *w)
{
	char *text = NULL;   /* owned */
	char uid[64], ppid[32];
	size_t len;

	if (proc_read_file(procfs_root, pid, "comm", 4096, &text, &len) == 0)
		snprintf(w->comm, sizeof w->comm, "%.*s", (int)strcspn(text, "\n"), text);
	free(text);
	text = NULL;
	if (proc_read_file(procfs_root, pid, "status", 64 * 1024, &text, &len) == 0 && line_after(text, "Uid:", uid, sizeof uid)) {
		unsigned long u;
		if (sscanf(uid, "%lu", &u) == 1) {
			w->have_uid = true;
			w->uid = (uid_t)u;
		}
	}
	if (text && line_after(text, "PPid:", ppid, sizeof ppid))
		w->ppid = (pid_t)strtol(ppid, NULL, 10);
	free(text);
	text = NULL;
	/* The unified hierarchy's line, else systemd's own v1 hierarchy. */
	if (proc_read_file(procfs_root, pid, "cgroup", 64 * 1024, &text, &len) == 0) {
		const char *v1 = strstr(text, ":name=systemd:");
		if (line_after(text, "0::", w->cgroup, sizeof w->cgroup))
			drift_unit_of(w->cgroup, w->unit, sizeof w->unit);
		else if (v1) {
			v1 += strlen(":name=systemd:");
			snprintf(w->cgroup, sizeof w->cgroup, "%.*s", (int)strcspn(v1, "\n"), v1);
			drift_unit_of(w->cgroup, w->unit, sizeof w->unit);
		}
	}
	free(text);
	read_exe(procfs_root, pid, w->exe, sizeof w->exe);
}

void drift_attribute(const char *procfs_root, pid_t pid, int pidfd, bool group_pidfds, struct drift_writer *w)
{
	int own = -1;   /* owned: the pidfd opened here without the event's */

	*w = (struct drift_writer){ .pid = pid };
	if (pid <= 0) {
		snprintf(w->why, sizeof w->why, "the event named no process");
		return;
	}
	if (pidfd < 0 && group_pidfds) {
		snprintf(w->why, sizeof w->why, "the writer had exited and been reaped before its event was read");
		return;
	}
	if (pidfd < 0 && (pidfd = own = proc_pidfd(pid)) < 0) {
		snprintf(w->why, sizeof w->why, "the writer had exited before its event was read");
		return;
	}
	read_details(procfs_root, pid, w);
	/* The bracket: while the process the pidfd names lives (a zombie too), its pid names nobody
	 * else, so what was read is its own. */
	if (proc_pidfd_alive(pidfd) < 0) {
		*w = (struct drift_writer){ .pid = pid };
		snprintf(w->why, sizeof w->why, "the writer exited while it was read: its pid may name another process");
	} else {
		w->named = true;
		w->verified = own < 0;
	}
	if (own >= 0)
		close(own);
}

static json_t *str_or_null(const char *s)
{
	return s[0] ? json_string(s) : json_null();
}

json_t *drift_writer_json(const struct drift_writer *w)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "pid", w->pid > 0 ? json_integer(w->pid) : json_null());
	json_object_set_new(o, "comm", str_or_null(w->comm));
	json_object_set_new(o, "exe", str_or_null(w->exe));
	json_object_set_new(o, "uid", w->have_uid ? json_integer(w->uid) : json_null());
	json_object_set_new(o, "unit", str_or_null(w->unit));
	json_object_set_new(o, "cgroup", str_or_null(w->cgroup));
	json_object_set_new(o, "verified", json_boolean(w->verified));
	if (!w->named)
		json_object_set_new(o, "unnamed", json_string(w->why));
	return o;
}
