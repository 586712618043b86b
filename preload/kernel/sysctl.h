/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* sysctl.h - reading a number out of /proc/sys. */
#ifndef FL_SYSCTL_H
#define FL_SYSCTL_H

#include <stdint.h>

/* The largest of the numbers in a /proc/sys file (net.ipv4.tcp_rmem has
 * three: min, default, max); 0 if it cannot be read or holds none. Opens
 * and reads it once per call: for first use, never for the hot path. */
uint64_t fl_sysctl_max(const char *path);

#endif
