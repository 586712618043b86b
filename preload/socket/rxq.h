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
 * The state is part of the socket's object (sock.h, fl_sock_rxq), which
 * says whether it was ever asked for: until then the read path pays one
 * load and a compare.
 *
 * This is the data structure only; the reads served from it are rx_held.c,
 * rx_peek.c and rx_oob.c, which hold q->lock while they use the fields.
 */
#ifndef FL_RXQ_H
#define FL_RXQ_H

#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* Owned by the socket's object (sock.h). Fields are read and written with
 * lock held (len also atomically, for fl_rxq_active's unlocked look). */
struct fl_rxq {
	pthread_mutex_t lock; /* guards everything below */
	uint8_t *buf;         /* held bytes are buf[off, len) */
	size_t len, off;
	int peek_off;         /* emulated SO_PEEK_OFF, -1: off */
	bool inline_forced;   /* SO_OOBINLINE is on for the shim, not the
			       * application (rx_oob.c says why) */
};

/* A state holding nothing (once, when its object is made), and the same
 * again when its socket is gone (the held bytes are freed). */
void fl_rxq_init(struct fl_rxq *q);
void fl_rxq_reset(struct fl_rxq *q);

/* True if reads must be served through q (bytes held, or SO_PEEK_OFF):
 * rx_held.h. */
bool fl_rxq_active(const struct fl_rxq *q);

/* Bytes held. */
size_t fl_rxq_held(struct fl_rxq *q);

/* Moves the redirected queue's bytes into q (they are older than anything
 * in TCP's queue). 0, or -1 (out of memory, or the kernel's error). */
int fl_rxq_fill_locked(int fd, struct fl_rxq *q, const char *why);
/* Appends n bytes (false: out of memory, nothing appended). */
bool fl_rxq_append_locked(struct fl_rxq *q, const void *p, size_t n);
/* Drops the n oldest held bytes; true if that emptied q. */
bool fl_rxq_drop_locked(struct fl_rxq *q, size_t n);
/* n bytes were read: the emulated peek offset moves back by as much. */
void fl_rxq_read_done_locked(struct fl_rxq *q, size_t n);
/* SO_OOBINLINE of fd for the kernel (errno kept). */
void fl_rxq_set_inline(int fd, int on);
/* The held bytes are gone (or the socket is being read through the kernel
 * again): SO_OOBINLINE goes back to what the application has. */
void fl_rxq_unforce_locked(int fd, struct fl_rxq *q);

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
