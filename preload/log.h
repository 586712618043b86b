/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* log.h - "fastlocal[pid]: ..." lines on stderr, by level. */
#ifndef FL_LOG_H
#define FL_LOG_H

#include "config.h"

void fl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define fl_debug(...) fl_log(FL_LOG_DEBUG, __VA_ARGS__)

#endif
