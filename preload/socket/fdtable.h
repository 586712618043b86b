/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fdtable.h - what the shim knows about each file descriptor.
 *
 * A flat two-level array indexed by fd: a lookup is two loads, takes no lock
 * and never allocates, so it is safe in any thread and in a signal handler.
 * Chunks of entries are allocated (mmap) only when an fd is first recorded,
 * which happens in connect/accept/setsockopt, never on the send/recv path.
 */
#ifndef FL_FDTABLE_H
#define FL_FDTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"
#include "sock.h"

enum fl_fd_state {
	FL_FD_UNKNOWN = 0,  /* nothing recorded: plain pass-through */
	FL_FD_CONNECTING,   /* an inet connect() in progress (non-blocking, or EINTR) */
	FL_FD_ENROLLED,     /* in the sockhash; reads are counted in its slot */
	FL_FD_PENDING,      /* connected, not enrolled until it has moved enroll_after
			     * bytes (config.h); reads are counted in the entry */
	FL_FD_ENROLLING,    /* a thread is enrolling it: others wait (enroll.c) */
};

/* Per-fd flags, kept whatever the state. */
#define FL_FDF_RCVBUF_SET (1u << 0) /* the application set SO_RCVBUF */
#define FL_FDF_RCVLOWAT   (1u << 1) /* SO_RCVLOWAT > 1 or SO_PEEK_OFF: receive
					    * options only TCP's path honours */
#define FL_FDF_ZEROCOPY   (1u << 2) /* the application set SO_ZEROCOPY */
#define FL_FDF_RX_READY   (1u << 3) /* its slot has FL_SLOT_RX_READY (a copy, so
				     * that a read need not look at the slot) */
#define FL_FDF_SHARED     (1u << 4) /* enrollment found another holder once
				     * (counted once; checked again later) */
#define FL_FDF_READY_WANTED (1u << 6) /* a check for FL_FDF_RX_READY found calls
				       * of ours in flight: the last one out asks */
#define FL_FDF_THROUGH    (1u << 5) /* written through a stdio FILE too (fdopen):
				     * its send buffer, once it has one, never holds */
#define FL_FDF_STDIO_READ (1u << 7) /* read through a stdio FILE (fdopen "r" or
				     * "+"): never enrolled (sock_calls.c) */
#define FL_FDF_DUP        (1u << 8) /* a pending fd that was copied (dup and
				     * friends), or such a copy: its close may
				     * leave the other one alone (fl_fd_clear) */
#define FL_FDF_PAIRED     (1u << 9) /* unpaired.c decided: the socket stays in the
				     * sockhash (its peer was seen, or it cannot tell) */
#define FL_FDF_UNPAIRED_BUSY (1u << 10) /* a thread is deciding (unpaired.c) */
#define FL_FDF_UNPAIRED_LEAVING (1u << 11) /* it decided to leave and the bytes
					    * the peer sent are not all read yet */
#define FL_FDF_PEER_WAIT  (1u << 12) /* an end found its peer missing: pending until
				      * peer_bucket moves, or server_port is marked
				      * (enroll.c); brokered: until the broker is
				      * asked again (fl_fd_retry_due_slow; server_port
				      * not 0 for a connecting end) */

