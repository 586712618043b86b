/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * enroll_maps.h - what enrolling a socket writes into the maps, and how it
 * is undone, given the map fds and the socket fd.
 *
 * Enrolling is two steps: announce (the records the peer finds us by), then
 * join (the sockhash), once the peer has announced itself too.
 *
 * Shared by the shim (enroll.c, which opened the pins itself) and by the
 * privileged broker (tools/broker_*.c, which acts for a process that cannot
 * open them). IMPORTANT: no shim globals here (no fl_maps(), no fd table, no
 * config): the broker links this file too, and both must build the key and
 * write the records the same way, or the two ends of one connection would
 * never pair.
 */
#ifndef FL_ENROLL_MAPS_H
#define FL_ENROLL_MAPS_H

#include <stdint.h>
#include <sys/socket.h>

#include "fastlocal.h"

/* The three maps an enrollment writes (and reads). */
struct fl_em_maps {
	int sk;         /* fl_sk (SK_STORAGE, keyed by the socket fd) */
	int slot_index; /* fl_slot_index */
	int sockhash;   /* fl_sockhash */
};

/* True for an AF_INET/AF_INET6 SOCK_STREAM TCP socket (MPTCP excluded). */
int fl_is_tcp_socket(int fd);

/* The kernel's record of fd (written by sockops at establishment) into *st.
 * 0, or -ENODATA when there is none or it has no ISNs. */
int fl_em_read(int sk_map, int fd, struct fl_sk *st);

/* Sets st->key and st->peer for a socket with these addresses in the
 * namespace netns, from the ISNs and the SYN nonce in *st (the key's scope:
 * fl_key_set_scope). 0, -ENODATA (not loopback, and no nonce), -ENOPROTOOPT
 * (loopback, and no netns cookie) or -EAFNOSUPPORT. */
int fl_em_build_keys(struct fl_sk *st, uint64_t netns, const struct sockaddr_storage *local,
		     const struct sockaddr_storage *remote);

/*
 * Announces fd (docs/design.md "Joining"): records st (keys built, slot and
 * cookie set; ENROLLED is set here, JOINED cleared) in fl_sk, then ref under
 * st->key in the slot index, where the peer's enrollment looks for it. Not
 * yet in the sockhash: nothing can be redirected to or from it. On failure
 * the first write is undone and -errno returned; the slot is the caller's.
 */
int fl_em_announce(const struct fl_em_maps *m, int fd, struct fl_sk *st,
		   const struct fl_slot_ref *ref);

/* True if the other end of st's connection has announced itself; its slot
 * reference and owner go to *peer (may be NULL). */
int fl_em_peer_announced(const struct fl_em_maps *m, const struct fl_sk *st,
			 struct fl_slot_ref *peer);

/*
 * Joins fd (announced, record st) to the sockhash with BPF_NOEXIST, then
 * sets JOINED in its record. fault: an error to act out instead of the
 * insert (tests; 0 normally). On failure nothing changed (the caller may
 * withdraw the announcement with fl_em_remove); -errno.
 */
int fl_em_join(const struct fl_em_maps *m, int fd, struct fl_sk *st, int fault);

/* True if the sockhash holds the socket with cookie under st->key: it
 * joined already (another process sharing it won a race to join). */
int fl_em_joined_already(const struct fl_em_maps *m, const struct fl_sk *st, uint64_t cookie);

/* Undoes fl_em_announce for fd (record st) that never joined: clears
 * ENROLLED in its record and removes its slot index entry if it is still
 * its own. Never touches the sockhash. The slot is the caller's to free. */
void fl_em_withdraw(const struct fl_em_maps *m, int fd, struct fl_sk *st);

/* Takes fd (record st, enrolled) out of the sockhash if it joined, clears
 * ENROLLED and JOINED in its record and removes its slot index entry. 0 or -errno (a missing
 * sockhash entry is not an error). The slot is the caller's to free. */
int fl_em_remove(const struct fl_em_maps *m, int fd, struct fl_sk *st);

/* Flags fd's record FL_SK_OFF (left on TCP by configuration) so that
 * sockops counts its bytes at close; nothing when it has no ISN record or
 * is enrolled or flagged already. */
void fl_em_mark_off(int sk_map, int fd);

/* The fallback counter of a refused insert, by its errno (-err). */
enum fl_ustat fl_em_insert_counter(int err);

#endif
