// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * conf.c - evaluating the settings: defaults, then the file's "key = value"
 * lines, then the environment (conf.h). Hand-written, not libinih: the shim
 * links only libc and lives in every host program, where a shared libinih
 * could clash with the host's own copy (docs/configuration.md). It is fuzzed
 * (test/fuzz/conf_fuzz.c).
 */
#include "conf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conf_value.h"
#include "fastlocal.h"

const struct fl_conf_keyinfo fl_conf_keys[FL_K__NR] = {
	[FL_K_ENABLED] = { "enabled", "FASTLOCAL", "on" },
	[FL_K_PIN_DIR] = { "pin_dir", "FASTLOCAL_PIN_DIR", FL_DEFAULT_PIN_DIR },
	[FL_K_LOG_LEVEL] = { "log_level", "FASTLOCAL_LOG", "off" },
	[FL_K_LOG_FILE] = { "log_file", "FASTLOCAL_LOG_FILE", "stderr" },
	[FL_K_BATCH] = { "batch", "FASTLOCAL_BATCH", "on" },
	[FL_K_FLUSH_BYTES] = { "flush_bytes", "FASTLOCAL_FLUSH_BYTES", "262144" },
	[FL_K_FLUSH_USEC] = { "flush_usec", "FASTLOCAL_FLUSH_USEC", "200" },
	[FL_K_SPIN_USEC] = { "spin_usec", "FASTLOCAL_SPIN_USEC", "20" },
	[FL_K_ENROLL_AFTER] = { "enroll_after", "FASTLOCAL_ENROLL_AFTER", "4096" },
	[FL_K_TCP_COMPAT] = { "tcp_compat", "FASTLOCAL_TCP_COMPAT", "on" },
	[FL_K_BACKTRACE] = { "backtrace", "FASTLOCAL_BACKTRACE", "off" },
	[FL_K_PORTS] = { "ports", "FASTLOCAL_PORTS", "every port" },
	[FL_K_SKIP_PORTS] = { "skip_ports", "FASTLOCAL_SKIP_PORTS", "none" },
	[FL_K_ADDRESSES] = { "addresses", "FASTLOCAL_ADDRESSES", "every address" },
	[FL_K_SKIP_ADDRESSES] = { "skip_addresses", "FASTLOCAL_SKIP_ADDRESSES", "none" },
	[FL_K_ONLY_CMDS] = { "only_cmds", "FASTLOCAL_ONLY_CMDS", "every program" },
	[FL_K_SKIP_CMDS] = { "skip_cmds", "FASTLOCAL_SKIP_CMDS", "none" },
	[FL_K_FLOW_BUDGET] = { "flow_budget", "FASTLOCAL_FLOW_BUDGET", "auto" },
	[FL_K_BROKER] = { "broker_socket", "FASTLOCAL_BROKER", FL_CONF_DEFAULT_BROKER },
	[FL_K_UNWIND_LIB] = { NULL, "FASTLOCAL_UNWIND_LIB", "libunwind.so.8" },
};

/* After this many warnings about the file, one line says how many more
 * there were: a garbage file must not flood the host program's stderr. */
#define FL_CONF_FILE_WARN_MAX 8

struct fl_conf_run {
	struct fl_config *cfg;
	struct fl_conf_origin *o;
	const struct fl_conf_input *in;
	unsigned file_warnings;
};

static void fl_conf_default(struct fl_config *c, enum fl_conf_key k)
{
	switch (k) {
	case FL_K_ENABLED: c->enabled = 1; break;
	case FL_K_PIN_DIR: snprintf(c->pin_dir, sizeof(c->pin_dir), "%s", FL_DEFAULT_PIN_DIR); break;
	case FL_K_LOG_LEVEL: c->log_level = FL_LOG_OFF; c->log_set = 0; break;
	case FL_K_LOG_FILE: c->log_file[0] = 0; break;
	case FL_K_BATCH: c->batch = 1; break;
	case FL_K_FLUSH_BYTES: c->flush_bytes = 256u << 10; break;
	case FL_K_FLUSH_USEC: c->flush_usec = 200; break;
	case FL_K_SPIN_USEC: c->spin_usec = 20; break;
	case FL_K_ENROLL_AFTER: c->enroll_after = FL_ENROLL_AFTER_DEFAULT; break;
	case FL_K_TCP_COMPAT: c->compat = 1; break;
	case FL_K_BACKTRACE: c->backtrace = 0; break;
	case FL_K_PORTS: c->ports.n = 0; break;
	case FL_K_SKIP_PORTS: c->skip_ports.n = 0; break;
	case FL_K_ADDRESSES: c->addrs.n = 0; break;
	case FL_K_SKIP_ADDRESSES: c->skip_addrs.n = 0; break;
	case FL_K_ONLY_CMDS: c->only_cmds.n = 0; break;
	case FL_K_SKIP_CMDS: c->skip_cmds.n = 0; break;
	case FL_K_FLOW_BUDGET: c->flow_budget = 0; break;
	case FL_K_BROKER: snprintf(c->broker, sizeof(c->broker), "%s", FL_CONF_DEFAULT_BROKER); break;
	case FL_K_UNWIND_LIB: snprintf(c->unwind_lib, sizeof(c->unwind_lib), "libunwind.so.8"); break;
	case FL_K__NR: break;
	}
}

