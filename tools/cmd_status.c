// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_status.c - "fastlocal status [--json]": what is loaded, what the kernel
 * can do, and every counter. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "broker_ping.h"
#include "cli.h"
#include "cli_opts.h"
#include "conns.h"
#include "counters.h"
#include "fmt.h"
#include "json.h"
#include "pin_dir.h"
#include "pins.h"
#include "probe.h"

static const char fl_status_help[] =
	"Usage: fastlocal status [--json] [--pin-dir DIR] [--socket PATH]\n"
	"\n"
	"Shows whether fastlocal is loaded (program and map ids, pin dir, kernel),\n"
	"what this kernel supports, the enrolled sockets and connections, the bytes\n"
	"and messages redirected and passed over TCP (and why), the fallbacks at\n"
	"enrollment and the batching of small writes. docs/observability.md\n"
	"explains every line.\n"
	"\n"
	"  --json         one JSON object; its keys are stable (docs/observability.md)\n"
	"  --pin-dir DIR  the pin dir (default: $FASTLOCAL_PIN_DIR, else /sys/fs/bpf/fastlocal)\n"
	"  --socket PATH  the broker's socket (default: $FASTLOCAL_BROKER, else\n"
	"                 /run/fastlocal/broker.sock): whether 'fastlocal daemon' answers\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0 loaded, 3 not loaded, 1 the pins cannot be read.\n";

/* What the kernel supports, probed now (probe.c). -1 where it cannot be
 * told (e.g. not root). */
struct fl_features {
	int btf, sockmap, netns_cookie, fionread_fix;
};

struct fl_status {
	bool loaded;
	char state[32];       /* "loaded", "not loaded", "incomplete" */
	__u32 verdict_id, sockops_id, holders_id;
	__u32 map_id[FL_PIN__NR];
	char prog_tag[17];
	struct fl_meta meta;
	struct fl_counters c;
	size_t pairs;
	struct fl_features f;
	const char *broker;    /* the broker's socket path */
	bool broker_answers;   /* a "fastlocal daemon" answered there */
	__u32 broker_domains;  /* the slot domains it serves */
};

/* The maps whose ids status shows, and their JSON keys. */
static const struct {
	enum fl_pin pin;
	const char *key;
} fl_status_maps[] = {
	{ FL_PIN_SOCKHASH, "sockhash" }, { FL_PIN_STATS, "stats" },
	{ FL_PIN_META, "meta" },         { FL_PIN_USTATS, "ustats" },
	{ FL_PIN_SLOTS, "slots" },       { FL_PIN_SLOT_INDEX, "slot_index" },
	{ FL_PIN_SK, "sk_storage" },     { FL_PIN_ESTABLISHED, "established" },
};

/* IMPORTANT: the FIONREAD probe makes a loopback connection, which a loaded
 * sockops would count; when loaded, the answer "load" recorded is used. */
static void fl_probe_features(struct fl_features *f, const struct fl_pins *pins)
{
	char err[256];

	f->btf = fl_probe_btf(NULL, err, sizeof(err)) == 0;
	f->sockmap = fl_probe_sockmap(err, sizeof(err)) == 0;
	f->netns_cookie = fl_probe_netns_cookie(err, sizeof(err)) == 0;
	if (pins->state != FL_PINS_NONE)
		f->fionread_fix = !(pins->meta.features & FL_META_FIONREAD_PROBED) ? -1 :
				  !!(pins->meta.features & FL_META_FIONREAD_FIX);
	else
		f->fionread_fix = f->sockmap ? fl_probe_fionread(err, sizeof(err)) : -1;
}

