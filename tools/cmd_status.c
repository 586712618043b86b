// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_status.c - "fastlocal status [--json]": what is loaded, and the counters. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "cli_opts.h"
#include "json.h"
#include "pin_dir.h"
#include "pins.h"

static const char fl_status_help[] =
	"Usage: fastlocal status [--json] [--pin-dir DIR]\n"
	"\n"
	"Shows whether fastlocal is loaded, the program and map ids, the pin dir,\n"
	"the kernel version, the number of enrolled sockets and the counters of\n"
	"messages and bytes redirected and passed to TCP.\n"
	"\n"
	"  --json         one JSON object; its keys are stable (docs/observability.md)\n"
	"  --pin-dir DIR  the pin dir (default: $FASTLOCAL_PIN_DIR, else /sys/fs/bpf/fastlocal)\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0 loaded, 3 not loaded, 1 the pins cannot be read.\n";

struct fl_status {
	bool loaded;
	char state[32];       /* "loaded", "not loaded", "incomplete" */
	__u32 prog_id, sockhash_id, stats_id, meta_id;
	char prog_tag[17];
	struct fl_meta meta;
	__u64 enrolled;
	__u64 slots_used;
	__u64 stat[FL_STAT__NR];
	__u64 ustat[FL_USTAT__NR];
};

/* JSON key and text label of each counter; the keys are stable. */
struct fl_counter_name {
	int idx;
	const char *key;
};

static const struct fl_counter_name fl_pass_reasons[] = {
	{ FL_STAT_PASS_NOT_ENROLLED_BYTES, "not_enrolled" },
	{ FL_STAT_PASS_NO_PEER_BYTES, "peer_not_enrolled" },
	{ FL_STAT_PASS_GATE_BYTES, "ordering_gate" },
	{ FL_STAT_PASS_FLOW_BYTES, "flow_control" },
	{ FL_STAT_PASS_BLIND_BYTES, "peer_reads_unseen" },
	{ FL_STAT_PASS_UNSUPPORTED_BYTES, "unsupported_feature" },
	{ FL_STAT_PASS_SHUTDOWN_BYTES, "shut_down" },
};

static const struct fl_counter_name fl_fallbacks[] = {
	{ FL_USTAT_FB_DISABLED, "disabled" },
	{ FL_USTAT_FB_NOT_LOCAL, "peer_not_local" },
	{ FL_USTAT_FB_NO_ISN, "no_isn_record" },
	{ FL_USTAT_FB_ODD_SOCKET, "odd_socket" },
	{ FL_USTAT_FB_NO_SLOT, "no_free_slot" },
	{ FL_USTAT_FB_EOPNOTSUPP, "insert_eopnotsupp" },
	{ FL_USTAT_FB_EBUSY, "insert_ebusy" },
	{ FL_USTAT_FB_ENOMEM, "insert_enomem" },
	{ FL_USTAT_FB_EEXIST, "insert_eexist" },
	{ FL_USTAT_FB_OTHER, "other" },
};

#define FL_NR(a) (sizeof(a) / sizeof((a)[0]))

static __u32 fl_obj_id(int fd, int is_prog, char *tag_out)
{
	if (fd < 0)
		return 0;
	if (is_prog) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int i;

		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			return 0;
		for (i = 0; i < 8 && tag_out; i++)
			sprintf(tag_out + 2 * i, "%02x", info.tag[i]);
		return info.id;
	} else {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);

		return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
	}
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

/* Shim counters and slots in use, from their arrays (both mmap-able). */
static int fl_read_shared(int ustats_fd, int slots_fd, struct fl_status *s)
{
	struct fl_ustats u;
	struct fl_slot *slots;
	size_t len = sizeof(struct fl_slot) * FL_SLOTS_MAX;
	__u32 zero = 0, i;

	if (ustats_fd >= 0 && bpf_map_lookup_elem(ustats_fd, &zero, &u) == 0)
		memcpy(s->ustat, u.c, sizeof(s->ustat));
	if (slots_fd < 0)
		return 0;
	slots = mmap(NULL, len, PROT_READ, MAP_SHARED, slots_fd, 0);
	if (slots == MAP_FAILED)
		return -1;
	for (i = 0; i < FL_SLOTS_MAX; i++)
		s->slots_used += slots[i].owner != 0;
	munmap(slots, len);
	return 0;
}

