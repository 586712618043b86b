/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sock.h - one object per enrolled socket: its identity, its send buffer,
 * its held receive bytes and emulated peek offset. The fd table points to
 * it (fdtable.h, e->sock); every fd of this process that names the socket
 * holds one reference.
 *
 * Objects are type-stable: never freed, only recycled through a free list
 * and reused for another socket, so a pointer a racing thread still holds
 * always points at a struct fl_sock, and the generation check
 * (fl_sock_is) tells it the socket is gone. There is no table by slot: a
 * slot can be given to a new socket while this process still holds an fd
 * to the old one, and each has an object of its own.
 *
 * This file is the per-socket layer, below the send and receive code: it
 * never calls tx.c or rx.c. What releasing a socket does to its send
 * buffer, the buffer's owner says through struct fl_sock_ops.
 */
#ifndef FL_SOCK_H
#define FL_SOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "rxq.h"
#include "tx_state.h"

/* The generation of a socket object no socket owns (released, or never
 * used): no slot ever has it. */
#define FL_SOCK_GONE (~0ULL)

struct fl_sock;

/* What the owner of the send buffer (tx.c) does when an fd lets go. */
struct fl_sock_ops {
	/* Every release, first: the buffer goes to the kernel through fd. */
	void (*closing)(struct fl_sock *s, int fd);
	/* The last one, after the generation became FL_SOCK_GONE: the
	 * buffer's bytes are dropped (under the buffer's own lock). */
	void (*retire)(struct fl_sock *s);
};

/*
 * Ownership: sock.c owns every object (the pool); the fd table's entries
 * and a thread's call in progress borrow it. Which lock guards what:
 *   slot, cookie, ops  written by fl_sock_new before the object is
 *                 published (e->sock, release; fl_sock_publish); constant
 *                 until the last release. A reader that may race with a
 *                 recycle reads slot and gen together through seq
 *                 (fl_sock_id: odd while they are rewritten).
 *   gen           atomic: fl_sock_new, and FL_SOCK_GONE at the last
 *                 release; tx.c checks it with tx.lock held, so a retire
 *                 (which takes tx.lock) waits for a user that passed it.
 *   refs          atomic: fds of this process that name it (fl_sock_find
 *                 adds one only to a live object, under the pool lock).
 *   shared        atomic: another process may hold the socket too (it
 *                 forked, or the holders check said so); written with
 *                 tx.lock held (tx.c) or in fork's prepare step (sock.c).
 *   rxq_made      atomic: fl_sock_rxq(.., true) was asked since the
 *                 object was given to this socket.
 *   tx            tx.lock (tx_state.h); rxq: rxq.lock (rxq.h).
 *   next_free     sock.c's fl_sock_pool_lock (and its table of the
 *                 object last published for each slot).
 *   next_all      written once, before the object is published on the
 *                 list of all objects, which only ever grows.
 */
struct fl_sock {
	uint32_t slot;    /* the socket: its slot (slot.h) */
	uint64_t gen;     /* and the slot's generation it owns */
	uint64_t seq;     /* odd while fl_sock_new rewrites slot and gen (fl_sock_id) */
	uint64_t cookie;  /* its SO_COOKIE, to recognise it through an fd */
	int refs;
	int shared;
	int rxq_made;
	const struct fl_sock_ops *ops;
	struct fl_tx tx;
	struct fl_rxq rxq;
	struct fl_sock *next_free, *next_all;
};

/* An object for a newly enrolled socket, with one reference, or NULL when
 * memory is short and the calling thread reserved none (fl_sock_reserve).
 * Its send buffer is its owner's to set up. */
struct fl_sock *fl_sock_new(uint32_t slot, uint64_t gen, uint64_t cookie,
			    const struct fl_sock_ops *ops);

/* True while this process holds any enrolled socket (a cheap look, for
 * work that only pays with one: entry/wait_spin.c). */
bool fl_sock_any(void);

