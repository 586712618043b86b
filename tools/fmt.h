/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fmt.h - numbers for people: sizes, rates and durations. */
#ifndef FL_FMT_H
#define FL_FMT_H

#include <stddef.h>

/* "512 B", "1.5 KiB", "3.2 GiB" */
const char *fl_fmt_bytes(double v, char *buf, size_t len);
/* "12s", "3m05s", "2h01m", "4d03h" */
const char *fl_fmt_age(double seconds, char *buf, size_t len);
/* Wall-clock seconds since the epoch, with a fraction. */
double fl_now_unix(void);

#endif
