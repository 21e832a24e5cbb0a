/* Who is on the other end of a connection: SO_PEERCRED on the Unix socket, and whether that uid is
 * root or in the admin group (primary or supplementary, as the group database says now). */
#include "server/api/peer.h"

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static bool in_group(uid_t uid, gid_t gid, gid_t want, char *name, size_t name_len)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	gid_t groups[256];
	int ng = 256;

	if (gid == want)
		return true;
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || !res)
		return false;
	snprintf(name, name_len, "%s", pw.pw_name);
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &ng) < 0)
		return false;
	for (int i = 0; i < ng; i++)
		if (groups[i] == want)
			return true;
	return false;
}

void peer_identify(int fd, bool on_unix, bool have_admin_gid, gid_t admin_gid, struct caller *c)
{
	struct ucred uc;
	socklen_t l = sizeof uc;

	memset(c, 0, sizeof *c);
	if (!on_unix)
		return;   /* TCP: unknown caller, read-only */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) < 0)
		return;
	c->known = true;
	c->uid = uc.uid;
	c->gid = uc.gid;
	c->pid = uc.pid;
	c->admin = uc.uid == 0;
	/* Root is admin whatever its groups: the group database is read only for whom it decides. */
	if (have_admin_gid && !c->admin && in_group(uc.uid, uc.gid, admin_gid, c->name, sizeof c->name))
		c->admin = true;
	if (!c->name[0]) {
		struct passwd pw, *res = NULL;
		char buf[4096];
		if (getpwuid_r(uc.uid, &pw, buf, sizeof buf, &res) == 0 && res)
			snprintf(c->name, sizeof c->name, "%s", pw.pw_name);
	}
}
