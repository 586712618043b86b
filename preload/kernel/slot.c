// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* slot.c - an enrolled socket's live counters in the shared fl_slots array. */
#include "slot.h"

#include <stddef.h>
#include <unistd.h>

#include "base/log.h"
#include "maps.h"

/* Where the next free-slot search starts; a hint only, so races are fine. */
static uint32_t fl_slot_hint;

#define FL_GEN(word) ((word) >> FL_CONSUMED_BITS)

/* fl_slot_tcp_behind: bytes a flow-control fallback may leave below the
 * budget (one message; a 1 MiB slice bounds it). */
#define FL_BEHIND_SLACK (1ULL << 20)

struct fl_slot *fl_slot_at(uint32_t ref)
{
	const struct fl_maps *m = fl_maps_if_open();

	/* Only this process's own domain is mapped: another user's slot (a
	 * peer in another domain) is out of reach, by design. */
	return m && FL_SLOT_DOM(ref) == m->domain && FL_SLOT_IDX(ref) < m->nslots ?
	       &m->slots[FL_SLOT_IDX(ref)] : NULL;
}

int fl_slot_alloc(uint64_t cookie, uint32_t budget, uint32_t snd_isn, uint64_t consumed,
		  uint64_t *gen)
{
	const struct fl_maps *m = fl_maps_if_open();
	uint32_t start, i, idx;

	if (!m)
		return -1;
	start = __atomic_fetch_add(&fl_slot_hint, 1, __ATOMIC_RELAXED) * 2654435761u + (uint32_t)getpid();
	for (i = 0; i < m->nslots; i++) {
		struct fl_slot *s;
		uint64_t zero = 0, word;

		idx = (start + i) % m->nslots;
		s = &m->slots[idx];
		if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) != 0 ||
		    !__atomic_compare_exchange_n(&s->owner, &zero, cookie, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		/*
		 * Ours now. A new generation refuses late consume() calls meant
		 * for the previous owner. Nobody else looks at this slot until the
		 * socket is in the slot index and the sockhash.
		 */
		word = __atomic_load_n(&s->consumed, __ATOMIC_RELAXED);
		*gen = (FL_GEN(word) + 1) & ((1ULL << (64 - FL_CONSUMED_BITS)) - 1);
		__atomic_store_n(&s->consumed,
				 (*gen << FL_CONSUMED_BITS) | (consumed & FL_CONSUMED_MASK),
				 __ATOMIC_RELAXED);
		s->budget = budget;
		s->flags = 0;
		s->tcp_sent = 0;
		s->redirected = 0;
		s->last_write_seq = snd_isn + 1; /* write_seq after the SYN */
		s->dir = FL_DIR_TCP;
		s->dir_reason = 0;
		s->peer_slot = 0;
		s->tcp_pending = 0;
		s->peer_owner = 0;
		__atomic_thread_fence(__ATOMIC_RELEASE);
		return (int)FL_SLOT_REF(m->domain, idx);
	}
	return -1;
}