static int fl_collect(struct fl_status *s, const struct fl_pin_dir *pd, char *err, size_t errlen)
{
	struct fl_conn *conns = NULL;
	struct fl_pins pins;
	size_t n = 0, i;
	int ret = -1;

	memset(s, 0, sizeof(*s));
	if (fl_pins_open(&pins, pd, err, errlen))
		return -1;
	snprintf(s->state, sizeof(s->state), "%s", pins.state == FL_PINS_PRESENT ? "loaded" :
		 pins.state == FL_PINS_NONE ? "not loaded" : "incomplete");
	s->loaded = pins.state == FL_PINS_PRESENT;
	s->verdict_id = fl_prog_id(pins.fd[FL_PIN_VERDICT], s->prog_tag);
	s->sockops_id = fl_prog_id(pins.fd[FL_PIN_SOCKOPS], NULL);
	s->holders_id = fl_prog_id(pins.fd[FL_PIN_HOLDERS], NULL);
	for (i = 0; i < FL_NR(fl_status_maps); i++)
		s->map_id[fl_status_maps[i].pin] = fl_map_id(pins.fd[fl_status_maps[i].pin]);
	s->meta = pins.meta;
	if (fl_counters_read(&pins, &s->c, err, errlen) ||
	    fl_conns_read(&pins, &conns, &n, err, errlen))
		goto out;
	s->pairs = fl_conns_pairs(conns, n);
	fl_probe_features(&s->f, &pins);
	ret = 0;
out:
	free(conns);
	fl_pins_close(&pins);
	return ret;
}

static double fl_ratio(__u64 a, __u64 b)
{
	return b ? (double)a / (double)b : 0;
}

static void fl_json_feature(struct fl_json *j, const char *key, int v)
{
	if (v < 0)
		fl_json_str(j, key, NULL);
	else
		fl_json_bool(j, key, v);
}

