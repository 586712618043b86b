// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* broker_serve.c - one request of "fastlocal daemon": checks, then the maps. */
#include "broker_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "../common/broker_proto.h"
#include "../common/enroll_core.h"
#include "../common/kernel_compat.h"
#include "../common/key.h"

#define FL_MAX_FDS 4 /* a request carries one; more are closed and refused */

int fl_broker_open(struct fl_broker *b, const struct fl_pin_dir *pd, char *err, size_t errlen)
{
	void *p;

	memset(b, 0, sizeof(*b));
	if (fl_pins_open(&b->pins, pd, err, errlen))
		return -1;
	if (b->pins.state != FL_PINS_PRESENT || b->pins.meta.abi_version != FL_ABI_VERSION) {
		snprintf(err, errlen, "fastlocal (abi %d) is not loaded in %s; run 'fastlocal load' first",
			 FL_ABI_VERSION, pd->path);
		fl_pins_close(&b->pins);
		return -1;
	}
	b->em.sk = b->pins.fd[FL_PIN_SK];
	b->em.slot_index = b->pins.fd[FL_PIN_SLOT_INDEX];
	b->em.sockhash = b->pins.fd[FL_PIN_SOCKHASH];
	p = mmap(NULL, sizeof(struct fl_ustats), PROT_READ | PROT_WRITE, MAP_SHARED,
		 b->pins.fd[FL_PIN_USTATS], 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the counters: %s", strerror(errno));
		fl_pins_close(&b->pins);
		return -1;
	}
	b->ustats = p;
	p = mmap(NULL, sizeof(struct fl_joined), PROT_READ | PROT_WRITE, MAP_SHARED,
		 b->pins.fd[FL_PIN_JOINED], 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the joined counters: %s", strerror(errno));
		munmap(b->ustats, sizeof(*b->ustats));
		fl_pins_close(&b->pins);
		return -1;
	}
	b->joined = p;
	if (fl_domains_open(&b->dom, b->pins.fd[FL_PIN_DOMAINS], b->pins.fd[FL_PIN_DOM_UID], err,
			    errlen)) {
		munmap(b->joined, sizeof(*b->joined));
		munmap(b->ustats, sizeof(*b->ustats));
		fl_pins_close(&b->pins);
		return -1;
	}
	return 0;
}

void fl_broker_close(struct fl_broker *b)
{
	fl_domains_close(&b->dom);
	if (b->ustats)
		munmap(b->ustats, sizeof(*b->ustats));
	b->ustats = NULL;
	if (b->joined)
		munmap(b->joined, sizeof(*b->joined));
	b->joined = NULL;
	fl_pins_close(&b->pins);
}

static void fl_count(struct fl_broker *b, enum fl_ustat idx)
{
	__atomic_fetch_add(&b->ustats->c[idx], 1, __ATOMIC_RELAXED);
}

/*
 * IMPORTANT: the checks every request about a socket passes first.
 * The fd must be a socket whose inode belongs to the caller: a socket's
 * inode takes the fsuid of the process that created it (socket(), or
 * accept() for an accepted one), so a user cannot enroll, unenroll or read
 * the record of a socket someone else created, even one handed to it over
 * a unix socket. Root callers may pass any socket. Then it must be TCP.
 */
static int fl_check_socket(const struct ucred *cred, int fd)
{
	struct stat st;

	if (fd < 0)
		return -EBADF;
	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	if (cred->uid != 0 && st.st_uid != cred->uid)
		return -EPERM;
	return fl_is_tcp_socket(fd) ? 0 : -EPROTOTYPE;
}

/* The caller's domain (root: 0), never created here. */
static int fl_caller_domain(struct fl_broker *b, const struct ucred *cred)
{
	int dom = fl_domain_of(&b->dom, cred->uid, false);

	return dom < 0 ? -EPERM : dom;
}

/* Who enrolled, for "fastlocal conns": the caller's pid and name. */
static void fl_fill_owner(struct fl_slot_ref *ref, pid_t pid)
{
	char path[64], comm[sizeof(ref->comm)];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
	}
	comm[n > 0 ? n : 0] = 0;
	if (n > 0 && comm[n - 1] == '\n')
		comm[n - 1] = 0;
	fl_ec_owner(ref, (__u32)pid, comm);
}

/* The enrollment core's view (enroll_core.h): the broker reaches every
 * domain's slots and calls the kernel's own ioctl. */
static const struct fl_slot *fl_serve_slot_any(void *ctx, uint32_t ref)
{
	struct fl_broker *b = ctx;

	return fl_domains_slot(&b->dom, ref);
}

static int fl_serve_fionread(int fd, int *n)
{
	return ioctl(fd, FIONREAD, n);
}

static void fl_serve_env(struct fl_broker *b, struct fl_ec_env *env)
{
	env->em = b->em;
	env->established = b->pins.fd[FL_PIN_ESTABLISHED];
	env->joined = b->joined;
	env->slot_any = fl_serve_slot_any;
	env->fionread = fl_serve_fionread;
	env->ctx = b;
}

