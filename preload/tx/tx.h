/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tx.h - corked delivery: the per-socket send buffer and when it is flushed.
 *
 * On this kernel each sendmsg() that is redirected is one message and one
 * wakeup of the reader; small writes redirected one by one are slower than
 * TCP. The shim therefore coalesces small writes of an enrolled socket in a
 * user-space buffer and hands them to the kernel in one sendmsg(), under a
 * policy that mirrors TCP's (docs/delivery.md):
 *
 *   TCP_NODELAY   every write goes at once; setting it flushes.
 *   default       a write goes at once if the peer has read everything sent
 *                 so far (it is waiting) or the direction is on TCP (which
 *                 has its own Nagle); otherwise it is coalesced, unless
 *                 its last batches each went alone (tx_policy.h,
 *                 FL_LONE_BATCHES: holding bought nothing). The buffer
 *                 is flushed when it fills, when the peer catches up, before
 *                 the process blocks in any call the shim sees, and at most
 *                 FASTLOCAL_FLUSH_USEC (200 us) after its first byte.
 *   TCP_CORK      coalesce until uncorked, full, or 200 ms (Linux's ceiling).
 *   MSG_MORE      this write is coalesced; the next one without it flushes.
 *   large writes  flush and send together, in one sendmsg().
 *
 * Bytes already in the buffer are flushed only after SO_COOKIE confirms the
 * fd still names their socket, so a number reused behind the shim's back
 * can never receive them.
 */
#ifndef FL_TX_H
#define FL_TX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <linux/types.h>

#include "base/config.h"
#include "fastlocal.h" /* enum fl_ustat: why a flush happened */

/* The per-socket object (sock.h), whose send buffer (tx_state.h) this file
 * runs. Each function below takes the socket's object. */
struct fl_sock;

/* The object of a newly enrolled socket (slot/gen identify it, cookie is
 * its SO_COOKIE) with its send buffer set up; without one when memory for
 * the buffer is short (writes then go straight to the kernel); NULL only
 * when memory for the object is short and none was reserved
 * (fl_sock_reserve). With FASTLOCAL_BATCH=off the buffer is never used, and the
 * object still counts the fds that name the socket (fl_sock_last_copy).
 * Releasing an fd's reference (fl_sock_release, the fd table's close)
 * first pushes the buffer into the kernel, waiting for room if need be. */
struct fl_sock *fl_tx_attach(int fd, uint32_t slot, uint64_t gen, uint64_t cookie);

/* True unless batching is off for the process (inline: every write asks). */
static inline bool fl_tx_batching(const struct fl_sock *s)
{
	(void)s;
	return fl_config()->batch;
}

/* Which call of the write family, and its arguments. */
enum fl_tx_kind {
	FL_TX_SEND, FL_TX_SENDTO, FL_TX_SENDMSG, FL_TX_WRITE, FL_TX_WRITEV,
	FL_TX_SENDFILE, FL_TX_SPLICE
};

/*
 * IMPORTANT: at most 80 bytes. Every write builds one with a designated
 * initializer, which zero-fills the rest; gcc (12, -O2) clears 80 bytes
 * with vector stores and, in these functions, 88 and more with "rep
 * stos", whose stores the very next loads of the struct wait for. At 96
 * bytes that cost half the speed of a 64 B write stream (perf annotate:
 * 73% of fl_write on the rep stos). The fields are ordered so that none
 * is padding.
 */
struct fl_tx_call {
	enum fl_tx_kind kind;
	int flags;                    /* MSG_*; 0 for write, writev, sendfile, splice */
	const struct iovec *iov;      /* the bytes (one iovec for send, sendto, write) */
	int iovcnt;
	socklen_t alen;               /* SENDTO: addr's length */
	size_t len;                   /* their sum, counted once by the caller */
	const struct msghdr *msg;     /* SENDMSG: the application's header */
	const struct sockaddr *addr;  /* SENDTO */
	int in_fd;                    /* SENDFILE, SPLICE: where the bytes come from */
	unsigned int splice_flags;    /* SPLICE */
	off_t *offset;                /* SENDFILE: its offset; SPLICE: off_out */
	off_t *off_in;                /* SPLICE */
	int large;                    /* SENDFILE: sendfile64 */
	bool stale;                   /* out: e no longer names fd's socket (the
				       * caller forgets the fd's entry) */
};
_Static_assert(sizeof(struct fl_tx_call) <= 80, "struct fl_tx_call: see IMPORTANT above");

/*
 * The write family on fd; e: its entry when it is enrolled, else NULL (the
 * call goes to the kernel as it is). An enrolled socket's writes go through
 * its send buffer under the policy above, unless batching is off (then
 * straight to the kernel with Nagle's tail pushed as plain TCP would:
 * tx.c, "Nagle"); a blocking writer a budget ahead of its reader waits
 * (throttle.h). Returns what the application's call returns (with errno
 * set).
 */
struct fl_fd;
ssize_t fl_tx_send(const struct fl_fd *e, int fd, struct fl_tx_call *c);

/* Flushes tx before a call that must see its bytes in the kernel first
 * (sendfile, splice, shutdown, close): blocking unless the socket is not. */
void fl_tx_flush_now(struct fl_sock *s, int fd, enum fl_ustat why); /* why: FL_USTAT_FLUSH_* */

/* From now on every write goes straight through (flushing first): the
 * socket is also written by a path the shim cannot see, e.g. a stdio
 * FILE from fdopen(), whose writes would overtake buffered bytes. */
void fl_tx_set_through(struct fl_sock *s, int fd);

/* Another process may hold the socket too: no coalescing on our own
 * initiative from now on (as after fork, tx.c). */
void fl_tx_set_shared(struct fl_sock *s);
/* Nobody else holds the socket any more (preload/kernel/holders.h said so). */
void fl_tx_set_alone(struct fl_sock *s);

/* shutdown(SHUT_WR): flush, then every later write goes straight to the
 * kernel, which fails it with EPIPE (and SIGPIPE) as TCP does. True when
 * the kernel had no room for all the buffer held: the caller must not shut
 * the write side down then; the flush that empties the buffer sends the
 * FIN (FL_TXF_FIN), and writes meanwhile fail as after a shutdown. */
bool fl_tx_shutdown(struct fl_sock *s, int fd);

/* setsockopt hooks: TCP_NODELAY and TCP_CORK. */
void fl_tx_set_nodelay(struct fl_sock *s, int fd, bool on);
void fl_tx_set_cork(struct fl_sock *s, int fd, bool on);

/* Flushing every buffer, and the timer: tx_flush.h. */
#include "tx_flush.h"

/* Like fl_tx_flush_all, but waits for room (exec, _exit, exit). */
void fl_tx_drain_all(void);

#endif
