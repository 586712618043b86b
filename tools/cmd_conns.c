// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_conns.c - "fastlocal conns [--json]": one line per accelerated connection. */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "../common/key.h"
#include "cli.h"
#include "cli_opts.h"
#include "conns.h"
#include "fmt.h"
#include "json.h"
#include "pins.h"

static const char fl_conns_help[] =
	"Usage: fastlocal conns [--json] [--pin-dir DIR]\n"
	"\n"
	"Lists the connections with at least one end enrolled, one per line: both\n"
	"endpoints (the end that connected first), the pid/comm that enrolled each\n"
	"end, how each direction travels now (redirect, or tcp and why), the bytes\n"
	"sent each way and the age. An end that is not enrolled shows as '-'.\n"
	"\n"
	"  --json         one JSON object; its keys are stable (docs/observability.md)\n"
	"  --pin-dir DIR  the pin dir (default: $FASTLOCAL_PIN_DIR, else /sys/fs/bpf/fastlocal)\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0 listed (possibly none), 3 not loaded, 1 the pins cannot be read.\n";

/* "redirect 1.50 MiB" or "tcp:flow_control 12 B" */
static void fl_dir_text(const struct fl_conn_dir *d, char *buf, size_t len)
{
	char b[32];

	fl_fmt_bytes((double)d->bytes, b, sizeof(b));
	if (d->redirect)
		snprintf(buf, len, "redirect %s", b);
	else
		snprintf(buf, len, "tcp:%s %s", d->why_tcp, b);
}

static void fl_print_text(const struct fl_conn *c, size_t n, double now)
{
	char a[64], b[64], wa[32], wb[32], ab[64], ba[64], age[16];
	struct fl_conn_dir d1, d2;
	size_t i;

	printf("%-24s %-22s %-24s %-22s %-30s %-30s %s\n", "A (connected)", "PID/COMM A", "B",
	       "PID/COMM B", "A->B", "B->A", "AGE");
	for (i = 0; i < n; i++) {
		fl_conn_addr(&c[i].a, a, sizeof(a));
		fl_conn_addr(&c[i].b, b, sizeof(b));
		fl_conn_who(&c[i].a, wa, sizeof(wa));
		fl_conn_who(&c[i].b, wb, sizeof(wb));
		fl_conn_dir(&c[i].a, &c[i].b, &d1);
		fl_conn_dir(&c[i].b, &c[i].a, &d2);
		fl_dir_text(&d1, ab, sizeof(ab));
		fl_dir_text(&d2, ba, sizeof(ba));
		printf("%-24s %-22s %-24s %-22s %-30s %-30s %s\n", a, wa, b, wb, ab, ba,
		       fl_fmt_age(fl_conn_age(&c[i], now), age, sizeof(age)));
	}
	printf("%zu connections, %zu with both ends enrolled\n", n, fl_conns_pairs(c, n));
}

/* Whether end e called connect(); for an end that is not enrolled, known
 * when the other one is enrolled and was accepted. */
static bool fl_connected(const struct fl_conn_end *e, const struct fl_conn_end *other)
{
	if (e->present)
		return e->ref.sk_flags & FL_SK_ACTIVE;
	return other->present && !(other->ref.sk_flags & FL_SK_ACTIVE);
}

static void fl_json_end_obj(struct fl_json *j, const char *key, const struct fl_conn_end *e,
			    const struct fl_conn_end *other)
{
	char ip[INET6_ADDRSTRLEN];
	int fam = fl_conn_ip(e, ip, sizeof(ip));

	fl_json_object(j, key);
	fl_json_str(j, "family", fam == AF_INET ? "ipv4" : "ipv6");
	fl_json_str(j, "addr", ip);
	fl_json_u64(j, "port", e->key.local_port);
	fl_json_bool(j, "enrolled", e->present);
	fl_json_bool(j, "connected", fl_connected(e, other));
	if (e->present) {
		fl_json_u64(j, "pid", e->ref.pid);
		fl_json_str(j, "comm", e->ref.comm);
		fl_json_double(j, "enrolled_at_unix", (double)e->ref.enrolled_ns / 1e9);
	} else {
		fl_json_str(j, "pid", NULL);
		fl_json_str(j, "comm", NULL);
		fl_json_str(j, "enrolled_at_unix", NULL);
	}
	fl_json_close(j);
}

