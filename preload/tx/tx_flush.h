/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tx_flush.h - flushing send buffers (tx_flush.c): first what the shim
 * calls (through tx.h, which includes this), then what tx.c alone uses
 * (handing a buffer to the kernel, Nagle's tail, the pending list; called
 * with tx->lock held unless said otherwise).
 */
#ifndef FL_TX_FLUSH_H
#define FL_TX_FLUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fastlocal.h"
#include "socket/sock.h"
#include "base/config.h"

/*
 * Flushes every socket with buffered bytes (without blocking; what cannot
 * go now stays for the timer). Called before the process blocks: the read
 * family, poll/select/epoll, accept, connect, exec, exit. One atomic load
 * when nothing is buffered.
 */
void fl_tx_flush_all(void);
static inline bool fl_tx_any_pending(void);

/* The timer: flushes what has waited its delay. Run by the flusher thread
 * (fl_flusher_work_fn); returns the nanoseconds until the next deadline (or
 * -1: none), *left whether bytes are still buffered. */
int64_t fl_tx_flush_expired(int64_t now_ns, bool *left);

/* Counter of sockets with buffered bytes; read by fl_tx_any_pending. */
extern int fl_tx_pending_sockets;

static inline bool fl_tx_any_pending(void)
{
	return __atomic_load_n(&fl_tx_pending_sockets, __ATOMIC_ACQUIRE) != 0;
}

/* ---- for tx.c */

/* This thread, as fl_tx_hand_off tells writers apart: the address of a
 * thread-local byte. */
extern __thread char fl_tx_me_tag __attribute__((tls_model("initial-exec")));

static inline uintptr_t fl_tx_me(void)
{
	return (uintptr_t)&fl_tx_me_tag;
}

/* An application write went into the buffer (with tx->lock held). The
 * count and the writer are read without the lock by fl_tx_hand_off, so
 * they are stored atomically (only the lock holder writes them). */
static inline void fl_tx_wrote(struct fl_tx *tx)
{
	__atomic_store_n(&tx->writes, tx->writes + 1, __ATOMIC_RELAXED);
	if (tx->writer != fl_tx_me())
		__atomic_store_n(&tx->writer, fl_tx_me(), __ATOMIC_RELAXED);
}

/* The object that embeds tx (sock.h): the socket's identity, its count of
 * fds and whether another process may hold it. */
static inline const struct fl_sock *fl_tx_sock(const struct fl_tx *tx)
{
	return (const struct fl_sock *)((const char *)tx - offsetof(struct fl_sock, tx));
}

/* Another process may hold the socket (read with tx->lock held). */
static inline int fl_tx_shared(const struct fl_tx *tx)
{
	return __atomic_load_n(&fl_tx_sock(tx)->shared, __ATOMIC_RELAXED);
}

int fl_tx_nagle_more(const struct fl_tx *tx, size_t len, int flags);
void fl_tx_nagle_push(const struct fl_tx *tx, int fd);
bool fl_tx_nagle_cork(const struct fl_tx *tx, int fd, size_t len);
void fl_tx_nagle_uncork(int fd);
ssize_t fl_tx_sendmsg_len(const struct fl_tx *tx, int fd, const struct msghdr *msg,
				 int flags, size_t len);
bool fl_tx_fd_ok(const struct fl_tx *tx, int fd);
bool fl_tx_fd_names(const struct fl_tx *tx, int fd);
void fl_tx_mark_pending(struct fl_tx *tx);
/* The timer again, for bytes whose wait changed: uncorked, or a shutdown
 * that waits for them (a corked buffer's timer was set for the cork's
 * 200 ms ceiling). Called with tx->lock held, the buffer not empty. */
void fl_tx_rearm(struct fl_tx *tx);
void fl_tx_fail(struct fl_tx *tx, int err);
void fl_tx_advance(struct fl_tx *tx, size_t n);
void fl_tx_count(struct fl_tx *tx, enum fl_ustat why, size_t bytes);
int fl_tx_flush_locked(struct fl_tx *tx, int fd, bool block, enum fl_ustat why);
int fl_tx_push(struct fl_tx *tx, int fd, int flags, bool wait, enum fl_ustat why);
bool fl_tx_peer_unread(struct fl_tx *tx);
void fl_tx_flush_all_why(enum fl_ustat why);
void fl_tx_pending_fork_prepare(void);
void fl_tx_pending_fork_parent(void);
void fl_tx_pending_fork_child(void);

#endif
