// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fmt.c - numbers for people: sizes, rates and durations. */
#include "fmt.h"
#include "../common/clock.h"

#include <stdio.h>
#include <time.h>

const char *fl_fmt_bytes(double v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", v);
	else
		snprintf(buf, len, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, unit[u]);
	return buf;
}

const char *fl_fmt_age(double s, char *buf, size_t len)
{
	unsigned long t = s > 0 ? (unsigned long)s : 0;

	if (t < 60)
		snprintf(buf, len, "%lus", t);
	else if (t < 3600)
		snprintf(buf, len, "%lum%02lus", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, len, "%luh%02lum", t / 3600, t % 3600 / 60);
	else
		snprintf(buf, len, "%lud%02luh", t / 86400, t % 86400 / 3600);
	return buf;
}

double fl_now_unix(void)
{
	return fl_clock_s(CLOCK_REALTIME);
}
