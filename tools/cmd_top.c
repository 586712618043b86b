// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmd_top.c - "fastlocal top": the counters and the busiest connections,
 * refreshed in place.
 *
 * IMPORTANT: the screen is drawn with the few VT100 sequences every terminal
 * and multiplexer (tmux, screen) understands: home, erase to end of line,
 * erase below, alternate screen and cursor visibility. No terminfo, no curses.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "cli.h"
#include "cli_opts.h"
#include "../common/clock.h"
#include "conns.h"
#include "counters.h"
#include "fmt.h"
#include "pins.h"

static const char fl_top_help[] =
	"Usage: fastlocal top [--once] [--interval SECONDS] [--pin-dir DIR]\n"
	"\n"
	"A live view of fastlocal: sockets and connections enrolled, bytes and\n"
	"messages per second redirected and over TCP (and why), fallbacks, batching,\n"
	"and the busiest connections of the last interval. Rates are the change of\n"
	"the counters over the interval. Press q (or Ctrl-C) to quit.\n"
	"\n"
	"  --once             print one screen, measured over one interval, and exit\n"
	"  --interval SECONDS refresh period, 0.1 to 3600 (default 1)\n"
	"  --pin-dir DIR      the pin dir (default: $FASTLOCAL_PIN_DIR, else /sys/fs/bpf/fastlocal)\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status: 0, 3 not loaded, 1 the pins cannot be read.\n";

/* One reading of everything top shows. */
struct fl_top_sample {
	double t; /* CLOCK_MONOTONIC seconds */
	struct fl_counters c;
	struct fl_conn *conns;
	size_t n;
};

/* A connection of the current sample and what moved in the interval. */
struct fl_top_row {
	const struct fl_conn *c;
	double ab, ba; /* bytes per second each way */
};

/* Set by the signal handlers, read by the loop. */
static volatile sig_atomic_t fl_top_stop, fl_top_resized;

static void fl_top_on_signal(int sig)
{
	if (sig == SIGWINCH)
		fl_top_resized = 1;
	else
		fl_top_stop = 1;
}

static int fl_top_read(const struct fl_pin_dir *pd, struct fl_top_sample *s, char *err,
		       size_t errlen)
{
	struct fl_pins pins;
	int ret = -1;

	memset(s, 0, sizeof(*s));
	if (fl_pins_open(&pins, pd, err, errlen))
		return -1;
	if (pins.state == FL_PINS_NONE) {
		snprintf(err, errlen, "fastlocal is not loaded in %s", pd->path);
		ret = 1;
	} else if (!fl_counters_read(&pins, &s->c, err, errlen) &&
		   !fl_conns_read(&pins, &s->conns, &s->n, err, errlen)) {
		ret = 0;
	}
	s->t = fl_clock_s(CLOCK_MONOTONIC);
	fl_pins_close(&pins);
	return ret;
}

/* The screen: lines of at most cols characters, at most rows of them. */
struct fl_screen {
	int rows, cols, used;
	bool ansi; /* erase each line's rest (a live terminal) */
};

static void fl_line(struct fl_screen *sc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fl_line(struct fl_screen *sc, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (sc->used >= sc->rows)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > sc->cols)
		buf[sc->cols] = 0; /* no wrapping: it would scroll the frame */
	fputs(buf, stdout);
	fputs(sc->ansi ? "\033[K\n" : "\n", stdout);
	sc->used++;
}

static double fl_rate(__u64 now, __u64 before, double dt)
{
	return now >= before && dt > 0 ? (double)(now - before) / dt : 0;
}

/* The bytes an end has sent, in the earlier sample, if it is the same socket. */
static __u64 fl_prev_sent(const struct fl_top_sample *prev, const struct fl_conn_end *e)
{
	size_t i;

	if (!e->present)
		return 0;
	for (i = 0; i < prev->n; i++) {
		const struct fl_conn_end *p[2] = { &prev->conns[i].a, &prev->conns[i].b };
		int k;

		for (k = 0; k < 2; k++)
			if (p[k]->present && p[k]->ref.owner == e->ref.owner &&
			    !memcmp(&p[k]->key, &e->key, sizeof(e->key)))
				return fl_conn_end_sent(p[k]);
	}
	return 0;
}

static double fl_end_rate(const struct fl_top_sample *prev, const struct fl_conn_end *e, double dt)
{
	if (!e->present)
		return 0;
	return fl_rate(fl_conn_end_sent(e), fl_prev_sent(prev, e), dt);
}

static int fl_row_cmp(const void *x, const void *y)
{
	const struct fl_top_row *a = x, *b = y;
	double ta = a->ab + a->ba, tb = b->ab + b->ba;

	return ta < tb ? 1 : ta > tb ? -1 : 0;
}

