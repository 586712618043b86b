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

#include "config.h"
#include "enroll_backend.h"
#include "exclude.h"
#include "fdtable.h"
#include "holders.h"
#include "kernel_compat.h"
#include "libc.h"
#include "local_addr.h"
#include "log.h"
#include "maps.h"
#include "slot.h"
#include "sock.h"
#include "sysctl.h"
#include "tx.h"

#define FL_BUDGET_FALLBACK (4u << 20)

/* The default receive budget: flow_budget if configured, else what TCP
 * would let a receiver buffer at most (the maximum of net.ipv4.tcp_rmem),
 * read once. Written once; a race between two first readers writes the
 * same value. */
static uint32_t fl_default_budget_v;

static uint32_t fl_default_budget(void)
{
	uint32_t v = __atomic_load_n(&fl_default_budget_v, __ATOMIC_RELAXED);
	uint64_t max;

	if (v)
		return v;
	if (fl_config()->flow_budget)
		return fl_config()->flow_budget; /* flow_budget in the configuration */
	max = fl_sysctl_max("/proc/sys/net/ipv4/tcp_rmem");
	v = !max ? FL_BUDGET_FALLBACK : max < FL_BUDGET_MIN ? FL_BUDGET_MIN :
	    max > FL_BUDGET_MAX ? FL_BUDGET_MAX : (uint32_t)max;
	__atomic_store_n(&fl_default_budget_v, v, __ATOMIC_RELAXED);
	return v;
}

/* One fallback: counted (shared counter when the maps are open), logged. */
int fl_enroll_fallback(int fd, int err, enum fl_ustat counter, const char *why)
{
	char caller[768];

	if (counter < FL_USTAT__NR)
		fl_ustat_add(counter, 1);
	/* With FASTLOCAL_BACKTRACE=1 the line also names the application's
	 * call that led here (log.h); the same one line, so one event. */
	if (fl_log_caller(caller, sizeof(caller), FL_LOG_DEBUG))
		fl_debug("fd %d stays on TCP: %s; called from %s", fd, why, caller);
	else
		fl_debug("fd %d stays on TCP: %s", fd, why);
	return err;
}

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
	m->enroll->mark_off(m, fd);
}

/* The budget: the application's SO_RCVBUF if it chose one, else what TCP's
 * autotuning could grow to. */
uint32_t fl_enroll_budget(int fd, struct fl_fd *e)
{
	socklen_t olen = sizeof(int);
	int rcvbuf = 0;

	if (e && (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_RCVBUF_SET) &&
	    !libc_getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &olen) && rcvbuf > 0)
		return (uint32_t)rcvbuf;
	return fl_default_budget();
}

/* Counted in the shared counters only by a shim that can write them; a
 * brokered process's are private, and the broker counts for it. */
static void fl_ustat_own(const struct fl_maps *m, enum fl_ustat idx)
{
	if (m->enroll->counts_shared)
		fl_ustat_add(idx, 1);
}

/*
 * Waits a moment for this process's own calls on fd that are inside the
 * kernel (e->inflight, io.c) to come out; the caller holds fd in ENROLLING,
 * so no new one starts. True when none is left. IMPORTANT: the kernel's
 * count of who holds the socket (holders.h) counts each of them too, and
 * from here there is no telling them from a reader the shim cannot see;
 * so the check runs only without them. A writer comes out within
 * microseconds unless TCP's buffer is full, a reader only with data:
 * bounded at 32 yields (tens of microseconds, longer only when the CPU is
 * busy with the very calls waited for), then the caller tries again soon.
 */
#define FL_READY_RETRY_US 100u
static bool fl_enroll_drain(struct fl_fd *e)
{
	int i;

	for (i = 0; i < 32; i++) {
		if (!__atomic_load_n(&e->inflight, __ATOMIC_SEQ_CST))
			return true;
		sched_yield();
	}
	return !__atomic_load_n(&e->inflight, __ATOMIC_SEQ_CST);
}

/*
 * The fd's socket is in the sockhash now: its slot says so, it gets a send
 * buffer, and redirects into it are allowed if nobody else holds it.
 * IMPORTANT: the holders check comes after the insert. A reader that enters
 * the kernel after it runs tcp_bpf's recvmsg, which sees both queues; one
 * that was already inside TCP's own recvmsg holds a reference to the file
 * (an fd of another process, or its call in progress), and the check sees
 * it. Checked before the insert only, a fork or an SCM_RIGHTS between the
 * two would slip through.
 */
