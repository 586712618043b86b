/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tx_policy.h - when the send buffer holds a write and when it flushes
 * (tx.h states the policy), as pure functions of the buffer's state:
 * no lock, no clock, no system call, so that test/unit/tx_policy.c can
 * pin every rule down. tx.c applies them under the buffer's lock.
 */
#ifndef FL_TX_POLICY_H
#define FL_TX_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fastlocal.h" /* enum fl_ustat: why a flush happened */

/* The buffer's switches (struct fl_tx's flags). */
#define FL_TXF_NODELAY (1u << 0)
#define FL_TXF_CORK    (1u << 1)
#define FL_TXF_MORE    (1u << 2) /* the last write had MSG_MORE */
#define FL_TXF_THROUGH (1u << 3) /* never hold: writes also bypass the shim */
/* shutdown(SHUT_WR) found bytes held that the kernel had no room for: the
 * flush that empties the buffer sends the FIN (tx_flush.c). */
#define FL_TXF_FIN     (1u << 4)

#define FL_CORK_CEILING_NS (200 * 1000000LL) /* Linux's TCP_CORK ceiling */
/* A write this large already amortises the cost of one redirected message;
 * copying it into the buffer would only add a copy. Measured with
 * `fl-bench stream --split --size 32768` (writer and reader busy): at a
 * 32 KiB threshold 32 KiB writes went one message each, at 1.6-3.2 GB/s
 * against AF_UNIX's 3.1-6.3; held and sent in batches (this threshold)
 * 4.4-5.9 GB/s. A 32 KiB round trip did not change (95-105 µs): a reader
 * that waits gets each write at once. */
#define FL_LARGE_WRITE (64u << 10)
/* The peer's counters are looked at again after this many bytes buffered
 * (fl_txp_peer_stale). */
#define FL_PEER_RECHECK_BYTES 4096u

/* The write that follows MSG_MORE ones sends them all, with itself. */
static inline bool fl_txp_ends_more(uint32_t txf, bool more)
{
	return !more && (txf & FL_TXF_MORE);
}

/* Too large to be worth a copy: goes at once, with what is buffered. */
static inline bool fl_txp_large(size_t len, uint32_t cap)
{
	return len >= FL_LARGE_WRITE || len >= cap / 2;
}

/* Whether a write is held: never, always, or if its reader is busy. */
enum fl_txp_hold {
	FL_TXP_SEND,     /* goes now */
	FL_TXP_HOLD,     /* held: the application asked (TCP_CORK, MSG_MORE) */
	FL_TXP_IF_BUSY,  /* held if the reader still has unread bytes */
};

/*
 * A write of len bytes (more: MSG_MORE) into a buffer of cap bytes with
 * switches txf. Coalescing on our own initiative stops once another process
 * may write the socket too (shared): its writes and that process's,
 * ordered through a pipe or shared memory, must reach the kernel in that
 * order. What the application asked to hold (TCP_CORK, MSG_MORE) is held
 * anyway.
 */
static inline enum fl_txp_hold fl_txp_hold(uint32_t txf, bool shared, bool more, size_t len,
					   uint32_t cap)
{
	if ((txf & FL_TXF_THROUGH) || fl_txp_ends_more(txf, more))
		return FL_TXP_SEND;
	if (more || (txf & FL_TXF_CORK))
		return FL_TXP_HOLD;
	if (!shared && len < FL_LARGE_WRITE && len < cap / 2)
		return FL_TXP_IF_BUSY;
	return FL_TXP_SEND;
}

/*
 * Why a write that goes now takes the buffer with it (the flush statistics):
 * the reader is idle when that is the only reason left, i.e. nothing else
 * forbade holding.
 */
static inline enum fl_ustat fl_txp_flush_why(uint32_t txf, bool shared, bool more, bool hold,
					     size_t len, uint32_t cap)
{
	if (fl_txp_ends_more(txf, more))
		return FL_USTAT_FLUSH_OPTION;
	if (hold || more || (txf & (FL_TXF_THROUGH | FL_TXF_CORK | FL_TXF_NODELAY)) || shared ||
	    fl_txp_large(len, cap))
		return FL_USTAT_FLUSH_WRITE;
	return FL_USTAT_FLUSH_READER_IDLE;
}

/*
 * The peer's counters sit on a cache line its reader keeps writing, so
 * they are looked at when a batch starts and then every
 * FL_PEER_RECHECK_BYTES buffered, not on every small write: true when the
 * answer kept from the last look (at checked bytes) is too old for a
 * buffer of buffered bytes. asked: a thread of this process about to wait
 * left the batch to this writer (tx_flush.c, fl_tx_hand_off), so every
 * write looks, and the first that finds the reader caught up sends it.
 */
static inline bool fl_txp_peer_stale(uint32_t buffered, uint32_t checked, bool asked)
{
	return asked || !buffered || buffered - checked >= FL_PEER_RECHECK_BYTES;
}

/* How long buffered bytes may wait: corked (TCP_CORK, or a MSG_MORE still
 * waiting for its next write) as long as Linux lets a cork hold data, else
 * flush_usec. */
static inline int64_t fl_txp_delay_ns(uint32_t txf, uint32_t flush_usec)
{
	return (txf & (FL_TXF_CORK | FL_TXF_MORE)) ? FL_CORK_CEILING_NS :
						    (int64_t)flush_usec * 1000;
}

#endif
