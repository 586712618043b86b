// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * conf_fuzz.c - libFuzzer target for the configuration parser (common/conf.c,
 * conf_value.c, conf_rules.c), the code every host program runs on
 * /etc/fastlocal.conf and its FASTLOCAL_* variables.
 *
 * The input is used three ways: as the file; as the value of every
 * environment variable; and its first bytes as a program name, two ports and
 * two addresses for the rules. Besides the sanitizers' findings, it aborts
 * when an evaluated setting leaves its documented bounds or a warning is not
 * one line: what the shim relies on.
 *
 *   make fuzz FUZZ_SECONDS=600
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/conf.h"

struct fl_fuzz_env {
	const char *value; /* every variable's value, or NULL: none set */
};

static const char *fl_fuzz_getenv(const char *name, void *ctx)
{
	const struct fl_fuzz_env *e = ctx;

	/* FASTLOCAL_RUN stays unset half the time, as in real runs. */
	if (!strcmp(name, "FASTLOCAL_RUN"))
		return NULL;
	return e->value;
}

static void fl_fuzz_warn(const char *line, void *ctx)
{
	size_t n = strlen(line);

	(void)ctx;
	/* One line, bounded, printable: the shim writes it into the host's stderr. */
	if (n == 0 || n >= 512 || strchr(line, '\n'))
		abort();
}

static void fl_fuzz_check(const struct fl_config *c)
{
	char buf[4200];
	int k;

	if (c->flush_bytes < (16u << 10) || c->flush_bytes > (4u << 20) || c->flush_usec < 10 ||
	    c->flush_usec > 100000 || c->enroll_after > (1u << 30) ||
	    (c->flow_budget && (c->flow_budget < FL_BUDGET_MIN || c->flow_budget > FL_BUDGET_MAX)) ||
	    c->log_level < FL_LOG_OFF || c->log_level > FL_LOG_DEBUG || c->pin_dir[0] != '/' ||
	    c->broker[0] != '/' || c->ports.n > FL_CONF_PORT_RANGES ||
	    c->skip_ports.n > FL_CONF_PORT_RANGES || c->addrs.n > FL_CONF_PREFIXES ||
	    c->skip_addrs.n > FL_CONF_PREFIXES || c->only_cmds.n > FL_CONF_CMDS ||
	    c->skip_cmds.n > FL_CONF_CMDS || (unsigned)c->enabled > 1 || (unsigned)c->batch > 1 ||
	    (unsigned)c->compat > 1 || (unsigned)c->backtrace > 1)
		abort();
	for (k = 0; k < FL_K__NR; k++) {
		fl_conf_format(c, (enum fl_conf_key)k, buf, sizeof(buf));
		if (!memchr(buf, 0, sizeof(buf)))
			abort();
	}
}

/* The rules on ports, addresses and a program name taken from the input. */
static void fl_fuzz_rules(const struct fl_config *c, const uint8_t *data, size_t size)
{
	uint8_t addrs[2][16] = { { 0 } };
	uint16_t ports[2] = { 0, 0 };
	char prog[FL_CONF_CMD_LEN];
	const char *why;
	size_t n = size < sizeof(prog) - 1 ? size : sizeof(prog) - 1;

	memcpy(prog, data, n);
	prog[n] = 0;
	(void)fl_conf_selected(c, prog, &why);
	if (size >= 4 + 32) {
		memcpy(ports, data, 4);
		memcpy(addrs, data + 4, 32);
	}
	(void)fl_conf_ports_excluded(c, ports);
	(void)fl_conf_addrs_excluded(c, (const uint8_t (*)[16])addrs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fl_config cfg;
	struct fl_conf_origin o;
	struct fl_fuzz_env env = { NULL };
	struct fl_conf_input in = {
		.file = "fuzz.conf", .buf = (const char *)data, .len = size,
		.file_state = FL_FILE_READ, .getenv = fl_fuzz_getenv, .env_ctx = &env,
		.warn = fl_fuzz_warn,
	};
	char *s;

	if (size > FL_CONF_FILE_MAX)
		return 0; /* the shim refuses such a file before parsing */
	fl_conf_eval(&cfg, &o, &in);
	fl_fuzz_check(&cfg);
	fl_fuzz_rules(&cfg, data, size);

	/* The same bytes as every variable's value (up to a NUL, as getenv). */
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	env.value = s;
	in.file_state = FL_FILE_NONE;
	fl_conf_eval(&cfg, &o, &in);
	fl_fuzz_check(&cfg);
	fl_fuzz_rules(&cfg, data, size);
	free(s);
	return 0;
}
