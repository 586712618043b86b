/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * conns.h - the accelerated connections, read from the pinned maps.
 *
 * Every enrolled socket has a slot (its counters) and an entry in the slot
 * index (its key, and who enrolled it). Two enrolled sockets whose keys
 * mirror each other are the two ends of one connection.
 */
#ifndef FL_CONNS_H
#define FL_CONNS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "fastlocal.h"
#include "pins.h"

struct fl_conn_end {
	bool present;            /* false: that end is not enrolled (only key is set) */
	struct fl_key key;
	struct fl_slot_ref ref;
	struct fl_slot slot;     /* a snapshot of its counters */
};

/* One connection: a is the end that called connect(), b the accepted one
 * (an end that is not enrolled has only its key). Each end's slot says how
 * its own sends travel. */
struct fl_conn {
	struct fl_conn_end a, b;
};

/* What one direction (from -> to) looks like. */
struct fl_conn_dir {
	__u64 bytes;           /* sent by from, over both paths (from not enrolled:
				* what to has read of them) */
	__u64 redirected;      /* of which by redirect */
	__u64 unread;          /* not yet read by to (when to is enrolled) */
	bool redirect;         /* where from's next message goes */
	const char *why_tcp;   /* when not redirect: the reason key, or "idle" */
};

/* Reads every enrolled socket and pairs them. *out is malloc-ed (free it).
 * 0, or -1 with a message. */
int fl_conns_read(const struct fl_pins *pins, struct fl_conn **out, size_t *n, char *err,
		  size_t errlen);

/* Bytes an enrolled end has sent, over both paths (its slot's view). */
__u64 fl_conn_end_sent(const struct fl_conn_end *e);

/* "4242/nginx": who enrolled the end, or "-" when it is not enrolled. */
void fl_conn_who(const struct fl_conn_end *e, char *buf, size_t len);

void fl_conn_dir(const struct fl_conn_end *from, const struct fl_conn_end *to,
		 struct fl_conn_dir *d);

/* The local address of an end's key in buf (INET6_ADDRSTRLEN); returns
 * AF_INET or AF_INET6. */
int fl_conn_ip(const struct fl_conn_end *e, char *buf, size_t len);

/* "127.0.0.1:5000" or "[::1]:5000" of an end (local side of its key). */
void fl_conn_addr(const struct fl_conn_end *e, char *buf, size_t len);

/* Seconds since the earlier enrollment of the two ends. */
double fl_conn_age(const struct fl_conn *c, double now_unix);

/* The number of connections with both ends enrolled. */
size_t fl_conns_pairs(const struct fl_conn *c, size_t n);

#endif