/*
 * ENROLL: the caller claimed a slot in its own domain and initialised it;
 * that slot must hold this socket's cookie (so a user cannot point its
 * entry at a slot of another domain, nor at a slot of another socket).
 * The key is built here from the kernel's own record of the socket, never
 * taken from the caller, so a user cannot name another's key.
 */
static int fl_do_enroll(struct fl_broker *b, const struct ucred *cred, int fd, __u32 ref_slot,
			__u32 flags, struct fl_broker_rep *rep)
{
	struct sockaddr_storage local, remote;
	socklen_t llen = sizeof(local), rlen = sizeof(remote), olen;
	struct fl_slot_ref ref = { 0 };
	struct fl_ec_env env;
	struct fl_slot *slot;
	__u64 cookie = 0, netns = 0;
	struct fl_sk st;
	__u32 seen;
	bool active;
	int dom = fl_caller_domain(b, cred), err;

	if (dom < 0)
		return dom;
	slot = fl_domains_slot(&b->dom, ref_slot);
	if (FL_SLOT_DOM(ref_slot) != (__u32)dom || !slot)
		return -EPERM;
	olen = sizeof(cookie);
	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &olen) || !cookie)
		return -EPROTO;
	if (__atomic_load_n(&slot->owner, __ATOMIC_ACQUIRE) != cookie)
		return -EPERM;
	if (fl_em_read(b->em.sk, fd, &st)) {
		fl_count(b, FL_USTAT_FB_NO_ISN); /* the caller's own counters are private */
		return -ENODATA;
	}
	if (st.flags & FL_SK_ENROLLED)
		return -EALREADY;
	if (getsockname(fd, (struct sockaddr *)&local, &llen) ||
	    getpeername(fd, (struct sockaddr *)&remote, &rlen))
		return -errno;
	olen = sizeof(netns);
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &netns, &olen) || !netns)
		return -ENOPROTOOPT;
	/* The broker cannot tell whether the peer's address is of the
	 * caller's namespace: the core always asks fl_established. */
	fl_serve_env(b, &env);
	err = fl_ec_keys(&env, &st, netns, &local, &remote, false);
	if (err == -ENODATA)
		fl_count(b, FL_USTAT_FB_NO_NONCE);
	if (err == -EREMOTE)
		fl_count(b, FL_USTAT_FB_NOT_LOCAL);
	if (err)
		return err;
	/* The caller stays pending on TCP and asks again (broker_proto.h,
	 * FL_BROKER_MAY_WAIT): counted once per wait, as the shim's own
	 * back-end counts its own. */
	active = st.flags & FL_SK_ACTIVE;
	if ((flags & FL_BROKER_MAY_WAIT) && fl_ec_must_wait(&env, &st, &seen)) {
		if (!(flags & FL_BROKER_WAITED))
			fl_count(b, active ? FL_USTAT_SERVER_WAITS : FL_USTAT_PEER_WAITS);
		rep->server_port = active ? st.key.remote_port : 0;
		return -EINPROGRESS;
	}
	/* write_seq after the SYN: the verdict's baseline for tcp_sent. The
	 * caller could not set it (the ISN is in the record, which is ours). */
	__atomic_store_n(&slot->last_write_seq, st.snd_isn + 1, __ATOMIC_RELEASE);
	fl_fill_owner(&ref, cred->pid);
	err = fl_ec_insert(&env, fd, &st, ref_slot, cookie, &ref, 0);
	if (err) {
		fl_count(b, fl_em_insert_counter(err));
		return err;
	}
	fl_count(b, FL_USTAT_ENROLLED);
	fl_count(b, FL_USTAT_BROKER_ENROLLED);
	if (flags & FL_BROKER_WAITED)
		fl_count(b, active ? FL_USTAT_SERVER_CAME : FL_USTAT_PEER_CAME);
	return 0;
}

/*
 * LISTEN: the caller's socket listens (under the shim): its port is marked,
 * as a root shim's listen() marks it itself (preload/kernel/maps.h,
 * fl_maps_mark_listener). A port a user marks only lets connecting ends
 * to it join at their threshold, as every one did before ports were
 * marked at all.
 */
static int fl_do_listen(struct fl_broker *b, int fd)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a), olen;
	int on = 0;
	__u16 port;

	olen = sizeof(on);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen) || !on)
		return -EINVAL;
	if (getsockname(fd, (struct sockaddr *)&a, &len) || fl_key_port(&a, &port))
		return -EINVAL;
	fl_ec_note_server(b->joined, port);
	return 0;
}

/* The socket's record, if it is enrolled in the caller's domain. */
static int fl_own_record(struct fl_broker *b, const struct ucred *cred, int fd, struct fl_sk *st)
{
	int dom = fl_caller_domain(b, cred);

	if (dom < 0)
		return dom;
	if (fl_em_read(b->em.sk, fd, st) || !(st->flags & FL_SK_ENROLLED))
		return -ENODATA;
	return FL_SLOT_DOM(st->slot) == (__u32)dom ? 0 : -EPERM;
}

