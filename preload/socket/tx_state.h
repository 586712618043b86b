/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tx_state.h - the send buffer of one socket: a struct only, embedded in
 * the per-socket object (sock.h) and used by tx/ alone.
 *
 * It is here, in the socket layer, and not in tx/tx.h, because sock.h
 * embeds it: the socket layer sits below tx/ and may not include it
 * (preload/check_layers.sh, docs/architecture.md).
 */
#ifndef FL_TX_STATE_H
#define FL_TX_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lock.h"
#include "throttle_hold.h"

/*
 * Owned by the socket object that embeds it (sock.h) and used by tx.c
 * only. lock (base/lock.h: every write takes it once, so it is not a
 * pthread mutex) guards every field but listed and next_pending (tx.c's
 * fl_pending_lock) and made (atomic: set once, when the object is first
 * given to a socket, and never cleared). writer, writes and asked are
 * written with it held and also read without it, with atomic loads, by a
 * thread about to wait, which may set asked (tx_flush.c, fl_tx_hand_off).
 * The socket's identity (slot, generation, cookie), its count of fds and
 * whether another process may hold it are the object's (sock.h); tx.c
 * reads them with its lock held where a decision depends on them.
 */
struct fl_tx {
	struct fl_lock lock;
	bool made;              /* lock and buf are set up (tx.c, fl_tx_attach) */
	int fd;                 /* an fd that named it when bytes were buffered */
	uint32_t flags;         /* FL_TXF_* (tx_policy.h) */
	uint32_t len;           /* bytes buffered */
	int err;                /* error of a flush the application did not see yet */
	int64_t first_ns;       /* when the first buffered byte came (0: empty) */
	uint8_t *buf;           /* fl_config()->flush_bytes */
	uint32_t writes;        /* application writes in the buffer (for the stats) */
	uint32_t checked_len;   /* len when the peer was last looked at */
	bool peer_busy;         /* what it looked like then */
	bool asked;             /* a thread about to wait left the batch to its writer
				 * (tx_flush.c, fl_tx_hand_off) */
	uintptr_t writer;       /* the thread that appended last (fl_tx_me) */
	uint8_t lone;           /* batches in a row that went with one write in them
				 * (tx_policy.h, FL_LONE_BATCHES) */
	uint8_t lone_skip;      /* writes still to go at once before a hold is tried again */
	struct fl_hold hold;    /* the gate-reopening hold's backoff (throttle.h) */
	int *linger_fd;         /* the application closed the socket with bytes held:
				 * the shim's own fd that keeps it open until they are
				 * in the kernel (tx/linger.h), else NULL */
	int64_t linger_until;   /* ... and when the bytes are dropped instead */
	int listed;             /* on tx.c's pending list (fl_pending_lock) */
	struct fl_tx *next_pending;
};

#endif
