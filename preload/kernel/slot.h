/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * slot.h - an enrolled socket's live counters in the shared fl_slots array.
 *
 * The shim writes how much the application has read (consumed), the receive
 * budget and the blind flag; the verdict program reads them to keep the
 * ordering gate and flow control (bpf/fastlocal.h, docs/design.md).
 */
#ifndef FL_SLOT_H
#define FL_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "fastlocal.h"

/* Claims a free slot of this process's domain for the socket with this
 * cookie and initialises it; consumed: what the application has read from
 * it already (over TCP, before it enrolled). Returns the slot reference
 * (FL_SLOT_REF) and its generation in *gen, or -1 if all are taken. */
int fl_slot_alloc(uint64_t cookie, uint32_t budget, uint32_t snd_isn, uint64_t consumed,
		  uint64_t *gen);

/* Gives a slot back (only when enrollment failed after fl_slot_alloc). */
void fl_slot_free(uint32_t slot, uint64_t cookie);

/* The slot a reference names, or NULL if the maps are not open, or it is
 * out of range or in another domain than this process's. */
struct fl_slot *fl_slot_at(uint32_t ref);

/* Counts n bytes read by the application. A no-op if the slot has been
 * given to another socket since (gen differs). Lock-free, signal-safe. */
void fl_slot_consume(uint32_t slot, uint64_t gen, uint64_t n);

/* Shuts the gate towards this socket for good: the application reads
 * through a path the shim cannot count. */
void fl_slot_blind(uint32_t slot, uint64_t gen, const char *why);

/* Sends this socket's messages over TCP from now on (a feature only TCP
 * has, e.g. MSG_ZEROCOPY completions). Order-safe: redirect -> TCP. */
void fl_slot_send_tcp(uint32_t slot, uint64_t gen, const char *why);

/* The owner shut down reading: its peer's bytes go over TCP from now on. */
void fl_slot_rcv_shut(uint32_t slot, uint64_t gen);

/* True if the socket left the sockhash while another process held it
 * (FL_SLOT_LEFT): this process's entry for it is stale. */
bool fl_slot_left(uint32_t slot);

/* Sets the receive budget. */
void fl_slot_set_budget(uint32_t slot, uint64_t gen, uint32_t budget);

/* Bytes this socket has sent that its peer's application has not read yet,
 * as of the last verdict; 0 when the peer is unknown. *budget gets the
 * peer's budget. */
uint64_t fl_slot_peer_unread(uint32_t slot, uint32_t *budget, bool *redirecting);

/*
 * Whether TCP's receive queue of this socket may hold bytes of its peer's
 * behind the redirected ones the application just read (read: how many):
 * only after the peer's direction fell back to TCP (flow control), which
 * leaves the older bytes in the redirected queue and the newer in TCP's
 * (rx_topup.h). FL_BEHIND_NO when the peer's slot says its direction
 * redirects, or never redirected, or everything it sent has been read;
 * FL_BEHIND_UNKNOWN when that slot is out of reach (another user's domain,
 * or this socket has sent nothing since it enrolled, so its verdict never
 * looked the peer up), unless this socket has not yet read its budget
 * less 1 MiB in all (then no flow-control split can be behind: NO).
 * Lock-free, no system call.
 */
enum fl_slot_behind { FL_BEHIND_NO, FL_BEHIND_MAYBE, FL_BEHIND_UNKNOWN };
enum fl_slot_behind fl_slot_tcp_behind(uint32_t slot, uint64_t read);

/*
 * The ordering gate alone keeps this socket's messages on TCP: the last one
 * went over TCP because its peer had not read every earlier byte yet, and
 * nothing else (peer not ready, blind, shut down, ...) would stop the next
 * one. Returns the peer's unread bytes then (tcp_pending included: the last
 * message is not in tcp_sent until the next verdict) and its consumed
 * count in *consumed; 0 in every other case.
 */
uint64_t fl_slot_gate_unread(uint32_t slot, uint64_t *consumed);

/* What the verdict has learnt of this socket's peer (unpaired.c). */
enum fl_slot_pairing {
	FL_PAIRING_UNKNOWN = 0, /* not ours any more, or the last message went over TCP
				 * for another reason (shut down, SEND_TCP, ...) */
	FL_PAIRING_PAIRED,      /* the verdict has found the peer's slot once */
	FL_PAIRING_NO_PEER,     /* never found: the last message passed as "no peer" */
};

/* The pairing of the socket in slot (generation gen); with NO_PEER, *rx gets
 * the bytes its application has read in all, *tx those it handed to TCP,
 * and *verdicts a number that changes with every message the verdict sees
 * (tcp_sent + tcp_pending). */
enum fl_slot_pairing fl_slot_pairing(uint32_t slot, uint64_t gen, uint64_t *rx, uint64_t *tx,
				     uint64_t *verdicts);

#endif
