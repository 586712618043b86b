/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * enroll_core.h - the enrollment transaction and the drain check, one copy
 * for both enrollers: the shim of a process that opened the pins itself
 * (enroll_direct.c) and "fastlocal daemon", which enrolls for processes
 * that cannot (tools/broker_serve.c).
 *
 * IMPORTANT: compiled into the shim and the CLI: no shim globals and no
 * interposed calls here. What the two differ in (how a slot of another
 * domain is reached, which ioctl to call) comes in struct fl_ec_env. Both
 * must build the key, write the records and decide when a socket may leave
 * the sockhash the same way, or the two ends of one connection would never
 * pair, or bytes would be lost (docs/kernel.md#loss).
 */
#ifndef FL_ENROLL_CORE_H
#define FL_ENROLL_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "enroll_maps.h"
#include "fastlocal.h"

/* What differs between the enrollers, given to every call. */
struct fl_ec_env {
	struct fl_em_maps em; /* the maps an enrollment writes */
	int established;      /* fl_established, or -1 (same_host.h) */
	struct fl_joined *joined; /* fl_joined mapped (fastlocal.h), or NULL */
	/* The slot a reference names, in any domain the caller reaches
	 * (read-only), or NULL: the peer's, for the drain check. */
	const struct fl_slot *(*slot_any)(void *ctx, uint32_t ref);
	/* ioctl(fd, FIONREAD, n): the shim calls libc's own (libc.h). 0 or -1. */
	int (*fionread)(int fd, int *n);
	void *ctx;            /* slot_any's */
};

/* Who enrolls, for "fastlocal conns": pid, name and now into ref. */
void fl_ec_owner(struct fl_slot_ref *ref, uint32_t pid, const char *comm);

/*
 * Sets st's keys (fl_em_build_keys) and checks that the peer is on this
 * host: known already when peer_local (its address is one of this
 * namespace's), a loopback key always is, else the mirror key must be in
 * fl_established. 0, or fl_em_build_keys' errors, or -EREMOTE.
 */
int fl_ec_keys(const struct fl_ec_env *env, struct fl_sk *st, uint64_t netns,
	       const struct sockaddr_storage *local, const struct sockaddr_storage *remote,
	       bool peer_local);

/*
 * The transaction: st (keys built) takes slot and cookie, the slot index
 * entry is ref (owner filled by fl_ec_owner) naming them, and fd joins the
 * sockhash (fl_em_insert, with fault acted out: tests), then an accepting
 * end's port is marked (fl_ec_note_server) and the peer's bucket of
 * fl_joined is bumped (a peer waiting for this end). 0 or
 * -errno, all undone but the slot, which is the caller's.
 */
int fl_ec_insert(const struct fl_ec_env *env, int fd, struct fl_sk *st, uint32_t slot,
		 uint64_t cookie, struct fl_slot_ref *ref, int fault);

/*
 * Ports with an accepting end under the shim (fastlocal.h, struct
 * fl_joined, listening). fl_ec_note_server marks a port (j NULL: no
 * fl_joined, nothing to mark); fl_ec_server_seen tells whether the
 * server's port of a connecting end (st) is marked: true as well when
 * there is no fl_joined to look at.
 */
void fl_ec_note_server(struct fl_joined *j, uint16_t port);
bool fl_ec_server_seen(const struct fl_ec_env *env, const struct fl_sk *st);

/*
 * The peer of an end (st, keys built) is not in the sockhash
 * yet: true, with *seen the value of st's bucket of fl_joined read before
 * the sockhash was asked (fastlocal.h, struct fl_joined: the end asks
 * again once that value moved). False when the peer is there, or when
 * there is no fl_joined to wait on.
 */
bool fl_ec_peer_absent(const struct fl_ec_env *env, const struct fl_sk *st, uint32_t *seen);

/*
 * IMPORTANT: neither end joins the sockhash alone (fastlocal.h, struct
 * fl_joined). An accepting end marks its port, then waits until its peer
 * is there; a connecting end waits only when its server's port was never
 * marked as well, so that where both ends run the shim it joins first, as
 * it always did, and the accepting end follows. True when st (keys built)
 * should wait, with *seen as fl_ec_peer_absent's; both back-ends (the
 * shim's own, the broker's) decide by it.
 */
bool fl_ec_must_wait(const struct fl_ec_env *env, const struct fl_sk *st, uint32_t *seen);

/*
 * The drain check before fd (record st, slot me, BLIND set already) may
 * leave the sockhash: everything its peer ever sent (the peer's slot, in
 * any domain) has been read, and the kernel has nothing queued (FIONREAD).
 * Then nothing sits in, or travels to, its redirected queue, and leaving
 * loses nothing (docs/kernel.md#loss). 0, or -EBUSY (try again later).
 */
int fl_ec_drained(const struct fl_ec_env *env, int fd, const struct fl_sk *st,
		  const struct fl_slot *me);

#endif