void fl_enroll_joined(const struct fl_maps *m, int fd, struct fl_fd *e, uint64_t cookie,
		      bool inserted, bool busy)
{
	struct fl_slot *s = fl_slot_at(e->slot);
	bool alone;

	if (s)
		__atomic_fetch_or(&s->flags, FL_SLOT_JOINED, __ATOMIC_SEQ_CST);
	/* Calls of ours still in flight began before the join (fl_enroll_check_ready);
	 * busy: a read of a pending fd was, when enrollment began. */
	if (busy || __atomic_load_n(&e->pend_readers, __ATOMIC_SEQ_CST) || !fl_enroll_drain(e)) {
		alone = false;
		__atomic_fetch_or(&e->flags, FL_FDF_READY_WANTED, __ATOMIC_RELAXED);
	} else {
		alone = s && fl_holders_others(fd) == 0;
	}
	/* A socket adopted that this process holds through another fd already
	 * (fl_sock_find) shares that fd's object, as a dup does. */
	e->sock = inserted ? NULL : fl_sock_find(e->slot, e->gen, cookie);
	if (!e->sock)
		e->sock = fl_tx_attach(fd, e->slot, e->gen, cookie);
	/* Another process may write it too: its bytes and ours must reach
	 * the kernel in the order the two write() calls returned (tx.h). */
	if (e->sock && !alone)
		fl_tx_set_shared(e->sock);
	if (e->sock && (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_THROUGH))
		fl_tx_set_through(e->sock, fd);
	fl_fd_retry_reset(e);
	if (alone) {
		__atomic_fetch_or(&s->flags, FL_SLOT_RX_READY, __ATOMIC_SEQ_CST);
		__atomic_fetch_or(&e->flags, FL_FDF_RX_READY, __ATOMIC_RELAXED);
	} else if (s && !(__atomic_load_n(&s->flags, __ATOMIC_ACQUIRE) & FL_SLOT_RX_READY)) {
		fl_ustat_own(m, FL_USTAT_RX_NOT_READY);
		fl_debug("fd %d: joined while another fd, thread or process held it: its peer's "
			 "bytes stay on TCP until nobody else does", fd);
	} else if (s) {
		__atomic_fetch_or(&e->flags, FL_FDF_RX_READY, __ATOMIC_RELAXED);
	}
	if (inserted)
		fl_ustat_own(m, FL_USTAT_ENROLLED);
	__atomic_store_n(&e->state, FL_FD_ENROLLED, __ATOMIC_RELEASE);
}

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
	struct fl_slot *s = fl_slot_at(e->slot);
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
		if (e->sock)
			fl_tx_set_alone(e->sock);
		ready = true;
	}
	__atomic_store_n(&e->state, FL_FD_ENROLLED, __ATOMIC_SEQ_CST);
	errno = saved;
	if (ready) {
		fl_ustat_own(m, FL_USTAT_RX_READY_LATE);
		fl_debug("fd %d: nobody else holds it now: its peer may redirect to it", fd);
	}
}

/* Records fd's slot/gen in the fd table; the state stays ENROLLING (other
 * threads wait) until fl_enroll_joined publishes ENROLLED. */
int fl_enroll_record(int fd, uint32_t slot, uint64_t gen)
{
	struct fl_fd *e = fl_fd_get(fd);

	if (!e)
		return -ENOMEM;
	e->slot = slot;
	e->gen = gen;
	e->sock = NULL;
	fl_fd_retry_reset(e);
	__atomic_store_n(&e->state, FL_FD_ENROLLING, __ATOMIC_RELEASE);
	return 0;
}

/* The one debug line an enrollment gives ("enrolled" is what the docs and
 * tests look for). */
void fl_enroll_say(int fd, const struct fl_fd *e, const struct fl_sk *st, const char *how)
{
	struct fl_slot *s = fl_slot_at(e->slot);

	fl_debug("fd %d: enrolled%s (slot %u, port %u -> %u, budget %u)", fd, how, e->slot,
		 st ? st->key.local_port : 0, st ? st->key.remote_port : 0,
		 s ? __atomic_load_n(&s->budget, __ATOMIC_RELAXED) : 0);
}

