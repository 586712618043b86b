/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * maps.h - this process's handles on the pinned maps.
 *
 * Opened once, on the first enrollment, and never closed: while the process
 * has enrolled sockets the sockhash must stay alive, or "fastlocal unload"
 * would free it and the kernel would drop every byte queued in those sockets
 * (docs/kernel.md#loss). The fds are the shim's own (own_fds.h).
 */
#ifndef FL_MAPS_H
#define FL_MAPS_H

#include <stdbool.h>
#include <stdint.h>

#include "fastlocal.h"


/* The fd fields may be moved by own_fds: read them with fl_own_fd_get(). */
struct fl_maps {
	int sockhash;             /* fl_sockhash; -1 when brokered */
	int sk;                   /* fl_sk (SK_STORAGE); -1 when brokered */
	int slot_index;           /* fl_slot_index; -1 when brokered */
	int established;          /* fl_established; -1 if absent or brokered (same_host.h) */
	struct fl_slot *slots;    /* this process's slot domain, mmap-ed shared, nslots entries */
	uint32_t nslots;          /* FL_SLOTS_MAX (domain 0) or FL_DOMAIN_SLOTS */
	uint32_t domain;          /* 0: the pins were opened; else the broker's domain for our uid */
	bool brokered;            /* the pins cannot be opened: "fastlocal daemon" enrolls (broker.h);
				   * enroll.c picks its back-end by it (enroll_backend.h) */
	struct fl_ustats *ustats; /* fl_ustats, mmap-ed shared; brokered: a private page, the
				   * shared counters being root's (docs/security.md) */
	struct fl_joined *joined; /* fl_joined, mmap-ed shared; NULL when brokered (an accepting
				   * end then enrolls without waiting for its peer) */
};

/* The maps, opening them on first use. NULL when nothing is loaded (retried
 * at most once a second, so connect() does not pay for it each time). */
const struct fl_maps *fl_maps(void);

/* The maps if they are open already, without trying to open them. */
const struct fl_maps *fl_maps_if_open(void);

/* Any domain's slot, read-only, for a root shim (maps the domain on first
 * use: system calls, so never on the send/recv path); a brokered process
 * gets only its own domain's. NULL if out of reach. */
const struct fl_slot *fl_slot_any(uint32_t ref);

/*
 * Marks port, that of fd's listening socket, in fl_joined's listening
 * (fastlocal.h, struct fl_joined): an accepting end under the shim may come
 * there. Through the open maps if this process has them; else through a
 * mapping of that one pin made and dropped in this call (four system
 * calls); else, not root or no pins in sight, by the broker (a request with
 * fd: "fastlocal daemon" marks the port of a socket of the caller's that
 * listens; nothing if no broker answers).
 * IMPORTANT: it never opens this process's maps. A server's listen() comes
 * before its fork, and a root master whose maps were open would hand
 * them, root's handles, to workers that then drop to another user (nginx):
 * they would enroll directly instead of through the broker.
 */
void fl_maps_mark_listener(int fd, uint16_t port);

/* Adds to a shim counter (no-op when the maps are not open). */
void fl_ustat_add(enum fl_ustat idx, uint64_t v);

#endif
