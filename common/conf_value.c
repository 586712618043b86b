// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* conf_value.c - one setting's value, from text (conf_value.h). */
#include "conf_value.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>

/* Digits only: strtoul would take "-1" (wrapping), " 5" and "+5". */
static int fl_cv_digits(const char *v, unsigned long long max, unsigned long long *out)
{
	unsigned long long n = 0;

	if (!*v)
		return -1;
	for (; *v; v++) {
		if (*v < '0' || *v > '9')
			return -1;
		n = n * 10 + (unsigned)(*v - '0');
		if (n > max)
			return -2;
	}
	*out = n;
	return 0;
}

int fl_cv_bool(const char *v, int *out, char *why, size_t wlen)
{
	static const char *const on[] = { "1", "on", "yes", "true" };
	static const char *const off[] = { "0", "off", "no", "false" };
	size_t i;

	for (i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		if (!strcasecmp(v, on[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(v, off[i])) {
			*out = 0;
			return 0;
		}
	}
	snprintf(why, wlen, "not a switch (0, 1, on or off)");
	return -1;
}

int fl_cv_uint(const char *v, unsigned lo, unsigned hi, unsigned *out, char *why, size_t wlen)
{
	unsigned long long n;
	int r = fl_cv_digits(v, 0xffffffffull, &n);

	if (r == -1) {
		snprintf(why, wlen, "not a number");
		return -1;
	}
	if (r || n < lo || n > hi) {
		snprintf(why, wlen, "out of range (%u to %u)", lo, hi);
		return -1;
	}
	*out = (unsigned)n;
	return 0;
}

int fl_cv_level(const char *v, int *out, char *why, size_t wlen)
{
	static const char *const names[] = { "off", "error", "warn", "info", "debug" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(v, names[i])) {
			*out = (int)i;
			return 0;
		}
	snprintf(why, wlen, "not a level (off, error, warn, info or debug)");
	return -1;
}

/*
 * Calls item() on each comma-separated item of v, trimmed, copied into a
 * bounded NUL-terminated buffer. Empty items (", ,") are refused: a typo
 * there is more likely than a wish.
 */
static int fl_cv_each(const char *v, int (*item)(const char *it, void *out, char *why, size_t wlen),
		      void *out, char *why, size_t wlen)
{
	char it[FL_CONF_CMD_LEN + 8];
	const char *p = v, *end;
	size_t n;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		n = (size_t)(end - p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (!n) {
			snprintf(why, wlen, "an empty item in the list");
			return -1;
		}
		if (n >= sizeof(it)) {
			snprintf(why, wlen, "an item longer than %zu characters", sizeof(it) - 1);
			return -1;
		}
		memcpy(it, p, n);
		it[n] = 0;
		if (item(it, out, why, wlen))
			return -1;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

static int fl_cv_port_item(const char *it, void *out, char *why, size_t wlen)
{
	struct fl_port_list *l = out;
	char lo_s[8], *dash = strchr(it, '-');
	unsigned long long lo, hi;
	size_t n = dash ? (size_t)(dash - it) : strlen(it);

	if (n >= sizeof(lo_s))
		goto bad;
	memcpy(lo_s, it, n);
	lo_s[n] = 0;
	if (fl_cv_digits(lo_s, 65535, &lo) || fl_cv_digits(dash ? dash + 1 : lo_s, 65535, &hi) ||
	    !lo || lo > hi)
		goto bad;
	if (l->n >= FL_CONF_PORT_RANGES) {
		snprintf(why, wlen, "more than %d ports or ranges", FL_CONF_PORT_RANGES);
		return -1;
	}
	l->r[l->n].lo = (uint16_t)lo;
	l->r[l->n].hi = (uint16_t)hi;
	l->n++;
	return 0;
bad:
	snprintf(why, wlen, "'%.16s' is not a port (1 to 65535) or a range (8000-8100)", it);
	return -1;
}

int fl_cv_ports(const char *v, struct fl_port_list *out, char *why, size_t wlen)
{
	out->n = 0;
	return fl_cv_each(v, fl_cv_port_item, out, why, wlen);
}

static int fl_cv_prefix_item(const char *it, void *out, char *why, size_t wlen)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct fl_prefix_list *l = out;
	char addr[64];
	const char *slash = strchr(it, '/');
	size_t n = slash ? (size_t)(slash - it) : strlen(it);
	unsigned long long bits = 128;
	uint8_t a[16];
	int v4, i;

	if (n >= sizeof(addr))
		goto bad;
	memcpy(addr, it, n);
	addr[n] = 0;
	v4 = inet_pton(AF_INET, addr, a + 12) == 1;
	if (v4)
		memcpy(a, v4mapped, sizeof(v4mapped));
	else if (inet_pton(AF_INET6, addr, a) != 1)
		goto bad;
	if (slash && fl_cv_digits(slash + 1, v4 ? 32 : 128, &bits))
		goto bad;
	if (v4)
		bits = slash ? bits + 96 : 128;
	if (l->n >= FL_CONF_PREFIXES) {
		snprintf(why, wlen, "more than %d addresses or prefixes", FL_CONF_PREFIXES);
		return -1;
	}
	/* Host bits are cleared: "10.1.2.3/16" means 10.1.0.0/16. */
	for (i = 0; i < 16; i++) {
		int keep = (int)bits - i * 8;

		if (keep <= 0)
			a[i] = 0;
		else if (keep < 8)
			a[i] &= (uint8_t)(0xff << (8 - keep));
	}
	memcpy(l->p[l->n].addr, a, 16);
	l->p[l->n].bits = (uint8_t)bits;
	l->n++;
	return 0;
bad:
	snprintf(why, wlen, "'%.48s' is not an IPv4/IPv6 address or prefix (10.1.0.0/16, ::1)", it);
	return -1;
}

int fl_cv_prefixes(const char *v, struct fl_prefix_list *out, char *why, size_t wlen)
{
	out->n = 0;
	return fl_cv_each(v, fl_cv_prefix_item, out, why, wlen);
}

static int fl_cv_cmd_item(const char *it, void *out, char *why, size_t wlen)
{
	struct fl_cmd_list *l = out;
	size_t n = strlen(it);

	/* A program name, not a path: program_invocation_short_name has no '/'. */
	if (n >= FL_CONF_CMD_LEN || strchr(it, '/')) {
		snprintf(why, wlen, "'%.32s' is not a program name (no '/', at most %d characters)",
			 it, FL_CONF_CMD_LEN - 1);
		return -1;
	}
	if (l->n >= FL_CONF_CMDS) {
		snprintf(why, wlen, "more than %d program names", FL_CONF_CMDS);
		return -1;
	}
	memcpy(l->name[l->n++], it, n + 1);
	return 0;
}

int fl_cv_cmds(const char *v, struct fl_cmd_list *out, char *why, size_t wlen)
{
	out->n = 0;
	return fl_cv_each(v, fl_cv_cmd_item, out, why, wlen);
}

int fl_cv_abs_path(const char *v, size_t cap, char *why, size_t wlen)
{
	if (v[0] != '/') {
		snprintf(why, wlen, "not an absolute path");
		return -1;
	}
	if (strlen(v) >= cap) {
		snprintf(why, wlen, "longer than %zu characters", cap - 1);
		return -1;
	}
	return 0;
}
