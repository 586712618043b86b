// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests of the settings' evaluation (preload/conf*.c): values, lines,
 * precedence, warnings, and what the rules decide. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "../../common/conf.c"
#include "../../common/conf_rules.c"
#include "../../common/conf_value.c"

struct env {
	const char *names[8], *values[8];
};

static const char *env_get(const char *name, void *ctx)
{
	const struct env *e = ctx;
	int i;

	for (i = 0; i < 8 && e->names[i]; i++)
		if (!strcmp(e->names[i], name))
			return e->values[i];
	return NULL;
}

static char warned[4096];
static int nwarn;

static void warn(const char *line, void *ctx)
{
	(void)ctx;
	nwarn++;
	strncat(warned, line, sizeof(warned) - strlen(warned) - 2);
	strcat(warned, "\n");
}

static struct fl_config cfg;
static struct fl_conf_origin org;

static void eval(const char *file, const struct env *e)
{
	struct fl_conf_input in = {
		.file = "t.conf", .buf = file, .len = file ? strlen(file) : 0,
		.file_state = file ? FL_FILE_READ : FL_FILE_NONE, .getenv = env_get,
		.env_ctx = (void *)e, .warn = warn,
	};

	warned[0] = 0;
	nwarn = 0;
	fl_conf_eval(&cfg, &org, &in);
}

static void test_defaults(void **state)
{
	struct env e = { { NULL }, { NULL } };

	(void)state;
	eval(NULL, &e);
	assert_int_equal(nwarn, 0);
	assert_int_equal(cfg.enabled, 1);
	assert_int_equal(cfg.flush_bytes, 256u << 10);
	assert_int_equal(cfg.flush_usec, 200);
	assert_int_equal(cfg.enroll_after, FL_ENROLL_AFTER_DEFAULT);
	assert_int_equal(cfg.flow_budget, 0);
	assert_string_equal(cfg.broker, "/run/fastlocal/broker.sock");
	assert_int_equal(cfg.has_rules, 0);
	assert_int_equal(org.from[FL_K_FLUSH_USEC], FL_FROM_DEFAULT);
}

static void test_file_lines_and_precedence(void **state)
{
	struct env e = { { "FASTLOCAL_FLUSH_USEC", "FASTLOCAL_PORTS" }, { "300", "" } };

	(void)state;
	eval("# c\n\n  flush_usec = 500 \r\nports = 80\nbatch=off\nbatch = on\n", &e);
	assert_int_equal(nwarn, 0);
	assert_int_equal(cfg.flush_usec, 300);
	assert_int_equal(org.from[FL_K_FLUSH_USEC], FL_FROM_ENV);
	assert_int_equal(cfg.ports.n, 0); /* empty variable: the default, on purpose */
	assert_int_equal(org.from[FL_K_PORTS], FL_FROM_ENV);
	assert_int_equal(cfg.batch, 1); /* the last line wins */
	assert_int_equal(org.line[FL_K_BATCH], 6);
}

static void test_invalid_values_warn_once_and_default(void **state)
{
	struct env e = { { "FASTLOCAL_FLUSH_USEC", "FASTLOCAL" }, { "abc", "maybe" } };

	(void)state;
	eval("flush_bytes = 1\nfoo = 1\nnot a line\n", &e);
	assert_int_equal(nwarn, 5);
	assert_non_null(strstr(warned, "FASTLOCAL_FLUSH_USEC=abc (environment): not a number; "
				       "using the default 200\n"));
	assert_non_null(strstr(warned, "flush_bytes = 1 (t.conf:1): out of range"));
	assert_non_null(strstr(warned, "t.conf:2: unknown key 'foo'"));
	assert_non_null(strstr(warned, "t.conf:3: 'not a line' is not a 'key = value' line"));
	assert_int_equal(cfg.flush_usec, 200);
	assert_int_equal(cfg.flush_bytes, 256u << 10);
	assert_int_equal(cfg.enabled, 1);
	assert_true(org.invalid[FL_K_FLUSH_USEC]);
}

static void test_warnings_are_capped_and_one_line(void **state)
{
	struct env e = { { "FASTLOCAL_PORTS" }, { "8\n0" } };
	char file[400] = "";
	int i;

	(void)state;
	for (i = 0; i < 20; i++)
		strcat(file, "junk\n");
	eval(file, &e);
	assert_int_equal(nwarn, 8 + 1 + 1); /* 8, "12 more", the variable's */
	assert_non_null(strstr(warned, "t.conf: 12 more problems not shown"));
	assert_non_null(strstr(warned, "FASTLOCAL_PORTS=8?0 (environment)"));
}

static void test_ports(void **state)
{
	struct fl_port_list l;
	char why[128];

	(void)state;
	assert_int_equal(fl_cv_ports("6379, 8000-8100,1", &l, why, sizeof(why)), 0);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.r[1].lo, 8000);
	assert_int_equal(l.r[1].hi, 8100);
	assert_int_equal(fl_cv_ports("0", &l, why, sizeof(why)), -1);
	assert_int_equal(fl_cv_ports("65536", &l, why, sizeof(why)), -1);
	assert_int_equal(fl_cv_ports("9-8", &l, why, sizeof(why)), -1);
	assert_int_equal(fl_cv_ports("80,,81", &l, why, sizeof(why)), -1);
	assert_int_equal(fl_cv_ports("-1", &l, why, sizeof(why)), -1);
	assert_int_equal(fl_cv_ports("+80", &l, why, sizeof(why)), -1);
}