static int fl_collect(struct fl_status *s, const struct fl_pin_dir *pd, char *err, size_t errlen)
{
	struct fl_pins pins;

	memset(s, 0, sizeof(*s));
	if (fl_pins_open(&pins, pd, err, errlen))
		return -1;
	snprintf(s->state, sizeof(s->state), "%s", pins.state == FL_PINS_PRESENT ? "loaded" :
		 pins.state == FL_PINS_NONE ? "not loaded" : "incomplete");
	s->loaded = pins.state == FL_PINS_PRESENT;
	s->prog_id = fl_obj_id(pins.fd[FL_PIN_VERDICT], 1, s->prog_tag);
	s->sockhash_id = fl_obj_id(pins.fd[FL_PIN_SOCKHASH], 0, NULL);
	s->stats_id = fl_obj_id(pins.fd[FL_PIN_STATS], 0, NULL);
	s->meta_id = fl_obj_id(pins.fd[FL_PIN_META], 0, NULL);
	s->meta = pins.meta;
	if (pins.fd[FL_PIN_SOCKHASH] >= 0)
		s->enrolled = fl_count_entries(pins.fd[FL_PIN_SOCKHASH]);
	if (pins.fd[FL_PIN_STATS] >= 0 && fl_read_stats(pins.fd[FL_PIN_STATS], s->stat)) {
		snprintf(err, errlen, "cannot read the stats map: %s", strerror(errno));
		fl_pins_close(&pins);
		return -1;
	}
	if (fl_read_shared(pins.fd[FL_PIN_USTATS], pins.fd[FL_PIN_SLOTS], s)) {
		snprintf(err, errlen, "cannot read the slots map: %s", strerror(errno));
		fl_pins_close(&pins);
		return -1;
	}
	fl_pins_close(&pins);
	return 0;
}

static void fl_print_json(const struct fl_status *s, const struct fl_pin_dir *pd,
			  const char *kernel)
{
	struct fl_json j;
	size_t i;

	fl_json_begin(&j, stdout);
	fl_json_str(&j, "version", FL_VERSION);
	fl_json_bool(&j, "loaded", s->loaded);
	fl_json_str(&j, "state", s->state);
	fl_json_str(&j, "pin_dir", pd->path);
	fl_json_str(&j, "pin_dir_source", pd->source);
	fl_json_u64(&j, "prog_id", s->prog_id);
	fl_json_str(&j, "prog_tag", s->prog_id ? s->prog_tag : NULL);
	fl_json_object(&j, "map_ids");
	fl_json_u64(&j, "sockhash", s->sockhash_id);
	fl_json_u64(&j, "stats", s->stats_id);
	fl_json_u64(&j, "meta", s->meta_id);
	fl_json_close(&j);
	fl_json_u64(&j, "abi_version", s->meta.abi_version);
	fl_json_u64(&j, "loaded_at_unix", s->meta.loaded_at_unix);
	fl_json_str(&j, "kernel", kernel);
	fl_json_u64(&j, "enrolled_sockets", s->enrolled);
	fl_json_u64(&j, "redirected_msgs", s->stat[FL_STAT_REDIRECTED_MSGS]);
	fl_json_u64(&j, "redirected_bytes", s->stat[FL_STAT_REDIRECTED_BYTES]);
	fl_json_u64(&j, "passed_msgs", s->stat[FL_STAT_PASSED_MSGS]);
	fl_json_u64(&j, "passed_bytes", s->stat[FL_STAT_PASSED_BYTES]);
	fl_json_object(&j, "passed_bytes_by_reason");
	for (i = 0; i < FL_NR(fl_pass_reasons); i++)
		fl_json_u64(&j, fl_pass_reasons[i].key, s->stat[fl_pass_reasons[i].idx]);
	fl_json_close(&j);
	fl_json_u64(&j, "gate_opened", s->stat[FL_STAT_GATE_OPENED]);
	fl_json_u64(&j, "flow_control_fallbacks", s->stat[FL_STAT_FLOW_FALLBACKS]);
	fl_json_u64(&j, "connections_seen", s->stat[FL_STAT_ISN_RECORDED]);
	fl_json_u64(&j, "slots_used", s->slots_used);
	fl_json_u64(&j, "enrolled_total", s->ustat[FL_USTAT_ENROLLED]);
	fl_json_object(&j, "fallbacks");
	for (i = 0; i < FL_NR(fl_fallbacks); i++)
		fl_json_u64(&j, fl_fallbacks[i].key, s->ustat[fl_fallbacks[i].idx]);
	fl_json_close(&j);
	fl_json_u64(&j, "blind_sockets", s->ustat[FL_USTAT_BLIND]);
	fl_json_u64(&j, "throttled_writes", s->ustat[FL_USTAT_THROTTLED]);
	fl_json_u64(&j, "splice_emulated_bytes", s->ustat[FL_USTAT_SPLICE_EMULATED]);
	fl_json_end(&j);
}

