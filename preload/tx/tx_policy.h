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

/*
 * IMPORTANT: a hold pays only when another write joins the batch before it
 * goes. A program that waits or reads after every write (netcat's and
 * socat's loops: poll, read a block, write it, poll) has each held write
 * flushed alone by that call, one message per write as if it had gone at
 * once, and pays for the hold besides: the copy into the buffer, a wakeup
 * of the flusher thread (futex) and the flush's check that the fd still
 * names the socket (getsockopt SO_COOKIE). socat -b 17 relaying 4 MiB
 * (source, relay, sink under the shim) made 377009 flushes of one write
 * each; nc sending 1 GiB in 16 KiB writes to a busy reader, 27479. So
 * after FL_LONE_BATCHES such batches in a row (sent alone by a wait or the
 * timer), the next FL_LONE_SKIP writes that a busy reader would have held
 * go at once instead: the same messages, sooner, without the hold's
 * costs. The write after them is held again, as a probe: sent alone once
 * more, it starts another FL_LONE_SKIP; joined by another write, the
 * streak ends. What a changed
 * pattern can lose is bounded: FL_LONE_SKIP writes sent one message each.
 * With it the socat chain made 6449 flushes and took 3.1 s of CPU instead
 * of 3.9 (plain TCP 1.7; medians of 6 alternating rounds); the rest is
 * tcp_bpf's cost per message (docs/kernel.md#no-batching), which a loop
 * that waits after every write leaves nothing to batch against.
 */
#define FL_LONE_BATCHES 8
#define FL_LONE_SKIP 64

/* A batch of `writes` application writes, flushed for why, went alone: it
 * bought nothing (a wait or the timer sent it, not another write, a full
 * buffer or the application's own cork). */
static inline bool fl_txp_lone(enum fl_ustat why, uint32_t writes)
{
	return writes == 1 && (why == FL_USTAT_FLUSH_WAIT || why == FL_USTAT_FLUSH_TIMER);
}

/* The streak of lone batches in a row after such a batch went (lone: the
 * streak before it), at most FL_LONE_BATCHES. Two writes or more in one
 * message end it; a batch of none (the rest of a partial send) leaves it. */
static inline uint32_t fl_txp_lone_streak(uint32_t lone, enum fl_ustat why, uint32_t writes)
{
	if (writes >= 2)
		return 0;
	if (!fl_txp_lone(why, writes) || lone >= FL_LONE_BATCHES)
		return lone;
	return lone + 1;
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
