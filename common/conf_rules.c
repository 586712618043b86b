// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* conf_rules.c - what the include/exclude settings decide, and their text (conf.h). */
#include "conf.h"

#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

bool fl_conf_selected(const struct fl_config *cfg, const char *prog, const char **why)
{
	unsigned i;
	bool in_only = false;

	if (cfg->only_cmds.n && cfg->skip_cmds.n) {
		/* libfaketime exits when both are set; a host program must never
		 * die of fastlocal's configuration, so the safe choice: no
		 * acceleration (config.c also warns). */
		*why = "only_cmds and skip_cmds are both set";
		return false;
	}
	for (i = 0; i < cfg->skip_cmds.n; i++)
		if (!strcmp(cfg->skip_cmds.name[i], prog)) {
			*why = "named in skip_cmds";
			return false;
		}
	for (i = 0; i < cfg->only_cmds.n; i++)
		in_only |= !strcmp(cfg->only_cmds.name[i], prog);
	if (cfg->only_cmds.n && !in_only) {
		*why = "not named in only_cmds";
		return false;
	}
	*why = NULL;
	return true;
}

static bool fl_port_in(const struct fl_port_list *l, uint16_t p)
{
	unsigned i;

	for (i = 0; i < l->n; i++)
		if (p >= l->r[i].lo && p <= l->r[i].hi)
			return true;
	return false;
}

/* Local OR remote: both ends of one connection see the same two ports,
 * so both decide the same way (an end alone in the sockhash is useless). */
bool fl_conf_ports_excluded(const struct fl_config *cfg, const uint16_t ports[2])
{
	if (fl_port_in(&cfg->skip_ports, ports[0]) || fl_port_in(&cfg->skip_ports, ports[1]))
		return true;
	return cfg->ports.n && !fl_port_in(&cfg->ports, ports[0]) &&
	       !fl_port_in(&cfg->ports, ports[1]);
}

static bool fl_addr_in(const struct fl_prefix_list *l, const uint8_t a[16])
{
	unsigned i, full, rest;

	for (i = 0; i < l->n; i++) {
		full = l->p[i].bits / 8;
		rest = l->p[i].bits % 8;
		if (memcmp(a, l->p[i].addr, full))
			continue;
		if (rest && ((a[full] ^ l->p[i].addr[full]) & (uint8_t)(0xff << (8 - rest))))
			continue;
		return true;
	}
	return false;
}

bool fl_conf_addrs_excluded(const struct fl_config *cfg, const uint8_t addrs[2][16])
{
	if (fl_addr_in(&cfg->skip_addrs, addrs[0]) || fl_addr_in(&cfg->skip_addrs, addrs[1]))
		return true;
	return cfg->addrs.n && !fl_addr_in(&cfg->addrs, addrs[0]) &&
	       !fl_addr_in(&cfg->addrs, addrs[1]);
}

/* Appends to buf (NUL-terminated, cap len) without overflowing. */
static void fl_cat(char *buf, size_t len, const char *s)
{
	size_t have = strnlen(buf, len);

	if (have + 1 < len)
		snprintf(buf + have, len - have, "%s", s);
}

static void fl_fmt_ports(const struct fl_port_list *l, const char *none, char *buf, size_t len)
{
	char one[16];
	unsigned i;

	snprintf(buf, len, "%s", l->n ? "" : none);
	for (i = 0; i < l->n; i++) {
		if (l->r[i].lo == l->r[i].hi)
			snprintf(one, sizeof(one), "%s%u", i ? ", " : "", l->r[i].lo);
		else
			snprintf(one, sizeof(one), "%s%u-%u", i ? ", " : "", l->r[i].lo, l->r[i].hi);
		fl_cat(buf, len, one);
	}
}

