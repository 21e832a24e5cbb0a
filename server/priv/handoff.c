/* The serving side's end of the hand-off channel (see handoff.h). */
#include "server/priv/handoff.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int handoff_chan = -1;   /* owned from priv_handoff_adopt to priv_handoff_release */

uint64_t priv_conn_id(int fd)
{
	uint64_t c = 0;
	socklen_t l = sizeof c;

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &l) < 0 || l != sizeof c)
		return 0;
	return c;
}

/* See priv_handoff_read: the descriptors of mh, the first kept in *first when first is not NULL. */
static int cmsg_fds(struct msghdr *mh, int *first)
{
	int n = 0;

	if (first)
		*first = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++, n++) {
				int f;
				memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
				if (first && *first < 0)
					*first = f;
				else
					close(f);
			}
	return n;
}

int priv_handoff_chan(void)
{
	return handoff_chan;
}

void priv_handoff_adopt(int chan)
{
	handoff_chan = chan;
}

void priv_handoff_release(void)
{
	if (handoff_chan >= 0)
		close(handoff_chan);
	handoff_chan = -1;
}

int priv_handoff_read(int chan, int flags, struct priv_handoff *m, int *fd, int *nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof *m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b };
	ssize_t n;

	if (fd)
		*fd = -1;
	*nfds = 0;
	do
		n = recvmsg(chan, &mh, flags | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	*nfds = cmsg_fds(&mh, fd);
	if (n == 0)
		return 0;
	return (size_t)n == sizeof *m && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ? 1 : -EBADMSG;
}

static int handoff_recv(int chan, int flags, int *fd, uint64_t *id)
{
	struct priv_handoff m;
	int got, nfds, rc = priv_handoff_read(chan, flags, &m, &got, &nfds);

	*fd = -1;
	if (rc == -EWOULDBLOCK)
		return -EAGAIN;
	if (rc < 0 && rc != -EBADMSG)
		return rc == -ECONNRESET ? -EPIPE : rc;
	if (rc == 1 && m.magic == PRIV_HANDOFF_MAGIC && m.type == PRIV_HANDOFF_CONN && m.id && nfds == 1) {
		*fd = got;
		*id = m.id;
		return 0;
	}
	/* Whatever came attached is ours to close unless it is the one connection. */
	if (got >= 0)
		close(got);
	return rc == 0 ? -EPIPE : -EPROTO;
}

int priv_handoff_recv(int chan, int *fd, uint64_t *id)
{
	return handoff_recv(chan, 0, fd, id);
}

int priv_handoff_take(int chan, int *fd, uint64_t *id)
{
	return handoff_recv(chan, MSG_DONTWAIT, fd, id);
}

void priv_handoff_closed(int chan, uint64_t id)
{
	struct priv_handoff m = { .magic = PRIV_HANDOFF_MAGIC, .type = PRIV_HANDOFF_CLOSED, .id = id };

	if (chan < 0 || !id)
		return;
	while (send(chan, &m, sizeof m, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

void priv_handoff_closed_many(int chan, const uint64_t *ids, unsigned n)
{
	struct priv_handoff m[PRIV_HANDOFF_BATCH];
	struct iovec iov[PRIV_HANDOFF_BATCH];
	struct mmsghdr mm[PRIV_HANDOFF_BATCH];
	unsigned k = 0, sent = 0;

	if (chan < 0)
		return;
	for (unsigned i = 0; i < n && k < PRIV_HANDOFF_BATCH; i++) {
		if (!ids[i])
			continue;
		m[k] = (struct priv_handoff){ .magic = PRIV_HANDOFF_MAGIC, .type = PRIV_HANDOFF_CLOSED, .id = ids[i] };
		iov[k] = (struct iovec){ .iov_base = &m[k], .iov_len = sizeof m[k] };
		mm[k] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[k], .msg_iovlen = 1 } };
		k++;
	}
	while (sent < k) {
		int r = sendmmsg(chan, mm + sent, k - sent, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;   /* the helper is gone: nothing to report to */
		sent += (unsigned)r;
	}
}

void priv_handoff_shutdown(int chan)
{
	if (chan >= 0)
		shutdown(chan, SHUT_RDWR);
}
