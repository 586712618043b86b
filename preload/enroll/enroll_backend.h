/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * enroll_backend.h - who writes the maps of an enrollment for this process:
 * the shim itself (enroll_direct.c: root, the pins open) or "fastlocal
 * daemon" on its behalf (enroll_brokered.c: not root, docs/security.md).
 * Chosen in one place, fl_enroll_be(), by whether the maps were opened
 * through the broker (maps.c sets fl_maps()->brokered once, at open); the
 * rest of enroll.c is the same for both. (The kernel-handles layer below
 * does not name the back-ends: docs/architecture.md.)
 *
 * Internal to enroll*.c; the shim's interface is enroll.h.
 */
#ifndef FL_ENROLL_BACKEND_H
#define FL_ENROLL_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/enroll_core.h"
#include "fastlocal.h"
#include "socket/fdtable.h"
#include "kernel/maps.h"
#include "enroll_steps.h"

/* What fl_enroll_read found out about fd before its back-end enrolls it. */
struct fl_enroll_req {
	struct sockaddr_storage local, remote;
	uint64_t netns;        /* SO_NETNS_COOKIE, 0 if unknown */
	bool addr_local;       /* the peer's address is one of this namespace's */
	uint64_t already_read; /* bytes the application read over TCP (fl_enroll_read) */
	bool busy;             /* a read was in flight: no holders check now */
	bool peer_first;       /* an end joins only after its peer (a connecting one
				* also when its server's port is marked): else
				* -EINPROGRESS, the fd set to wait (enroll.c) */
};

struct fl_enroll_backend {
	const char *name; /* "direct" or "brokered", for debug lines */
	/* Enrolls fd (e: its entry, may be NULL), or adopts it if some
	 * process enrolled it before. fl_enroll_read's return values. */
	int (*enroll)(const struct fl_maps *m, int fd, struct fl_fd *e,
		      const struct fl_enroll_req *r);
	/* Re-attaches fd, enrolled before (fork, exec). 0 or -errno. */
	int (*adopt)(const struct fl_maps *m, int fd);
	/* fd's record (slot, cookie; keys if this process can read them) for
	 * leaving. 0, or -ENOENT when it is not enrolled. */
	int (*record)(const struct fl_maps *m, int fd, const struct fl_fd *e, struct fl_sk *st);
	/* Leaves the sockhash once the drain check passes; me is fd's slot,
	 * BLIND|SEND_TCP set already. 0, -EBUSY (bytes still to be read) or
	 * -errno. */
	int (*unenroll)(const struct fl_maps *m, int fd, const struct fl_fd *e,
			struct fl_slot *me, struct fl_sk *st, const char *why);
	/* fd stays on TCP by configuration: FL_SK_OFF (fl_em_mark_off). */
	void (*mark_off)(const struct fl_maps *m, int fd);
	/* The shared counters are this process's to write (a brokered
	 * process's are a private page: the broker counts for it). */
	bool counts_shared;
};

extern const struct fl_enroll_backend fl_enroll_direct;
extern const struct fl_enroll_backend fl_enroll_brokered;

/* The back-end of this process's maps m. */
static inline const struct fl_enroll_backend *fl_enroll_be(const struct fl_maps *m)
{
	return m->brokered ? &fl_enroll_brokered : &fl_enroll_direct;
}

#endif
