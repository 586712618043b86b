// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* enroll.c - putting one connected TCP socket into the pinned sockhash. */
#include "enroll.h"

#include <errno.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/config.h"
#include "common/key.h"
#include "enroll_backend.h"
#include "enroll_steps.h"
#include "exclude.h"
#include "socket/fdtable.h"
#include "socket/sock.h"
#include "kernel/holders.h"
#include "common/kernel_compat.h"
#include "base/libc.h"
#include "local_addr.h"
#include "base/log.h"
#include "kernel/maps.h"
#include "kernel/slot.h"
#include "kernel/sysctl.h"
#include "tx/tx.h"

/*
 * A connection the configuration keeps on TCP: flagged in its socket
 * storage, so that sockops counts its bytes when it closes ("switched off"
 * in fastlocal status). Costs two map calls, on connect/accept only.
 */
static void fl_mark_off(int fd)
{
	const struct fl_maps *m = fl_maps();

	if (!m || !fl_is_tcp_socket(fd))
		return;
	fl_enroll_be(m)->mark_off(m, fd);
}

#define FL_READY_RETRY_US 100u /* a moment, then ask again (fl_enroll_drain) */

/*
 * IMPORTANT: the check runs with the fd held in ENROLLING, so that no call
 * of this process through it starts meanwhile, and only if none is in
 * flight (e->inflight, io.c): every reference the kernel then counts
 * beyond this fd and this call belongs to someone the shim cannot see (a
 * dup, another process, a stdio read, a raw system call), any of which may
 * sleep in TCP's own recvmsg. A call of ours in flight would hold a
 * reference too, and there is no telling, from here, whether it entered
 * before or after the join, nor whether its reference is the one counted;
 * so the check waits for a moment without any (the last one out asks).
 */
void fl_enroll_check_ready(int fd, struct fl_fd *e)
{
	const struct fl_maps *m = fl_maps_if_open();
	struct fl_sock_id id;
	struct fl_sock *so = fl_fd_sock(e, &id);
	struct fl_slot *s = so ? fl_slot_at(id.slot) : NULL;
	uint32_t expect = FL_FD_ENROLLED;
	uint64_t cookie = 0;
	socklen_t olen = sizeof(cookie);
	bool ready = false;
	int saved = errno;

	if (!m || !s)
		return;
	if (__atomic_load_n(&s->flags, __ATOMIC_ACQUIRE) & FL_SLOT_RX_READY) {
		/* Made ready through another fd of this socket. */
		__atomic_fetch_or(&e->flags, FL_FDF_RX_READY, __ATOMIC_RELAXED);
		return;
	}
	if (!__atomic_compare_exchange_n(&e->state, &expect, FL_FD_ENROLLING, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	if (__atomic_load_n(&e->pend_readers, __ATOMIC_SEQ_CST) || !fl_enroll_drain(e)) {
		/* Not asked: the last call out asks, whatever the backoff, and
		 * any call does again soon: our own calls come and go quickly,
		 * so this is no reason to back off (only a stranger is). */
		__atomic_fetch_or(&e->flags, FL_FDF_READY_WANTED, __ATOMIC_RELAXED);
		fl_fd_retry_soon(e, FL_READY_RETRY_US);
		__atomic_store_n(&e->state, FL_FD_ENROLLED, __ATOMIC_SEQ_CST);
		errno = saved;
		return;
	}
	__atomic_fetch_and(&e->flags, ~FL_FDF_READY_WANTED, __ATOMIC_RELAXED);
	/* The fd must still name the slot's socket (a close behind our back). */
	if (!libc_getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &olen) &&
	    cookie == __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) && fl_holders_others(fd) == 0) {
		__atomic_fetch_or(&s->flags, FL_SLOT_RX_READY, __ATOMIC_SEQ_CST);
		__atomic_fetch_or(&e->flags, FL_FDF_RX_READY, __ATOMIC_RELAXED);
		/* Nobody else holds it now: coalescing is ours to decide again
		 * (a later fork marks it shared again, tx.c). */
		fl_tx_set_alone(so);
		ready = true;
	}
	__atomic_store_n(&e->state, FL_FD_ENROLLED, __ATOMIC_SEQ_CST);
	errno = saved;
	if (ready) {
		fl_enroll_count(m, FL_USTAT_RX_READY_LATE);
		fl_debug("fd %d: nobody else holds it now: its peer may redirect to it", fd);
	}
}

int fl_enroll_adopt(int fd)
{
	const struct fl_maps *m = fl_maps();

	if (!m)
		return -ENOENT;
	return fl_enroll_be(m)->adopt(m, fd);
}