static void test_port_rules_decide_alike_for_both_ends(void **state)
{
	struct env e = { { "FASTLOCAL_PORTS", "FASTLOCAL_SKIP_PORTS" }, { "6379, 8000-8100", "8050" } };
	uint16_t a[2] = { 6379, 40000 }, b[2] = { 40000, 6379 }, c[2] = { 8050, 40000 },
		 d[2] = { 8049, 1 }, f[2] = { 22, 40000 };

	(void)state;
	eval(NULL, &e);
	assert_int_equal(cfg.has_rules, 1);
	assert_false(fl_conf_ports_excluded(&cfg, a));
	assert_false(fl_conf_ports_excluded(&cfg, b));
	assert_true(fl_conf_ports_excluded(&cfg, c)); /* skip_ports wins */
	assert_false(fl_conf_ports_excluded(&cfg, d));
	assert_true(fl_conf_ports_excluded(&cfg, f));
}

static void mapped(uint8_t a[16], uint8_t x, uint8_t y, uint8_t z, uint8_t w)
{
	memset(a, 0, 16);
	a[10] = a[11] = 0xff;
	a[12] = x, a[13] = y, a[14] = z, a[15] = w;
}

static void test_address_rules(void **state)
{
	struct env e = { { "FASTLOCAL_ADDRESSES", "FASTLOCAL_SKIP_ADDRESSES" },
			 { "127.0.0.0/8, ::1, 10.1.2.3/16", "127.9.0.0/16" } };
	uint8_t ad[2][16];

	(void)state;
	eval(NULL, &e);
	assert_int_equal(nwarn, 0);
	mapped(ad[0], 127, 0, 0, 1);
	mapped(ad[1], 192, 168, 0, 1);
	assert_false(fl_conf_addrs_excluded(&cfg, (const uint8_t (*)[16])ad)); /* local matches */
	mapped(ad[0], 10, 1, 200, 7); /* host bits of 10.1.2.3/16 ignored */
	assert_false(fl_conf_addrs_excluded(&cfg, (const uint8_t (*)[16])ad));
	mapped(ad[0], 10, 2, 0, 1);
	assert_true(fl_conf_addrs_excluded(&cfg, (const uint8_t (*)[16])ad));
	mapped(ad[1], 127, 9, 3, 3); /* skip wins */
	mapped(ad[0], 127, 0, 0, 1);
	assert_true(fl_conf_addrs_excluded(&cfg, (const uint8_t (*)[16])ad));
	memset(ad, 0, sizeof(ad));
	ad[0][15] = 1; /* ::1 */
	assert_false(fl_conf_addrs_excluded(&cfg, (const uint8_t (*)[16])ad));
	ad[0][15] = 2;
	assert_true(fl_conf_addrs_excluded(&cfg, (const uint8_t (*)[16])ad));
}

static void test_program_selection(void **state)
{
	struct env only = { { "FASTLOCAL_ONLY_CMDS" }, { "redis-server, nginx" } };
	struct env skip = { { "FASTLOCAL_SKIP_CMDS" }, { "curl" } };
	struct env both = { { "FASTLOCAL_SKIP_CMDS", "FASTLOCAL_ONLY_CMDS" }, { "curl", "nginx" } };
	const char *why;

	(void)state;
	eval(NULL, &only);
	assert_true(fl_conf_selected(&cfg, "nginx", &why));
	assert_false(fl_conf_selected(&cfg, "ngin", &why));
	eval(NULL, &skip);
	assert_false(fl_conf_selected(&cfg, "curl", &why));
	assert_true(fl_conf_selected(&cfg, "wget", &why));
	eval(NULL, &both);
	assert_int_equal(nwarn, 1);
	assert_false(fl_conf_selected(&cfg, "nginx", &why));
	assert_false(fl_conf_selected(&cfg, "wget", &why));
}

static void test_flow_budget_and_paths(void **state)
{
	struct env e = { { "FASTLOCAL_FLOW_BUDGET", "FASTLOCAL_BROKER" }, { "262143", "b.sock" } };

	(void)state;
	eval("flow_budget = 1048576\npin_dir = /x\n", &e);
	assert_int_equal(nwarn, 2);
	assert_int_equal(cfg.flow_budget, 0);
	assert_string_equal(cfg.pin_dir, "/x");
	assert_string_equal(cfg.broker, FL_CONF_DEFAULT_BROKER);
	e.values[0] = "auto";
	e.values[1] = "/run/b.sock";
	eval("flow_budget = 1048576\n", &e);
	assert_int_equal(cfg.flow_budget, 0);
	assert_string_equal(cfg.broker, "/run/b.sock");
	e.names[0] = NULL;
	eval("flow_budget = 67108864\n", &e);
	assert_int_equal(cfg.flow_budget, 64u << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_file_lines_and_precedence),
		cmocka_unit_test(test_invalid_values_warn_once_and_default),
		cmocka_unit_test(test_warnings_are_capped_and_one_line),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_port_rules_decide_alike_for_both_ends),
		cmocka_unit_test(test_address_rules),
		cmocka_unit_test(test_program_selection),
		cmocka_unit_test(test_flow_budget_and_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