struct fl_fd {
	uint32_t state;  /* enum fl_fd_state; atomic, written last (release) */
	uint32_t flags;  /* FL_FDF_*; atomic bit operations */
	/* atomic hints: when a check that must be retried runs next
	 * (CLOCK_MONOTONIC microseconds, wrapping), see fl_fd_retry_due */
	uint32_t retry_at_us;
	/* with FL_FD_ENROLLED (and from fl_enroll_record on, while
	 * ENROLLING): the socket's object (sock.h), one reference of it. The
	 * socket's identity (slot, generation, cookie) is the object's alone:
	 * read it with fl_fd_sock. NULL only once the fd let go (atomic,
	 * taken away with an exchange, fl_fd_forget_socket). */
	struct fl_sock *sock;
	/* with FL_FD_PENDING (atomic): bytes the application has read (the
	 * slot's first "consumed" when it enrolls; bit 63 set while an
	 * enrollment has taken the count, enroll.c), bytes moved either way,
	 * and reads in progress (they may sleep in TCP's own recvmsg) */
	uint64_t pend_read;
	uint64_t pend_moved;
	uint32_t pend_readers;
	uint32_t retry_gap_us; /* the wait after the next check (atomic hint) */
	/* atomic: calls through this fd in progress: writes while it is
	 * pending, every call while it is enrolled but not yet safe to
	 * redirect into (no FL_FDF_RX_READY); the check of who holds the
	 * socket runs only when there are none (enroll.c, fl_enroll_drain) */
	uint32_t inflight;
	/* with FL_FD_ENROLLED, unpaired.c's (the thread holding
	 * FL_FDF_UNPAIRED_BUSY): when its peer was first found missing after
	 * it had had its chance to enroll (fl_fd_now_us, 0: not yet), and the
	 * slot's tcp_sent + tcp_pending then, to tell a later verdict's answer
	 * from that one's */
	uint32_t unpaired_us;
	uint64_t unpaired_mark;
	/* with FL_FDF_PEER_WAIT (atomic): the bucket of fl_joined this end
	 * watches (fl_key_joined_idx's, so in range), the value it read there
	 * before it found its peer missing, and for a connecting end the
	 * server's port it watches in fl_joined's listening (0: an accepting
	 * end; fastlocal.h, struct fl_joined) */
	uint32_t peer_bucket;
	uint32_t peer_seen;
	uint16_t server_port;
};

#define FL_FD_MAX (1 << 20) /* fds above are never tracked (pass-through) */

/* The entry of fd, or NULL if nothing was ever recorded near it. */
struct fl_fd *fl_fd_peek(int fd);

/* The entry of fd, allocating its chunk if needed. NULL if fd is out of
 * range or memory is short. Not for signal handlers. */
struct fl_fd *fl_fd_get(int fd);

/*
 * The object of the socket e names, and its identity as this call sees it
 * (sock.h, fl_sock_id), or NULL: e names none (not enrolled, or another
 * thread is forgetting it). IMPORTANT: the object may be released and given
 * to another socket while this runs (a close or an unenroll in another
 * thread); the identity read counts only if e still points to the object
 * afterwards, so that a recycled object's identity is never taken for this
 * fd's. If e points to it again after a reuse, e names that very socket
 * now (a dup, an adoption): its identity is the right one. No lock, no
 * store: three loads of lines the call touches anyway.
 */
static inline struct fl_sock *fl_fd_sock(const struct fl_fd *e, struct fl_sock_id *id)
{
	struct fl_sock *s;

	*id = (struct fl_sock_id){ 0, FL_SOCK_GONE }; /* with NULL: no socket */
	for (s = e ? __atomic_load_n(&e->sock, __ATOMIC_ACQUIRE) : NULL; s;) {
		struct fl_sock *again;

		fl_sock_id(s, id);
		again = __atomic_load_n(&e->sock, __ATOMIC_ACQUIRE);
		if (again == s)
			return s;
		s = again;
	}
	return NULL;
}

/* The held receive bytes and peek offset of the socket e names (sock.h,
 * fl_sock_rxq), or NULL. */
static inline struct fl_rxq *fl_fd_rxq(const struct fl_fd *e, bool create)
{
	struct fl_sock_id id;
	struct fl_sock *s = fl_fd_sock(e, &id);

	return s ? fl_sock_rxq(s, id.gen, create) : NULL;
}

/* The state of fd, FL_FD_UNKNOWN when untracked. */
static inline uint32_t fl_fd_state(const struct fl_fd *e)
{
	return e ? __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) : FL_FD_UNKNOWN;
}

/*
 * True when a check put off on this fd is due again (is the peer enrolled
 * yet? does anyone else hold the socket?): at the next FL_RETRY_FREE calls
 * after a reset (the answer usually changes within a round trip), then
 * after 50 us, 100 us, 200 us, ... at most every 10 ms, so that a check
 * that keeps failing costs almost nothing. Racing threads at worst both
 * check. retry_gap_us below FL_RETRY_FREE counts the free checks.
 */
#define FL_RETRY_FREE   3u
#define FL_RETRY_MIN_US 50u
#define FL_RETRY_MAX_US 10000u

static inline uint32_t fl_fd_now_us(void)
{
	return (uint32_t)(fl_clock_ns(CLOCK_MONOTONIC) / 1000);
}