/*
 * Makes sure the calling thread's next fl_sock_new cannot fail for want of
 * memory: false if it would. Enrollment asks before the socket goes into
 * the sockhash, where a failure still means "stays on TCP"; after the
 * insert an fd must be recorded with its object (every enrolled fd has one:
 * the object alone holds the socket's identity). One spare object per
 * thread, kept for its next enrollment.
 */
bool fl_sock_reserve(void);

/* s is set up (its send buffer too): fl_sock_find may give it out. */
void fl_sock_publish(struct fl_sock *s);

/*
 * The object of the socket slot/gen/cookie if this process already holds
 * it through another fd (it adopts a socket it has: a copy received with
 * SCM_RIGHTS, or two fds of one socket passed on through exec), with one
 * more reference; else NULL. So that every fd of one socket shares one
 * send buffer and one set of held bytes, as dups do. Looks only at the
 * object last published for the slot, under the pool lock: not for the
 * send/recv path.
 */
struct fl_sock *fl_sock_find(uint32_t slot, uint64_t gen, uint64_t cookie);

/* One more fd of this process names the socket (dup), or the shim keeps
 * it open on an fd of its own (tx/linger.h). */
void fl_sock_hold(struct fl_sock *s);

/* One fd less (close; fd: the one closing): ops->closing, then, for the
 * last, the generation becomes FL_SOCK_GONE, ops->retire runs, the held
 * receive bytes go and the object returns to the pool. fd -1: a reference
 * of the shim's own whose fd is closed already (tx/linger.h), no closing. */
void fl_sock_release(struct fl_sock *s, int fd);

/*
 * The generation check, the one place that tells whether s still is the
 * socket a call found it to be when it began (gen: fl_sock_id's, read
 * through the fd table, fl_fd_sock). The send buffer's users ask it with
 * tx.lock held.
 */
static inline bool fl_sock_is(const struct fl_sock *s, uint64_t gen)
{
	return __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == gen;
}

/* The socket's identity as one call sees it. */
struct fl_sock_id {
	uint32_t slot;
	uint64_t gen; /* FL_SOCK_GONE: none (released, or being reused) */
};

/*
 * Reads s's slot and generation as one: a released object may be given to
 * another socket at any time (fl_sock_new), and a slot of one socket with
 * the generation of another would count bytes in the wrong slot. seq makes
 * the pair consistent (a seqlock: no lock, no store; a few loads of a line
 * the call touches anyway). Whether the fd still names s is the fd table's
 * question (fl_fd_sock).
 */
static inline void fl_sock_id(const struct fl_sock *s, struct fl_sock_id *id)
{
	uint64_t seq;

	for (;;) {
		seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		id->gen = __atomic_load_n(&s->gen, __ATOMIC_RELAXED);
		id->slot = __atomic_load_n(&s->slot, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (!(seq & 1) && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq)
			return;
	}
}

/* True if one fd is the only one naming the socket: no dup in this
 * process and no other process holding it (so its close() is the
 * socket's close). */
static inline bool fl_sock_last_copy(const struct fl_sock *s)
{
	return __atomic_load_n(&s->refs, __ATOMIC_ACQUIRE) == 1 &&
	       !__atomic_load_n(&s->shared, __ATOMIC_RELAXED);
}

/*
 * The held receive bytes and peek offset of the socket gen (rxq.h), or
 * NULL: s is NULL or no longer that socket, or nothing asked for them yet
 * and create is false (SO_PEEK_OFF and SO_OOBINLINE's getsockopt then
 * answer as the kernel does). One load and a compare on the read path.
 */
static inline struct fl_rxq *fl_sock_rxq(struct fl_sock *s, uint64_t gen, bool create)
{
	if (!s || !fl_sock_is(s, gen))
		return NULL;
	if (!__atomic_load_n(&s->rxq_made, __ATOMIC_ACQUIRE)) {
		if (!create)
			return NULL;
		__atomic_store_n(&s->rxq_made, 1, __ATOMIC_RELEASE);
	}
	return &s->rxq;
}

/* Calls fn for every object ever made, live or in the pool (exec, exit,
 * fork's child): without a lock, the list only grows. */
void fl_sock_for_each(void (*fn)(struct fl_sock *s, void *arg), void *arg);

#endif
