/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rxq.h - bytes the shim took out of an enrolled socket before the
 * application asked for them, and the emulated SO_PEEK_OFF.
 *
 * An enrolled socket can hold bytes in two queues: the redirected one,
 * always older, and TCP's (after a flow-control fallback). The kernel lets
 * a peek see only the first. To peek across both, the shim moves the
 * redirected part into this per-socket buffer; from then on every read of
 * the socket through the shim is served from it first, in order. The
 * redirect path also ignores SO_PEEK_OFF; the shim keeps the offset itself.
 * Nothing here exists for a socket that never needs it: the read path pays
 * one table load.
 */
#ifndef FL_RXQ_H
#define FL_RXQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct fl_rxq;

/* The state of the socket in slot/gen, or NULL (create: make one). */
struct fl_rxq *fl_rxq_get(uint32_t slot, uint64_t gen, bool create);

/* True if reads must go through fl_rxq_recv (bytes held, or SO_PEEK_OFF). */
bool fl_rxq_active(const struct fl_rxq *q);

/* Bytes held. */
size_t fl_rxq_held(struct fl_rxq *q);

/* recv()/read() of the socket: from the held bytes first, then the kernel.
 * Handles MSG_PEEK (with the emulated offset) and MSG_WAITALL. */
ssize_t fl_rxq_recv(int fd, struct fl_rxq *q, void *buf, size_t len, int flags);

/* Peek len bytes from the head of what is unread (held bytes, then both
 * kernel queues), moving redirected bytes into q if the kernel's peek cannot
 * reach TCP's queue behind them. */
ssize_t fl_rxq_peek(int fd, struct fl_rxq *q, void *buf, size_t len, int flags);

/*
 * recv(MSG_OOB) of an enrolled socket (msg: the caller's, whose msg_flags
 * it sets): moves the redirected queue into q, so that the call reaches
 * TCP's urgent byte instead of redirected bytes, and answers as TCP does
 * (never blocking, EINVAL without urgent data). While q then holds bytes,
 * SO_OOBINLINE is on for the kernel only (rxq.c says why).
 */
ssize_t fl_rxq_recv_oob(int fd, struct fl_rxq *q, struct msghdr *msg, int flags);

/* SO_OOBINLINE while the shim holds it on: getsockopt reads 0 (forced),
 * and the application's setsockopt is taken here (true: handled). */
bool fl_rxq_inline_forced(struct fl_rxq *q);
bool fl_rxq_set_oobinline(struct fl_rxq *q, int on);
/* n bytes of the socket were read past q (a splice): the emulated peek
 * offset moves back by as much, as after a read. */
void fl_rxq_read_done(struct fl_rxq *q, size_t n);

/* Hands up to len held bytes, oldest first, to put (which returns how many
 * it took, or -1 with errno) and drops those it took; the held bytes stay
 * locked meanwhile, so no read overtakes them. Returns what put returned,
 * or 0 if nothing is held. */
typedef ssize_t (*fl_rxq_put_fn)(void *ctx, const void *p, size_t n);
ssize_t fl_rxq_give(struct fl_rxq *q, size_t len, fl_rxq_put_fn put, void *ctx);

/* SO_PEEK_OFF, emulated: set (v < 0 disables) and read back. */
void fl_rxq_set_peek_off(struct fl_rxq *q, int v);
int fl_rxq_peek_off(struct fl_rxq *q);

#endif
