// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* conf_file.c - reading the settings file (conf_file.h). */
#include "conf_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/raw_calls.h"

void fl_conf_read_file(struct fl_conf_input *in, char buf[FL_CONF_FILE_MAX])
{
	const char *path = getenv("FASTLOCAL_CONF");
	bool chosen = path != NULL;
	ssize_t n;
	int fd;

	if (path && !*path) {
		in->file_state = FL_FILE_NONE; /* FASTLOCAL_CONF="": no file, on purpose */
		return;
	}
	in->file = path ? path : FL_CONF_DEFAULT_PATH;
	fd = open(in->file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		/* No /etc/fastlocal.conf is the normal case; a file named on
		 * purpose that is missing is worth a warning. */
		in->file_state = !chosen && errno == ENOENT ? FL_FILE_ABSENT : FL_FILE_UNREADABLE;
		in->file_error = strerror(errno);
		return;
	}
	/* pread, not read: the shim interposes read(), and needs none of that here. */
	n = pread(fd, buf, FL_CONF_FILE_MAX, 0);
	if (n < 0) {
		in->file_state = FL_FILE_UNREADABLE;
		in->file_error = strerror(errno);
	} else if ((size_t)n == FL_CONF_FILE_MAX) {
		in->file_state = FL_FILE_UNREADABLE;
		in->file_error = "larger than 64 KiB";
	} else {
		in->file_state = FL_FILE_READ;
		in->buf = buf;
		in->len = (size_t)n;
	}
	fl_raw_close(fd);
}
