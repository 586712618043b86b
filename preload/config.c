// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* config.c - the shim's switches, read from the environment once. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastlocal.h"

/* Written once under fl_config_once, read-only afterwards. */
static struct fl_config fl_cfg;
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

static void fl_config_read(void)
{
	const char *on = getenv("FASTLOCAL");
	const char *pin = getenv("FASTLOCAL_PIN_DIR");

	fl_cfg.enabled = !(on && !strcmp(on, "0"));
	fl_cfg.log_level = fl_parse_level(getenv("FASTLOCAL_LOG"));
	snprintf(fl_cfg.pin_dir, sizeof(fl_cfg.pin_dir), "%s",
		 pin && pin[0] == '/' ? pin : FL_DEFAULT_PIN_DIR);
}

const struct fl_config *fl_config(void)
{
	pthread_once(&fl_config_once, fl_config_read);
	return &fl_cfg;
}