/* "  name 12/s, name 3/s" of the counters that moved, or " -". */
static void fl_rates_line(char *buf, size_t len, const __u64 *now, const __u64 *before,
			  const struct fl_counter_name *names, size_t n, double dt, bool bytes)
{
	size_t i, off = 0;
	char v[32];

	buf[0] = 0;
	for (i = 0; i < n && off < len; i++) {
		double r = fl_rate(now[names[i].idx], before[names[i].idx], dt);

		if (r <= 0)
			continue;
		if (bytes)
			fl_fmt_bytes(r, v, sizeof(v));
		else
			snprintf(v, sizeof(v), "%.0f", r);
		off += (size_t)snprintf(buf + off, len - off, " %s %s/s", names[i].key, v);
	}
	if (!buf[0])
		snprintf(buf, len, " -");
}

/* A direction's path in a word: redirected, idle so far, or over TCP. */
static const char *fl_path_word(const struct fl_conn_dir *d)
{
	return d->redirect ? "redir" : !strcmp(d->why_tcp, "idle") ? "idle" : "tcp";
}

static void fl_draw(struct fl_screen *sc, const struct fl_pin_dir *pd, double interval,
		    const struct fl_top_sample *prev, const struct fl_top_sample *cur)
{
	const __u64 *st = cur->c.stat, *ps = prev->c.stat, *us = cur->c.ustat, *pu = prev->c.ustat;
	double dt = cur->t - prev->t, flushes;
	char b1[32], b2[32], line[512], a[64], bb[64], wa[32], wb[32], age[16];
	struct fl_top_row *rows;
	time_t now = time(NULL);
	struct tm tm;
	size_t i;

	localtime_r(&now, &tm);
	strftime(b1, sizeof(b1), "%H:%M:%S", &tm);
	fl_line(sc, "fastlocal top - %s - %s - every %.1fs%s", pd->path, b1, interval,
		sc->ansi ? " - q quits" : "");
	fl_line(sc, "enrolled: %llu sockets, %zu connections (%zu with both ends), %llu slots",
		(unsigned long long)cur->c.enrolled, cur->n, fl_conns_pairs(cur->conns, cur->n),
		(unsigned long long)cur->c.slots_used);
	fl_line(sc, "redirected: %s/s in %.0f msgs/s    over TCP: %s/s in %.0f msgs/s",
		fl_fmt_bytes(fl_rate(st[FL_STAT_REDIRECTED_BYTES], ps[FL_STAT_REDIRECTED_BYTES], dt),
			     b1, sizeof(b1)),
		fl_rate(st[FL_STAT_REDIRECTED_MSGS], ps[FL_STAT_REDIRECTED_MSGS], dt),
		fl_fmt_bytes(fl_rate(st[FL_STAT_PASSED_BYTES], ps[FL_STAT_PASSED_BYTES], dt), b2,
			     sizeof(b2)),
		fl_rate(st[FL_STAT_PASSED_MSGS], ps[FL_STAT_PASSED_MSGS], dt));
	fl_rates_line(line, sizeof(line), st, ps, fl_pass_reasons, FL_NR(fl_pass_reasons), dt, true);
	fl_line(sc, "  TCP why:%s", line);
	fl_rates_line(line, sizeof(line), us, pu, fl_fallback_names, FL_NR(fl_fallback_names), dt,
		      false);
	fl_line(sc, "fallbacks:%s", line);
	flushes = (double)(fl_counters_flushes(&cur->c) - fl_counters_flushes(&prev->c));
	fl_line(sc, "batching: %.0f flushes/s, mean %s from %.1f writes",
		dt > 0 ? flushes / dt : 0,
		fl_fmt_bytes(flushes > 0 ? (double)(us[FL_USTAT_BATCH_BYTES] -
						    pu[FL_USTAT_BATCH_BYTES]) / flushes : 0,
			     b1, sizeof(b1)),
		flushes > 0 ? (double)(us[FL_USTAT_BATCH_WRITES] - pu[FL_USTAT_BATCH_WRITES]) / flushes
			    : 0);
	fl_rates_line(line, sizeof(line), us, pu, fl_flush_names, FL_NR(fl_flush_names), dt, false);
	fl_line(sc, "  flush why:%s", line);
	fl_line(sc, "%s", "");
	fl_line(sc, "%-24s %-20s %-24s %-20s %11s %11s %-11s %s", "A (connected)", "PID/COMM A",
		"B", "PID/COMM B", "A->B/s", "B->A/s", "PATHS", "AGE");
	rows = calloc(cur->n ? cur->n : 1, sizeof(*rows));
	if (!rows)
		return;
	for (i = 0; i < cur->n; i++) {
		rows[i].c = &cur->conns[i];
		rows[i].ab = fl_end_rate(prev, &cur->conns[i].a, dt);
		rows[i].ba = fl_end_rate(prev, &cur->conns[i].b, dt);
	}
	qsort(rows, cur->n, sizeof(*rows), fl_row_cmp);
	for (i = 0; i < cur->n && sc->used < sc->rows; i++) {
		const struct fl_conn *c = rows[i].c;
		struct fl_conn_dir d1, d2;

		fl_conn_addr(&c->a, a, sizeof(a));
		fl_conn_addr(&c->b, bb, sizeof(bb));
		fl_conn_who(&c->a, wa, sizeof(wa));
		fl_conn_who(&c->b, wb, sizeof(wb));
		fl_conn_dir(&c->a, &c->b, &d1);
		fl_conn_dir(&c->b, &c->a, &d2);
		fl_line(sc, "%-24s %-20s %-24s %-20s %11s %11s %5s/%-5s %s", a, wa, bb, wb,
			fl_fmt_bytes(rows[i].ab, b1, sizeof(b1)),
			fl_fmt_bytes(rows[i].ba, b2, sizeof(b2)), fl_path_word(&d1), fl_path_word(&d2),
			fl_fmt_age(fl_conn_age(c, fl_now_unix()), age, sizeof(age)));
	}
	if (!cur->n)
		fl_line(sc, "(no connections enrolled)");
	free(rows);
}