int fl_enroll(int fd)
{
	return fl_enroll_read(fd, 0, false, false);
}

void fl_enroll_or_defer(int fd)
{
	struct fl_fd *e = fl_fd_peek(fd);
	int err;

	/* A new connection: a wait for the peer of the socket this number
	 * named before (closed behind the shim's back) is not its own. */
	if (e)
		__atomic_fetch_and(&e->flags, ~FL_FDF_PEER_WAIT, __ATOMIC_RELAXED);
	if (!fl_config()->enroll_after || !fl_config()->enabled) {
		/* Shared already (fork before connect), or an end whose peer
		 * is not in the sockhash yet: pending, asked again. */
		err = fl_enroll_read(fd, 0, false, true);
		if ((err != -EAGAIN && err != -EINPROGRESS) || !(e = fl_fd_get(fd)))
			return;
	} else if (!(e = fl_fd_get(fd))) {
		fl_enroll(fd);
		return;
	}
	__atomic_store_n(&e->pend_read, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->pend_moved, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->pend_readers, 0, __ATOMIC_RELAXED);
	fl_fd_retry_reset(e);
	__atomic_store_n(&e->state, FL_FD_PENDING, __ATOMIC_RELEASE);
}

void fl_enroll_note_listener(int fd)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	int saved = errno;
	uint16_t port;

	if (fl_config()->enabled && fl_is_tcp_socket(fd) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len) && !fl_key_port(&a, &port))
		fl_maps_mark_listener(fd, port);
	errno = saved;
}

/*
 * IMPORTANT: a read of a pending fd that is still in flight when its socket
 * enrolls must count its bytes exactly once: in pend_read if enrollment
 * has not taken that count yet, else in the slot, which starts from it.
 * Enrollment takes the count by setting FL_PEND_CLOSED (fetch_or: it gets
 * the count and closes it in one step) and reopens it if it gives up; a
 * reader that finds it closed waits for the enrollment to finish, then
 * counts in the slot. Missing a byte would keep the gate shut for good,
 * counting one twice could open it early.
 */
#define FL_PEND_CLOSED (1ULL << 63)

static uint64_t fl_pending_close(struct fl_fd *e)
{
	return __atomic_fetch_or(&e->pend_read, FL_PEND_CLOSED, __ATOMIC_SEQ_CST) & ~FL_PEND_CLOSED;
}

/* Enrollment gave up for now: the fd is pending again, its count open. */
static void fl_pending_reopen(struct fl_fd *e)
{
	__atomic_fetch_and(&e->pend_read, ~FL_PEND_CLOSED, __ATOMIC_SEQ_CST);
	__atomic_store_n(&e->state, FL_FD_PENDING, __ATOMIC_SEQ_CST);
}

