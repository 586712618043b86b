// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* conns.c - the accelerated connections, read from the pinned maps. */
#include "conns.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "../common/key.h"
#include "counters.h"
#include "slot_view.h"

/* An enrolled end and the key that names its connection whichever end one
 * starts from (the smaller of its key and the mirror), for pairing. */
struct fl_end_sorted {
	struct fl_key conn;
	struct fl_conn_end end;
};

static int fl_end_cmp(const void *a, const void *b)
{
	const struct fl_end_sorted *x = a, *y = b;

	return memcmp(&x->conn, &y->conn, sizeof(x->conn));
}

/* Every live entry of the slot index, with a snapshot of its slot. */
static int fl_read_ends(const struct fl_pins *pins, const struct fl_slot_view *slots,
			struct fl_end_sorted **out, size_t *n)
{
	int idx = pins->fd[FL_PIN_SLOT_INDEX];
	struct fl_end_sorted *v = NULL, *grown;
	struct fl_key key, next, mirror;
	size_t cap = 0, k = 0;
	const struct fl_slot *slot;
	struct fl_slot_ref ref;
	void *prev = NULL;

	while (bpf_map_get_next_key(idx, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(idx, &key, &ref) || !ref.owner)
			continue; /* gone meanwhile */
		slot = fl_slot_view_at(slots, ref.slot);
		/* A stale entry (its socket died, the slot was reused) has
		 * another owner tag in the slot. */
		if (!slot || __atomic_load_n(&slot->owner, __ATOMIC_ACQUIRE) != ref.owner)
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(v, cap * sizeof(*v));
			if (!grown) {
				free(v);
				return -1;
			}
			v = grown;
		}
		memset(&v[k], 0, sizeof(v[k]));
		v[k].end.present = true;
		v[k].end.key = key;
		v[k].end.ref = ref;
		memcpy(&v[k].end.slot, slot, sizeof(v[k].end.slot));
		fl_key_mirror(&mirror, &key);
		v[k].conn = memcmp(&key, &mirror, sizeof(key)) <= 0 ? key : mirror;
		k++;
		if (k >= 2 * (size_t)FL_SLOTS_MAX)
			break; /* a map that keeps changing under us: enough */
	}
	*out = v;
	*n = k;
	return 0;
}

int fl_conns_read(const struct fl_pins *pins, struct fl_conn **out, size_t *n, char *err,
		  size_t errlen)
{
	size_t nends = 0, i, k = 0;
	struct fl_end_sorted *ends = NULL;
	struct fl_slot_view slots;
	struct fl_conn *conns;

	*out = NULL;
	*n = 0;
	if (pins->fd[FL_PIN_DOMAINS] < 0 || pins->fd[FL_PIN_SLOT_INDEX] < 0)
		return 0; /* nothing loaded: no connections */
	if (fl_slot_view_open(&slots, pins)) {
		snprintf(err, errlen, "cannot map the slots: %s", strerror(errno));
		return -1;
	}
	if (fl_read_ends(pins, &slots, &ends, &nends)) {
		fl_slot_view_close(&slots);
		snprintf(err, errlen, "out of memory reading the slot index");
		return -1;
	}
	fl_slot_view_close(&slots);
	if (nends)
		qsort(ends, nends, sizeof(*ends), fl_end_cmp);
	conns = calloc(nends ? nends : 1, sizeof(*conns));
	if (!conns) {
		free(ends);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < nends; i++) {
		struct fl_conn *c = &conns[k++];

		c->a = ends[i].end;
		if (i + 1 < nends && !fl_end_cmp(&ends[i], &ends[i + 1]))
			c->b = ends[++i].end;
		else
			fl_key_mirror(&c->b.key, &c->a.key); /* alone: still names the other */
		/* a is the end that called connect(), whenever that is known. */
		if (!(c->a.ref.sk_flags & FL_SK_ACTIVE) &&
		    (!c->b.present || (c->b.ref.sk_flags & FL_SK_ACTIVE))) {
			struct fl_conn_end t = c->a;

			c->a = c->b;
			c->b = t;
		}
	}
	free(ends);
	*out = conns;
	*n = k;
	return 0;
}

__u64 fl_conn_end_sent(const struct fl_conn_end *e)
{
	return e->slot.tcp_sent + e->slot.tcp_pending + e->slot.redirected;
}

void fl_conn_who(const struct fl_conn_end *e, char *buf, size_t len)
{
	if (e->present)
		snprintf(buf, len, "%u/%.16s", e->ref.pid, e->ref.comm);
	else
		snprintf(buf, len, "-");
}

void fl_conn_dir(const struct fl_conn_end *from, const struct fl_conn_end *to,
		 struct fl_conn_dir *d)
{
	__u64 consumed;

	memset(d, 0, sizeof(*d));
	if (!from->present) {
		/* Nobody counts an unenrolled sender's bytes; its enrolled
		 * reader counts what it has read of them. */
		d->why_tcp = "not_enrolled";
		if (to->present)
			d->bytes = to->slot.consumed & FL_CONSUMED_MASK;
		return;
	}
	d->redirected = from->slot.redirected;
	d->bytes = fl_conn_end_sent(from);
	if (to->present) {
		consumed = to->slot.consumed & FL_CONSUMED_MASK;
		d->unread = d->bytes > consumed ? d->bytes - consumed : 0;
	}
	d->redirect = from->slot.dir == FL_DIR_REDIRECT;
	if (!d->redirect)
		d->why_tcp = from->slot.dir_reason ? fl_pass_reason_key(from->slot.dir_reason) :
			     !to->present ? "peer_not_enrolled" : "idle";
}

int fl_conn_ip(const struct fl_conn_end *e, char *buf, size_t len)
{
	const __u32 *ip = e->key.local_ip;

	/* Keys hold IPv4 as v4-mapped IPv6 (key.c). */
	if (!ip[0] && !ip[1] && ip[2] == htonl(0xffff)) {
		inet_ntop(AF_INET, &ip[3], buf, (socklen_t)len);
		return AF_INET;
	}
	inet_ntop(AF_INET6, ip, buf, (socklen_t)len);
	return AF_INET6;
}

void fl_conn_addr(const struct fl_conn_end *e, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (fl_conn_ip(e, a, sizeof(a)) == AF_INET)
		snprintf(buf, len, "%s:%u", a, e->key.local_port);
	else
		snprintf(buf, len, "[%s]:%u", a, e->key.local_port);
}

double fl_conn_age(const struct fl_conn *c, double now_unix)
{
	__u64 t = c->a.ref.enrolled_ns;

	if (c->b.present && c->b.ref.enrolled_ns && (!t || c->b.ref.enrolled_ns < t))
		t = c->b.ref.enrolled_ns;
	return t ? now_unix - (double)t / 1e9 : 0;
}

size_t fl_conns_pairs(const struct fl_conn *c, size_t n)
{
	size_t i, pairs = 0;

	for (i = 0; i < n; i++)
		pairs += c[i].a.present && c[i].b.present;
	return pairs;
}
