// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * enroll_steps.c - the steps of an enrollment that enroll.c and both
 * back-ends (enroll_direct.c, enroll_brokered.c) take: the fallback, the
 * receive budget, recording the fd, joining, the debug line, adopting a
 * slot, putting enrollment off and forgetting an unenrolled socket.
 * IMPORTANT: a file of their own so that the calls run one way only,
 * enroll.c -> back-end -> steps (docs/architecture.md: no call loops).
 */
#include "enroll_steps.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/socket.h>

#include "base/config.h"
#include "base/libc.h"
#include "base/log.h"
#include "kernel/holders.h"
#include "kernel/maps.h"
#include "kernel/slot.h"
#include "kernel/sysctl.h"
#include "socket/fdtable.h"
#include "socket/sock.h"
#include "tx/tx.h"

#define FL_BUDGET_FALLBACK (4u << 20)

/*
 * IMPORTANT: the budget leaves TCP room in the reader's receive memory.
 * Redirected bytes are charged to the reader's sk_rmem_alloc (kernel
 * commit "tcp_bpf: charge receive socket buffer in bpf_tcp_ingress()",
 * 6.13), and TCP drops a segment that arrives while that is above
 * sk_rcvbuf, which autotuning grows to the maximum of net.ipv4.tcp_rmem at
 * most and which an application's SO_RCVBUF fixes. A budget of all of it
 * made every flow-control fallback to a sleeping reader lose the writer's
 * first segments: its retransmissions backed off (0.2, 0.4, 0.8 s...) and
 * the reader, awake and caught up, then waited for the next one, 1.5 s
 * after a 2 s sleep, 13 s for the fourth of four connections
 * (docs/kernel.md#rmem-shared; test/integration/fallback_stall.c).
 */

/* The default receive budget: 7/8 of what TCP would let a receiver buffer
 * at most (the maximum of net.ipv4.tcp_rmem); the eighth left is room for
 * the window TCP's sender may have in flight after a fallback (64 KiB on
 * a connection that never ran on TCP). flow_budget, if configured, is
 * held to the same bound. Read once; a race between two first readers
 * writes the same value. Written once. */
static uint32_t fl_default_budget_v;

static uint32_t fl_default_budget(void)
{
	uint32_t v = __atomic_load_n(&fl_default_budget_v, __ATOMIC_RELAXED);
	uint64_t max;

	if (v)
		return v;
	max = fl_sysctl_max("/proc/sys/net/ipv4/tcp_rmem");
	max = !max ? FL_BUDGET_FALLBACK : max - max / 8;
	if (fl_config()->flow_budget && fl_config()->flow_budget < max)
		max = fl_config()->flow_budget; /* flow_budget in the configuration */
	v = max < FL_BUDGET_MIN ? FL_BUDGET_MIN : max > FL_BUDGET_MAX ? FL_BUDGET_MAX : (uint32_t)max;
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

/* The budget: a quarter of the receive buffer the kernel keeps for an
 * application that chose SO_RCVBUF (half the value it asked for; the
 * kernel doubles it and no longer autotunes it), else the default above.
 * The rest is TCP's room, which must hold what the writer's send buffer
 * has in flight (up to tcp_wmem's maximum) with its skbs' overhead: with
 * half, a listener's 1 or 4 MiB still lost segments (fallback_stall.c). */
uint32_t fl_enroll_budget(int fd, struct fl_fd *e)
{
	socklen_t olen = sizeof(int);
	int rcvbuf = 0;

	if (e && (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_RCVBUF_SET) &&
	    !libc_getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &olen) && rcvbuf > 1)
		return (uint32_t)rcvbuf / 4;
	return fl_default_budget();
}

/* Counted in the shared counters only by a shim that can write them; a
 * brokered process's are private, and the broker counts for it (the
 * back-ends' counts_shared, read here from the maps so that this file
 * names no back-end). */
