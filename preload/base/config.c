// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * config.c - the shim's settings, evaluated once (conf.c) from the defaults,
 * /etc/fastlocal.conf (or $FASTLOCAL_CONF) and the environment. The
 * warnings about invalid values are kept for the log (fl_config_warnings):
 * this file does no logging, which reads the settings itself.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf_file.h"

/* Written once under fl_config_once, read-only afterwards (config.h). */
struct fl_config fl_cfg;
int fl_config_ready;
static pthread_once_t fl_config_once = PTHREAD_ONCE_INIT;

/*
 * Owned by fl_config_read, under fl_config_once (so no other lock): the
 * file's bytes (read by conf_file.c), and the warnings gathered while
 * evaluating. Static, not on the stack or the heap: the first fl_config()
 * can come from any thread (a small stack) or a signal handler (no malloc).
 */
static char fl_conf_file_buf[FL_CONF_FILE_MAX];
static char fl_conf_warn_buf[4096];
static size_t fl_conf_warn_len;
static unsigned fl_conf_warn_dropped;

static void fl_conf_collect(const char *line, void *ctx)
{
	size_t n = strlen(line);

	(void)ctx;
	if (fl_conf_warn_len + n + 1 > sizeof(fl_conf_warn_buf)) {
		fl_conf_warn_dropped++;
		return;
	}
	memcpy(fl_conf_warn_buf + fl_conf_warn_len, line, n + 1);
	fl_conf_warn_len += n + 1;
}

static const char *fl_conf_getenv(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

static void fl_config_read(void)
{
	struct fl_conf_input in = { .getenv = fl_conf_getenv, .warn = fl_conf_collect };
	struct fl_conf_origin origin;
	const char *why;
	int saved = errno;

	/* From the start: glibc runs this again in a child of a fork() that
	 * interrupted it in another thread (init.c). */
	fl_conf_warn_len = 0;
	fl_conf_warn_dropped = 0;
	fl_conf_read_file(&in, fl_conf_file_buf);
	fl_conf_eval(&fl_cfg, &origin, &in);
	/* A program that only_cmds/skip_cmds leave out is a pure
	 * pass-through, as with FASTLOCAL=0. Each exec decides again: the
	 * name is the new image's. */
	if (!fl_conf_selected(&fl_cfg, program_invocation_short_name, &why))
		fl_cfg.enabled = 0;
	__atomic_store_n(&fl_config_ready, 1, __ATOMIC_RELEASE);
	errno = saved;
}

const struct fl_config *fl_config_slow(void)
{
	pthread_once(&fl_config_once, fl_config_read);
	return &fl_cfg;
}

const char *fl_config_warnings(size_t *len)
{
	fl_config();
	*len = fl_conf_warn_len;
	return fl_conf_warn_buf;
}