static void fl_screen_size(struct fl_screen *sc, bool live)
{
	struct winsize ws;

	sc->rows = 10000;
	sc->cols = 1000;
	if (live && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		sc->rows = ws.ws_row - 1; /* the last line stays free: no scrolling */
		sc->cols = ws.ws_col;
	}
}

/* Live mode: the terminal in no-echo, one-key mode on the alternate screen,
 * restored on every way out. */
static struct termios fl_top_saved;
static bool fl_top_raw;

static void fl_term_enter(void)
{
	struct termios t;

	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &fl_top_saved) == 0) {
		t = fl_top_saved;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		fl_top_raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
	}
	fputs("\033[?1049h\033[?25l", stdout);
}

static void fl_term_leave(void)
{
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	if (fl_top_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &fl_top_saved);
}

/* Sleeps for the interval, or less if q is pressed or a signal comes. */
static void fl_top_wait(double interval)
{
	double end = fl_clock_s(CLOCK_MONOTONIC) + interval, left;
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char ch;

	while (!fl_top_stop && !fl_top_resized && (left = end - fl_clock_s(CLOCK_MONOTONIC)) > 0) {
		int r = poll(&p, fl_top_raw ? 1 : 0, (int)(left * 1000) + 1);

		if (r > 0 && read(STDIN_FILENO, &ch, 1) == 1 && (ch == 'q' || ch == 'Q'))
			fl_top_stop = 1;
		else if (r > 0 && (p.revents & (POLLHUP | POLLERR)))
			p.fd = -1; /* stdin went away: keep running on the timer */
	}
}

int cmd_top(int argc, char **argv)
{
	struct fl_top_sample prev, cur;
	struct sigaction sa = { .sa_handler = fl_top_on_signal };
	struct fl_cli_opts o;
	struct fl_screen sc;
	char err[512];
	bool live;
	int ret = fl_cli_parse(argc, argv, fl_top_help, FL_OPT_ONCE | FL_OPT_INTERVAL, &o);

	if (ret >= 0)
		return ret;
	ret = fl_top_read(&o.pd, &prev, err, sizeof(err));
	if (ret) {
		fl_err("top", "%s", err);
		return ret > 0 ? FL_EXIT_NOT_LOADED : FL_EXIT_FAIL;
	}
	live = !o.once && isatty(STDOUT_FILENO);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGWINCH, &sa, NULL);
	if (live)
		fl_term_enter();
	for (;;) {
		fl_top_wait(o.interval);
		if (fl_top_stop)
			break;
		fl_top_resized = 0;
		ret = fl_top_read(&o.pd, &cur, err, sizeof(err));
		if (ret)
			break;
		fl_screen_size(&sc, live);
		sc.used = 0;
		sc.ansi = live;
		if (live)
			fputs("\033[H", stdout);
		fl_draw(&sc, &o.pd, o.interval, &prev, &cur);
		if (live)
			fputs("\033[J", stdout);
		else if (!o.once)
			fputs("\n", stdout);
		fflush(stdout);
		free(prev.conns);
		prev = cur;
		if (o.once)
			break;
	}
	free(prev.conns);
	if (live)
		fl_term_leave();
	if (ret) {
		fl_err("top", "%s", err);
		return ret > 0 ? FL_EXIT_NOT_LOADED : FL_EXIT_FAIL;
	}
	return FL_EXIT_OK;
}
