// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* log.c - one line per event on stderr, written with one write(2). */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "libc.h"

void fl_log(int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n, m, saved;

	if (level > fl_config()->log_level)
		return;
	saved = errno; /* logging never changes what the application sees */
	n = snprintf(line, sizeof(line), "fastlocal[%d]: ", (int)getpid());
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0) {
		errno = saved;
		return;
	}
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* The real write: our own write() would look the fd up for nothing. */
	(void)!libc_write(2, line, (size_t)n);
	errno = saved;
}
