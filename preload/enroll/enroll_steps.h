/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * enroll_steps.h - the steps enroll.c and both back-ends take
 * (enroll_steps.c). Internal to enroll*.c; the shim's interface is enroll.h.
 */
#ifndef FL_ENROLL_STEPS_H
#define FL_ENROLL_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "fastlocal.h"
#include "common/enroll_maps.h"
#include "kernel/maps.h"
#include "socket/fdtable.h"


/* One fallback: counted (counter < FL_USTAT__NR), logged at debug level;
 * returns err. */
int fl_enroll_fallback(int fd, int err, enum fl_ustat counter, const char *why);

/* The receive budget of fd's slot. */
uint32_t fl_enroll_budget(int fd, struct fl_fd *e);

/* Points fd's entry to the object of the socket slot/gen/cookie (sock.h:
 * the one shared with its other fds, else a new one with its send buffer),
 * state ENROLLING (inserted: by this call, not adopted). 0 or -ENOMEM. */
int fl_enroll_record(int fd, uint32_t slot, uint64_t gen, uint64_t cookie, bool inserted);

/* fd joined the sockhash (inserted: by this call, not adopted): publishes
 * ENROLLED, and RX_READY if nobody else holds it. */
void fl_enroll_joined(const struct fl_maps *m, int fd, struct fl_fd *e, bool inserted, bool busy);

/* The one debug line of an enrollment (st: NULL if the keys are not ours). */
void fl_enroll_say(int fd, const struct fl_fd *e, const struct fl_sk *st, const char *how);

/* Adopts fd, enrolled before with st's slot and cookie. */
int fl_enroll_adopt_slot(int fd, const struct fl_sk *st);

/* Someone else holds the socket: enrollment is put off (-EAGAIN). */
int fl_enroll_put_off(int fd, struct fl_fd *e);

/* An end's peer is not in the sockhash: e waits for fl_joined's bucket to
 * move from seen, or, a connecting end (server_port not 0), for its
 * server's port to be marked (fastlocal.h, struct fl_joined). -EINPROGRESS. */
int fl_enroll_wait_peer(int fd, struct fl_fd *e, uint32_t bucket, uint32_t seen,
			uint16_t server_port);

/* The broker answered that e's end is to wait (FL_BROKER_MAY_WAIT): for
 * its peer, or, a connecting end, for a server under the shim on
 * server_port. Pending on TCP, the broker asked again less and less often
 * (fdtable.h, fl_fd_retry_due_slow). -EINPROGRESS. */
int fl_enroll_wait_broker(int fd, struct fl_fd *e, uint16_t server_port);

/* Every fd of this process on slot (e's gen) forgets its socket. */
void fl_unenroll_forget(const struct fl_fd *e, uint32_t slot);


/* fd's socket was inserted (slot, gen, cookie): records, joins and says
 * it (st: NULL if the keys are not ours). 0 or -ENOMEM. */
int fl_enroll_inserted(const struct fl_maps *m, int fd, uint32_t slot, uint64_t gen,
		       uint64_t cookie, bool busy, const struct fl_sk *st, const char *how);

/* Counts idx in the shared counters if this process writes them. */
void fl_enroll_count(const struct fl_maps *m, enum fl_ustat idx);

/* Waits a moment for this process's calls on e still inside the kernel to
 * come out (e->inflight); true when none is left. */
bool fl_enroll_drain(struct fl_fd *e);

#endif
