// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cli_conf.c - the shim's settings as the CLI sees them (preload/conf.c). */
#include "cli_conf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Owned by fl_cli_conf_eval (the CLI is one thread): the file's bytes, as the shim reads them. */
static char fl_cfg_file_buf[FL_CONF_FILE_MAX];
static char fl_cfg_file_err[128];

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

/* The same choices as the shim's config.c: FASTLOCAL_CONF="" means no file,
 * a missing /etc/fastlocal.conf is normal, anything else unreadable warns. */
static void fl_cfg_read_file(struct fl_conf_input *in)
{
	const char *path = getenv("FASTLOCAL_CONF");
	ssize_t n;
	int fd;

	if (path && !*path) {
		in->file_state = FL_FILE_NONE;
		return;
	}
	in->file = path ? path : FL_CONF_DEFAULT_PATH;
	fd = open(in->file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		in->file_state = !path && errno == ENOENT ? FL_FILE_ABSENT : FL_FILE_UNREADABLE;
		snprintf(fl_cfg_file_err, sizeof(fl_cfg_file_err), "%s", strerror(errno));
		in->file_error = fl_cfg_file_err;
		return;
	}
	n = pread(fd, fl_cfg_file_buf, sizeof(fl_cfg_file_buf), 0);
	if (n < 0) {
		in->file_state = FL_FILE_UNREADABLE;
		snprintf(fl_cfg_file_err, sizeof(fl_cfg_file_err), "%s", strerror(errno));
		in->file_error = fl_cfg_file_err;
	} else if ((size_t)n == sizeof(fl_cfg_file_buf)) {
		in->file_state = FL_FILE_UNREADABLE;
		in->file_error = "larger than 64 KiB";
	} else {
		in->file_state = FL_FILE_READ;
		in->buf = fl_cfg_file_buf;
		in->len = (size_t)n;
	}
	close(fd);
}

void fl_cli_conf_eval(struct fl_config *cfg, struct fl_conf_origin *origin, bool warn)
{
	struct fl_conf_input in = { .getenv = fl_cfg_getenv, .warn = warn ? fl_cfg_warn : fl_cfg_quiet };

	fl_cfg_read_file(&in);
	fl_conf_eval(cfg, origin, &in);
}
