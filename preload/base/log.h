/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * log.h - "fastlocal[pid]: ..." lines, by level, on stderr or in
 * FASTLOCAL_LOG_FILE.
 *
 * One line per event, written with one write(2) (lines of concurrent
 * threads and processes never interleave within a line), errno preserved.
 * Silent unless FASTLOCAL_LOG chooses a level; rate-limited
 * (ratelimit.h), so a busy server cannot flood its own logs.
 */
#ifndef FL_LOG_H
#define FL_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

void fl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define fl_debug(...) fl_log(FL_LOG_DEBUG, __VA_ARGS__)

/* A warning that this process cannot get what the user explicitly asked
 * for (FASTLOCAL_RUN=1): written once per *once flag, even when FASTLOCAL_LOG
 * is unset (unless it names a level below warn), and never rate-limited. */
void fl_log_warn_once(int *once, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Where the lines go: FASTLOCAL_LOG_FILE (opened on first use, O_APPEND,
 * one of the shim's own fds) or 2. Signal-safe once opened. */
int fl_log_fd(void);

/* The settings' warnings (fl_config_warnings), "fastlocal[pid]: warning:
 * ..." one write each, unless a level below warn was chosen. Called once,
 * when the shim loads (init.c). */
void fl_log_config_warnings(void);

/* Writes "fastlocal[pid]: " text "\n" in one write(2): no level, no rate
 * limit, no stdio. Signal-safe (for the crash handler). */
void fl_log_raw(const char *text, size_t len);

/* With FASTLOCAL_BACKTRACE=1, when a line at this level would be written:
 * describes in buf the application's call that led here ("connect() <-
 * main+0x55 (prog) <- ..."), for a debug line to carry. False otherwise. */
bool fl_log_caller(char *buf, size_t cap, int level);

#endif
