// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* log.c - "fastlocal[pid]: ..." lines on stderr or in FASTLOCAL_LOG_FILE. */
#include "log.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "backtrace.h"
#include "libc.h"
#include "own_fds.h"
#include "ratelimit.h"
#include "sbuf.h"

/*
 * Owned by this file, lock-free. fl_log_file is the FASTLOCAL_LOG_FILE
 * descriptor, registered with own_fds (which may move it: read it with
 * fl_own_fd_get). fl_log_file_state says how far opening got: 0 not tried,
 * 1 a thread is opening it (others wait a bounded while, fl_log_fd), 2
 * decided (fl_log_file >= 0, or -1: stderr).
 */
static int fl_log_file = -1;
static int fl_log_file_state;

static void fl_log_open(void)
{
	const char *path = fl_config()->log_file;
	char msg[600];
	int fd, n;

	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0) {
		n = snprintf(msg, sizeof(msg), "fastlocal[%d]: cannot open the log file %s (log_file, "
			     "FASTLOCAL_LOG_FILE): %s; logging to stderr\n", (int)getpid(), path,
			     strerror(errno));
		if (n > 0)
			(void)!libc_write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
		return;
	}
	/* Moved high and protected: a daemon that closes every fd, or dup2()s
	 * onto ours, must not lose (or hijack) the log. */
	fl_log_file = fd;
	fl_own_fd_take(&fl_log_file);
}

int fl_log_fd(void)
{
	int st = __atomic_load_n(&fl_log_file_state, __ATOMIC_ACQUIRE), fd, zero = 0;

	if (st == 0) {
		if (!fl_config()->log_file[0]) {
			__atomic_store_n(&fl_log_file_state, 2, __ATOMIC_RELEASE);
			return 2;
		}
		if (__atomic_compare_exchange_n(&fl_log_file_state, &zero, 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
			fl_log_open();
			__atomic_store_n(&fl_log_file_state, 2, __ATOMIC_RELEASE);
		} else {
			/* Another thread's first line got here first: wait for
			 * its open as below. (Returning stderr here put the
			 * second of two threads' first lines there: test
			 * config.sh, "log_file ... act in the shim", under ASan.) */
			st = zero;
		}
	}
	if (st == 1) {
		/* IMPORTANT: another thread is opening the file (an open and a
		 * dup, microseconds): wait for it, so that no line meant for the
		 * file lands on stderr. Bounded: a signal handler that interrupted
		 * the opener itself would wait forever, so after 100 ms (an open
		 * on a loaded machine under ASan can take more than 1000 yields)
		 * the line goes to stderr after all. */
		int64_t until = fl_clock_ns(CLOCK_MONOTONIC) + 100 * 1000000LL;

		while (st == 1 && fl_clock_ns(CLOCK_MONOTONIC) < until) {
			sched_yield();
			st = __atomic_load_n(&fl_log_file_state, __ATOMIC_ACQUIRE);
		}
		if (st == 1)
			return 2;
	}
	fd = fl_own_fd_get(&fl_log_file);
	return fd >= 0 ? fd : 2;
}

/* "fastlocal[pid]: " */
static void fl_log_prefix(struct fl_sbuf *b)
{
	fl_sb_str(b, "fastlocal[");
	fl_sb_i64(b, getpid());
	fl_sb_str(b, "]: ");
}

void fl_log_raw(const char *text, size_t len)
{
	char line[1024];
	struct fl_sbuf b;
	int saved = errno;

	fl_sb_init(&b, line, sizeof(line) - 1);
	fl_log_prefix(&b);
	while (len-- && b.len < b.cap)
		fl_sb_ch(&b, *text++);
	line[b.len++] = '\n';
	/* The real write: our own write() would look the fd up for nothing. */
	(void)!libc_write(fl_log_fd(), line, b.len);
	errno = saved;
}

/* Formats and writes one line, preceded by a note of the lines dropped
 * before it, all in one write. */
static void fl_log_emit(uint64_t dropped, const char *fmt, va_list ap)
{
	char line[1280];
	struct fl_sbuf b;
	int m;

	fl_sb_init(&b, line, sizeof(line) - 2);
	if (dropped) {
		fl_log_prefix(&b);
		fl_sb_u64(&b, dropped);
		fl_sb_str(&b, " log lines suppressed (rate limit: bursts of 100 lines, 20 lines/s)\n");
	}
	fl_log_prefix(&b);
	m = vsnprintf(line + b.len, b.cap - b.len, fmt, ap);
	if (m < 0)
		return;
	b.len += (size_t)m < b.cap - b.len ? (size_t)m : b.cap - b.len - 1;
	line[b.len++] = '\n';
	(void)!libc_write(fl_log_fd(), line, b.len);
}

void fl_log(int level, const char *fmt, ...)
{
	uint64_t dropped;
	va_list ap;
	int saved;

	if (level > fl_config()->log_level)
		return;
	saved = errno; /* logging never changes what the application sees */
	if (fl_rl_take(&dropped)) {
		va_start(ap, fmt);
		fl_log_emit(dropped, fmt, ap);
		va_end(ap);
	}
	errno = saved;
}

void fl_log_warn_once(int *once, const char *fmt, ...)
{
	const struct fl_config *c = fl_config();
	va_list ap;
	int saved;

	if (c->log_set && c->log_level < FL_LOG_WARN)
		return;
	if (__atomic_exchange_n(once, 1, __ATOMIC_RELAXED))
		return;
	saved = errno;
	va_start(ap, fmt);
	fl_log_emit(0, fmt, ap);
	va_end(ap);
	errno = saved;
}

bool fl_log_caller(char *buf, size_t cap, int level)
{
	const struct fl_config *c = fl_config();

	/* Peek first: a backtrace costs tens of microseconds, wasted on a
	 * line the rate limit would drop. */
	if (!c->backtrace || level > c->log_level || !fl_rl_peek())
		return false;
	return fl_bt_caller(buf, cap, c->unwind_lib) > 0;
}

void fl_log_config_warnings(void)
{
	const struct fl_config *c = fl_config();
	const char *warn;
	char line[600];
	struct fl_sbuf b;
	size_t off = 0, n, len;

	warn = fl_config_warnings(&len);
	if (!len || (c->log_set && c->log_level < FL_LOG_WARN))
		return;
	while (off < len) {
		n = strlen(warn + off);
		fl_sb_init(&b, line, sizeof(line) - 1);
		fl_sb_str(&b, "fastlocal[");
		fl_sb_i64(&b, getpid());
		fl_sb_str(&b, "]: warning: ");
		fl_sb_str(&b, warn + off);
		line[b.len++] = '\n';
		(void)!libc_write(fl_log_fd(), line, b.len);
		off += n + 1;
	}
}
