// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * log_ratelimit - the shim's log is rate-limited: 100k debug events in a
 * second or two give at most a burst of 100 lines plus 20 per second, and
 * the lines dropped are reported ("N log lines suppressed") by the next line
 * written, with the right count.
 *
 * Runs with the shim preloaded. The flood runs in a child (this program
 * again, mode "flood") with FASTLOCAL_LOG=debug, FASTLOCAL_LOG_FILE and a pin
 * dir where nothing is loaded: each explicit enrollment of a connected
 * loopback socket is then a fallback, logged at debug level ("stays on TCP:
 * fastlocal is not loaded"), cheap enough for 100k of them.
 *
 * Mode "closeall" serves logging.sh: a loopback connection, then every fd
 * closed as a daemon does (close_range), then another connection, so that
 * both log their enrollment to a FASTLOCAL_LOG_FILE that must survive.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fltest.h"

#define FL_EVENTS 100000
#define FL_BURST 100
#define FL_PER_SEC 20

/* The child: 100k fallbacks, then (after a pause that refills a token) one
 * more, so that every dropped line is reported. Prints the events it
 * caused and the seconds the flood took. */
static int fl_flood(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	struct timespec pause = { 0, 200 * 1000 * 1000 };
	double t0, t1;
	int c, s, i, bad = 0;

	if (!enroll || fl_t_tcp_pair(AF_INET, &c, &s))
		return 3;
	/* connect() and accept() log nothing: in the default configuration
	 * enrollment waits for the first bytes (FASTLOCAL_ENROLL_AFTER). The
	 * events are the explicit enrollments alone. */
	t0 = fl_t_now();
	for (i = 0; i < FL_EVENTS; i++)
		bad += enroll(c) != -ENOENT;
	t1 = fl_t_now();
	nanosleep(&pause, NULL);
	bad += enroll(c) != -ENOENT;
	printf("events=%d seconds=%.3f bad=%d\n", FL_EVENTS + 1, t1 - t0, bad);
	return 0;
}

static int test_flood(void)
{
	char logp[] = "/tmp/fl-ratelimit-XXXXXX", cmd[512], pin[128], out[256];
	int fd = mkstemp(logp), events = 0, bad = -1, lines = 0, notes = 0, other = 0;
	unsigned long long suppressed = 0, n;
	double secs = 0, t0, bound;
	char line[1024];
	FILE *f;

	FL_T_CHECK(fd >= 0, "mkstemp");
	close(fd);
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/fastlocal-nothing-%d", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "env -u FASTLOCAL_RUN FASTLOCAL_LOG=debug FASTLOCAL_LOG_FILE=%s "
		 "FASTLOCAL_PIN_DIR=%s /proc/%d/exe flood", logp, pin, (int)getpid());
	t0 = fl_t_now();
	FL_T_CHECK(fl_t_sh_out(out, sizeof(out), "%s", cmd) == 0, "the flood child failed: %s", out);
	FL_T_CHECK(sscanf(out, "events=%d seconds=%lf bad=%d", &events, &secs, &bad) == 3 && !bad,
		   "unexpected child output: %s", out);
	printf("  %d events in %.2f s (the whole child: %.2f s)\n", events, secs, fl_t_now() - t0);

	f = fopen(logp, "r");
	FL_T_CHECK(f, "no log file");
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "fastlocal[%*d]: %llu log lines suppressed", &n) == 1) {
			notes++;
			suppressed += n;
			if (notes == 1)
				printf("  first note: %s", line);
		} else if (strstr(line, "stays on TCP: fastlocal is not loaded")) {
			lines++;
		} else {
			other++; /* the "not loaded" line of each retry to open the pins */
		}
	}
	fclose(f);
	unlink(logp);
	printf("  %d fallback lines, %d other lines, %d notes suppressing %llu lines\n", lines,
	       other, notes, suppressed);

	/* The bucket: a burst, then the refill, over the time the events
	 * were made (+0.25 s: the pause and the connect before the loop). */
	bound = FL_BURST + FL_PER_SEC * (secs + 0.25) + 1;
	FL_T_CHECK(lines + other <= bound, "%d lines written, more than the bound %.0f",
		   lines + other, bound);
	FL_T_CHECK(lines + other >= FL_BURST, "only %d lines: the burst was not written",
		   lines + other);
	FL_T_CHECK(notes >= 1, "no 'log lines suppressed' note");
	/* Every event is either written or counted in a note; the last event
	 * came after a pause, so no drop is left unreported. The other lines,
	 * "not loaded" from each attempt to open the pins (the first, then one
	 * a second at most), are log lines too, written or counted: at least
	 * one more than the events. */
	FL_T_CHECK((unsigned long long)(lines + other) + suppressed >= (unsigned long long)events + 1 &&
		   (unsigned long long)(lines + other) + suppressed <=
			   (unsigned long long)events + (unsigned long long)secs + 3,
		   "%d written + %llu suppressed does not account for %d events", lines + other,
		   suppressed, events);
	return 0;
}

/* A pair that enrolls (warmed up past the default threshold), so that each
 * end logs "enrolled". */
static int fl_closeall_pair(void)
{
	int c, s;

	return fl_t_tcp_pair(AF_INET, &c, &s) || fl_t_warmup(c, s) ? -1 : 0;
}

static int fl_closeall(void)
{
	if (fl_closeall_pair())
		return 3;
	if (close_range(3, ~0U, 0))
		return 4;
	return fl_closeall_pair() ? 5 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "flood"))
		return fl_flood();
	if (argc > 1 && !strcmp(argv[1], "closeall"))
		return fl_closeall();
	FL_T_RUN("100k debug events are rate-limited to a burst plus 20 lines/s, drops reported",
		 test_flood);
	return fl_t_exit_status();
}