static void fl_print_json(const struct fl_status *s, const struct fl_pin_dir *pd,
			  const char *kernel)
{
	const __u64 *st = s->c.stat, *us = s->c.ustat;
	__u64 flushes = fl_counters_flushes(&s->c);
	struct fl_json j;
	size_t i;

	fl_json_begin(&j, stdout);
	fl_json_str(&j, "version", FL_VERSION);
	fl_json_bool(&j, "loaded", s->loaded);
	fl_json_str(&j, "state", s->state);
	fl_json_str(&j, "pin_dir", pd->path);
	fl_json_str(&j, "pin_dir_source", pd->source);
	fl_json_u64(&j, "prog_id", s->verdict_id);
	fl_json_str(&j, "prog_tag", s->verdict_id ? s->prog_tag : NULL);
	fl_json_object(&j, "prog_ids");
	fl_json_u64(&j, "verdict", s->verdict_id);
	fl_json_u64(&j, "sockops", s->sockops_id);
	fl_json_u64(&j, "holders", s->holders_id);
	fl_json_close(&j);
	fl_json_object(&j, "map_ids");
	for (i = 0; i < FL_NR(fl_status_maps); i++)
		fl_json_u64(&j, fl_status_maps[i].key, s->map_id[fl_status_maps[i].pin]);
	fl_json_close(&j);
	fl_json_u64(&j, "abi_version", s->meta.abi_version);
	fl_json_u64(&j, "loaded_at_unix", s->meta.loaded_at_unix);
	fl_json_str(&j, "kernel", kernel);
	fl_json_object(&j, "features");
	fl_json_feature(&j, "btf", s->f.btf);
	fl_json_feature(&j, "sockmap", s->f.sockmap);
	fl_json_feature(&j, "netns_cookie", s->f.netns_cookie);
	fl_json_feature(&j, "fionread_fix", s->f.fionread_fix);
	fl_json_close(&j);
	fl_json_u64(&j, "enrolled_sockets", s->c.enrolled);
	fl_json_u64(&j, "pairs", s->pairs);
	fl_json_u64(&j, "redirected_msgs", st[FL_STAT_REDIRECTED_MSGS]);
	fl_json_u64(&j, "redirected_bytes", st[FL_STAT_REDIRECTED_BYTES]);
	fl_json_u64(&j, "passed_msgs", st[FL_STAT_PASSED_MSGS]);
	fl_json_u64(&j, "passed_bytes", st[FL_STAT_PASSED_BYTES]);
	fl_json_object(&j, "passed_bytes_by_reason");
	for (i = 0; i < FL_NR(fl_pass_reasons); i++)
		fl_json_u64(&j, fl_pass_reasons[i].key, st[fl_pass_reasons[i].idx]);
	fl_json_close(&j);
	fl_json_u64(&j, "gate_opened", st[FL_STAT_GATE_OPENED]);
	fl_json_u64(&j, "gate_reopened", st[FL_STAT_GATE_REOPENED]);
	fl_json_u64(&j, "flow_control_fallbacks", st[FL_STAT_FLOW_FALLBACKS]);
	fl_json_u64(&j, "connections_seen", st[FL_STAT_ISN_RECORDED]);
	fl_json_object(&j, "syn_nonce");
	for (i = 0; i < FL_NR(fl_nonce_names); i++)
		fl_json_u64(&j, fl_nonce_names[i].key, st[fl_nonce_names[i].idx]);
	fl_json_close(&j);
	fl_json_u64(&j, "slots_used", s->c.slots_used);
	fl_json_u64(&j, "enrolled_total", us[FL_USTAT_ENROLLED]);
	fl_json_u64(&j, "unenrolled_total", us[FL_USTAT_UNENROLLED]);
	fl_json_u64(&j, "unpaired_left_total", us[FL_USTAT_UNPAIRED_LEFT]);
	fl_json_object(&j, "waited_for_peer");
	fl_json_u64(&j, "waited", us[FL_USTAT_PEER_WAITS]);
	fl_json_u64(&j, "peer_came", us[FL_USTAT_PEER_CAME]);
	fl_json_close(&j);
	fl_json_object(&j, "waited_for_server");
	fl_json_u64(&j, "waited", us[FL_USTAT_SERVER_WAITS]);
	fl_json_u64(&j, "server_came", us[FL_USTAT_SERVER_CAME]);
	fl_json_close(&j);
	fl_json_object(&j, "fallbacks");
	for (i = 0; i < FL_NR(fl_fallback_names); i++)
		fl_json_u64(&j, fl_fallback_names[i].key, us[fl_fallback_names[i].idx]);
	fl_json_close(&j);
	fl_json_object(&j, "batching");
	fl_json_u64(&j, "flushes", flushes);
	fl_json_object(&j, "flushes_by_reason");
	for (i = 0; i < FL_NR(fl_flush_names); i++)
		fl_json_u64(&j, fl_flush_names[i].key, us[fl_flush_names[i].idx]);
	fl_json_close(&j);
	fl_json_u64(&j, "bytes", us[FL_USTAT_BATCH_BYTES]);
	fl_json_u64(&j, "writes", us[FL_USTAT_BATCH_WRITES]);
	fl_json_double(&j, "mean_batch_bytes", fl_ratio(us[FL_USTAT_BATCH_BYTES], flushes));
	fl_json_double(&j, "mean_batch_writes", fl_ratio(us[FL_USTAT_BATCH_WRITES], flushes));
	fl_json_u64(&j, "handed_off", us[FL_USTAT_HANDED_OFF]);
	fl_json_close(&j);
	fl_json_u64(&j, "blind_sockets", us[FL_USTAT_BLIND]);
	fl_json_u64(&j, "throttled_writes", us[FL_USTAT_THROTTLED]);
	fl_json_object(&j, "gate_holds");
	fl_json_u64(&j, "held", us[FL_USTAT_GATE_HOLDS]);
	fl_json_u64(&j, "reopened", us[FL_USTAT_GATE_HOLDS_OPENED]);
	fl_json_close(&j);
	fl_json_object(&j, "waits");
	fl_json_u64(&j, "looked", us[FL_USTAT_SPIN_LOOKS]);
	fl_json_u64(&j, "found", us[FL_USTAT_SPIN_FOUND]);
	fl_json_close(&j);
	fl_json_object(&j, "closes_with_bytes_held");
	fl_json_u64(&j, "lingered", us[FL_USTAT_CLOSE_LINGERED]);
	fl_json_u64(&j, "waited", us[FL_USTAT_CLOSE_WAITED]);
	fl_json_u64(&j, "reset", us[FL_USTAT_CLOSE_RESET]);
	fl_json_close(&j);
	fl_json_u64(&j, "splice_emulated_bytes", us[FL_USTAT_SPLICE_EMULATED]);
	fl_json_u64(&j, "sendfile_copied", us[FL_USTAT_SENDFILE_COPIED]);
	fl_json_object(&j, "sharing");
	fl_json_u64(&j, "joined_not_ready", us[FL_USTAT_RX_NOT_READY]);
	fl_json_u64(&j, "ready_later", us[FL_USTAT_RX_READY_LATE]);
	fl_json_close(&j);
	fl_json_u64(&j, "nagle_pushes", us[FL_USTAT_NAGLE_PUSHES]);
	fl_json_u64(&j, "slot_domains", s->c.slot_domains);
	fl_json_object(&j, "broker");
	fl_json_str(&j, "socket", s->broker);
	fl_json_bool(&j, "answers", s->broker_answers);
	fl_json_u64(&j, "domains", s->broker_domains);
	fl_json_u64(&j, "enrolled_total", us[FL_USTAT_BROKER_ENROLLED]);
	fl_json_close(&j);
	fl_json_end(&j);
}