static void fl_pending_count(struct fl_fd *e, uint64_t n)
{
	uint64_t v = __atomic_load_n(&e->pend_read, __ATOMIC_SEQ_CST);
	uint32_t st;

	for (;;) {
		if (!(v & FL_PEND_CLOSED)) {
			if (__atomic_compare_exchange_n(&e->pend_read, &v, v + n, false,
							__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				return;
			continue;
		}
		while ((st = fl_fd_state(e)) == FL_FD_ENROLLING)
			sched_yield();
		if (st == FL_FD_ENROLLED) {
			struct fl_sock_id id;

			if (fl_fd_sock(e, &id))
				fl_slot_consume(id.slot, id.gen, n);
			return;
		}
		if (st != FL_FD_PENDING)
			return; /* stays on TCP: nothing counts any more */
		v = __atomic_load_n(&e->pend_read, __ATOMIC_SEQ_CST); /* reopened */
	}
}

void fl_pending_read_done(int fd, struct fl_fd *e, uint64_t n)
{
	uint32_t f;
	int saved;

	if (!e)
		return;
	if (n)
		fl_pending_count(e, n);
	if (__atomic_sub_fetch(&e->pend_readers, 1, __ATOMIC_SEQ_CST))
		return;
	switch (fl_fd_state(e)) {
	case FL_FD_PENDING:
		fl_pending_io(fd, e, n);
		return;
	case FL_FD_ENROLLED:
		/* It enrolled while this read was in flight: the last such
		 * read out asks whether redirects into it are safe now. */
		f = __atomic_load_n(&e->flags, __ATOMIC_RELAXED);
		if (f & FL_FDF_RX_READY)
			return;
		saved = errno;
		fl_enroll_check_ready(fd, e);
		errno = saved;
		return;
	default:
		return;
	}
}

/*
 * An end waiting for its peer (FL_FDF_PEER_WAIT): has anyone joined the
 * sockhash at its bucket since it looked, or, for a connecting end, has an
 * accepting end under the shim been seen on its server's port? One load
 * each. A brokered end cannot see fl_joined: the broker is asked again,
 * less and less often.
 */
static bool fl_pending_peer_may_have_come(struct fl_fd *e)
{
	const struct fl_maps *m = fl_maps_if_open();
	uint16_t port = __atomic_load_n(&e->server_port, __ATOMIC_RELAXED);

	if (!m)
		return true;
	if (!m->joined)
		return !m->brokered ||
		       fl_fd_retry_due_slow(e, port ? FL_RETRY_SERVER_MIN_US : FL_RETRY_PEER_MIN_US);
	if (port && __atomic_load_n(&m->joined->listening[port], __ATOMIC_SEQ_CST))
		return true;
	return __atomic_load_n(&m->joined->c[__atomic_load_n(&e->peer_bucket, __ATOMIC_RELAXED)],
			       __ATOMIC_SEQ_CST) != __atomic_load_n(&e->peer_seen, __ATOMIC_RELAXED);
}

/* An enrollment attempt of a waiting end ended (err): it is counted once
 * if what it waited for came and it enrolled. */
static void fl_pending_peer_done(struct fl_fd *e, int err)
{
	if (err == -EINPROGRESS || fl_fd_state(e) != FL_FD_ENROLLED)
		return;
	if (__atomic_fetch_and(&e->flags, ~FL_FDF_PEER_WAIT, __ATOMIC_RELAXED) & FL_FDF_PEER_WAIT)
		fl_ustat_add(__atomic_load_n(&e->server_port, __ATOMIC_RELAXED) ?
				     FL_USTAT_SERVER_CAME : FL_USTAT_PEER_CAME, 1);
}

bool fl_pending_io(int fd, struct fl_fd *e, uint64_t n)
{
	uint32_t expect = FL_FD_PENDING;
	uint64_t moved, already_read;
	uint32_t flags;
	bool busy;
	int saved, err;

	moved = __atomic_add_fetch(&e->pend_moved, n, __ATOMIC_RELAXED);
	if (moved < fl_config()->enroll_after)
		return false;
	flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);
	if ((flags & FL_FDF_PEER_WAIT) && !fl_pending_peer_may_have_come(e))
		return false;
	/* Someone else held the socket last time: asked again, less and less
	 * often (fdtable.h). */
	if ((flags & FL_FDF_SHARED) && !fl_fd_retry_due(e))
		return false;
	if (!__atomic_compare_exchange_n(&e->state, &expect, FL_FD_ENROLLING, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return fl_fd_state(e) == FL_FD_ENROLLED;
	/*
	 * IMPORTANT: a read of another thread may be in flight through this
	 * fd: it waits in TCP's own recvmsg, which never sees redirected
	 * bytes. Such a socket still enrolls and joins (its own writes may be
	 * redirected), but nothing is redirected INTO it until a check finds
	 * no such read left (fl_enroll_joined: not RX_READY; the last read out
	 * asks, fl_pending_read_done). Readers count themselves before they
	 * look at the state, this thread sets the state before it looks at
	 * the count (both sequentially consistent): one sees the other.
	 * Without readers, writes of other threads in flight are waited for a
	 * moment (fl_enroll_drain), so that the kernel's count of holders can
	 * be asked before the insert.
	 */
	busy = __atomic_load_n(&e->pend_readers, __ATOMIC_SEQ_CST) != 0;
	if (!busy && !fl_enroll_drain(e))
		busy = true;
	already_read = fl_pending_close(e);
	saved = errno;
	fl_debug("fd %d: moved %llu bytes over TCP, enrolling", fd, (unsigned long long)moved);
	err = fl_enroll_read(fd, already_read, busy, true);
	if (err == -EAGAIN || err == -EINPROGRESS)
		fl_pending_reopen(e); /* shared, or the peer not there yet: later */
	else if (err && fl_fd_state(e) == FL_FD_ENROLLING)
		__atomic_store_n(&e->state, FL_FD_UNKNOWN, __ATOMIC_RELEASE); /* stays on TCP */
	fl_pending_peer_done(e, err);
	errno = saved;
	return fl_fd_state(e) == FL_FD_ENROLLED;
}

int fl_enroll_read(int fd, uint64_t already_read, bool busy, bool peer_first)
{
	struct fl_enroll_req r = { .already_read = already_read, .busy = busy,
				   .peer_first = peer_first };
	socklen_t llen = sizeof(r.local), rlen = sizeof(r.remote), olen;
	const struct fl_maps *m;
	/* (one that waits for its peer needs an entry to wait in) */
	struct fl_fd *e = peer_first ? fl_fd_get(fd) : fl_fd_peek(fd);
	int lowat = 1;

	if (!fl_config()->enabled) {
		fl_mark_off(fd);
		return fl_enroll_fallback(fd, -ECANCELED, FL_USTAT_FB_DISABLED, "FASTLOCAL=0");
	}
	if (!fl_is_tcp_socket(fd))
		return -ENOTSUP; /* not ours to accelerate; not a fallback */
	if (getsockname(fd, (struct sockaddr *)&r.local, &llen) ||
	    getpeername(fd, (struct sockaddr *)&r.remote, &rlen))
		return errno == ENOTCONN ? -ENOTSUP : -errno;
	if (fl_config()->has_rules && fl_excluded(&r.local, &r.remote)) {
		fl_mark_off(fd);
		return fl_enroll_fallback(fd, -ECANCELED, FL_USTAT_FB_EXCLUDED,
					  "excluded by a port or address rule");
	}
	olen = sizeof(r.netns);
	if (libc_getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &r.netns, &olen))
		r.netns = 0;
	/* A peer address not of this namespace may still be another
	 * namespace of this host: decided by the core, once the key is known. */
	r.addr_local = fl_peer_is_local(&r.remote, &r.local, r.netns);
	olen = sizeof(lowat);
	if (fl_compat_on() &&
	    ((e && (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_RCVLOWAT)) ||
	     (!libc_getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, &olen) && lowat > 1))) {
		fl_maps();
		return fl_enroll_fallback(fd, -ENOTSUP, FL_USTAT_FB_ODD_SOCKET,
					  "SO_RCVLOWAT or SO_PEEK_OFF is set (the redirect path ignores them)");
	}
	if (e && (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_STDIO_READ)) {
		fl_maps();
		return fl_enroll_fallback(fd, -ENOTSUP, FL_USTAT_FB_ODD_SOCKET,
					  "a stdio FILE reads it (glibc's reads bypass the shim)");
	}
	if (fl_compat_on() && e && (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_ZEROCOPY)) {
		fl_maps();
		return fl_enroll_fallback(fd, -ENOTSUP, FL_USTAT_FB_ODD_SOCKET,
					  "SO_ZEROCOPY is set (the redirect path completes no zero-copy send)");
	}
	m = fl_maps();
	if (!m)
		return fl_enroll_fallback(fd, -ENOENT, FL_USTAT__NR, "fastlocal is not loaded");
	/*
	 * Held by anyone else now (another fd, thread or process): a reader
	 * there may sleep in TCP's recvmsg (holders.h). The back-end asks
	 * before the insert, and fl_enroll_joined again after it; this early
	 * answer spares the work, and keeps such a socket out of the sockhash
	 * altogether. A socket some process enrolled before it was shared is
	 * adopted, shared or not.
	 */
	/* The socket's object must not fail after the insert (enroll_steps.c,
	 * fl_enroll_record): its memory is made sure of now, while a failure
	 * still means "stays on TCP". */
	if (!fl_sock_reserve())
		return fl_enroll_fallback(fd, -ENOMEM, FL_USTAT_FB_OTHER, "out of memory");
	return fl_enroll_be(m)->enroll(m, fd, e, &r);
}

int fl_unenroll(int fd, const char *why)
{
	const struct fl_maps *m = fl_maps_if_open();
	struct fl_fd *e = fl_fd_peek(fd);
	struct fl_slot *me;
	struct fl_sk st;
	int err;

	if (!m || fl_fd_state(e) != FL_FD_ENROLLED)
		return -ENOENT;
	if (fl_enroll_be(m)->record(m, fd, e, &st))
		return -ENOENT;
	me = fl_slot_at(st.slot);
	if (!me || __atomic_load_n(&me->owner, __ATOMIC_ACQUIRE) != st.cookie)
		return -ENOENT;
	/* Our sends go over TCP from now on, and the peer stops redirecting to
	 * us. The locked or orders this store before the loads of the drain
	 * check; the verdict counts its bytes with a locked add before it
	 * looks at BLIND. */
	__atomic_fetch_or(&me->flags, FL_SLOT_BLIND | FL_SLOT_SEND_TCP, __ATOMIC_SEQ_CST);
	err = fl_enroll_be(m)->unenroll(m, fd, e, me, &st, why);
	if (err == -EBUSY)
		fl_debug("fd %d: %s; leaves the fast path once its bytes are read", fd, why);
	return err;
}