void fl_enroll_count(const struct fl_maps *m, enum fl_ustat idx)
{
	if (!m->brokered)
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
bool fl_enroll_drain(struct fl_fd *e)
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
void fl_enroll_joined(const struct fl_maps *m, int fd, struct fl_fd *e, bool inserted, bool busy)
{
	struct fl_sock *so = e->sock; /* set by fl_enroll_record, this thread's */
	struct fl_slot *s = fl_slot_at(so->slot);
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
	/* Another process may write it too: its bytes and ours must reach
	 * the kernel in the order the two write() calls returned (tx.h). */
	if (!alone)
		fl_tx_set_shared(so);
	if (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_THROUGH)
		fl_tx_set_through(so, fd);
	fl_fd_retry_reset(e);
	if (alone) {
		__atomic_fetch_or(&s->flags, FL_SLOT_RX_READY, __ATOMIC_SEQ_CST);
		__atomic_fetch_or(&e->flags, FL_FDF_RX_READY, __ATOMIC_RELAXED);
	} else if (s && !(__atomic_load_n(&s->flags, __ATOMIC_ACQUIRE) & FL_SLOT_RX_READY)) {
		fl_enroll_count(m, FL_USTAT_RX_NOT_READY);
		fl_debug("fd %d: joined while another fd, thread or process held it: its peer's "
			 "bytes stay on TCP until nobody else does", fd);
	} else if (s) {
		__atomic_fetch_or(&e->flags, FL_FDF_RX_READY, __ATOMIC_RELAXED);
	}
	if (inserted)
		fl_enroll_count(m, FL_USTAT_ENROLLED);
	__atomic_store_n(&e->state, FL_FD_ENROLLED, __ATOMIC_RELEASE);
}

/* Points fd's entry to its socket's object, the one holder of the
 * socket's identity; the state stays ENROLLING (other threads wait) until
 * fl_enroll_joined publishes ENROLLED. IMPORTANT: an inserted socket's
 * object cannot fail for want of memory here, after the insert: the
 * enrollment reserved one before it (fl_sock_reserve, enroll.c). */
int fl_enroll_record(int fd, uint32_t slot, uint64_t gen, uint64_t cookie, bool inserted)
{
	struct fl_fd *e = fl_fd_get(fd);
	struct fl_sock *s;

	if (!e)
		return -ENOMEM;
	/* A socket adopted that this process holds through another fd already
	 * (fl_sock_find) shares that fd's object, as a dup does. */
	s = inserted ? NULL : fl_sock_find(slot, gen, cookie);
	if (!s)
		s = fl_tx_attach(fd, slot, gen, cookie);
	if (!s)
		return -ENOMEM;
	__atomic_store_n(&e->sock, s, __ATOMIC_RELEASE);
	fl_fd_retry_reset(e);
	__atomic_store_n(&e->state, FL_FD_ENROLLING, __ATOMIC_RELEASE);
	return 0;
}

/* The one debug line an enrollment gives ("enrolled" is what the docs and
 * tests look for). */
void fl_enroll_say(int fd, const struct fl_fd *e, const struct fl_sk *st, const char *how)
{
	uint32_t slot = e->sock->slot; /* fl_enroll_record's, this thread's */
	struct fl_slot *s = fl_slot_at(slot);

	fl_debug("fd %d: enrolled%s (slot %u, port %u -> %u, budget %u)", fd, how, slot,
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
	/* Not in the sockhash because of us: with no memory for its object
	 * it is not adopted, as when the fd table has none. */
	if (!fl_sock_reserve() || fl_enroll_record(fd, st->slot, gen, st->cookie, false))
		return -ENOMEM;
	e = fl_fd_peek(fd);
	fl_debug("fd %d: adopted (slot %u)", fd, st->slot);
	fl_enroll_joined(m, fd, e, false, false);
	return 0;
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

int fl_enroll_wait_peer(int fd, struct fl_fd *e, uint32_t bucket, uint32_t seen,
			uint16_t server_port)
{
	__atomic_store_n(&e->peer_bucket, bucket, __ATOMIC_RELAXED);
	__atomic_store_n(&e->peer_seen, seen, __ATOMIC_RELAXED);
	__atomic_store_n(&e->server_port, server_port, __ATOMIC_RELAXED);
	/* (release: a thread that sees the flag sees the three above) */
	if (__atomic_fetch_or(&e->flags, FL_FDF_PEER_WAIT, __ATOMIC_RELEASE) & FL_FDF_PEER_WAIT)
		return -EINPROGRESS;
	if (server_port) {
		fl_ustat_add(FL_USTAT_SERVER_WAITS, 1);
		fl_debug("fd %d: no server under the shim seen on port %u, its peer not in the "
			 "sockhash: waits on TCP", fd, server_port);
	} else {
		fl_ustat_add(FL_USTAT_PEER_WAITS, 1);
		fl_debug("fd %d: its peer is not in the sockhash: waits for it on TCP", fd);
	}
	return -EINPROGRESS;
}

int fl_enroll_wait_broker(int fd, struct fl_fd *e, uint16_t server_port)
{
	bool first = !(__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_PEER_WAIT);

	/* No bucket to watch: the broker is asked again instead. (Its counts
	 * here go to this process's private page; the broker counts.) */
	fl_enroll_wait_peer(fd, e, 0, 0, server_port);
	if (first)
		fl_fd_retry_reset(e); /* the first check after it waits the least gap */
	return -EINPROGRESS;
}

/* Anything we buffered goes first (by redirect or TCP: both keep order;
 * SEND_TCP is set already, so it goes over TCP). */
void fl_unenroll_forget(const struct fl_fd *e, uint32_t slot)
{
	struct fl_sock_id id, oid;
	int other;

	if (!fl_fd_sock(e, &id))
		return; /* forgotten already, by another thread */
	for (other = fl_fd_next_enrolled(0); other >= 0; other = fl_fd_next_enrolled(other + 1)) {
		struct fl_fd *oe = fl_fd_peek(other);

		if (fl_fd_sock(oe, &oid) && oid.slot == slot && oid.gen == id.gen)
			fl_fd_forget_socket(other);
	}
}

/* The back-end put fd's socket into the sockhash (slot, gen, cookie):
 * recorded, joined and said, as every insert ends. */
int fl_enroll_inserted(const struct fl_maps *m, int fd, uint32_t slot, uint64_t gen,
		       uint64_t cookie, bool busy, const struct fl_sk *st, const char *how)
{
	struct fl_fd *e;
	int err = fl_enroll_record(fd, slot, gen, cookie, true);

	if (err)
		return err;
	e = fl_fd_peek(fd);
	fl_enroll_joined(m, fd, e, true, busy);
	fl_enroll_say(fd, e, st, how);
	return 0;
}
