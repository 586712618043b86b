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

#include <stdint.h>

enum fl_fd_state {
	FL_FD_UNKNOWN = 0,  /* nothing recorded: plain pass-through */
	FL_FD_CONNECTING,   /* non-blocking connect to a local peer in progress */
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

struct fl_tx;

struct fl_fd {
	uint32_t state;  /* enum fl_fd_state; atomic, written last (release) */
	uint32_t flags;  /* FL_FDF_*; atomic bit operations */
	uint32_t slot;   /* with FL_FD_ENROLLED: the socket's slot */
	uint32_t pad;
	uint64_t gen;    /* with FL_FD_ENROLLED: the slot generation it owns */
	struct fl_tx *tx; /* with FL_FD_ENROLLED: its send buffer, or NULL (tx.h) */
	/* with FL_FD_PENDING (atomic): bytes the application has read (the
	 * slot's first "consumed" when it enrolls), bytes moved either way,
	 * and reads in progress (enrollment waits until there are none) */
	uint64_t pend_read;
	uint64_t pend_moved;
	uint32_t pend_readers;
	uint32_t pad2;
};

#define FL_FD_MAX (1 << 20) /* fds above are never tracked (pass-through) */

/* The entry of fd, or NULL if nothing was ever recorded near it. */
struct fl_fd *fl_fd_peek(int fd);

/* The entry of fd, allocating its chunk if needed. NULL if fd is out of
 * range or memory is short. Not for signal handlers. */
struct fl_fd *fl_fd_get(int fd);

/* The state of fd, FL_FD_UNKNOWN when untracked. */
static inline uint32_t fl_fd_state(const struct fl_fd *e)
{
	return e ? __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) : FL_FD_UNKNOWN;
}

/* Forgets fd (close, or the target of dup2 before it is reused). An
 * enrolled fd first hands its buffered bytes to the kernel (tx.h). */
void fl_fd_clear(int fd);

/* Forgets the socket fd described (enrollment, send buffer) but keeps the
 * option flags the application set on it (connect: they were set on this
 * very socket, before it connected). */
void fl_fd_forget_socket(int fd);

/* Forgets every fd in [first, last] (close_range, closefrom). */
void fl_fd_clear_range(unsigned int first, unsigned int last);

/* The first enrolled fd >= from, or -1. For exec (adopt.c), not hot. */
int fl_fd_next_enrolled(int from);

/* Makes newfd describe what oldfd describes (dup and friends). */
void fl_fd_copy(int oldfd, int newfd);

#endif