static inline bool fl_fd_retry_due(struct fl_fd *e)
{
	uint32_t now = fl_fd_now_us(), gap;
	/* Not due only while the next check is at most FL_RETRY_MAX_US ahead:
	 * however long the fd was idle, the clock's wrap never makes it wait. */
	uint32_t ahead = __atomic_load_n(&e->retry_at_us, __ATOMIC_RELAXED) - now;

	if (ahead && ahead <= FL_RETRY_MAX_US)
		return false;
	gap = __atomic_load_n(&e->retry_gap_us, __ATOMIC_RELAXED);
	if (gap < FL_RETRY_FREE) {
		__atomic_store_n(&e->retry_gap_us, gap + 1, __ATOMIC_RELAXED);
		return true; /* retry_at stays in the past: the next call checks too */
	}
	gap = gap < FL_RETRY_MIN_US ? FL_RETRY_MIN_US : gap >= FL_RETRY_MAX_US / 2 ? FL_RETRY_MAX_US :
	      gap * 2;
	__atomic_store_n(&e->retry_gap_us, gap, __ATOMIC_RELAXED);
	__atomic_store_n(&e->retry_at_us, now + gap, __ATOMIC_RELAXED);
	return true;
}

/*
 * As fl_fd_retry_due, for a check that costs a round trip to the broker
 * (a brokered end waiting, enroll_brokered.c): no free checks; the first
 * call after a reset starts the wait, min_us, and each due check doubles
 * it, up to FL_RETRY_SLOW_MAX_US. A connection whose peer never comes then
 * costs the broker one request a second at most.
 */
#define FL_RETRY_PEER_MIN_US 1000u     /* an accepting end: its peer joins first, soon */
#define FL_RETRY_SERVER_MIN_US 100000u /* a connecting end: a server under the shim
					* comes there only if its listen() bypassed the
					* shim (the port is marked by its first accepting
					* end, once: later clients do not wait) */
#define FL_RETRY_SLOW_MAX_US 1000000u

static inline bool fl_fd_retry_due_slow(struct fl_fd *e, uint32_t min_us)
{
	uint32_t now = fl_fd_now_us(), gap = __atomic_load_n(&e->retry_gap_us, __ATOMIC_RELAXED);
	uint32_t ahead = __atomic_load_n(&e->retry_at_us, __ATOMIC_RELAXED) - now;

	if (gap < min_us) {
		__atomic_store_n(&e->retry_gap_us, min_us, __ATOMIC_RELAXED);
		__atomic_store_n(&e->retry_at_us, now + min_us, __ATOMIC_RELAXED);
		return false;
	}
	if (ahead && ahead <= FL_RETRY_SLOW_MAX_US)
		return false;
	gap = gap >= FL_RETRY_SLOW_MAX_US / 2 ? FL_RETRY_SLOW_MAX_US : gap * 2;
	__atomic_store_n(&e->retry_gap_us, gap, __ATOMIC_RELAXED);
	__atomic_store_n(&e->retry_at_us, now + gap, __ATOMIC_RELAXED);
	return true;
}

/* The next check is due in us microseconds, and the backoff starts over
 * (a check that failed for a reason that passes quickly). */
static inline void fl_fd_retry_soon(struct fl_fd *e, uint32_t us)
{
	__atomic_store_n(&e->retry_gap_us, FL_RETRY_FREE, __ATOMIC_RELAXED);
	__atomic_store_n(&e->retry_at_us, fl_fd_now_us() + us, __ATOMIC_RELAXED);
}

static inline void fl_fd_retry_reset(struct fl_fd *e)
{
	__atomic_store_n(&e->retry_gap_us, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->retry_at_us, fl_fd_now_us(), __ATOMIC_RELAXED);
}

/* Forgets fd (close, or the target of dup2 before it is reused). An
 * enrolled fd lets go of its socket's object (fl_sock_release), which
 * first hands its buffered bytes to the kernel. */
void fl_fd_clear(int fd);

/* Forgets the socket fd described (enrollment, send buffer) but keeps the
 * option flags the application set on it (connect: they were set on this
 * very socket, before it connected). */
void fl_fd_forget_socket(int fd);

/* Forgets every fd in [first, last] (close_range, closefrom). */
void fl_fd_clear_range(unsigned int first, unsigned int last);

/* The first enrolled fd >= from, or -1. For exec (adopt.c),
 * not hot. */
int fl_fd_next_enrolled(int from);

/* Makes newfd describe what oldfd describes (dup and friends). */
void fl_fd_copy(int oldfd, int newfd);

#endif