static const char *fl_yes_no(int v, const char *yes, const char *no)
{
	return v < 0 ? "unknown (needs root)" : v ? yes : no;
}

/* "  name=N name=N" for the non-zero counters of a table, or "  none". */
static void fl_print_nonzero(const __u64 *c, const struct fl_counter_name *names, size_t n,
			     const char *unit)
{
	bool any = false;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!c[names[i].idx])
			continue;
		printf("%s%s", any ? ", " : " ", names[i].key);
		if (names[i].errno_name)
			printf(" (%s)", names[i].errno_name);
		printf(" %llu%s", (unsigned long long)c[names[i].idx], unit);
		any = true;
	}
	printf("%s\n", any ? "" : " none");
}

static void fl_print_text(const struct fl_status *s, const struct fl_pin_dir *pd,
			  const char *kernel)
{
	const __u64 *st = s->c.stat, *us = s->c.ustat;
	__u64 flushes = fl_counters_flushes(&s->c);
	char when[64] = "-", mean[32];
	time_t t = (time_t)s->meta.loaded_at_unix;
	struct tm tm;

	if (t && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("fastlocal %s\n", FL_VERSION);
	printf("  state:        %s\n", s->state);
	printf("  pin dir:      %s (%s)\n", pd->path, pd->source);
	printf("  kernel:       %s\n", kernel);
	printf("  features:     BTF %s, sockmap %s, netns cookie %s,\n",
	       fl_yes_no(s->f.btf, "yes", "NO"), fl_yes_no(s->f.sockmap, "yes", "NO"),
	       fl_yes_no(s->f.netns_cookie, "yes", "NO"));
	printf("                FIONREAD fix %s\n",
	       fl_yes_no(s->f.fionread_fix, "in the kernel",
			 "missing (the shim counts TCP's queue itself)"));
	if (!s->loaded && !s->verdict_id)
		return;
	printf("  programs:     fl_verdict id %u (tag %s), fl_sockops id %u, fl_holders id %u\n",
	       s->verdict_id, s->prog_tag, s->sockops_id, s->holders_id);
	printf("  maps:         sockhash %u, stats %u, meta %u, ustats %u, slots %u, "
	       "slot_index %u, sk_storage %u,\n                established %u\n",
	       s->map_id[FL_PIN_SOCKHASH], s->map_id[FL_PIN_STATS], s->map_id[FL_PIN_META],
	       s->map_id[FL_PIN_USTATS], s->map_id[FL_PIN_SLOTS], s->map_id[FL_PIN_SLOT_INDEX],
	       s->map_id[FL_PIN_SK], s->map_id[FL_PIN_ESTABLISHED]);
	printf("  loaded at:    %s (abi %u)\n", when, s->meta.abi_version);
	printf("  enrolled:     %llu sockets now, %zu connections with both ends\n",
	       (unsigned long long)s->c.enrolled, s->pairs);
	printf("                %llu enrolled in all, %llu left the fast path (%llu: peer never "
	       "enrolled), %llu connections seen\n",
	       (unsigned long long)us[FL_USTAT_ENROLLED], (unsigned long long)us[FL_USTAT_UNENROLLED],
	       (unsigned long long)us[FL_USTAT_UNPAIRED_LEFT],
	       (unsigned long long)st[FL_STAT_ISN_RECORDED]);
	printf("                %llu accepting ends waited for their peer to enroll first, %llu "
	       "of them enrolled when it came\n",
	       (unsigned long long)us[FL_USTAT_PEER_WAITS], (unsigned long long)us[FL_USTAT_PEER_CAME]);
	printf("                %llu connecting ends waited for a server under the shim (none "
	       "seen on the port), %llu of them enrolled when it came\n",
	       (unsigned long long)us[FL_USTAT_SERVER_WAITS],
	       (unsigned long long)us[FL_USTAT_SERVER_CAME]);
	printf("  SYN nonce:    sent %llu (no room %llu), received %llu, missing %llu\n",
	       (unsigned long long)st[FL_STAT_NONCE_SENT],
	       (unsigned long long)st[FL_STAT_NONCE_NO_ROOM],
	       (unsigned long long)st[FL_STAT_NONCE_RECEIVED],
	       (unsigned long long)st[FL_STAT_NONCE_MISSING]);
	printf("  redirected:   %llu msgs, %llu bytes\n",
	       (unsigned long long)st[FL_STAT_REDIRECTED_MSGS],
	       (unsigned long long)st[FL_STAT_REDIRECTED_BYTES]);
	printf("  over TCP:     %llu msgs, %llu bytes\n", (unsigned long long)st[FL_STAT_PASSED_MSGS],
	       (unsigned long long)st[FL_STAT_PASSED_BYTES]);
	printf("    why:       ");
	fl_print_nonzero(st, fl_pass_reasons, FL_NR(fl_pass_reasons), " B");
	printf("  fallbacks:   ");
	fl_print_nonzero(us, fl_fallback_names, FL_NR(fl_fallback_names), "");
	printf("  batching:     %llu flushes, each %s from %.1f writes on average\n",
	       (unsigned long long)flushes,
	       fl_fmt_bytes(fl_ratio(us[FL_USTAT_BATCH_BYTES], flushes), mean, sizeof(mean)),
	       fl_ratio(us[FL_USTAT_BATCH_WRITES], flushes));
	printf("    why:       ");
	fl_print_nonzero(us, fl_flush_names, FL_NR(fl_flush_names), "");
	printf("                %llu left by a thread about to wait to the thread writing them\n",
	       (unsigned long long)us[FL_USTAT_HANDED_OFF]);
	printf("  waits:        %llu looked before sleeping, %llu found their answer meanwhile\n",
	       (unsigned long long)us[FL_USTAT_SPIN_LOOKS], (unsigned long long)us[FL_USTAT_SPIN_FOUND]);
	printf("  other:        gate opened %llu (%llu back after a fallback), flow-control fallbacks %llu,\n"
	       "                blind sockets %llu,\n",
	       (unsigned long long)st[FL_STAT_GATE_OPENED], (unsigned long long)st[FL_STAT_GATE_REOPENED],
	       (unsigned long long)st[FL_STAT_FLOW_FALLBACKS], (unsigned long long)us[FL_USTAT_BLIND]);
	printf("                throttled writes %llu, gate holds %llu (%llu reopened it),\n",
	       (unsigned long long)us[FL_USTAT_THROTTLED], (unsigned long long)us[FL_USTAT_GATE_HOLDS],
	       (unsigned long long)us[FL_USTAT_GATE_HOLDS_OPENED]);
	printf("                sendfile ranges sent with the buffer %llu,\n",
	       (unsigned long long)us[FL_USTAT_SENDFILE_COPIED]);
	printf("                closes with bytes held: %llu returned at once, %llu waited,\n"
	       "                %llu reset (zero SO_LINGER),\n",
	       (unsigned long long)us[FL_USTAT_CLOSE_LINGERED],
	       (unsigned long long)us[FL_USTAT_CLOSE_WAITED],
	       (unsigned long long)us[FL_USTAT_CLOSE_RESET]);
	printf("                slots in use %llu in %u slot domains\n",
	       (unsigned long long)s->c.slots_used, s->c.slot_domains);
	if (s->broker_answers)
		printf("  broker:       %s answers, %u slot domains (one per user), %llu enrolled "
		       "through it\n", s->broker, s->broker_domains,
		       (unsigned long long)us[FL_USTAT_BROKER_ENROLLED]);
	else
		printf("  broker:       %s does not answer (processes that are not root stay on "
		       "TCP; 'fastlocal daemon')\n", s->broker);
}

int cmd_status(int argc, char **argv)
{
	struct fl_cli_opts o;
	struct fl_status s;
	struct utsname u;
	char err[512];
	int ret = fl_cli_parse(argc, argv, fl_status_help, FL_OPT_JSON | FL_OPT_SOCKET, &o);

	if (ret >= 0)
		return ret;
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");

	if (fl_collect(&s, &o.pd, err, sizeof(err))) {
		fl_err("status", "%s", err);
		return FL_EXIT_FAIL;
	}
	s.broker = o.socket;
	s.broker_answers = fl_broker_ping(o.socket, &s.broker_domains);
	if (o.json)
		fl_print_json(&s, &o.pd, u.release);
	else
		fl_print_text(&s, &o.pd, u.release);
	return s.loaded ? FL_EXIT_OK : FL_EXIT_NOT_LOADED;
}