/* Sets key k from v (non-empty, NUL-terminated); -1 with why if invalid. */
static int fl_conf_apply(struct fl_config *c, enum fl_conf_key k, const char *v, char *why,
			 size_t wlen)
{
	unsigned u;

	switch (k) {
	case FL_K_ENABLED: return fl_cv_bool(v, &c->enabled, why, wlen);
	case FL_K_BATCH: return fl_cv_bool(v, &c->batch, why, wlen);
	case FL_K_TCP_COMPAT: return fl_cv_bool(v, &c->compat, why, wlen);
	case FL_K_BACKTRACE: return fl_cv_bool(v, &c->backtrace, why, wlen);
	case FL_K_LOG_LEVEL:
		if (fl_cv_level(v, &c->log_level, why, wlen))
			return -1;
		c->log_set = 1;
		return 0;
	case FL_K_FLUSH_BYTES: return fl_cv_uint(v, 16u << 10, 4u << 20, &c->flush_bytes, why, wlen);
	case FL_K_FLUSH_USEC: return fl_cv_uint(v, 10, 100000, &c->flush_usec, why, wlen);
	case FL_K_SPIN_USEC: return fl_cv_uint(v, 0, 1000, &c->spin_usec, why, wlen);
	case FL_K_ENROLL_AFTER: return fl_cv_uint(v, 0, 1u << 30, &c->enroll_after, why, wlen);
	case FL_K_FLOW_BUDGET:
		if (!strcmp(v, "auto")) {
			c->flow_budget = 0;
			return 0;
		}
		if (fl_cv_uint(v, FL_BUDGET_MIN, FL_BUDGET_MAX, &u, why, wlen))
			return -1;
		c->flow_budget = u;
		return 0;
	case FL_K_PORTS: return fl_cv_ports(v, &c->ports, why, wlen);
	case FL_K_SKIP_PORTS: return fl_cv_ports(v, &c->skip_ports, why, wlen);
	case FL_K_ADDRESSES: return fl_cv_prefixes(v, &c->addrs, why, wlen);
	case FL_K_SKIP_ADDRESSES: return fl_cv_prefixes(v, &c->skip_addrs, why, wlen);
	case FL_K_ONLY_CMDS: return fl_cv_cmds(v, &c->only_cmds, why, wlen);
	case FL_K_SKIP_CMDS: return fl_cv_cmds(v, &c->skip_cmds, why, wlen);
	case FL_K_PIN_DIR:
		if (fl_cv_abs_path(v, sizeof(c->pin_dir), why, wlen))
			return -1;
		snprintf(c->pin_dir, sizeof(c->pin_dir), "%s", v);
		return 0;
	case FL_K_BROKER:
		if (fl_cv_abs_path(v, sizeof(c->broker), why, wlen))
			return -1;
		snprintf(c->broker, sizeof(c->broker), "%s", v);
		return 0;
	case FL_K_LOG_FILE:
		if (strlen(v) >= sizeof(c->log_file)) {
			snprintf(why, wlen, "longer than %zu characters", sizeof(c->log_file) - 1);
			return -1;
		}
		snprintf(c->log_file, sizeof(c->log_file), "%s", v);
		return 0;
	case FL_K_UNWIND_LIB:
		if (strlen(v) >= sizeof(c->unwind_lib)) {
			snprintf(why, wlen, "longer than %zu characters", sizeof(c->unwind_lib) - 1);
			return -1;
		}
		snprintf(c->unwind_lib, sizeof(c->unwind_lib), "%s", v);
		return 0;
	case FL_K__NR: break;
	}
	return -1;
}

/* A value as a warning quotes it: one line, printable, at most 64 bytes. */
static void fl_conf_quote(const char *v, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 4 < cap; i++)
		out[o++] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
	if (i < n && o + 3 < cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = 0;
}

