// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* broker.c - requests to "fastlocal daemon", one connection each. */
#include "broker.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "common/clock.h"
#include "base/config.h"
#include "fastlocal.h"
#include "base/libc.h"

/* A broker that does not answer in time is not asked again for this long:
 * the application's calls must not stall on every new connection while it
 * is slow or flooded (docs/security.md); its connections stay on TCP. */
#define FL_BROKER_QUIET_S 10

/*
 * Owned by this file: until when (CLOCK_MONOTONIC seconds) the broker is
 * not asked. Relaxed atomics: two threads that race at worst both ask once
 * more, or both wait.
 */
static int64_t fl_broker_quiet_until;

/* Connects to the broker, with send and receive bounded by 250 ms (for a
 * unix socket SO_SNDTIMEO bounds connect() too); the broker answers in well
 * under a millisecond. An fd, or -errno. */
static int fl_broker_connect(void)
{
	const char *path = fl_config()->broker;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { 0, 250000 };
	int s, err;

	if (!path[0])
		return -ENOENT;
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, strlen(path) + 1);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (libc_setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    libc_setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    libc_connect(s, (struct sockaddr *)&a, sizeof(a))) {
		err = -errno;
		libc_close(s);
		return err;
	}
	return s;
}

/* Sends req (with fd as SCM_RIGHTS when fd >= 0), receives the reply and
 * at most one fd (into *rfd, or -1). 0 or -errno. */
static int fl_broker_exchange(const struct fl_broker_req *req, int fd, struct fl_broker_rep *rep,
			      int *rfd)
{
	union fl_broker_cmsg cm;
	struct iovec iov = { (void *)req, sizeof(*req) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;
	int s, err = 0;

	*rfd = -1;
	if (fl_clock_ns(CLOCK_MONOTONIC) / 1000000000 <
	    __atomic_load_n(&fl_broker_quiet_until, __ATOMIC_RELAXED))
		return -ETIMEDOUT;
	s = fl_broker_connect();
	if (s < 0) {
		err = s == -EAGAIN ? -ETIMEDOUT : s;
		goto quiet;
	}
	if (fd >= 0)
		fl_broker_attach_fd(&mh, &cm, fd);
	if (libc_sendmsg(s, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(*req)) {
		err = errno == EAGAIN ? -ETIMEDOUT : errno ? -errno : -EIO;
		goto out;
	}
	memset(&cm, 0, sizeof(cm));
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = rep;
	iov.iov_len = sizeof(*rep);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	n = libc_recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	for (c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(rfd, CMSG_DATA(c), sizeof(int));
	if (n != (ssize_t)sizeof(*rep) || rep->magic != FL_BROKER_MAGIC)
		err = n < 0 ? (errno == EAGAIN ? -ETIMEDOUT : -errno) : -EPROTO;
	else if (rep->err)
		err = -rep->err;
	if (err && *rfd >= 0) {
		libc_close(*rfd);
		*rfd = -1;
	}
out:
	libc_close(s);
quiet:
	if (err == -ETIMEDOUT)
		__atomic_store_n(&fl_broker_quiet_until,
				 fl_clock_ns(CLOCK_MONOTONIC) / 1000000000 + FL_BROKER_QUIET_S,
				 __ATOMIC_RELAXED);
	return err;
}

int fl_broker_call(uint32_t op, int fd, uint32_t slot, struct fl_broker_rep *rep)
{
	struct fl_broker_req req = { FL_BROKER_MAGIC, FL_ABI_VERSION, op, slot };
	struct fl_broker_rep r;
	int saved = errno, rfd, err;

	memset(&r, 0, sizeof(r));
	err = fl_broker_exchange(&req, fd, &r, &rfd);
	if (rfd >= 0)
		libc_close(rfd); /* only HELLO sends one */
	if (rep)
		*rep = r;
	errno = saved;
	return err;
}

int fl_broker_hello(struct fl_slot **slots, uint32_t *nslots, uint32_t *domain)
{
	struct fl_broker_req req = { FL_BROKER_MAGIC, FL_ABI_VERSION, FL_BROKER_HELLO, 0 };
	struct fl_broker_rep r;
	int saved = errno, rfd, err;
	void *p;

	memset(&r, 0, sizeof(r));
	err = fl_broker_exchange(&req, -1, &r, &rfd);
	if (!err && (rfd < 0 || !r.nslots || r.nslots > FL_SLOTS_MAX || r.domain >= FL_DOMAINS_MAX))
		err = -EPROTO;
	if (!err) {
		/* The mapping holds the map: the fd is not kept. */
		p = mmap(NULL, (size_t)r.nslots * sizeof(struct fl_slot), PROT_READ | PROT_WRITE,
			 MAP_SHARED, rfd, 0);
		if (p == MAP_FAILED) {
			err = -errno;
		} else {
			*slots = p;
			*nslots = r.nslots;
			*domain = r.domain;
		}
	}
	if (rfd >= 0)
		libc_close(rfd);
	errno = saved;
	return err;
}