/*
 * UNENROLL: as fl_unenroll in the shim, which set BLIND|SEND_TCP on its
 * slot first. Only when everything the peer sent has been read (the peer's
 * slot may be in any domain: only the broker sees them all) and nothing is
 * queued does the entry leave the sockhash: nothing is lost
 * (docs/kernel.md#loss).
 */
static int fl_do_unenroll(struct fl_broker *b, const struct ucred *cred, int fd)
{
	struct fl_ec_env env;
	struct fl_slot *me;
	bool unpaired;
	struct fl_sk st;
	int err;

	err = fl_own_record(b, cred, fd, &st);
	if (err)
		return err == -ENODATA ? -ENOENT : err;
	me = fl_domains_slot(&b->dom, st.slot);
	if (!me || __atomic_load_n(&me->owner, __ATOMIC_ACQUIRE) != st.cookie)
		return -ENOENT;
	if (!(__atomic_load_n(&me->flags, __ATOMIC_SEQ_CST) & FL_SLOT_BLIND))
		return -EINVAL; /* the protocol: the peer is told first */
	fl_serve_env(b, &env);
	if (fl_ec_drained(&env, fd, &st, me))
		return -EBUSY;
	/* Read before the shim frees the slot for another socket. */
	unpaired = !__atomic_load_n(&me->peer_slot, __ATOMIC_RELAXED);
	err = fl_em_remove(&b->em, fd, &st);
	if (!err)
		fl_count(b, FL_USTAT_UNENROLLED);
	if (!err && unpaired)
		fl_count(b, FL_USTAT_UNPAIRED_LEFT);
	return err;
}

/* The request itself, checked; 0 or -errno, and what the reply carries. */
static int fl_dispatch(struct fl_broker *b, const struct ucred *cred, const struct fl_broker_req *q,
		       int fd, struct fl_broker_rep *rep, int *send_fd)
{
	struct fl_sk st;
	int r;

	if (q->op == FL_BROKER_PING) {
		rep->domain = fl_domains_count(&b->dom);
		return 0;
	}
	if (q->op == FL_BROKER_HELLO) {
		/* Root gets domain 0 (root in a container without the pins
		 * mounted); everyone else its own, made on first request. */
		r = fl_domain_of(&b->dom, cred->uid, true);
		if (r < 0)
			return r;
		rep->domain = (__u32)r;
		rep->nslots = b->dom.n[r];
		*send_fd = b->dom.fd[r];
		return 0;
	}
	r = fl_check_socket(cred, fd);
	if (r)
		return r;
	if ((q->op & FL_BROKER_OP_MASK) == FL_BROKER_ENROLL &&
	    !(q->op & ~(FL_BROKER_OP_MASK | FL_BROKER_MAY_WAIT | FL_BROKER_WAITED)))
		return fl_do_enroll(b, cred, fd, q->slot, q->op & ~FL_BROKER_OP_MASK, rep);
	switch (q->op) {
	case FL_BROKER_LISTEN:
		return fl_do_listen(b, fd);
	case FL_BROKER_UNENROLL:
		return fl_do_unenroll(b, cred, fd);
	case FL_BROKER_MARK_OFF:
		fl_em_mark_off(b->em.sk, fd);
		return 0;
	case FL_BROKER_ADOPT:
		r = fl_own_record(b, cred, fd, &st);
		if (!r) {
			rep->slot = st.slot;
			rep->cookie = st.cookie;
		}
		return r;
	default:
		return -EINVAL;
	}
}

static void fl_reply(int conn, const struct fl_broker_rep *rep, int fd)
{
	union fl_broker_cmsg cm;
	struct iovec iov = { (void *)rep, sizeof(*rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0)
		fl_broker_attach_fd(&mh, &cm, fd);
	(void)sendmsg(conn, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void fl_broker_serve(struct fl_broker *b, int conn)
{
	union {
		char buf[CMSG_SPACE(FL_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct fl_broker_req q;
	struct fl_broker_rep rep = { .magic = FL_BROKER_MAGIC };
	struct iovec iov = { &q, sizeof(q) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fds[FL_MAX_FDS], nfds = 0, send_fd = -1, r, i;
	struct cmsghdr *c;
	ssize_t n;

	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
		return;
	memset(&cm, 0, sizeof(cm));
	/* The loop saw it readable: a non-blocking read never waits. */
	n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	for (c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (i = 0; i < (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int)) && nfds < FL_MAX_FDS; i++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (n != (ssize_t)sizeof(q) || q.magic != FL_BROKER_MAGIC || (mh.msg_flags & MSG_CTRUNC))
		r = -EPROTO;
	else if (q.abi != FL_ABI_VERSION)
		r = -EPROTONOSUPPORT;
	else if (nfds > 1)
		r = -EINVAL;
	else
		r = fl_dispatch(b, &cred, &q, nfds ? fds[0] : -1, &rep, &send_fd);
	rep.err = -r;
	/* IMPORTANT: our copies of the caller's socket go before the reply:
	 * the caller counts who holds its socket once it has the answer
	 * (preload/kernel/holders.h), and must not count us. */
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	fl_reply(conn, &rep, r ? -1 : send_fd);
}