/* The socket was enrolled by some process before (fork, exec): use its slot. */
int fl_enroll_adopt_slot(int fd, const struct fl_sk *st)
{
	const struct fl_maps *m = fl_maps_if_open();
	struct fl_slot *s = fl_slot_at(st->slot);
	struct fl_fd *e;
	uint64_t gen;

	if (!m || !s || __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) != st->cookie)
		return fl_enroll_fallback(fd, -ENODATA, FL_USTAT__NR,
					  "enrolled before, but its slot is gone");
	gen = __atomic_load_n(&s->consumed, __ATOMIC_RELAXED) >> FL_CONSUMED_BITS;
	if (fl_enroll_record(fd, st->slot, gen))
		return -ENOMEM;
	e = fl_fd_peek(fd);
	fl_debug("fd %d: adopted (slot %u)", fd, st->slot);
	fl_enroll_joined(m, fd, e, st->cookie, false, false);
	return 0;
}

int fl_enroll_adopt(int fd)
{
	const struct fl_maps *m = fl_maps();

	if (!m)
		return -ENOENT;
	return m->enroll->adopt(m, fd);
}

int fl_enroll(int fd)
{
	return fl_enroll_read(fd, 0, false);
}

void fl_enroll_or_defer(int fd)
{
	struct fl_fd *e;

	if (!fl_config()->enroll_after || !fl_config()->enabled) {
		/* Shared already (fork before connect): pending, asked again. */
		if (fl_enroll(fd) != -EAGAIN || !(e = fl_fd_get(fd)))
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
			fl_slot_consume(e->slot, e->gen, n);
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

bool fl_pending_io(int fd, struct fl_fd *e, uint64_t n)
{
	uint32_t expect = FL_FD_PENDING;
	uint64_t moved, already_read;
	bool busy;
	int saved, err;

	moved = __atomic_add_fetch(&e->pend_moved, n, __ATOMIC_RELAXED);
	if (moved < fl_config()->enroll_after)
		return false;
	/* Someone else held the socket last time: asked again, less and less
	 * often (fdtable.h). */
	if ((__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_SHARED) && !fl_fd_retry_due(e))
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
	err = fl_enroll_read(fd, already_read, busy);
	if (err == -EAGAIN)
		fl_pending_reopen(e); /* shared: later */
	else if (err && fl_fd_state(e) == FL_FD_ENROLLING)
		__atomic_store_n(&e->state, FL_FD_UNKNOWN, __ATOMIC_RELEASE); /* stays on TCP */
	errno = saved;
	return fl_fd_state(e) == FL_FD_ENROLLED;
}

/* Another fd, thread or process holds the socket: put enrollment off (the
 * fd stays pending; fl_pending_io asks again, less and less often). */
int fl_enroll_put_off(int fd, struct fl_fd *e)
{
	if (e && !(__atomic_fetch_or(&e->flags, FL_FDF_SHARED, __ATOMIC_RELAXED) & FL_FDF_SHARED)) {
		fl_fd_retry_reset(e);
		return fl_enroll_fallback(fd, -EAGAIN, FL_USTAT_FB_SHARED,
				   "another fd, thread or process holds it (asked again later)");
	}
	return -EAGAIN;
}


/* Anything we buffered goes first (by redirect or TCP: both keep order;
 * SEND_TCP is set already, so it goes over TCP). */
void fl_unenroll_forget(const struct fl_fd *e, uint32_t slot)
{
	int other;

	for (other = fl_fd_next_enrolled(0); other >= 0; other = fl_fd_next_enrolled(other + 1)) {
		struct fl_fd *oe = fl_fd_peek(other);

		if (oe->slot == slot && oe->gen == e->gen)
			fl_fd_forget_socket(other);
	}
}


int fl_enroll_read(int fd, uint64_t already_read, bool busy)
{
	struct fl_enroll_req r = { .already_read = already_read, .busy = busy };
	socklen_t llen = sizeof(r.local), rlen = sizeof(r.remote), olen;
	const struct fl_maps *m;
	struct fl_fd *e = fl_fd_peek(fd);
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
	return m->enroll->enroll(m, fd, e, &r);
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
	if (m->enroll->record(m, fd, e, &st))
		return -ENOENT;
	me = fl_slot_at(st.slot);
	if (!me || __atomic_load_n(&me->owner, __ATOMIC_ACQUIRE) != st.cookie)
		return -ENOENT;
	/* Our sends go over TCP from now on, and the peer stops redirecting to
	 * us. The locked or orders this store before the loads of the drain
	 * check; the verdict counts its bytes with a locked add before it
	 * looks at BLIND. */
	__atomic_fetch_or(&me->flags, FL_SLOT_BLIND | FL_SLOT_SEND_TCP, __ATOMIC_SEQ_CST);
	err = m->enroll->unenroll(m, fd, e, me, &st, why);
	if (err == -EBUSY)
		fl_debug("fd %d: %s; leaves the fast path once its bytes are read", fd, why);
	return err;
}
