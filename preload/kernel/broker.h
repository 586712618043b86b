/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * broker.h - asking "fastlocal daemon" to do what the pins do not let this
 * process do itself (it is not root: docs/security.md).
 *
 * IMPORTANT: one connection per request, closed before returning. Nothing
 * is kept open, so fork or exec can never leave two processes interleaving
 * requests on one connection, and there is no fd for the application to
 * close under us. Enrollment is rare (deferred until a connection has moved
 * 4 KiB), so the round trip is paid once per connection at most. Every call
 * is bounded by 250 ms timeouts, never touches errno, and fails to -errno;
 * after a timeout the broker is left alone for 10 s (-ETIMEDOUT at once).
 */
#ifndef FL_BROKER_H
#define FL_BROKER_H

#include <stdint.h>

#include "common/broker_proto.h"
#include "fastlocal.h"

/* HELLO: this uid's slot domain, mapped shared into *slots (nslots
 * entries), its number into *domain. 0 or -errno. */
int fl_broker_hello(struct fl_slot **slots, uint32_t *nslots, uint32_t *domain);

/* One request about the socket fd (ENROLL with slot, maybe with
 * FL_BROKER_MAY_WAIT and FL_BROKER_WAITED in op; UNENROLL, MARK_OFF, ADOPT,
 * LISTEN). 0 and the reply in *rep (may be NULL), or -errno: the broker's
 * answer or why it could not be asked. */
int fl_broker_call(uint32_t op, int fd, uint32_t slot, struct fl_broker_rep *rep);

#endif
