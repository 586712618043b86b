/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * enroll_maps.h - what enrolling a socket writes into the maps, and how it
 * is undone, given the map fds and the socket fd.
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

/* The three maps an enrollment writes. */
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
 * Enrolls fd: records st (keys built, slot and cookie set; ENROLLED is set
 * here) in fl_sk, then ref under st->key in the slot index, then inserts fd
 * into the sockhash with BPF_NOEXIST. fault: an error to act out instead of
 * the insert (tests; 0 normally). On any failure the first two writes are
 * undone and -errno returned; the slot itself is the caller's to free.
 */
int fl_em_insert(const struct fl_em_maps *m, int fd, struct fl_sk *st,
		 const struct fl_slot_ref *ref, int fault);

/* Takes fd (record st, enrolled) out of the sockhash, clears ENROLLED in
 * its record and removes its slot index entry. 0 or -errno (a missing
 * sockhash entry is not an error). The slot is the caller's to free. */
int fl_em_remove(const struct fl_em_maps *m, int fd, struct fl_sk *st);

/* Flags fd's record FL_SK_OFF (left on TCP by configuration) so that
 * sockops counts its bytes at close; nothing when it has no ISN record or
 * is enrolled or flagged already. */
void fl_em_mark_off(int sk_map, int fd);

/* The fallback counter of a refused insert, by its errno (-err). */
enum fl_ustat fl_em_insert_counter(int err);

#endif
