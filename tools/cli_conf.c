// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cli_conf.c - the shim's settings as the CLI sees them (common/conf.c). */
#include "cli_conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../common/conf_file.h"

/* Owned by fl_cli_conf_eval (the CLI is one thread): the file's bytes, read
 * as the shim reads them (common/conf_file.c). */
static char fl_cfg_file_buf[FL_CONF_FILE_MAX];

static const char *fl_cfg_getenv(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

static void fl_cfg_quiet(const char *line, void *ctx)
{
	(void)line;
	(void)ctx;
}

static void fl_cfg_warn(const char *line, void *ctx)
{
	(void)ctx;
	fprintf(stderr, "fastlocal[%d]: warning: %s\n", (int)getpid(), line);
}

void fl_cli_conf_eval(struct fl_config *cfg, struct fl_conf_origin *origin, bool warn)
{
	struct fl_conf_input in = { .getenv = fl_cfg_getenv, .warn = warn ? fl_cfg_warn : fl_cfg_quiet };

	fl_conf_read_file(&in, fl_cfg_file_buf);
	fl_conf_eval(cfg, origin, &in);
}
