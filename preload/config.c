// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* config.c - the shim's switches, read from the environment once. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_proto.h"
#include "fastlocal.h"

/* Written once under fl_config_once, read-only afterwards (config.h). */
struct fl_config fl_cfg;
int fl_config_ready;
static pthread_once_t fl_config_once = PTHREAD_ONCE_INIT;

static int fl_parse_level(const char *v)
{
	static const char *const names[] = { "off", "error", "warn", "info", "debug" };
	size_t i;

	for (i = 0; v && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i]))
			return (int)i;
	return FL_LOG_OFF;
}

/* An unsigned number from the environment, clamped to [lo, hi]; def when
 * unset or not a number. */
static unsigned fl_env_uint(const char *name, unsigned def, unsigned lo, unsigned hi)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return def;
	n = strtoul(v, &end, 10);
	if (*end)
		return def;
	return n < lo ? lo : n > hi ? hi : (unsigned)n;
}

static void fl_config_read(void)
{
	const char *on = getenv("FASTLOCAL");
	const char *pin = getenv("FASTLOCAL_PIN_DIR");
	const char *batch = getenv("FASTLOCAL_BATCH");
	const char *compat = getenv("FASTLOCAL_TCP_COMPAT");
	const char *log = getenv("FASTLOCAL_LOG");
	const char *run = getenv("FASTLOCAL_RUN");
	const char *bt = getenv("FASTLOCAL_BACKTRACE");
	const char *log_file = getenv("FASTLOCAL_LOG_FILE");
	const char *unwind = getenv("FASTLOCAL_UNWIND_LIB");
	const char *broker = getenv("FASTLOCAL_BROKER");

	fl_cfg.enabled = !(on && !strcmp(on, "0"));
	fl_cfg.batch = !(batch && (!strcmp(batch, "off") || !strcmp(batch, "0")));
	fl_cfg.compat = !(compat && (!strcmp(compat, "off") || !strcmp(compat, "0")));
	fl_cfg.flush_bytes = fl_env_uint("FASTLOCAL_FLUSH_BYTES", 256 << 10, 16 << 10, 4 << 20);
	fl_cfg.flush_usec = fl_env_uint("FASTLOCAL_FLUSH_USEC", 200, 10, 100000);
	fl_cfg.enroll_after = fl_env_uint("FASTLOCAL_ENROLL_AFTER", FL_ENROLL_AFTER_DEFAULT, 0,
					  1u << 30);
	fl_cfg.log_level = fl_parse_level(log);
	fl_cfg.log_set = log && (fl_cfg.log_level != FL_LOG_OFF || !strcmp(log, "off"));
	fl_cfg.run = run && !strcmp(run, "1");
	fl_cfg.backtrace = bt && !strcmp(bt, "1");
	snprintf(fl_cfg.log_file, sizeof(fl_cfg.log_file), "%s", log_file ? log_file : "");
	snprintf(fl_cfg.unwind_lib, sizeof(fl_cfg.unwind_lib), "%s",
		 unwind && *unwind ? unwind : "libunwind.so.8");
	snprintf(fl_cfg.pin_dir, sizeof(fl_cfg.pin_dir), "%s",
		 pin && pin[0] == '/' ? pin : FL_DEFAULT_PIN_DIR);
	snprintf(fl_cfg.broker, sizeof(fl_cfg.broker), "%s", broker ? broker : FL_BROKER_DEFAULT_SOCKET);
	__atomic_store_n(&fl_config_ready, 1, __ATOMIC_RELEASE);
}

const struct fl_config *fl_config_slow(void)
{
	pthread_once(&fl_config_once, fl_config_read);
	return &fl_cfg;
}
