// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: the pure helpers of the fastlocal command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/preload_env.c"
#include "../../common/conf.c"
#include "../../common/conf_value.c"
#include "../../common/conf_rules.c"
#include "../../common/conf_file.c"
#include "../../tools/cli_conf.c"
#include "../../tools/pin_dir.c"
#include "../../tools/json.c"
#include "../../tools/probe.c"

static void compose_with_nothing_preloaded_is_the_shim(void **state)
{
	char out[256];

	(void)state;
	assert_int_equal(fl_preload_compose(out, sizeof(out), NULL, "/l/libfastlocal.so"), 0);
	assert_string_equal(out, "/l/libfastlocal.so");
	assert_int_equal(fl_preload_compose(out, sizeof(out), "", "/l/libfastlocal.so"), 0);
	assert_string_equal(out, "/l/libfastlocal.so");
	assert_int_equal(fl_preload_compose(out, sizeof(out), " : ", "/l/libfastlocal.so"), 0);
	assert_string_equal(out, "/l/libfastlocal.so");
}

static void compose_appends_after_existing_entries(void **state)
{
	char out[256];

	(void)state;
	assert_int_equal(fl_preload_compose(out, sizeof(out), "/a.so /b.so", "/l/f.so"), 0);
	assert_string_equal(out, "/a.so /b.so:/l/f.so");
}

static void compose_does_not_add_the_shim_twice(void **state)
{
	char out[256];

	(void)state;
	assert_int_equal(fl_preload_compose(out, sizeof(out), "/a.so:/l/f.so", "/l/f.so"), 0);
	assert_string_equal(out, "/a.so:/l/f.so");
	/* a longer name that merely starts with ours is a different library */
	assert_int_equal(fl_preload_compose(out, sizeof(out), "/l/f.so.1", "/l/f.so"), 0);
	assert_string_equal(out, "/l/f.so.1:/l/f.so");
}

static void compose_refuses_to_truncate(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(fl_preload_compose(out, sizeof(out), "/a.so", "/l/f.so"), -1);
}

static void pin_dir_flag_beats_env_beats_default(void **state)
{
	struct fl_pin_dir pd;
	char err[256];

	(void)state;
	unsetenv("FASTLOCAL_PIN_DIR");
	assert_int_equal(fl_pin_dir_resolve(&pd, NULL, err, sizeof(err)), 0);
	assert_string_equal(pd.path, "/sys/fs/bpf/fastlocal");
	assert_string_equal(pd.source, "default");
	setenv("FASTLOCAL_PIN_DIR", "/sys/fs/bpf/env/", 1);
	assert_int_equal(fl_pin_dir_resolve(&pd, NULL, err, sizeof(err)), 0);
	assert_string_equal(pd.path, "/sys/fs/bpf/env");
	assert_string_equal(pd.source, "FASTLOCAL_PIN_DIR");
	assert_int_equal(fl_pin_dir_resolve(&pd, "/sys/fs/bpf/flag", err, sizeof(err)), 0);
	assert_string_equal(pd.path, "/sys/fs/bpf/flag");
	assert_string_equal(pd.source, "--pin-dir");
	unsetenv("FASTLOCAL_PIN_DIR");
}

static void pin_dir_must_be_absolute(void **state)
{
	struct fl_pin_dir pd;
	char err[256];

	(void)state;
	assert_int_equal(fl_pin_dir_resolve(&pd, "rel", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "must be an absolute path"));
}

static void json_strings_are_escaped(void **state)
{
	char buf[256] = { 0 };
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	(void)state;
	fl_json_write_string(f, "a\"b\\c\nd\x01");
	fclose(f);
	assert_string_equal(buf, "\"a\\\"b\\\\c\\nd\\u0001\"");
}

static void json_objects_nest_with_commas(void **state)
{
	char buf[256] = { 0 };
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	struct fl_json j;

	(void)state;
	fl_json_begin(&j, f);
	fl_json_bool(&j, "a", true);
	fl_json_object(&j, "m");
	fl_json_u64(&j, "x", 1);
	fl_json_u64(&j, "y", 2);
	fl_json_close(&j);
	fl_json_str(&j, "s", NULL);
	fl_json_end(&j);
	fclose(f);
	assert_string_equal(buf, "{\"a\":true,\"m\":{\"x\":1,\"y\":2},\"s\":null}\n");
}

static void missing_kernel_features_are_named(void **state)
{
	char err[512];

	(void)state;
	/* This kernel has sockmap; show the message a kernel without it gets. */
	print_message("sockmap message: fastlocal load: %s\n", fl_probe_sockmap_message());
	assert_non_null(strstr(fl_probe_sockmap_message(), "CONFIG_BPF_STREAM_PARSER"));
	assert_int_equal(fl_probe_sockmap(err, sizeof(err)), 0);
	assert_int_equal(fl_probe_btf("/nonexistent/btf", err, sizeof(err)), -1);
	print_message("BTF message: fastlocal load: %s\n", err);
	assert_non_null(strstr(err, "cannot read BTF file /nonexistent/btf"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(compose_with_nothing_preloaded_is_the_shim),
		cmocka_unit_test(compose_appends_after_existing_entries),
		cmocka_unit_test(compose_does_not_add_the_shim_twice),
		cmocka_unit_test(compose_refuses_to_truncate),
		cmocka_unit_test(pin_dir_flag_beats_env_beats_default),
		cmocka_unit_test(pin_dir_must_be_absolute),
		cmocka_unit_test(json_strings_are_escaped),
		cmocka_unit_test(json_objects_nest_with_commas),
		cmocka_unit_test(missing_kernel_features_are_named),
	};

	return cmocka_run_group_tests_name("cli helpers", tests, NULL, NULL);
}