void fl_slot_free(uint32_t slot, uint64_t cookie)
{
	struct fl_slot *s = fl_slot_at(slot);

	if (s)
		__atomic_compare_exchange_n(&s->owner, &cookie, 0, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
}

void fl_slot_consume(uint32_t slot, uint64_t gen, uint64_t n)
{
	struct fl_slot *s = fl_slot_at(slot);
	uint64_t word, next;

	if (!s || !n)
		return;
	word = __atomic_load_n(&s->consumed, __ATOMIC_RELAXED);
	do {
		if (FL_GEN(word) != gen)
			return; /* the socket died and the slot moved on */
		next = word + n;
		if (FL_GEN(next) != gen) {
			/* 256 TiB read on one socket: stop counting, keep TCP. */
			fl_slot_blind(slot, gen, "consumed counter overflow");
			return;
		}
	} while (!__atomic_compare_exchange_n(&s->consumed, &word, next, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

void fl_slot_blind(uint32_t slot, uint64_t gen, const char *why)
{
	struct fl_slot *s = fl_slot_at(slot);

	if (!s || FL_GEN(__atomic_load_n(&s->consumed, __ATOMIC_RELAXED)) != gen)
		return;
	if (!(__atomic_fetch_or(&s->flags, FL_SLOT_BLIND, __ATOMIC_RELEASE) & FL_SLOT_BLIND)) {
		fl_ustat_add(FL_USTAT_BLIND, 1);
		fl_debug("slot %u: %s; the peer's bytes stay on TCP from now on", slot, why);
	}
}

void fl_slot_send_tcp(uint32_t slot, uint64_t gen, const char *why)
{
	struct fl_slot *s = fl_slot_at(slot);

	if (!s || FL_GEN(__atomic_load_n(&s->consumed, __ATOMIC_RELAXED)) != gen)
		return;
	if (!(__atomic_fetch_or(&s->flags, FL_SLOT_SEND_TCP, __ATOMIC_RELEASE) & FL_SLOT_SEND_TCP))
		fl_debug("slot %u: %s; its bytes go over TCP from now on", slot, why);
}

void fl_slot_rcv_shut(uint32_t slot, uint64_t gen)
{
	struct fl_slot *s = fl_slot_at(slot);

	if (s && FL_GEN(__atomic_load_n(&s->consumed, __ATOMIC_RELAXED)) == gen)
		__atomic_fetch_or(&s->flags, FL_SLOT_RCV_SHUT, __ATOMIC_RELEASE);
}

void fl_slot_set_budget(uint32_t slot, uint64_t gen, uint32_t budget)
{
	struct fl_slot *s = fl_slot_at(slot);

	if (s && FL_GEN(__atomic_load_n(&s->consumed, __ATOMIC_RELAXED)) == gen)
		__atomic_store_n(&s->budget, budget, __ATOMIC_RELEASE);
}

/* The peer's slot the verdict found for me (it fills peer_slot and
 * peer_owner), if this process can map it and it still has that owner. */
static struct fl_slot *fl_slot_peer_of(const struct fl_slot *me)
{
	uint32_t p = __atomic_load_n(&me->peer_slot, __ATOMIC_ACQUIRE);
	struct fl_slot *peer = p ? fl_slot_at(p - 1) : NULL;

	if (!peer || __atomic_load_n(&peer->owner, __ATOMIC_RELAXED) !=
		     __atomic_load_n(&me->peer_owner, __ATOMIC_RELAXED))
		return NULL;
	return peer;
}

uint64_t fl_slot_peer_unread(uint32_t slot, uint32_t *budget, bool *redirecting)
{
	struct fl_slot *me = fl_slot_at(slot), *peer;
	uint64_t sent, consumed;

	*budget = 0;
	*redirecting = false;
	if (!me || !(peer = fl_slot_peer_of(me)))
		return 0;
	*budget = __atomic_load_n(&peer->budget, __ATOMIC_RELAXED);
	*redirecting = __atomic_load_n(&me->dir, __ATOMIC_RELAXED) == FL_DIR_REDIRECT;
	sent = __atomic_load_n(&me->tcp_sent, __ATOMIC_RELAXED) +
	       __atomic_load_n(&me->redirected, __ATOMIC_RELAXED);
	consumed = __atomic_load_n(&peer->consumed, __ATOMIC_RELAXED) & FL_CONSUMED_MASK;
	return sent > consumed ? sent - consumed : 0;
}

enum fl_slot_behind fl_slot_tcp_behind(uint32_t slot, uint64_t read)
{
	const struct fl_slot *me = fl_slot_at(slot), *peer;
	uint64_t sent, consumed;

	if (!me)
		return FL_BEHIND_UNKNOWN;
	consumed = (__atomic_load_n(&me->consumed, __ATOMIC_RELAXED) & FL_CONSUMED_MASK) + read;
	if (!(peer = fl_slot_peer_of(me))) {
		/*
		 * Out of reach (a server as nobody reading a root client:
		 * nginx's worker would ask the kernel once a request). A
		 * flow-control fallback leaves more than this socket's budget
		 * less one message unread, all in the redirected queue, which
		 * the application reads first: until it has read that much in
		 * all, no read can end at that split. The slack is a whole
		 * slice of a large write (tx_split.h), more than one message.
		 * Not covered: the rarer ways back to TCP (the sender turning
		 * to MSG_ZEROCOPY, this reader gone blind) and a budget raised
		 * after the fallback.
		 */
		if (consumed + FL_BEHIND_SLACK < __atomic_load_n(&me->budget, __ATOMIC_RELAXED))
			return FL_BEHIND_NO;
		return FL_BEHIND_UNKNOWN;
	}
	/* The gate let the peer redirect again only once every byte it sent
	 * over TCP had been read: nothing of its can be in TCP's queue. */
	if (__atomic_load_n(&peer->dir, __ATOMIC_ACQUIRE) == FL_DIR_REDIRECT)
		return FL_BEHIND_NO;
	/* Nor before it first redirected: then everything is in TCP's queue,
	 * whose read takes all there is. */
	if (!__atomic_load_n(&peer->redirected, __ATOMIC_RELAXED))
		return FL_BEHIND_NO;
	sent = __atomic_load_n(&peer->tcp_sent, __ATOMIC_RELAXED) +
	       __atomic_load_n(&peer->tcp_pending, __ATOMIC_RELAXED) +
	       __atomic_load_n(&peer->redirected, __ATOMIC_RELAXED);
	return sent > consumed ? FL_BEHIND_MAYBE : FL_BEHIND_NO;
}

uint64_t fl_slot_gate_unread(uint32_t slot, uint64_t *consumed)
{
	struct fl_slot *me = fl_slot_at(slot), *peer;
	uint64_t sent, got;
	uint32_t f;

	*consumed = 0;
	if (!me || __atomic_load_n(&me->dir, __ATOMIC_RELAXED) != FL_DIR_TCP ||
	    __atomic_load_n(&me->dir_reason, __ATOMIC_RELAXED) != FL_STAT_PASS_GATE_BYTES ||
	    (__atomic_load_n(&me->flags, __ATOMIC_RELAXED) & FL_SLOT_SEND_TCP) ||
	    !(peer = fl_slot_peer_of(me)))
		return 0;
	f = __atomic_load_n(&peer->flags, __ATOMIC_RELAXED);
	if (!(f & FL_SLOT_RX_READY) || (f & (FL_SLOT_BLIND | FL_SLOT_RCV_SHUT)))
		return 0;
	sent = __atomic_load_n(&me->tcp_sent, __ATOMIC_RELAXED) +
	       __atomic_load_n(&me->tcp_pending, __ATOMIC_RELAXED) +
	       __atomic_load_n(&me->redirected, __ATOMIC_RELAXED);
	got = __atomic_load_n(&peer->consumed, __ATOMIC_RELAXED) & FL_CONSUMED_MASK;
	*consumed = got;
	return sent > got ? sent - got : 0;
}

enum fl_slot_pairing fl_slot_pairing(uint32_t slot, uint64_t gen, uint64_t *rx, uint64_t *tx,
				     uint64_t *verdicts)
{
	const struct fl_slot *me = fl_slot_at(slot);
	uint64_t word;

	if (!me)
		return FL_PAIRING_UNKNOWN;
	word = __atomic_load_n(&me->consumed, __ATOMIC_RELAXED);
	if (FL_GEN(word) != gen)
		return FL_PAIRING_UNKNOWN;
	/* peer_slot is set by the first verdict that finds the peer and never
	 * cleared (only re-checked by its owner tag): once seen, paired. */
	if (__atomic_load_n(&me->peer_slot, __ATOMIC_RELAXED))
		return FL_PAIRING_PAIRED;
	if (__atomic_load_n(&me->dir_reason, __ATOMIC_RELAXED) != FL_STAT_PASS_NO_PEER_BYTES ||
	    (__atomic_load_n(&me->flags, __ATOMIC_RELAXED) & (FL_SLOT_SEND_TCP | FL_SLOT_BLIND)))
		return FL_PAIRING_UNKNOWN;
	*rx = word & FL_CONSUMED_MASK;
	*tx = __atomic_load_n(&me->tcp_sent, __ATOMIC_RELAXED);
	*verdicts = *tx + __atomic_load_n(&me->tcp_pending, __ATOMIC_RELAXED);
	return FL_PAIRING_NO_PEER;
}

bool fl_slot_left(uint32_t slot)
{
	const struct fl_slot *s = fl_slot_at(slot);

	return s && (__atomic_load_n(&s->flags, __ATOMIC_ACQUIRE) & FL_SLOT_LEFT);
}