static void fl_print_text(const struct fl_status *s, const struct fl_pin_dir *pd,
			  const char *kernel)
{
	char when[64] = "-";
	time_t t = (time_t)s->meta.loaded_at_unix;
	struct tm tm;
	size_t i;

	if (t && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("fastlocal %s\n", FL_VERSION);
	printf("  state:       %s\n", s->state);
	printf("  pin dir:     %s (%s)\n", pd->path, pd->source);
	printf("  kernel:      %s\n", kernel);
	if (!s->loaded && !s->prog_id)
		return;
	printf("  program:     fl_verdict, id %u, tag %s\n", s->prog_id, s->prog_tag);
	printf("  maps:        sockhash id %u, stats id %u, meta id %u\n", s->sockhash_id,
	       s->stats_id, s->meta_id);
	printf("  loaded at:   %s (abi %u)\n", when, s->meta.abi_version);
	printf("  enrolled:    %llu sockets\n", (unsigned long long)s->enrolled);
	printf("  redirected:  %llu msgs, %llu bytes\n",
	       (unsigned long long)s->stat[FL_STAT_REDIRECTED_MSGS],
	       (unsigned long long)s->stat[FL_STAT_REDIRECTED_BYTES]);
	printf("  passed (TCP): %llu msgs, %llu bytes\n",
	       (unsigned long long)s->stat[FL_STAT_PASSED_MSGS],
	       (unsigned long long)s->stat[FL_STAT_PASSED_BYTES]);
	for (i = 0; i < FL_NR(fl_pass_reasons); i++)
		if (s->stat[fl_pass_reasons[i].idx])
			printf("    %-20s %llu bytes\n", fl_pass_reasons[i].key,
			       (unsigned long long)s->stat[fl_pass_reasons[i].idx]);
	printf("  gate opened: %llu times; flow-control fallbacks: %llu\n",
	       (unsigned long long)s->stat[FL_STAT_GATE_OPENED],
	       (unsigned long long)s->stat[FL_STAT_FLOW_FALLBACKS]);
	printf("  sockets:     %llu connections seen, %llu enrolled in all, %llu slots in use\n",
	       (unsigned long long)s->stat[FL_STAT_ISN_RECORDED],
	       (unsigned long long)s->ustat[FL_USTAT_ENROLLED], (unsigned long long)s->slots_used);
	printf("  fallbacks:  ");
	for (i = 0; i < FL_NR(fl_fallbacks); i++)
		if (s->ustat[fl_fallbacks[i].idx])
			printf(" %s=%llu", fl_fallbacks[i].key,
			       (unsigned long long)s->ustat[fl_fallbacks[i].idx]);
	printf("\n  blind sockets: %llu; throttled writes: %llu\n",
	       (unsigned long long)s->ustat[FL_USTAT_BLIND],
	       (unsigned long long)s->ustat[FL_USTAT_THROTTLED]);
}

int cmd_status(int argc, char **argv)
{
	struct fl_cli_opts o;
	struct fl_status s;
	struct utsname u;
	char err[512];
	int ret = fl_cli_parse(argc, argv, fl_status_help, FL_OPT_JSON, &o);

	if (ret >= 0)
		return ret;
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");

	if (fl_collect(&s, &o.pd, err, sizeof(err))) {
		fl_err("status", "%s", err);
		return FL_EXIT_FAIL;
	}
	if (o.json)
		fl_print_json(&s, &o.pd, u.release);
	else
		fl_print_text(&s, &o.pd, u.release);
	return s.loaded ? FL_EXIT_OK : FL_EXIT_NOT_LOADED;
}
