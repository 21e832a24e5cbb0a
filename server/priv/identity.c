/* The client of a connection, established by the helper from the kernel (see identity.h). */
#include "server/priv/identity.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
	pthread_mutex_t mu;          /* guards vfs and known (the helper's channel threads check at once) */
	int listen_fd;               /* owned: the helper's copy of the API's listener, -1 before init */
	uid_t serving_uid;
	struct priv_unix_vfs vfs;    /* the listener's bound file, once known */
	bool known;
} api = { .mu = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1 };

static int sockopt_int(int fd, int opt, int *v)
{
	socklen_t l = sizeof *v;

	return getsockopt(fd, SOL_SOCKET, opt, v, &l) < 0 ? -errno : l == sizeof *v ? 0 : -EPROTO;
}

/* The kernel's one answer on nl to a request of sequence number 1, into buf: its header, or NULL
 * with *rc. Anything not from the kernel (port 0) is no answer. */
static const struct nlmsghdr *diag_answer(int nl, void *buf, size_t cap, int *rc)
{
	struct sockaddr_nl from;
	socklen_t fl = sizeof from;
	const struct nlmsghdr *h = buf;
	ssize_t n;

	do
		n = recvfrom(nl, buf, cap, 0, (struct sockaddr *)&from, &fl);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		*rc = -errno;
		return NULL;
	}
	if (fl != sizeof from || from.nl_family != AF_NETLINK || from.nl_pid != 0 || !NLMSG_OK(h, (size_t)n) ||
	    h->nlmsg_seq != 1) {
		*rc = -EPROTO;
		return NULL;
	}
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *err = NLMSG_DATA(h);
		*rc = h->nlmsg_len >= NLMSG_LENGTH(sizeof *err) && err->error < 0 ? err->error : -EPROTO;
		return NULL;
	}
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg))) {
		*rc = -EPROTO;
		return NULL;
	}
	return h;
}

int priv_unix_vfs_of(int fd, struct priv_unix_vfs *vfs)
{
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = { 0 };
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	_Alignas(struct nlmsghdr) char buf[1024];
	const struct nlmsghdr *h;
	const struct unix_diag_msg *m;
	const struct rtattr *a;
	struct stat st;
	uint64_t cookie;
	socklen_t cl = sizeof cookie;
	int nl, rc = -ENODATA, len;

	if (fstat(fd, &st) < 0 || getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &cl) < 0)
		return -errno;
	if (cl != sizeof cookie || st.st_ino > UINT32_MAX)
		return -EOVERFLOW;
	/* By inode and cookie: the answer is about this very socket object, not one that had the
	 * inode number before it. */
	req.h = (struct nlmsghdr){ .nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY,
				   .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 };
	req.r = (struct unix_diag_req){ .sdiag_family = AF_UNIX, .udiag_ino = (uint32_t)st.st_ino,
					.udiag_show = UDIAG_SHOW_VFS,
					.udiag_cookie = { (uint32_t)cookie, (uint32_t)(cookie >> 32) } };
	if ((nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) < 0)
		return -errno;
	if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
		rc = -errno;
		goto out;
	}
	if (!(h = diag_answer(nl, buf, sizeof buf, &rc)))
		goto out;
	m = NLMSG_DATA(h);
	if (m->udiag_family != AF_UNIX || m->udiag_ino != (uint32_t)st.st_ino || m->udiag_cookie[0] != (uint32_t)cookie ||
	    m->udiag_cookie[1] != (uint32_t)(cookie >> 32)) {
		rc = -EPROTO;
		goto out;
	}
	len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
	for (a = (const struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == UNIX_DIAG_VFS && RTA_PAYLOAD(a) >= sizeof(struct unix_diag_vfs)) {
			const struct unix_diag_vfs *v = RTA_DATA(a);
			*vfs = (struct priv_unix_vfs){ .ino = v->udiag_vfs_ino, .dev = v->udiag_vfs_dev };
			rc = 0;
			break;
		}
out:
	close(nl);
	return rc;
}

/* The listener's file: the one recorded, or asked now (called with api.mu held). */
static int listener_vfs(struct priv_unix_vfs *vfs)
{
	int rc = 0;

	if (!api.known && api.listen_fd >= 0 && (rc = priv_unix_vfs_of(api.listen_fd, &api.vfs)) == 0)
		api.known = true;
	if (api.listen_fd < 0)
		rc = -EPERM;   /* a helper given no listener: no connection is the API socket's */
	*vfs = api.vfs;
	return rc;
}

int priv_identity_init(int listen_fd, uid_t serving_uid)
{
	struct priv_unix_vfs vfs;
	int rc;

	pthread_mutex_lock(&api.mu);
	api.listen_fd = listen_fd;
	api.serving_uid = serving_uid;
	rc = listener_vfs(&vfs);
	pthread_mutex_unlock(&api.mu);
	return rc;
}

int priv_identity(int fd, struct priv_ident *who)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	struct priv_unix_vfs mine, theirs;
	struct ucred uc;
	socklen_t l = sizeof uc, gl = sizeof who->groups;
	struct stat st;
	int v, rc;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	if ((rc = sockopt_int(fd, SO_DOMAIN, &v)) < 0)
		return rc;
	if (v != AF_UNIX)
		return -EAFNOSUPPORT;
	if ((rc = sockopt_int(fd, SO_TYPE, &v)) < 0)
		return rc;
	if (v != SOCK_STREAM)
		return -EPROTOTYPE;
	/* A listener reads as bound to the API socket's file too, and SO_PEERCRED of it is whoever
	 * called listen(): root, for the API socket. */
	if ((rc = sockopt_int(fd, SO_ACCEPTCONN, &v)) < 0)
		return rc;
	if (v)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&api.mu);
	rc = listener_vfs(&mine);
	pthread_mutex_unlock(&api.mu);
	if (rc < 0)
		return rc;
	/* Accepted on the API socket: the kernel gave it the listener's file. A client's end, a
	 * socketpair or an unbound socket has none; a socket of another listener (one the serving
	 * side bound where a root client might connect) has another one. */
	if ((rc = priv_unix_vfs_of(fd, &theirs)) == -ENODATA || rc == -ENOENT)
		return -EPERM;
	if (rc < 0)
		return rc;
	if (theirs.ino != mine.ino || theirs.dev != mine.dev)
		return -EPERM;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) < 0 || l != sizeof uc)
		return -ENOTCONN;
	/* The serving side connecting to its own socket would otherwise be a client like any. */
	if (uc.uid == api.serving_uid)
		return -EACCES;
	/* The client hung up (or shut its sending side): its identity ends with the connection,
	 * whatever the serving side still holds. */
	if (poll(&p, 1, 0) < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
		return -ENOTCONN;
	who->pid = uc.pid;
	who->uid = uc.uid;
	who->gid = uc.gid;
	/* As the API reads them: unreadable (or more than a spawn carries) grants none. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, who->groups, &gl) < 0)
		gl = 0;
	who->ngroups = gl / sizeof *who->groups;
	return 0;
}