static void fl_conf_warnf(struct fl_conf_run *r, bool file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fl_conf_warnf(struct fl_conf_run *r, bool file, const char *fmt, ...)
{
	char line[512], *p;
	va_list ap;

	if (file && ++r->file_warnings > FL_CONF_FILE_WARN_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One line whatever the value held: reasons quote parts of it too. */
	for (p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (r->in->warn)
		r->in->warn(line, r->in->warn_ctx);
}

/* One setting from one place: the file (line > 0) or the environment. */
static void fl_conf_set(struct fl_conf_run *r, enum fl_conf_key k, const char *v, unsigned line)
{
	const struct fl_conf_keyinfo *ki = &fl_conf_keys[k];
	char why[160], q[72];

	r->o->from[k] = line ? FL_FROM_FILE : FL_FROM_ENV;
	r->o->line[k] = line;
	r->o->invalid[k] = false;
	fl_conf_default(r->cfg, k);
	if (!*v) {
		/* Empty: the default, on purpose (FASTLOCAL_PORTS= undoes the file's). */
		if (k == FL_K_LOG_LEVEL)
			r->cfg->log_set = 0;
		return;
	}
	why[0] = 0;
	if (!fl_conf_apply(r->cfg, k, v, why, sizeof(why)))
		return;
	fl_conf_default(r->cfg, k);
	r->o->from[k] = FL_FROM_DEFAULT;
	r->o->invalid[k] = true;
	fl_conf_quote(v, strlen(v), q, sizeof(q));
	if (line)
		fl_conf_warnf(r, true, "%s = %s (%s:%u): %s; using the default %s", ki->key, q,
			      r->in->file, line, why, ki->def);
	else
		fl_conf_warnf(r, false, "%s=%s (environment): %s; using the default %s", ki->env, q,
			      why, ki->def);
}

static bool fl_conf_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* One line of the file, without its newline: "key = value", a comment or
 * blank. */
static void fl_conf_line(struct fl_conf_run *r, const char *p, size_t n, unsigned lineno)
{
	char line[FL_CONF_LINE_MAX + 1], q[72];
	char *key, *val, *eq, *end;
	int k;

	while (n && fl_conf_space(*p))
		p++, n--;
	while (n && fl_conf_space(p[n - 1]))
		n--;
	if (!n || *p == '#')
		return;
	if (n > FL_CONF_LINE_MAX) {
		fl_conf_warnf(r, true, "%s:%u: a line longer than %u characters; ignored", r->in->file,
			      lineno, FL_CONF_LINE_MAX);
		return;
	}
	if (memchr(p, 0, n)) {
		fl_conf_warnf(r, true, "%s:%u: a NUL byte in the line; ignored", r->in->file, lineno);
		return;
	}
	memcpy(line, p, n);
	line[n] = 0;
	eq = strchr(line, '=');
	if (!eq) {
		fl_conf_quote(line, n, q, sizeof(q));
		fl_conf_warnf(r, true, "%s:%u: '%s' is not a 'key = value' line; ignored",
			      r->in->file, lineno, q);
		return;
	}
	for (end = eq; end > line && fl_conf_space(end[-1]); end--)
		;
	*end = 0;
	key = line;
	for (val = eq + 1; fl_conf_space(*val); val++)
		;
	for (k = 0; k < FL_K__NR; k++)
		if (fl_conf_keys[k].key && !strcmp(fl_conf_keys[k].key, key))
			break;
	if (k == FL_K__NR) {
		fl_conf_quote(key, strlen(key), q, sizeof(q));
		fl_conf_warnf(r, true, "%s:%u: unknown key '%s'; line ignored", r->in->file, lineno, q);
		return;
	}
	fl_conf_set(r, (enum fl_conf_key)k, val, lineno);
}

static void fl_conf_file(struct fl_conf_run *r)
{
	const char *p = r->in->buf, *end = p + r->in->len, *nl;
	unsigned lineno = 0;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		fl_conf_line(r, p, (size_t)(nl - p), ++lineno);
		p = nl + 1;
	}
	if (r->file_warnings > FL_CONF_FILE_WARN_MAX)
		fl_conf_warnf(r, false, "%s: %u more problems not shown", r->in->file,
			      r->file_warnings - FL_CONF_FILE_WARN_MAX);
}

void fl_conf_eval(struct fl_config *cfg, struct fl_conf_origin *o, const struct fl_conf_input *in)
{
	struct fl_conf_run r = { cfg, o, in, 0 };
	const char *v;
	int k;

	memset(cfg, 0, sizeof(*cfg));
	memset(o, 0, sizeof(*o));
	o->file = in->file;
	o->file_state = in->file_state;
	for (k = 0; k < FL_K__NR; k++)
		fl_conf_default(cfg, (enum fl_conf_key)k);
	if (in->file_state == FL_FILE_UNREADABLE)
		fl_conf_warnf(&r, false, "configuration file %s: %s; going on without it", in->file,
			      in->file_error ? in->file_error : "cannot be read");
	else if (in->file_state == FL_FILE_READ && in->buf)
		fl_conf_file(&r);
	for (k = 0; k < FL_K__NR; k++) {
		v = in->getenv ? in->getenv(fl_conf_keys[k].env, in->env_ctx) : NULL;
		if (v)
			fl_conf_set(&r, (enum fl_conf_key)k, v, 0);
	}
	v = in->getenv ? in->getenv("FASTLOCAL_RUN", in->env_ctx) : NULL;
	cfg->run = v && !strcmp(v, "1");
	if (cfg->only_cmds.n && cfg->skip_cmds.n)
		fl_conf_warnf(&r, false, "only_cmds and skip_cmds are both set: no program is "
			      "accelerated (set one of them)");
	cfg->has_rules = cfg->ports.n || cfg->skip_ports.n || cfg->addrs.n || cfg->skip_addrs.n;
}
