/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * broker_serve.h - what "fastlocal daemon" does for one request: check the
 * caller and the socket it passed, then do what a root shim does with the
 * maps (common/enroll_maps.c), and answer with an errno.
 */
#ifndef FL_BROKER_SERVE_H
#define FL_BROKER_SERVE_H

#include <stddef.h>

#include "../common/enroll_maps.h"
#include "broker_domains.h"
#include "pins.h"

struct fl_broker {
	struct fl_pins pins;     /* every pin, open for the broker's life: it keeps the maps
				  * alive for the sockets it enrolled
				  * (docs/kernel.md#loss) */
	struct fl_em_maps em;    /* fds borrowed from pins */
	struct fl_ustats *ustats; /* the shared shim counters, mapped */
	struct fl_joined *joined; /* fl_joined, mapped: bumped at each insert */
	struct fl_domains dom;
};

/* Opens what is loaded in the pin dir. 0, or -1 with a message. */
int fl_broker_open(struct fl_broker *b, const struct fl_pin_dir *pd, char *err, size_t errlen);
void fl_broker_close(struct fl_broker *b);

/* Serves one accepted connection whose request has arrived (it never
 * waits): one request, one reply. Bounded work, no allocation driven by
 * the caller beyond its uid's one domain. */
void fl_broker_serve(struct fl_broker *b, int conn);

#endif