static void fl_fmt_prefixes(const struct fl_prefix_list *l, const char *none, char *buf,
			    size_t len)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	char ip[INET6_ADDRSTRLEN], one[INET6_ADDRSTRLEN + 8];
	unsigned i, bits;
	bool v4;

	snprintf(buf, len, "%s", l->n ? "" : none);
	for (i = 0; i < l->n; i++) {
		v4 = l->p[i].bits >= 96 && !memcmp(l->p[i].addr, v4mapped, 12);
		bits = v4 ? l->p[i].bits - 96u : l->p[i].bits;
		if (!inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? l->p[i].addr + 12 : l->p[i].addr, ip,
			       sizeof(ip)))
			snprintf(ip, sizeof(ip), "?");
		/* A single address without "/32" or "/128", as it was most likely written. */
		if (bits == (v4 ? 32u : 128u))
			snprintf(one, sizeof(one), "%s%s", i ? ", " : "", ip);
		else
			snprintf(one, sizeof(one), "%s%s/%u", i ? ", " : "", ip, bits);
		fl_cat(buf, len, one);
	}
}

static void fl_fmt_cmds(const struct fl_cmd_list *l, const char *none, char *buf, size_t len)
{
	unsigned i;

	snprintf(buf, len, "%s", l->n ? "" : none);
	for (i = 0; i < l->n; i++) {
		if (i)
			fl_cat(buf, len, ", ");
		fl_cat(buf, len, l->name[i]);
	}
}

void fl_conf_format(const struct fl_config *c, enum fl_conf_key k, char *buf, size_t len)
{
	static const char *const levels[] = { "off", "error", "warn", "info", "debug" };
	const char *none = fl_conf_keys[k].def;

	switch (k) {
	case FL_K_ENABLED: snprintf(buf, len, "%s", c->enabled ? "on" : "off"); break;
	case FL_K_BATCH: snprintf(buf, len, "%s", c->batch ? "on" : "off"); break;
	case FL_K_TCP_COMPAT: snprintf(buf, len, "%s", c->compat ? "on" : "off"); break;
	case FL_K_BACKTRACE: snprintf(buf, len, "%s", c->backtrace ? "on" : "off"); break;
	case FL_K_LOG_LEVEL: snprintf(buf, len, "%s", (unsigned)c->log_level < 5 ? levels[c->log_level] : "?");
		break;
	case FL_K_LOG_FILE: snprintf(buf, len, "%s", c->log_file[0] ? c->log_file : "stderr"); break;
	case FL_K_PIN_DIR: snprintf(buf, len, "%s", c->pin_dir); break;
	case FL_K_BROKER: snprintf(buf, len, "%s", c->broker); break;
	case FL_K_UNWIND_LIB: snprintf(buf, len, "%s", c->unwind_lib); break;
	case FL_K_FLUSH_BYTES: snprintf(buf, len, "%u", c->flush_bytes); break;
	case FL_K_FLUSH_USEC: snprintf(buf, len, "%u", c->flush_usec); break;
	case FL_K_SPIN_USEC: snprintf(buf, len, "%u", c->spin_usec); break;
	case FL_K_ENROLL_AFTER: snprintf(buf, len, "%u", c->enroll_after); break;
	case FL_K_FLOW_BUDGET:
		if (c->flow_budget)
			snprintf(buf, len, "%u", c->flow_budget);
		else
			snprintf(buf, len, "auto");
		break;
	case FL_K_PORTS: fl_fmt_ports(&c->ports, none, buf, len); break;
	case FL_K_SKIP_PORTS: fl_fmt_ports(&c->skip_ports, none, buf, len); break;
	case FL_K_ADDRESSES: fl_fmt_prefixes(&c->addrs, none, buf, len); break;
	case FL_K_SKIP_ADDRESSES: fl_fmt_prefixes(&c->skip_addrs, none, buf, len); break;
	case FL_K_ONLY_CMDS: fl_fmt_cmds(&c->only_cmds, none, buf, len); break;
	case FL_K_SKIP_CMDS: fl_fmt_cmds(&c->skip_cmds, none, buf, len); break;
	case FL_K__NR: snprintf(buf, len, "?"); break;
	}
}