static void fl_json_dir(struct fl_json *j, const char *key, const struct fl_conn_dir *d)
{
	fl_json_object(j, key);
	fl_json_str(j, "path", d->redirect ? "redirect" : "tcp");
	fl_json_str(j, "why_tcp", d->redirect ? NULL : d->why_tcp);
	fl_json_u64(j, "bytes", d->bytes);
	fl_json_u64(j, "redirected_bytes", d->redirected);
	fl_json_u64(j, "tcp_bytes", d->bytes - d->redirected);
	fl_json_u64(j, "unread_bytes", d->unread);
	fl_json_close(j);
}

static void fl_print_json(const struct fl_conn *c, size_t n, double now, bool loaded)
{
	char scope[24];
	struct fl_conn_dir d;
	struct fl_json j;
	size_t i;

	fl_json_begin(&j, stdout);
	fl_json_bool(&j, "loaded", loaded);
	fl_json_u64(&j, "count", n);
	fl_json_u64(&j, "pairs", fl_conns_pairs(c, n));
	fl_json_array(&j, "connections");
	for (i = 0; i < n; i++) {
		fl_json_object(&j, NULL);
		/* The key's first word: a namespace cookie for loopback, the
		 * connection's SYN nonce otherwise (docs/design.md section 1). */
		fl_json_str(&j, "scope_kind", fl_key_is_loopback(&c[i].a.key) ? "netns" : "nonce");
		/* A string: a 64-bit nonce does not survive JSON's doubles. */
		snprintf(scope, sizeof(scope), "0x%016llx", (unsigned long long)c[i].a.key.scope);
		fl_json_str(&j, "scope", scope);
		fl_json_end_obj(&j, "a", &c[i].a, &c[i].b);
		fl_json_end_obj(&j, "b", &c[i].b, &c[i].a);
		fl_conn_dir(&c[i].a, &c[i].b, &d);
		fl_json_dir(&j, "a_to_b", &d);
		fl_conn_dir(&c[i].b, &c[i].a, &d);
		fl_json_dir(&j, "b_to_a", &d);
		fl_json_double(&j, "age_seconds", fl_conn_age(&c[i], now));
		fl_json_close(&j);
	}
	fl_json_close(&j);
	fl_json_end(&j);
}

int cmd_conns(int argc, char **argv)
{
	struct fl_conn *conns = NULL;
	struct fl_cli_opts o;
	struct fl_pins pins;
	char err[512];
	size_t n = 0;
	int ret = fl_cli_parse(argc, argv, fl_conns_help, FL_OPT_JSON, &o);

	if (ret >= 0)
		return ret;
	if (fl_pins_open(&pins, &o.pd, err, sizeof(err)) ||
	    fl_conns_read(&pins, &conns, &n, err, sizeof(err))) {
		fl_err("conns", "%s", err);
		fl_pins_close(&pins);
		return FL_EXIT_FAIL;
	}
	ret = pins.state == FL_PINS_NONE ? FL_EXIT_NOT_LOADED : FL_EXIT_OK;
	fl_pins_close(&pins);
	if (ret == FL_EXIT_NOT_LOADED)
		fl_err("conns", "fastlocal is not loaded in %s", o.pd.path);
	if (o.json)
		fl_print_json(conns, n, fl_now_unix(), ret == FL_EXIT_OK);
	else if (ret == FL_EXIT_OK)
		fl_print_text(conns, n, fl_now_unix());
	free(conns);
	return ret;
}
