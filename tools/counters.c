// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* counters.c - the counters of the programs and the shims, read and named. */
#include "counters.h"
#include "slot_view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

const struct fl_counter_name fl_pass_reasons[9] = {
	{ FL_STAT_PASS_NOT_ENROLLED_BYTES, "not_enrolled", NULL },
	{ FL_STAT_PASS_NO_PEER_BYTES, "peer_not_enrolled", NULL },
	{ FL_STAT_PASS_GATE_BYTES, "ordering_gate", NULL },
	{ FL_STAT_PASS_FLOW_BYTES, "flow_control", NULL },
	{ FL_STAT_PASS_BLIND_BYTES, "peer_reads_unseen", NULL },
	{ FL_STAT_PASS_UNSUPPORTED_BYTES, "unsupported_feature", NULL },
	{ FL_STAT_PASS_SHUTDOWN_BYTES, "shut_down", NULL },
	{ FL_STAT_PASS_CONFIG_BYTES, "switched_off", NULL },
	{ FL_STAT_PASS_PEER_SHARED_BYTES, "peer_shared", NULL },
};

const struct fl_counter_name fl_fallback_names[13] = {
	{ FL_USTAT_FB_DISABLED, "disabled", "ECANCELED" },
	{ FL_USTAT_FB_EXCLUDED, "excluded", "ECANCELED" },
	{ FL_USTAT_FB_NOT_LOCAL, "peer_not_local", "EREMOTE" },
	{ FL_USTAT_FB_NO_ISN, "no_isn_record", "ENODATA" },
	{ FL_USTAT_FB_ODD_SOCKET, "odd_socket", "ENOTSUP" },
	{ FL_USTAT_FB_NO_SLOT, "no_free_slot", "ENOSPC" },
	{ FL_USTAT_FB_EOPNOTSUPP, "insert_eopnotsupp", "EOPNOTSUPP" },
	{ FL_USTAT_FB_EBUSY, "insert_ebusy", "EBUSY" },
	{ FL_USTAT_FB_ENOMEM, "insert_enomem", "ENOMEM" },
	{ FL_USTAT_FB_EEXIST, "insert_eexist", "EEXIST" },
	{ FL_USTAT_FB_OTHER, "other", "other errno" },
	{ FL_USTAT_FB_NO_NONCE, "no_nonce", "ENODATA" },
	{ FL_USTAT_FB_SHARED, "shared", "EAGAIN" },
};

const struct fl_counter_name fl_nonce_names[4] = {
	{ FL_STAT_NONCE_SENT, "sent", NULL },
	{ FL_STAT_NONCE_NO_ROOM, "no_room", NULL },
	{ FL_STAT_NONCE_RECEIVED, "received", NULL },
	{ FL_STAT_NONCE_MISSING, "missing", NULL },
};

const struct fl_counter_name fl_flush_names[7] = {
	{ FL_USTAT_FLUSH_FULL, "full", NULL },
	{ FL_USTAT_FLUSH_READER_IDLE, "reader_idle", NULL },
	{ FL_USTAT_FLUSH_WAIT, "before_wait", NULL },
	{ FL_USTAT_FLUSH_CLOSE, "close", NULL },
	{ FL_USTAT_FLUSH_TIMER, "timer", NULL },
	{ FL_USTAT_FLUSH_OPTION, "socket_option", NULL },
	{ FL_USTAT_FLUSH_WRITE, "write", NULL },
};

const char *fl_pass_reason_key(unsigned idx)
{
	size_t i;

	for (i = 0; i < FL_NR(fl_pass_reasons); i++)
		if ((unsigned)fl_pass_reasons[i].idx == idx)
			return fl_pass_reasons[i].key;
	return "unknown";
}

/* Sums the per-CPU counters. */
static int fl_read_stats(int stats_fd, __u64 out[FL_STAT__NR])
{
	int ncpu = libbpf_num_possible_cpus(), i, k;
	struct fl_stats *percpu;
	__u32 zero = 0;

	if (ncpu <= 0)
		return -1;
	percpu = calloc((size_t)ncpu, sizeof(*percpu));
	if (!percpu)
		return -1;
	if (bpf_map_lookup_elem(stats_fd, &zero, percpu)) {
		free(percpu);
		return -1;
	}
	for (k = 0; k < FL_STAT__NR; k++)
		for (out[k] = 0, i = 0; i < ncpu; i++)
			out[k] += percpu[i].c[k];
	free(percpu);
	return 0;
}

static __u64 fl_count_entries(int map_fd)
{
	struct fl_key key, next;
	__u64 n = 0;
	void *prev = NULL;

	while (n < 10 * FL_SOCKHASH_MAX && bpf_map_get_next_key(map_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

/* Slots in use in every domain, from the mmap-able arrays (one system call
 * per domain, not one per slot); *domains: how many domains exist. */
static int fl_count_slots(const struct fl_pins *pins, __u64 *out, __u32 *domains)
{
	struct fl_slot_view v;

	if (fl_slot_view_open(&v, pins))
		return -1;
	*out = fl_slot_view_used(&v);
	*domains = v.domains;
	fl_slot_view_close(&v);
	return 0;
}

int fl_counters_read(const struct fl_pins *pins, struct fl_counters *c, char *err, size_t errlen)
{
	struct fl_ustats u;
	__u32 zero = 0;

	memset(c, 0, sizeof(*c));
	if (pins->fd[FL_PIN_SOCKHASH] >= 0)
		c->enrolled = fl_count_entries(pins->fd[FL_PIN_SOCKHASH]);
	if (pins->fd[FL_PIN_STATS] >= 0 && fl_read_stats(pins->fd[FL_PIN_STATS], c->stat)) {
		snprintf(err, errlen, "cannot read the stats map: %s", strerror(errno));
		return -1;
	}
	if (pins->fd[FL_PIN_USTATS] >= 0 &&
	    bpf_map_lookup_elem(pins->fd[FL_PIN_USTATS], &zero, &u) == 0)
		memcpy(c->ustat, u.c, sizeof(c->ustat));
	if (fl_count_slots(pins, &c->slots_used, &c->slot_domains)) {
		snprintf(err, errlen, "cannot read the slots map: %s", strerror(errno));
		return -1;
	}
	return 0;
}

__u64 fl_counters_flushes(const struct fl_counters *c)
{
	__u64 n = 0;
	size_t i;

	for (i = 0; i < FL_NR(fl_flush_names); i++)
		n += c->ustat[fl_flush_names[i].idx];
	return n;
}
