// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fault.c - failures on demand, for testing the paths that handle them. */
#include "fault.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The errnos a test may ask for, by name. */
static const struct {
	const char *name;
	int err;
} fl_fault_names[] = {
	{ "ENOMEM", ENOMEM }, { "E2BIG", E2BIG }, { "EBUSY", EBUSY },
	{ "EEXIST", EEXIST }, { "EOPNOTSUPP", EOPNOTSUPP }, { "EINVAL", EINVAL },
};

/*
 * Owned by this file: the parsed FASTLOCAL_TEST_FAULT_INSERT, 1 until it is
 * read. Racing first readers parse the same environment to the same value,
 * so a relaxed store is enough and no lock is needed.
 */
static int fl_fault_insert_err = 1;

int fl_fault_insert(void)
{
	int err = __atomic_load_n(&fl_fault_insert_err, __ATOMIC_RELAXED);
	const char *v;
	size_t i;

	if (err != 1)
		return err;
	err = 0;
	v = getenv("FASTLOCAL_TEST_FAULT_INSERT");
	for (i = 0; v && i < sizeof(fl_fault_names) / sizeof(fl_fault_names[0]); i++)
		if (!strcmp(v, fl_fault_names[i].name))
			err = -fl_fault_names[i].err;
	__atomic_store_n(&fl_fault_insert_err, err, __ATOMIC_RELAXED);
	return err;
}

void fl_fault_lock_hold(void)
{
	const char *v = getenv("FASTLOCAL_TEST_FAULT_LOCK_MS");
	long ms = v ? strtol(v, NULL, 10) : 0;
	struct timespec ts;

	if (ms <= 0 || ms > 10000)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}
