// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests of reading the settings file (common/conf_file.c), which the
 * shim and the CLI share: which file, and what each outcome reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "../../common/conf_file.c"

/* The fds open in this process (the reader must leave none behind). */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int fds_before;

static char buf[FL_CONF_FILE_MAX];
static char dir[64];
static char path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/fl-conf-file-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/fastlocal.conf", dir);
	fds_before = open_fds();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(dir);
	unsetenv("FASTLOCAL_CONF");
	return 0;
}

static void write_file(size_t len)
{
	FILE *f = fopen(path, "w");
	size_t i;

	assert_non_null(f);
	for (i = 0; i < len; i++)
		fputc(i % 64 == 63 ? '\n' : '#', f);
	assert_int_equal(fclose(f), 0);
}

static void empty_variable_means_no_file(void **state)
{
	struct fl_conf_input in = { 0 };

	(void)state;
	setenv("FASTLOCAL_CONF", "", 1);
	fl_conf_read_file(&in, buf);
	assert_int_equal(in.file_state, FL_FILE_NONE);
	assert_null(in.file);
	assert_null(in.buf);
	assert_int_equal(open_fds(), fds_before); /* nothing left open */
}

static void named_file_is_read_whole(void **state)
{
	struct fl_conf_input in = { 0 };
	FILE *f;

	(void)state;
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("log_level = debug\nbatch = off\n", f);
	assert_int_equal(fclose(f), 0);
	setenv("FASTLOCAL_CONF", path, 1);
	fl_conf_read_file(&in, buf);
	assert_int_equal(in.file_state, FL_FILE_READ);
	assert_string_equal(in.file, path);
	assert_ptr_equal(in.buf, buf);
	assert_int_equal(in.len, strlen("log_level = debug\nbatch = off\n"));
	assert_memory_equal(in.buf, "log_level = debug\nbatch = off\n", in.len);
	assert_int_equal(open_fds(), fds_before); /* nothing left open */
}

static void missing_named_file_is_unreadable(void **state)
{
	struct fl_conf_input in = { 0 };

	(void)state;
	setenv("FASTLOCAL_CONF", path, 1); /* not created */
	fl_conf_read_file(&in, buf);
	assert_int_equal(in.file_state, FL_FILE_UNREADABLE);
	assert_string_equal(in.file, path);
	assert_string_equal(in.file_error, strerror(ENOENT));
	assert_null(in.buf);
	assert_int_equal(open_fds(), fds_before); /* nothing left open */
}

static void unset_variable_means_the_default_path(void **state)
{
	struct fl_conf_input in = { 0 };

	(void)state;
	unsetenv("FASTLOCAL_CONF");
	fl_conf_read_file(&in, buf);
	assert_string_equal(in.file, FL_CONF_DEFAULT_PATH);
	/* This machine's /etc decides which: absent is normal, not a warning. */
	if (access(FL_CONF_DEFAULT_PATH, F_OK))
		assert_int_equal(in.file_state, FL_FILE_ABSENT);
	else
		assert_int_not_equal(in.file_state, FL_FILE_ABSENT);
}

static void a_directory_is_unreadable_with_the_reason(void **state)
{
	struct fl_conf_input in = { 0 };

	(void)state;
	setenv("FASTLOCAL_CONF", dir, 1);
	fl_conf_read_file(&in, buf);
	assert_int_equal(in.file_state, FL_FILE_UNREADABLE);
	assert_string_equal(in.file_error, strerror(EISDIR));
	assert_int_equal(open_fds(), fds_before); /* nothing left open */
}

static void largest_file_is_read_one_more_byte_is_refused(void **state)
{
	struct fl_conf_input in = { 0 };

	(void)state;
	setenv("FASTLOCAL_CONF", path, 1);
	write_file(FL_CONF_FILE_MAX - 1);
	fl_conf_read_file(&in, buf);
	assert_int_equal(in.file_state, FL_FILE_READ);
	assert_int_equal(in.len, FL_CONF_FILE_MAX - 1);

	memset(&in, 0, sizeof(in));
	write_file(FL_CONF_FILE_MAX);
	fl_conf_read_file(&in, buf);
	assert_int_equal(in.file_state, FL_FILE_UNREADABLE);
	assert_string_equal(in.file_error, "larger than 64 KiB");
	assert_null(in.buf);
	assert_int_equal(open_fds(), fds_before); /* nothing left open */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(empty_variable_means_no_file, setup, teardown),
		cmocka_unit_test_setup_teardown(named_file_is_read_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(missing_named_file_is_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(unset_variable_means_the_default_path, setup, teardown),
		cmocka_unit_test_setup_teardown(a_directory_is_unreadable_with_the_reason, setup,
						teardown),
		cmocka_unit_test_setup_teardown(largest_file_is_read_one_more_byte_is_refused, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
