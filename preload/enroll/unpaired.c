// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unpaired.c - an enrolled socket whose peer never enrolls leaves the sockhash.
 *
 * An end in the sockhash sends through tcp_bpf (the verdict runs on every
 * message, and a message it passes to TCP goes through tcp_bpf's push) and
 * the shim's batching; with no peer to redirect to, that is all cost and no
 * gain (issue 14 measured 0.81x-0.84x of plain TCP for a client under the
 * shim talking to a server without it). So once the peer has certainly had
 * its chance to enroll and has not, the socket leaves through fl_unenroll,
 * whose drain check proves nothing is lost (docs/kernel.md), and is plain
 * TCP from then on: no tcp_bpf, no verdict, no shim buffering.
 *
 * "Certainly had its chance": a peer under the shim enrolls in the call
 * that makes its connection cross FASTLOCAL_ENROLL_AFTER bytes moved, reads
 * and writes together (enroll.c, fl_pending_io). So it has tried once
 *   - it has written more than that to us: we read it (rx), or
 *   - it has read more than that of ours: we handed TCP (tx) more than our
 *     send queue and its receive queue can hold between them, so the rest
 *     was read (the largest buffers the sysctls allow, read once), or
 *   - what it wrote and what it read add up to more: what it read is tx
 *     less what our send queue and its receive queue hold now (sock_diag,
 *     fl_unpaired_peer_read).
 * Four times the threshold, and never less than 16 KiB, covers a peer
 * whose own FASTLOCAL_ENROLL_AFTER is somewhat larger than ours. A try can
 * be put off while another thread or process holds the peer's socket; it
 * is then retried at the peer's calls, at most 10 ms apart (fdtable.h), so
 * the peer must still be missing FL_UNPAIRED_GRACE_US (100 ms) later, and in the
 * answer of a verdict that ran after that first look (the answer a write
 * returns with may be older than the bytes read meanwhile: a blocking
 * write's verdict ran when it began). The verdict records the peer's slot
 * in ours the first time it finds it (peer_slot, never cleared), so
 * "missing" is one load.
 *
 * A peer that enrolls even later (shared for longer, or its broker came up
 * late) finds this end gone and stays on TCP: a lost speed-up, never a
 * lost byte. The one race left, the peer joining just before this end
 * leaves, is the drain check's to settle: it leaves only when every byte
 * the peer sent is read, and otherwise retries on later writes.
 */
#include "unpaired.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>

#include "base/config.h"
#include "base/libc.h"
#include "enroll.h"
#include "kernel/slot.h"
#include "kernel/sysctl.h"
#include "kernel/tcp_diag.h"

#define FL_UNPAIRED_RX_MIN (16u << 10)
#define FL_UNPAIRED_GRACE_US 100000u
#define FL_UNPAIRED_DIAG_GAP_US 5000u /* between two looks at the peer's queue */

/*
 * The largest send queue plus the largest receive queue a connection can
 * have, from the sysctls. Owned by this file; computed on first use and
 * published with an atomic store (two threads may both compute it: same
 * value). 0: not yet.
 */
static uint64_t fl_unpaired_queues;

/* The larger of a per-protocol maximum and twice net.core's (SO_SNDBUF and
 * SO_RCVBUF may go up to that); 0 if either file cannot be read. */
static uint64_t fl_sysctl_buf_max(const char *tcp, const char *core)
{
	uint64_t t = fl_sysctl_max(tcp), c = fl_sysctl_max(core);

	if (!t || !c)
		return 0;
	return t > 2 * c ? t : 2 * c;
}

static uint64_t fl_unpaired_queue_bytes(void)
{
	uint64_t q = __atomic_load_n(&fl_unpaired_queues, __ATOMIC_RELAXED);
	uint64_t snd, rcv;

	if (q)
		return q;
	snd = fl_sysctl_buf_max("/proc/sys/net/ipv4/tcp_wmem", "/proc/sys/net/core/wmem_max");
	rcv = fl_sysctl_buf_max("/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/core/rmem_max");
	/* Cannot tell: the written bytes never decide (the read ones still do). */
	q = snd && rcv ? snd + rcv : UINT64_MAX;
	__atomic_store_n(&fl_unpaired_queues, q, __ATOMIC_RELAXED);
	return q;
}

/*
 * Bytes of ours the peer's application has read, at least: what we handed
 * TCP (tx) less what our send queue and the peer's receive queue still
 * hold, read in that order, so that a byte moving from one to the other
 * meanwhile is counted in both, never in neither. -1 when the peer's
 * socket cannot be seen (another network namespace).
 */
static int64_t fl_unpaired_peer_read(int fd, uint64_t tx)
{
	int outq = 0;
	long rq;

	if (libc_ioctl(fd, SIOCOUTQ, &outq) || outq < 0)
		return -1;
	rq = fl_tcp_diag_peer_rqueue(fd);
	if (rq < 0)
		return -1;
	return (int64_t)tx - outq - rq;
}

/*
 * True when a peer under the shim would have enrolled by now: it has moved
 * (written to us, read from us) more than its threshold's share.
 * IMPORTANT: what it wrote is what we read (rx), but what it read of ours
 * is only bounded by tx less the largest queues, about 10 MB here: a
 * client of small answers (redis GET of a missing key: 5 bytes) needed
 * 3.3 s of 1000 requests a second to reach 16 KiB of answers, and stayed
 * in the sockhash, paying tcp_bpf's costs for nothing (0.91x of plain TCP
 * in bench/apps' one-sided redis-benchmark), for the whole of a shorter
 * run. The peer's receive queue, asked of sock_diag on the same host,
 * tells what it read exactly enough: asked at most every
 * FL_UNPAIRED_DIAG_GAP_US, and only once rx + tx could be enough.
 */
static bool fl_unpaired_peer_had_its_chance(int fd, struct fl_fd *e, uint64_t rx, uint64_t tx)
{
	uint64_t chance = 4 * (uint64_t)fl_config()->enroll_after;
	uint32_t now;
	int64_t read;

	if (chance < FL_UNPAIRED_RX_MIN)
		chance = FL_UNPAIRED_RX_MIN;
	if (rx > chance)
		return true;
	/* Cheap test first: the sysctls are only read once tx is that large. */
	if (tx > chance && tx - chance > fl_unpaired_queue_bytes())
		return true;
	if (rx + tx <= chance)
		return false;
	/* Until the first look, unpaired_mark holds when the peer's queue was
	 * last asked (fl_fd_retry_due is the read path's to consume). */
	now = fl_fd_now_us() | 1u;
	if (e->unpaired_mark && now - (uint32_t)e->unpaired_mark < FL_UNPAIRED_DIAG_GAP_US)
		return false;
	e->unpaired_mark = now;
	read = fl_unpaired_peer_read(fd, tx);
	return read > 0 && rx + (uint64_t)read > chance;
}

static void fl_unpaired_leave(int fd, struct fl_fd *e)
{
	int err = fl_unenroll(fd, "its peer never enrolled");

	if (err == -EBUSY) {
		/* The peer joined after all and some of its bytes are unread:
		 * SEND_TCP and BLIND are set, so both directions are on TCP;
		 * the next writes try again. */
		__atomic_fetch_or(&e->flags, FL_FDF_UNPAIRED_LEAVING, __ATOMIC_RELAXED);
		return;
	}
	/* Counted (FL_USTAT_UNPAIRED_LEFT) by whoever removes the entry. Any
	 * other error: not ours to decide any more (-ENOENT: it left already). */
	if (err)
		__atomic_fetch_or(&e->flags, FL_FDF_PAIRED, __ATOMIC_RELAXED);
}

void fl_unpaired_check(int fd, struct fl_fd *e)
{
	uint64_t rx = 0, tx = 0, verdicts = 0;
	struct fl_sock_id id;
	uint32_t f;
	int saved;

	if (fl_fd_state(e) != FL_FD_ENROLLED)
		return;
	/* One thread decides; the others go on with their writes. */
	f = __atomic_fetch_or(&e->flags, FL_FDF_UNPAIRED_BUSY, __ATOMIC_ACQUIRE);
	if (f & FL_FDF_UNPAIRED_BUSY)
		return;
	saved = errno;
	if (f & FL_FDF_PAIRED) {
		/* settled meanwhile */
	} else if (f & FL_FDF_UNPAIRED_LEAVING) {
		if (fl_fd_retry_due(e))
			fl_unpaired_leave(fd, e);
	} else {
		switch (fl_fd_sock(e, &id) ? fl_slot_pairing(id.slot, id.gen, &rx, &tx, &verdicts) :
			FL_PAIRING_UNKNOWN /* forgotten meanwhile: not ours */) {
		case FL_PAIRING_PAIRED:
			__atomic_fetch_or(&e->flags, FL_FDF_PAIRED, __ATOMIC_RELAXED);
			break;
		case FL_PAIRING_NO_PEER:
			/* Once true, true for good (bytes moved only grow). */
			if (!e->unpaired_us && !fl_unpaired_peer_had_its_chance(fd, e, rx, tx))
				break;
			if (!e->unpaired_us) { /* the first look: the grace starts */
				e->unpaired_us = fl_fd_now_us() | 1u; /* 0: not yet */
				e->unpaired_mark = verdicts;
			} else if (verdicts != e->unpaired_mark &&
				   fl_fd_now_us() - e->unpaired_us >= FL_UNPAIRED_GRACE_US) {
				fl_unpaired_leave(fd, e);
			}
			break;
		case FL_PAIRING_UNKNOWN:
			break;
		}
	}
	__atomic_fetch_and(&e->flags, ~FL_FDF_UNPAIRED_BUSY, __ATOMIC_RELEASE);
	errno = saved;
}
