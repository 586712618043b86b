// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sc_events.c - readiness and process events: poll, select and epoll (level
 * and edge) for reading and writing, RDHUP and HUP, accept4 and
 * non-blocking accept and connect, fork and exec with a shared socket,
 * signals interrupting blocking calls, dribbled writes (Nagle, NODELAY,
 * MSG_MORE, TCP_CORK), many connections in one epoll loop, and a close
 * while the peer waits.
 *
 * Every scenario prints only what TCP guarantees: results, errno names,
 * readiness bits, byte verdicts, EOF, and timing classes ("within 1 s",
 * "nothing within 50 ms"); never how many bytes one read returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "conformance.h"

extern char **environ;

/* ================================================================ helpers */

#define EV_FILL_CAP (256ull << 20) /* "never EAGAIN" beyond this (docs/kernel.md#no-backpressure) */
/* The blocking send to a full peer in ev-signal-timeo: twice tcp_wmem's
 * largest send buffer. A peer "full" to non-blocking writes is not full
 * for good: room for a few hundred KiB appears once, 40 ms (TCP) or 200 ms
 * (a redirected pair on TCP) after the last EAGAIN
 * (docs/kernel.md#room-after-eagain); no such room takes this whole, so
 * the signal always finds the send still waiting. */
#define EV_BIG_SEND (8u << 20)

/* A setup failure (the scenario cannot run): says where on stderr. */
static int ev_setup_fail(int line)
{
	fprintf(stderr, "sc_events.c:%d: setup failed: %s\n", line, fl_errname(errno));
	return -1;
}

static void ev_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

static void ev_rcvtimeo(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static int ev_ms_left(double deadline)
{
	double left = deadline - fl_sc_now();

	return left <= 0 ? 0 : (int)(left * 1000.0) + 1;
}

static int ev_epoll(int fd, unsigned events)
{
	struct epoll_event e = { .events = events, .data.fd = fd };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e)) {
		close(ep);
		return -1;
	}
	return ep;
}

/* Readiness bits by name ("IN|RDHUP"), "none" for 0, "error" for -1. The
 * epoll bits have the same values as the poll ones. */
static const char *ev_bits(int v)
{
	static const struct { int bit; const char *name; } b[] = {
		{ POLLIN, "IN" }, { POLLPRI, "PRI" }, { POLLOUT, "OUT" },
		{ POLLRDNORM, "RDNORM" }, { POLLRDBAND, "RDBAND" }, { POLLWRNORM, "WRNORM" },
		{ POLLWRBAND, "WRBAND" }, { POLLERR, "ERR" }, { POLLHUP, "HUP" },
		{ POLLRDHUP, "RDHUP" }, { POLLNVAL, "NVAL" },
	};
	static __thread char buf[4][96];
	static __thread int k;
	char *o = buf[k++ & 3];
	size_t i, len = 0;

	if (v < 0)
		return "error";
	if (!v)
		return "none";
	o[0] = 0;
	for (i = 0; i < sizeof(b) / sizeof(b[0]); i++)
		if (v & b[i].bit) {
			len += (size_t)snprintf(o + len, 96 - len, "%s%s", len ? "|" : "", b[i].name);
			v &= ~b[i].bit;
		}
	if (v)
		snprintf(o + len, 96 - len, "%s0x%x", len ? "|" : "", (unsigned)v);
	return o;
}

/* "getsockopt(SO_ERROR) -> 0, error 0" (the call first, then its value). */
static const char *ev_so_error(int fd)
{
	static __thread char buf[64];
	socklen_t len = sizeof(int);
	int err = -1, r = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);

	snprintf(buf, sizeof(buf), "SO_ERROR -> %s, error %s", fl_ret(r), err ? fl_errname(err) : "0");
	return buf;
}

/* ---- waiting for readiness with one mechanism */
enum ev_how { EV_POLL, EV_SELECT, EV_EPOLL_LT, EV_EPOLL_ET };

static const char *ev_how_name(enum ev_how how)
{
	return how == EV_POLL ? "poll" : how == EV_SELECT ? "select" : "epoll_wait";
}

/* Waits up to ms for events (POLLIN, POLLOUT, ...) on fd: poll and select
 * look at fd, epoll at ep (fd registered there by the caller). Returns the
 * bits reported (select: IN and OUT), 0 on timeout, -1 on error. */
static int ev_wait(enum ev_how how, int ep, int fd, int events, int ms)
{
	struct epoll_event e;
	struct pollfd p = { .fd = fd, .events = (short)events };
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	fd_set r, w;
	int n, bits = 0;

	switch (how) {
	case EV_POLL:
		n = poll(&p, 1, ms);
		return n < 0 ? -1 : n ? p.revents : 0;
	case EV_SELECT:
		FD_ZERO(&r);
		FD_ZERO(&w);
		if (events & POLLIN)
			FD_SET(fd, &r);
		if (events & POLLOUT)
			FD_SET(fd, &w);
		n = select(fd + 1, &r, &w, NULL, &tv);
		if (n < 0)
			return -1;
		if (FD_ISSET(fd, &r))
			bits |= POLLIN;
		if (FD_ISSET(fd, &w))
			bits |= POLLOUT;
		return bits;
	default:
		n = epoll_wait(ep, &e, 1, ms);
		return n < 0 ? -1 : n ? (int)e.events : 0;
	}
}

/* ---- reading with a bound */
struct ev_rd {
	uint64_t got;
	int64_t bad; /* offset of the first wrong byte, or -1 */
	int eof;     /* read returned 0 */
	int err;     /* a read error, or ETIMEDOUT when the time ran out */
};

/*
 * Reads n pattern bytes (or, with until_eof, everything up to EOF) from
 * offset off within ms milliseconds, waiting in poll; never more than n
 * when !until_eof. Works on blocking and non-blocking fds.
 */
static struct ev_rd ev_read(int fd, uint64_t off, uint64_t n, uint64_t seed, int ms, int until_eof)
{
	/* On the heap: large static TLS would shrink every thread's stack
	 * (the shim's flusher thread among them). */
	uint8_t *buf = malloc(65536), *want = malloc(65536);
	struct ev_rd r = { 0, -1, 0, 0 };
	double deadline = fl_sc_now() + ms / 1000.0;

	if (!buf || !want) {
		free(buf);
		free(want);
		r.err = ENOMEM;
		return r;
	}

	while (until_eof || r.got < n) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		size_t k = 65536, i;
		ssize_t x;
		int pr;

		if (!until_eof && n - r.got < k)
			k = (size_t)(n - r.got);
		pr = poll(&p, 1, ev_ms_left(deadline));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			r.err = pr < 0 ? errno : ETIMEDOUT;
			break;
		}
		x = recv(fd, buf, k, MSG_DONTWAIT);
		if (x < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (!ev_ms_left(deadline)) {
				r.err = ETIMEDOUT;
				break;
			}
			continue;
		}
		if (x < 0) {
			r.err = errno;
			break;
		}
		if (x == 0) {
			r.eof = 1;
			break;
		}
		fl_sc_fill(want, off + r.got, (size_t)x, seed);
		for (i = 0; i < (size_t)x && r.bad < 0; i++)
			if (buf[i] != want[i])
				r.bad = (int64_t)(off + r.got + i);
		r.got += (uint64_t)x;
	}
	free(buf);
	free(want);
	return r;
}

/* "100 bytes in order[, then EOF]", or what went wrong. */
static const char *ev_verdict(const struct ev_rd *r, uint64_t want, int want_eof)
{
	static __thread char buf[4][160];
	static __thread int k;
	char *o = buf[k++ & 3];

	if (r->got == want && r->bad < 0 && (!want_eof || r->eof))
		snprintf(o, 160, "%llu bytes in order%s", (unsigned long long)want,
			 want_eof ? ", then EOF" : "");
	else
		snprintf(o, 160, "%llu of %llu bytes, first wrong byte %lld, then %s",
			 (unsigned long long)r->got, (unsigned long long)want, (long long)r->bad,
			 r->eof ? "EOF" : r->err == ETIMEDOUT ? "nothing for too long" :
			 r->err ? fl_errname(r->err) : "no EOF");
	return o;
}

/* Writes n pattern bytes from off on a (possibly non-blocking) fd within ms. */
static int ev_write(int fd, uint64_t off, size_t n, uint64_t seed, int ms)
{
	uint8_t *buf = malloc(65536);
	double deadline = fl_sc_now() + ms / 1000.0;
	int ret = 0;

	if (!buf)
		return -1;
	while (n) {
		size_t k = n < 65536 ? n : 65536;
		ssize_t w;

		fl_sc_fill(buf, off, k, seed);
		w = send(fd, buf, k, MSG_NOSIGNAL);
		if (w < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (poll(&p, 1, ev_ms_left(deadline)) <= 0 && !ev_ms_left(deadline)) {
				ret = -1;
				break;
			}
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = -1;
			break;
		}
		off += (uint64_t)w;
		n -= (size_t)w;
	}
	free(buf);
	return ret;
}

/* Non-blocking writes of chunk pattern bytes from *off until one fails.
 * Returns 0 when it failed with EAGAIN, 1 when cap bytes went without
 * EAGAIN, -1 on another error (errno). */
static int ev_fill(int fd, uint64_t *off, uint64_t seed, size_t chunk, uint64_t cap)
{
	uint8_t *buf = malloc(65536);
	uint64_t start = *off;
	int ret = 1, saved;

	if (!buf)
		return -1;
	if (chunk > 65536)
		chunk = 65536;
	while (*off - start < cap) {
		ssize_t w;

		fl_sc_fill(buf, *off, chunk, seed);
		w = send(fd, buf, chunk, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			ret = errno == EAGAIN ? 0 : -1;
			break;
		}
		*off += (uint64_t)w;
	}
	saved = errno;
	free(buf);
	errno = saved;
	return ret;
}

/* ev_fill until a pass 20 ms after the last EAGAIN takes nothing more: the
 * stream is full in steady state (in-flight segments acknowledged), so
 * what follows cannot be explained by late acknowledgements. */
static int ev_fill_settled(int fd, uint64_t *off, uint64_t seed, size_t chunk)
{
	uint64_t before;
	int k, pass;

	k = ev_fill(fd, off, seed, chunk, EV_FILL_CAP);
	for (pass = 0; k == 0 && pass < 50; pass++) {
		fl_sc_sleep_ms(20);
		before = *off;
		k = ev_fill(fd, off, seed, chunk, EV_FILL_CAP);
		if (k == 0 && *off == before)
			break;
	}
	return k;
}

static const char *ev_fill_result(int k)
{
	return k == 0 ? "-1 EAGAIN" : k == 1 ? "never EAGAIN within the cap" : fl_errname(errno);
}

/* ---- a reader that drains a socket until EOF, in a thread */
struct ev_drain {
	int fd;
	uint64_t seed;
	int started;
	pthread_t th;
	struct ev_rd r;
};

static void *ev_drain_main(void *arg)
{
	struct ev_drain *d = arg;

	d->r = ev_read(d->fd, 0, 0, d->seed, 8000, 1);
	return NULL;
}

static void ev_drain_start(struct ev_drain *d)
{
	if (!__atomic_exchange_n(&d->started, 1, __ATOMIC_ACQ_REL))
		pthread_create(&d->th, NULL, ev_drain_main, d);
}

static void ev_drain_join(struct ev_drain *d)
{
	if (__atomic_load_n(&d->started, __ATOMIC_ACQUIRE))
		pthread_join(d->th, NULL);
}

/* ---- a script of timed actions on another thread */
enum ev_op {
	EV_W = 1,   /* write len pattern bytes from off on fd */
	EV_SHUTWR,  /* shutdown(fd, SHUT_WR) */
	EV_CLOSE,   /* close(fd) */
	EV_KILL,    /* SIGALRM to the thread that started the script, once it
		     * sleeps in a system call (ev_wait_asleep) */
	EV_CONNECT, /* out = a new connection to port; then len bytes from off on it */
	EV_ACCEPT,  /* accepted = accept(fd) */
	EV_DRAIN,   /* start the drain (a thread of its own) */
};

struct ev_step {
	int ms; /* wait this long first */
	int op, fd;
	uint64_t off;
	size_t len;
};

struct ev_script {
	struct ev_step st[32];
	int n;
	uint64_t seed;
	int family, port;
	int out, accepted;
	struct ev_drain *drain;
	pthread_t th, target;
	pid_t target_tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop, joined;
};

static void ev_script_init(struct ev_script *sc, uint64_t seed)
{
	pthread_condattr_t ca;

	memset(sc, 0, sizeof(*sc));
	sc->seed = seed;
	sc->out = sc->accepted = -1;
	pthread_mutex_init(&sc->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sc->cv, &ca);
	pthread_condattr_destroy(&ca);
}

static void ev_add(struct ev_script *sc, int ms, int op, int fd, uint64_t off, size_t len)
{
	if (sc->n < (int)(sizeof(sc->st) / sizeof(sc->st[0])))
		sc->st[sc->n++] = (struct ev_step){ ms, op, fd, off, len };
}

/*
 * Waits (up to 2 s) until thread tid sleeps in a system call: the kernel's
 * /proc/self/task/TID/syscall then starts with its number, not "running".
 * IMPORTANT: a signal meant to interrupt a blocking call must find the
 * call begun; sent on a timer alone, a machine that stalls the target
 * past the timer delivers it before the call, and plain TCP and the shim
 * then differ by when each run was stalled, not by what they do.
 */
static void ev_wait_asleep(pid_t tid)
{
	char path[64], line[32];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	for (i = 0; i < 2000; i++) {
		f = fopen(path, "r");
		if (!f)
			return;
		line[0] = 0;
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
		if (line[0] >= '0' && line[0] <= '9')
			return;
		usleep(1000);
	}
}

/* Sleeps ms unless stopped (a condition variable: no call the shim sees). */
static int ev_script_sleep(struct ev_script *sc, int ms)
{
	struct timespec ts;
	int stop;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&sc->mu);
	while (!sc->stop && pthread_cond_timedwait(&sc->cv, &sc->mu, &ts) != ETIMEDOUT)
		;
	stop = sc->stop;
	pthread_mutex_unlock(&sc->mu);
	return stop;
}

static void *ev_script_main(void *arg)
{
	struct ev_script *sc = arg;
	sigset_t all;
	int i;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (i = 0; i < sc->n; i++) {
		struct ev_step *s = &sc->st[i];

		if (ev_script_sleep(sc, s->ms))
			break;
		switch (s->op) {
		case EV_W:
			fl_sc_write_pattern(s->fd, s->off, s->len, sc->seed);
			break;
		case EV_SHUTWR:
			shutdown(s->fd, SHUT_WR);
			break;
		case EV_CLOSE:
			close(s->fd);
			break;
		case EV_KILL:
			ev_wait_asleep(sc->target_tid);
			pthread_kill(sc->target, SIGALRM);
			break;
		case EV_CONNECT:
			sc->out = fl_sc_connect(sc->family, sc->port);
			if (sc->out >= 0 && s->len)
				fl_sc_write_pattern(sc->out, s->off, s->len, sc->seed);
			break;
		case EV_ACCEPT:
			sc->accepted = accept(s->fd, NULL, NULL);
			break;
		case EV_DRAIN:
			if (sc->drain)
				ev_drain_start(sc->drain);
			break;
		}
	}
	return NULL;
}

static void ev_script_start(struct ev_script *sc)
{
	sc->target = pthread_self();
	sc->target_tid = (pid_t)syscall(SYS_gettid);
	pthread_create(&sc->th, NULL, ev_script_main, sc);
}

/* Skips the steps not begun yet (safety steps), then joins. */
static void ev_script_stop(struct ev_script *sc)
{
	pthread_mutex_lock(&sc->mu);
	sc->stop = 1;
	pthread_cond_broadcast(&sc->cv);
	pthread_mutex_unlock(&sc->mu);
	if (!sc->joined++)
		pthread_join(sc->th, NULL);
}

static void ev_script_join(struct ev_script *sc)
{
	if (!sc->joined++)
		pthread_join(sc->th, NULL);
}

/* ---- signals */
static volatile sig_atomic_t ev_sigs;

static void ev_on_alarm(int sig)
{
	(void)sig;
	ev_sigs++;
}

static void ev_handler(int restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ev_on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	ev_sigs = 0;
}

/* A listener with the given backlog; *port gets its port. */
static int ev_listen(int family, int backlog, int *port)
{
	int l = fl_sc_listen(family, port);

	if (l >= 0 && listen(l, backlog)) {
		close(l);
		return -1;
	}
	return l;
}

/* A request/response on a connected pair: n bytes each way, verified. */
static void ev_exchange(const char *who, int c, int s, size_t n, uint64_t seed)
{
	struct ev_rd r;

	if (ev_write(c, 0, n, seed, 2000))
		fl_trace("%s: request write failed", who);
	r = ev_read(s, 0, n, seed, 2000, 0);
	fl_trace("%s: server read %s", who, ev_verdict(&r, n, 0));
	if (ev_write(s, 0, n, seed + 1, 2000))
		fl_trace("%s: response write failed", who);
	r = ev_read(c, 0, n, seed + 1, 2000, 0);
	fl_trace("%s: client read %s", who, ev_verdict(&r, n, 0));
}

/* ======================================================= read readiness */

/*
 * Non-blocking reader: nothing there (EAGAIN, not ready); data sent after
 * the wait started (ready); data there before the wait (ready; with level
 * triggering still ready while some is unread, not ready once all is read);
 * the peer's FIN (ready, read gives 0).
 */
static int ev_read_ready(int family, enum ev_how how)
{
	struct ev_script sc;
	struct ev_rd r;
	int c, s, ep = -1, lt = how != EV_EPOLL_ET;
	const char *w = ev_how_name(how);
	char b[1];

	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	ev_nonblock(s, 1);
	if (how == EV_EPOLL_LT || how == EV_EPOLL_ET) {
		ep = ev_epoll(s, EPOLLIN | (lt ? 0 : EPOLLET));
		if (ep < 0)
			return ev_setup_fail(__LINE__);
	}
	fl_trace("nothing sent: recv -> %s", fl_ret(recv(s, b, 1, 0)));
	fl_trace("nothing sent: %s(0) -> %s", w, ev_bits(ev_wait(how, ep, s, POLLIN, 0)));

	ev_script_init(&sc, 11);
	ev_add(&sc, 50, EV_W, c, 0, 100);
	ev_script_start(&sc);
	fl_trace("100 bytes sent 50 ms into a %s(2 s): -> %s", w,
		 ev_bits(ev_wait(how, ep, s, POLLIN, 2000)));
	ev_script_join(&sc);
	r = ev_read(s, 0, 100, 11, 1000, 0);
	fl_trace("read %s", ev_verdict(&r, 100, 0));
	fl_trace("all read: recv -> %s", fl_ret(recv(s, b, 1, 0)));
	if (lt)
		fl_trace("all read: %s(0) -> %s", w, ev_bits(ev_wait(how, ep, s, POLLIN, 0)));

	if (fl_sc_write_pattern(c, 100, 100, 11))
		return ev_setup_fail(__LINE__);
	fl_sc_sleep_ms(50);
	fl_trace("100 bytes sent before the wait: %s(0) -> %s", w,
		 ev_bits(ev_wait(how, ep, s, POLLIN, 0)));
	r = ev_read(s, 100, 40, 11, 1000, 0);
	fl_trace("read %s", ev_verdict(&r, 40, 0));
	if (lt)
		fl_trace("60 bytes unread: %s(0) -> %s", w, ev_bits(ev_wait(how, ep, s, POLLIN, 0)));
	r = ev_read(s, 140, 60, 11, 1000, 0);
	fl_trace("read %s", ev_verdict(&r, 60, 0));
	fl_trace("all read: recv -> %s", fl_ret(recv(s, b, 1, 0)));
	if (lt)
		fl_trace("all read: %s(0) -> %s", w, ev_bits(ev_wait(how, ep, s, POLLIN, 0)));

	shutdown(c, SHUT_WR);
	fl_trace("peer shut down writing: %s(1 s) -> %s", w, ev_bits(ev_wait(how, ep, s, POLLIN, 1000)));
	fl_trace("recv -> %s", fl_ret(recv(s, b, 1, 0)));
	close(c);
	close(s);
	if (ep >= 0)
		close(ep);
	return 0;
}

static int sc_poll_read(int family) { return ev_read_ready(family, EV_POLL); }
static int sc_select_read(int family) { return ev_read_ready(family, EV_SELECT); }
static int sc_epoll_lt_read(int family) { return ev_read_ready(family, EV_EPOLL_LT); }
static int sc_epoll_et_read(int family) { return ev_read_ready(family, EV_EPOLL_ET); }
FL_SCENARIO("ev-poll-read", FL_SC_REDIRECTS, sc_poll_read)
FL_SCENARIO("ev-select-read", FL_SC_REDIRECTS, sc_select_read)
FL_SCENARIO("ev-epoll-lt-read", FL_SC_REDIRECTS, sc_epoll_lt_read)
FL_SCENARIO("ev-epoll-et-read", FL_SC_REDIRECTS, sc_epoll_et_read)

/* ====================================================== write readiness */


/*
 * Non-blocking writer: writable when fresh; fill until EAGAIN
 * (docs/kernel.md#no-backpressure: the raw redirect never says EAGAIN);
 * then not writable; the peer drains; the writer is told it can write,
 * within 2 s; every byte arrives in order.
 */
static int ev_write_ready(int family, enum ev_how how)
{
	struct ev_drain d = { 0 };
	uint64_t off = 0;
	int c, s, ep = -1, k, lt = how != EV_EPOLL_ET;
	const char *w = ev_how_name(how);

	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	ev_nonblock(c, 1);
	if (how == EV_EPOLL_LT || how == EV_EPOLL_ET) {
		ep = ev_epoll(c, EPOLLOUT | (lt ? 0 : EPOLLET));
		if (ep < 0)
			return ev_setup_fail(__LINE__);
	}
	fl_trace("fresh connection: %s(0) -> %s", w, ev_bits(ev_wait(how, ep, c, POLLOUT, 0)));
	k = ev_fill_settled(c, &off, 12, 65536);
	fl_trace("64 KiB non-blocking writes, reader not reading: -> %s", ev_fill_result(k));
	if (lt)
		fl_trace("right after EAGAIN: %s(0) -> %s", w, ev_bits(ev_wait(how, ep, c, POLLOUT, 0)));
	d.fd = s;
	d.seed = 12;
	ev_drain_start(&d);
	fl_trace("the reader drains: %s(2 s) -> %s", w, ev_bits(ev_wait(how, ep, c, POLLOUT, 2000)));
	k = ev_write(c, off, 1000, 12, 2000);
	off += 1000;
	fl_trace("1000 more bytes: %s", k ? "failed" : "written");
	shutdown(c, SHUT_WR);
	ev_drain_join(&d);
	if (d.r.got == off && d.r.bad < 0 && d.r.eof)
		fl_trace("reader: every byte written, in order, then EOF");
	else
		fl_trace("reader: %s", ev_verdict(&d.r, off, 1));
	close(c);
	close(s);
	if (ep >= 0)
		close(ep);
	return 0;
}

static int sc_poll_write(int family) { return ev_write_ready(family, EV_POLL); }
static int sc_select_write(int family) { return ev_write_ready(family, EV_SELECT); }
static int sc_epoll_lt_write(int family) { return ev_write_ready(family, EV_EPOLL_LT); }
static int sc_epoll_et_write(int family) { return ev_write_ready(family, EV_EPOLL_ET); }
FL_SCENARIO("ev-poll-write", FL_SC_REDIRECTS, sc_poll_write)
FL_SCENARIO("ev-select-write", FL_SC_REDIRECTS, sc_select_write)
FL_SCENARIO("ev-epoll-lt-write", FL_SC_REDIRECTS, sc_epoll_lt_write)
FL_SCENARIO("ev-epoll-et-write", FL_SC_REDIRECTS, sc_epoll_et_write)

/* ============================================================ RDHUP, HUP */

/* The peer shuts down writing or closes, with and without 10 bytes the
 * reader has not read yet: IN|RDHUP, the bytes, EOF, and still IN|RDHUP. */
static int ev_rdhup(int family, int use_epoll)
{
	static const char *what[4] = {
		"peer shutdown(SHUT_WR), nothing unread",
		"peer shutdown(SHUT_WR) after 10 bytes",
		"peer close(), nothing unread",
		"peer close() after 10 bytes",
	};
	enum ev_how how = use_epoll ? EV_EPOLL_LT : EV_POLL;
	const char *w = ev_how_name(how);
	struct ev_rd r;
	int k;

	for (k = 0; k < 4; k++) {
		int c, s, ep = -1, bits;
		uint64_t n = (k & 1) ? 10 : 0;

		if (fl_sc_pair(family, &c, &s))
			return ev_setup_fail(__LINE__);
		ev_nonblock(s, 1);
		if (use_epoll && (ep = ev_epoll(s, EPOLLIN | EPOLLRDHUP)) < 0)
			return ev_setup_fail(__LINE__);
		if (n && fl_sc_write_pattern(c, 0, n, 30 + (uint64_t)k))
			return ev_setup_fail(__LINE__);
		if (k & 2)
			close(c);
		else
			shutdown(c, SHUT_WR);
		fl_sc_sleep_ms(20);
		bits = ev_wait(how, ep, s, POLLIN | POLLRDHUP, 1000);
		fl_trace("%s: %s -> %s", what[k], w, ev_bits(bits));
		r = ev_read(s, 0, n, 30 + (uint64_t)k, 1000, 1);
		fl_trace("  read %s", ev_verdict(&r, n, 1));
		fl_trace("  after EOF: %s(0) -> %s", w,
			 ev_bits(ev_wait(how, ep, s, POLLIN | POLLRDHUP, 0)));
		if (!(k & 2))
			close(c);
		close(s);
		if (ep >= 0)
			close(ep);
	}
	return 0;
}

static int sc_epoll_rdhup(int family) { return ev_rdhup(family, 1); }
static int sc_poll_rdhup(int family) { return ev_rdhup(family, 0); }
FL_SCENARIO("ev-epoll-rdhup", FL_SC_REDIRECTS, sc_epoll_rdhup)
FL_SCENARIO("ev-poll-rdhup", FL_SC_REDIRECTS, sc_poll_rdhup)

static int ev_poll_bits(int fd)
{
	return ev_wait(EV_POLL, -1, fd, POLLIN | POLLOUT | POLLRDHUP, 0);
}

static int ev_epoll_bits(int fd)
{
	int ep = ev_epoll(fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP), bits;

	bits = ev_wait(EV_EPOLL_LT, ep, fd, 0, 0);
	if (ep >= 0)
		close(ep);
	return bits;
}

/* POLLHUP once both directions are shut, however they got there. */
static int sc_pollhup(int family)
{
	struct ev_rd r;
	int c, s;

	/* Both ends shut down writing, after an exchange. */
	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	ev_exchange("both shut", c, s, 100, 40);
	shutdown(c, SHUT_WR);
	shutdown(s, SHUT_WR);
	fl_sc_sleep_ms(20);
	fl_trace("both shut down writing: server poll -> %s, epoll -> %s", ev_bits(ev_poll_bits(s)),
		 ev_bits(ev_epoll_bits(s)));
	fl_trace("both shut down writing: client poll -> %s, epoll -> %s", ev_bits(ev_poll_bits(c)),
		 ev_bits(ev_epoll_bits(c)));
	r = ev_read(s, 0, 0, 0, 1000, 1);
	fl_trace("server read %s", ev_verdict(&r, 0, 1));
	close(c);
	close(s);

	/* One end shuts down both directions. */
	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	ev_exchange("shut rdwr", c, s, 100, 42);
	shutdown(s, SHUT_RDWR);
	fl_sc_sleep_ms(20);
	fl_trace("server shutdown(SHUT_RDWR): server poll -> %s, epoll -> %s",
		 ev_bits(ev_poll_bits(s)), ev_bits(ev_epoll_bits(s)));
	fl_trace("server shutdown(SHUT_RDWR): client poll -> %s, epoll -> %s",
		 ev_bits(ev_poll_bits(c)), ev_bits(ev_epoll_bits(c)));
	r = ev_read(c, 0, 0, 0, 1000, 1);
	fl_trace("client read %s", ev_verdict(&r, 0, 1));
	close(c);
	close(s);

	/* The peer closes; then the server shuts down writing. */
	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	ev_exchange("peer closed", c, s, 100, 44);
	close(c);
	fl_sc_sleep_ms(20);
	fl_trace("client closed: server poll -> %s, epoll -> %s", ev_bits(ev_poll_bits(s)),
		 ev_bits(ev_epoll_bits(s)));
	shutdown(s, SHUT_WR);
	fl_sc_sleep_ms(20);
	fl_trace("and server shut down writing: server poll -> %s, epoll -> %s",
		 ev_bits(ev_poll_bits(s)), ev_bits(ev_epoll_bits(s)));
	r = ev_read(s, 0, 0, 0, 1000, 1);
	fl_trace("server read %s", ev_verdict(&r, 0, 1));
	close(s);
	return 0;
}
FL_SCENARIO("ev-pollhup-both-shut", FL_SC_REDIRECTS, sc_pollhup)

/* ====================================================== accept, connect */

static void ev_fd_flags(const char *what, int fd)
{
	int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD);

	fl_trace("%s: O_NONBLOCK %s, FD_CLOEXEC %s", what,
		 fl < 0 ? "error" : (fl & O_NONBLOCK) ? "set" : "clear",
		 fdf < 0 ? "error" : (fdf & FD_CLOEXEC) ? "set" : "clear");
}

/* accept4 flags, read back with fcntl; the accepted socket works. */
static int sc_accept4_flags(int family)
{
	static const struct { int flags; const char *name; } f[] = {
		{ SOCK_NONBLOCK | SOCK_CLOEXEC, "accept4(SOCK_NONBLOCK|SOCK_CLOEXEC)" },
		{ 0, "accept4(0)" },
		{ SOCK_CLOEXEC, "accept4(SOCK_CLOEXEC)" },
		{ SOCK_NONBLOCK, "accept4(SOCK_NONBLOCK)" },
	};
	int port, l = fl_sc_listen(family, &port), i;
	char b[1];

	if (l < 0)
		return ev_setup_fail(__LINE__);
	for (i = 0; i < 4; i++) {
		int c = fl_sc_connect(family, port), s;

		if (c < 0)
			return ev_setup_fail(__LINE__);
		s = accept4(l, NULL, NULL, f[i].flags);
		fl_trace("%s -> %s", f[i].name, s >= 0 ? "a socket" : fl_ret(s));
		if (s < 0)
			return ev_setup_fail(__LINE__);
		ev_fd_flags(f[i].name, s);
		if (f[i].flags & SOCK_NONBLOCK)
			fl_trace("nothing sent: recv -> %s", fl_ret(recv(s, b, 1, 0)));
		if (fl_sc_warmup(c, s))
			return ev_setup_fail(__LINE__);
		ev_exchange(f[i].name, c, s, 1000, 50 + (uint64_t)i * 2);
		close(c);
		close(s);
	}
	close(l);
	return 0;
}
FL_SCENARIO("ev-accept4-flags", FL_SC_REDIRECTS, sc_accept4_flags)

/* accept on a non-blocking listener with nothing pending: EAGAIN, not
 * readable; a connection comes: readable, accepted, works. */
static int sc_accept_nonblock(int family)
{
	int port, l = fl_sc_listen(family, &port), c, s;

	if (l < 0)
		return ev_setup_fail(__LINE__);
	ev_nonblock(l, 1);
	fl_trace("nothing pending: accept -> %s", fl_ret(accept(l, NULL, NULL)));
	fl_trace("nothing pending: accept4(SOCK_NONBLOCK) -> %s",
		 fl_ret(accept4(l, NULL, NULL, SOCK_NONBLOCK)));
	fl_trace("nothing pending: poll(0) -> %s", ev_bits(ev_wait(EV_POLL, -1, l, POLLIN, 0)));
	c = fl_sc_connect(family, port);
	if (c < 0)
		return ev_setup_fail(__LINE__);
	fl_trace("one connection: poll(1 s) -> %s", ev_bits(ev_wait(EV_POLL, -1, l, POLLIN, 1000)));
	s = accept(l, NULL, NULL);
	fl_trace("accept -> %s", s >= 0 ? "a socket" : fl_ret(s));
	if (s < 0)
		return ev_setup_fail(__LINE__);
	ev_fd_flags("accepted from a non-blocking listener", s);
	fl_trace("queue empty again: accept -> %s", fl_ret(accept(l, NULL, NULL)));
	if (fl_sc_warmup(c, s))
		return ev_setup_fail(__LINE__);
	ev_exchange("accepted", c, s, 2000, 60);
	close(c);
	close(s);
	close(l);
	return 0;
}
FL_SCENARIO("ev-accept-nonblock-empty", FL_SC_REDIRECTS, sc_accept_nonblock)

/* Non-blocking connect: EINPROGRESS, writable within 1 s, SO_ERROR 0,
 * EISCONN, then a request/response (server_first: the server speaks
 * before the client has used the socket at all). */
static int ev_connect_nb(int family, enum ev_how how, int server_first)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct ev_rd r;
	int port, l = fl_sc_listen(family, &port), c, s, ep = -1;
	const char *w = ev_how_name(how);

	if (l < 0 || getsockname(l, (struct sockaddr *)&ss, &len))
		return ev_setup_fail(__LINE__);
	c = socket(family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c < 0)
		return ev_setup_fail(__LINE__);
	fl_trace("non-blocking connect -> %s", fl_ret(connect(c, (struct sockaddr *)&ss, len)));
	if (how == EV_EPOLL_LT && (ep = ev_epoll(c, EPOLLOUT)) < 0)
		return ev_setup_fail(__LINE__);
	fl_trace("%s(1 s) for writing -> %s", w, ev_bits(ev_wait(how, ep, c, POLLOUT, 1000)));
	fl_trace("%s", ev_so_error(c));
	if (!server_first) {
		fl_trace("connect again -> %s", fl_ret(connect(c, (struct sockaddr *)&ss, len)));
		fl_trace("and again -> %s", fl_ret(connect(c, (struct sockaddr *)&ss, len)));
	}
	s = accept(l, NULL, NULL);
	if (s < 0)
		return ev_setup_fail(__LINE__);
	if (ep >= 0) {
		struct epoll_event e = { .events = EPOLLIN, .data.fd = c };

		epoll_ctl(ep, EPOLL_CTL_MOD, c, &e);
	}
	if (server_first) {
		if (ev_write(s, 0, 300, 71, 1000))
			return ev_setup_fail(__LINE__);
		fl_trace("server spoke first: %s(1 s) -> %s", w,
			 ev_bits(ev_wait(how, ep, c, POLLIN, 1000)));
		r = ev_read(c, 0, 300, 71, 1000, 0);
		fl_trace("client read %s", ev_verdict(&r, 300, 0));
		/* The first connect() after completion returns 0; then EISCONN. */
		fl_trace("connect again -> %s", fl_ret(connect(c, (struct sockaddr *)&ss, len)));
		fl_trace("and again -> %s", fl_ret(connect(c, (struct sockaddr *)&ss, len)));
	}
	if (fl_sc_warmup(c, s))
		return ev_setup_fail(__LINE__);
	if (ev_write(c, 0, 100, 70, 1000))
		return ev_setup_fail(__LINE__);
	r = ev_read(s, 0, 100, 70, 1000, 0);
	fl_trace("server read the request: %s", ev_verdict(&r, 100, 0));
	if (ev_write(s, server_first ? 300 : 0, 5000, 71, 1000))
		return ev_setup_fail(__LINE__);
	fl_trace("response sent: %s(1 s) -> %s", w, ev_bits(ev_wait(how, ep, c, POLLIN, 1000)));
	r = ev_read(c, server_first ? 300 : 0, 5000, 71, 1000, 0);
	fl_trace("client read the response: %s", ev_verdict(&r, 5000, 0));
	shutdown(c, SHUT_WR);
	r = ev_read(s, 100, 0, 70, 1000, 1);
	fl_trace("server read %s", ev_verdict(&r, 0, 1));
	close(s);
	r = ev_read(c, 0, 0, 71, 1000, 1);
	fl_trace("client read %s", ev_verdict(&r, 0, 1));
	close(c);
	close(l);
	if (ep >= 0)
		close(ep);
	return 0;
}

static int sc_connect_nb_epoll(int family) { return ev_connect_nb(family, EV_EPOLL_LT, 0); }
static int sc_connect_nb_poll(int family) { return ev_connect_nb(family, EV_POLL, 1); }
FL_SCENARIO("ev-connect-nonblock-epoll", FL_SC_REDIRECTS, sc_connect_nb_epoll)
FL_SCENARIO("ev-connect-nonblock-server-first", FL_SC_REDIRECTS, sc_connect_nb_poll)

/* Non-blocking connect to a port nobody listens on. */
static int sc_connect_refused(int family)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int port, l = fl_sc_listen(family, &port), c;
	char b[1];

	if (l < 0 || getsockname(l, (struct sockaddr *)&ss, &len))
		return ev_setup_fail(__LINE__);
	close(l);
	c = socket(family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	fl_trace("non-blocking connect to a closed port -> %s",
		 fl_ret(connect(c, (struct sockaddr *)&ss, len)));
	fl_trace("poll(1 s) for writing -> %s", ev_bits(ev_wait(EV_POLL, -1, c, POLLOUT, 1000)));
	fl_trace("%s", ev_so_error(c));
	fl_trace("then recv -> %s", fl_ret(recv(c, b, 1, 0)));
	fl_trace("then send -> %s", fl_ret(send(c, b, 1, MSG_NOSIGNAL)));
	close(c);
	return 0;
}
FL_SCENARIO("ev-connect-nonblock-refused", 0, sc_connect_refused)

/* ================================================================= fork */

#define EV_PIECE 500

static int ev_token_wait(int fd)
{
	char t = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 5000) != 1 || read(fd, &t, 1) != 1)
		return -1;
	return (unsigned char)t;
}

static void ev_token_send(int fd, char t)
{
	if (write(fd, &t, 1) != 1)
		fl_trace("token write failed");
}

/*
 * After fork, parent and child read one stream in turns (a pipe passes the
 * turn): 20 pieces written before the fork, 20 written by the parent when
 * their reader is already blocked in read. Each reads exactly its pieces.
 */
static int sc_fork_read_turns(int family)
{
	int c, s, p2c[2], c2p[2], i, st, bad_p = 0, bad_c = 0, eof;
	pid_t pid;

	if (fl_sc_pair(family, &c, &s) || pipe(p2c) || pipe(c2p))
		return ev_setup_fail(__LINE__);
	ev_rcvtimeo(s, 3000);
	for (i = 0; i < 20; i++)
		if (fl_sc_write_pattern(c, (uint64_t)i * EV_PIECE, EV_PIECE, 80))
			return ev_setup_fail(__LINE__);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return ev_setup_fail(__LINE__);
	if (pid == 0) {
		close(c);
		for (;;) {
			int t = ev_token_wait(p2c[0]);
			struct ev_rd r;

			if (t < 0)
				_exit(1);
			if (t == 255) { /* the end: EOF expected */
				char b[1];
				ssize_t x = read(s, b, 1);

				ev_token_send(c2p[1], x == 0 ? 'e' : 'x');
				_exit(0);
			}
			/* Blocking read of exactly one piece. */
			r.got = 0;
			r.bad = -1;
			while (r.got < EV_PIECE) {
				uint8_t buf[EV_PIECE], want[EV_PIECE];
				ssize_t x = read(s, buf, EV_PIECE - r.got);
				size_t j;

				if (x <= 0)
					break;
				fl_sc_fill(want, (uint64_t)t * EV_PIECE + r.got, (size_t)x, 80);
				for (j = 0; j < (size_t)x && r.bad < 0; j++)
					if (buf[j] != want[j])
						r.bad = 1;
				r.got += (uint64_t)x;
			}
			ev_token_send(c2p[1], r.got == EV_PIECE && r.bad < 0 ? 'y' : 'n');
		}
	}
	for (i = 0; i < 40; i++) {
		if (i & 1) {
			ev_token_send(p2c[1], (char)i);
			if (i >= 20) {
				fl_sc_sleep_ms(5); /* the child is in read() by now */
				fl_sc_write_pattern(c, (uint64_t)i * EV_PIECE, EV_PIECE, 80);
			}
			if (ev_token_wait(c2p[0]) != 'y')
				bad_c++;
		} else {
			struct ev_rd r;

			if (i >= 20)
				fl_sc_write_pattern(c, (uint64_t)i * EV_PIECE, EV_PIECE, 80);
			r = ev_read(s, (uint64_t)i * EV_PIECE, EV_PIECE, 80, 2000, 0);
			if (r.got != EV_PIECE || r.bad >= 0)
				bad_p++;
		}
	}
	shutdown(c, SHUT_WR);
	ev_token_send(p2c[1], (char)255);
	eof = ev_token_wait(c2p[0]) == 'e';
	waitpid(pid, &st, 0);
	fl_trace("parent read its 20 pieces: %s", bad_p ? "some wrong or missing" : "all in order");
	fl_trace("child read its 20 pieces: %s", bad_c ? "some wrong or missing" : "all in order");
	fl_trace("child then read EOF: %s; child exit %d", eof ? "yes" : "no",
		 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("ev-fork-read-turns", FL_SC_REDIRECTS, sc_fork_read_turns)

/* The turn, passed through a pipe (read and write, which the shim sees) or
 * through process-shared semaphores (which it does not). */
struct ev_turns {
	int p2c[2], c2p[2];
	sem_t *to_child, *to_parent;
};

static int ev_turn_wait(struct ev_turns *t, int child, int want)
{
	struct timespec ts;

	if (!t->to_child)
		return ev_token_wait(child ? t->p2c[0] : t->c2p[0]) == want ? 0 : -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	while (sem_timedwait(child ? t->to_child : t->to_parent, &ts))
		if (errno != EINTR)
			return -1;
	return 0;
}

static void ev_turn_pass(struct ev_turns *t, int child, int turn)
{
	if (!t->to_child)
		ev_token_send(child ? t->c2p[1] : t->p2c[1], (char)turn);
	else
		sem_post(child ? t->to_parent : t->to_child);
}

/*
 * After fork, parent and child write one stream in turns, 1000 writes of
 * 100 bytes, passing the turn after each write() returned: TCP puts each
 * process's bytes in the stream when write() returns, so the reader sees
 * the pieces in turn order.
 */
static int ev_fork_write_turns(int family, int shm)
{
	enum { TURNS = 1000, SIZE = 100 };
	struct ev_turns t = { { -1, -1 }, { -1, -1 }, NULL, NULL };
	int c, s, i, st;
	struct ev_rd r;
	pid_t pid;

	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	if (shm) {
		sem_t *sem = mmap(NULL, 2 * sizeof(sem_t), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (sem == MAP_FAILED || sem_init(&sem[0], 1, 0) || sem_init(&sem[1], 1, 0))
			return ev_setup_fail(__LINE__);
		t.to_child = &sem[0];
		t.to_parent = &sem[1];
	} else if (pipe(t.p2c) || pipe(t.c2p)) {
		return ev_setup_fail(__LINE__);
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return ev_setup_fail(__LINE__);
	if (pid == 0) {
		close(s);
		for (i = 1; i < TURNS; i += 2) {
			if (ev_turn_wait(&t, 1, i & 0x7f))
				_exit(1);
			fl_sc_write_pattern(c, (uint64_t)i * SIZE, SIZE, 81);
			ev_turn_pass(&t, 1, i & 0x7f);
		}
		_exit(0);
	}
	for (i = 0; i < TURNS; i += 2) {
		fl_sc_write_pattern(c, (uint64_t)i * SIZE, SIZE, 81);
		ev_turn_pass(&t, 0, (i + 1) & 0x7f);
		if (ev_turn_wait(&t, 0, (i + 1) & 0x7f))
			break;
	}
	waitpid(pid, &st, 0);
	fl_trace("child exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	shutdown(c, SHUT_WR);
	r = ev_read(s, 0, TURNS * SIZE, 81, 3000, 1);
	if (r.got == TURNS * SIZE && r.bad >= 0 && r.eof)
		fl_trace("reader: %d bytes, NOT in the order of the turns, then EOF", TURNS * SIZE);
	else
		fl_trace("reader (after %d writes of %d bytes in turn): %s", TURNS, SIZE,
			 ev_verdict(&r, TURNS * SIZE, 1));
	close(c);
	close(s);
	if (t.to_child)
		munmap(t.to_child, 2 * sizeof(sem_t));
	for (i = 0; i < 2; i++) {
		if (t.p2c[i] >= 0)
			close(t.p2c[i]);
		if (t.c2p[i] >= 0)
			close(t.c2p[i]);
	}
	return 0;
}

static int sc_fork_write_turns(int family) { return ev_fork_write_turns(family, 0); }
static int sc_fork_write_turns_shm(int family) { return ev_fork_write_turns(family, 1); }
FL_SCENARIO("ev-fork-write-turns", FL_SC_REDIRECTS, sc_fork_write_turns)
FL_SCENARIO("ev-fork-write-turns-shm", FL_SC_REDIRECTS, sc_fork_write_turns_shm)

/* ================================================================= exec */

#define EV_EXEC_PART1 4000
#define EV_EXEC_PART2 6000

/* n pattern bytes from off in writes of 100 bytes (small writes: under the
 * shim they are batched when the reader is behind). */
static int ev_write_small(int fd, uint64_t off, size_t n, uint64_t seed)
{
	size_t done;

	for (done = 0; done < n; done += 100)
		if (fl_sc_write_pattern(fd, off + done, n - done < 100 ? n - done : 100, seed))
			return -1;
	return 0;
}

/* conformance --child ev-exec-cont FD: the second half of the client's
 * stream, then the rest of the server's, then EOF. */
static int ev_exec_child(int argc, char **argv)
{
	struct ev_rd r;
	int fd;

	if (argc < 1)
		return 2;
	fd = atoi(argv[0]);
	if (ev_write_small(fd, EV_EXEC_PART1, EV_EXEC_PART2, 90))
		fl_trace("exec'd child: write failed: %s", fl_errname(errno));
	shutdown(fd, SHUT_WR);
	r = ev_read(fd, EV_EXEC_PART1, EV_EXEC_PART2, 91, 5000, 1);
	fl_trace("exec'd child: wrote the rest; read %s", ev_verdict(&r, EV_EXEC_PART2, 1));
	close(fd);
	return 0;
}
FL_CHILD("ev-exec-cont", ev_exec_child)

/*
 * A child process reads and writes the first part of a stream (small
 * writes, the reader busy elsewhere: the shim buffers them), then at once
 * execs this binary, which continues on the inherited fd: with LD_PRELOAD
 * kept (the new image runs the shim too) or removed (it does not). The
 * parent accepts once the child has connected (and, at connect, enrolled):
 * an accepting end that finds its peer missing waits for it, and this
 * server reads everything in one call, so its end would join only after
 * the stream (design.md, "A peer that never enrolls").
 */
static int ev_exec(int family, int keep_preload)
{
	struct ev_rd r;
	int port, l = fl_sc_listen(family, &port), s, st, p[2];
	pid_t pid;
	char k;

	if (l < 0 || pipe(p))
		return ev_setup_fail(__LINE__);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return ev_setup_fail(__LINE__);
	if (pid == 0) {
		/* Its own connection, made after the fork: only this process
		 * ever holds it, so the shim may batch its writes. */
		char fdstr[16], **env = environ;
		char *argv[] = { (char *)fl_sc_self(), "--child", "ev-exec-cont", fdstr, NULL };
		size_t n = 0, i, j = 0;
		int c;

		close(l);
		close(p[0]);
		c = fl_sc_connect(family, port);
		if (c < 0 || write(p[1], "c", 1) != 1 || fl_sc_warmup_client(c))
			_exit(1);
		close(p[1]);
		r = ev_read(c, 0, EV_EXEC_PART1, 91, 3000, 0);
		fl_trace("child before exec: read %s; writes %d bytes, then execs",
			 ev_verdict(&r, EV_EXEC_PART1, 0), EV_EXEC_PART1);
		snprintf(fdstr, sizeof(fdstr), "%d", c);
		if (!keep_preload) {
			while (environ[n])
				n++;
			env = calloc(n + 1, sizeof(*env));
			if (!env)
				_exit(1);
			for (i = 0; i < n; i++)
				if (strncmp(environ[i], "LD_PRELOAD=", 11))
					env[j++] = environ[i];
		}
		if (ev_write_small(c, 0, EV_EXEC_PART1, 90))
			_exit(1);
		execve(fl_sc_self(), argv, env);
		_exit(127);
	}
	close(p[1]);
	s = read(p[0], &k, 1) == 1 ? accept(l, NULL, NULL) : -1;
	close(p[0]);
	close(l);
	if (s < 0 || fl_sc_warmup_server(s) || ev_write(s, 0, EV_EXEC_PART1, 91, 3000))
		return ev_setup_fail(__LINE__);
	fl_sc_sleep_ms(100); /* not reading while the child writes and execs */
	r = ev_read(s, 0, EV_EXEC_PART1 + EV_EXEC_PART2, 90, 5000, 1);
	if (ev_write(s, EV_EXEC_PART1, EV_EXEC_PART2, 91, 3000))
		fl_trace("server: write failed");
	shutdown(s, SHUT_WR);
	waitpid(pid, &st, 0);
	fl_trace("server read %s", ev_verdict(&r, EV_EXEC_PART1 + EV_EXEC_PART2, 1));
	fl_trace("child exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	close(s);
	return 0;
}

static int sc_exec_keep(int family) { return ev_exec(family, 1); }
static int sc_exec_drop(int family) { return ev_exec(family, 0); }
FL_SCENARIO("ev-exec-preload-kept", FL_SC_REDIRECTS, sc_exec_keep)
FL_SCENARIO("ev-exec-preload-removed", FL_SC_REDIRECTS, sc_exec_drop)

/* ============================================================== signals */

/* A blocking recv with nothing to read: SIGALRM without SA_RESTART gives
 * EINTR; with SA_RESTART the call continues and returns the data sent
 * after the signal. */
static int sc_signal_recv(int family)
{
	struct ev_script sc;
	struct ev_rd r;
	uint8_t buf[100];
	ssize_t x;
	int c, s;

	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	ev_handler(0);
	ev_script_init(&sc, 100);
	ev_add(&sc, 100, EV_KILL, 0, 0, 0);
	ev_add(&sc, 1500, EV_W, c, 0, 100); /* only if recv did not return */
	ev_script_start(&sc);
	x = recv(s, buf, sizeof(buf), 0);
	fl_trace("no SA_RESTART: blocking recv -> %s; handler ran %d", x > 0 ? "data" : fl_ret(x),
		 (int)ev_sigs);
	ev_script_stop(&sc);
	close(c);
	close(s);

	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	ev_handler(1);
	ev_script_init(&sc, 101);
	ev_add(&sc, 100, EV_KILL, 0, 0, 0);
	ev_add(&sc, 100, EV_W, c, 0, 100);
	ev_script_start(&sc);
	x = recv(s, buf, sizeof(buf), 0);
	fl_trace("SA_RESTART: blocking recv -> %s; handler ran %d", x > 0 ? "data" : fl_ret(x),
		 (int)ev_sigs);
	ev_script_join(&sc);
	if (x > 0) {
		uint8_t want[100];
		int ok;

		fl_sc_fill(want, 0, (size_t)x, 101);
		ok = !memcmp(buf, want, (size_t)x);
		r = ev_read(s, (uint64_t)x, 100 - (uint64_t)x, 101, 1000, 0);
		fl_trace("SA_RESTART: the 100 bytes sent after the signal: %s",
			 ok && r.got == 100 - (uint64_t)x && r.bad < 0 ? "in order" : "wrong");
	}
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("ev-signal-recv", FL_SC_REDIRECTS, sc_signal_recv)

/* Fills the peer (not reading) until a non-blocking write says EAGAIN, then
 * makes the socket blocking again. */
static int ev_fill_peer(int c, uint64_t *off, uint64_t seed)
{
	static const size_t chunk[] = { 65536, 4096, 256, 16, 1 };
	uint64_t before;
	size_t i;
	int k, pass;

	ev_nonblock(c, 1);
	/* Smaller and smaller writes, down to one byte: no room at all. Each
	 * size is settled: the small writes' segments, once acknowledged,
	 * free far more buffer memory than their bytes (an skb's overhead),
	 * and a late acknowledgement must not make room for what follows. */
	k = 0;
	for (i = 0; !k && i < sizeof(chunk) / sizeof(chunk[0]); i++)
		k = ev_fill_settled(c, off, seed, chunk[i]);
	/* The room that appears once, up to 200 ms after the first EAGAIN
	 * (docs/kernel.md#room-after-eagain), is taken here, not by the
	 * scenario's send: full means 250 ms without room. */
	for (pass = 0; !k && pass < 4; pass++) {
		before = *off;
		fl_sc_sleep_ms(250);
		for (i = 0; !k && i < sizeof(chunk) / sizeof(chunk[0]); i++)
			k = ev_fill(c, off, seed, chunk[i], EV_FILL_CAP);
		if (*off == before)
			break;
	}
	ev_nonblock(c, 0);
	return k;
}

/* A blocking send that blocks (the peer is full): SIGALRM without
 * SA_RESTART interrupts it (EINTR, or the count of the bytes it took
 * before the signal: which one depends on whether any room appeared, so
 * the trace says "interrupted" for both); with SA_RESTART it completes
 * once the peer reads. Every accepted byte arrives, in order. The send is
 * 64 KiB, one call for the shim too: a blocking send over 1 MiB goes in
 * slices (preload/tx/tx_split.c), and a slice the kernel restarted after
 * SA_RESTART's handler ends it with the count so far where TCP's one call
 * would go on. */
static const char *ev_send_outcome(ssize_t x, size_t len)
{
	if (x == (ssize_t)len)
		return "completed";
	if (x > 0 || (x < 0 && errno == EINTR))
		return "interrupted (EINTR or a partial count)";
	return fl_ret(x);
}

static int sc_signal_send(int family)
{
	static uint8_t buf[65536];
	struct ev_drain d = { 0 };
	struct ev_script sc;
	uint64_t off = 0;
	ssize_t x;
	int c, s, k, pass;

	for (pass = 0; pass < 2; pass++) {
		const char *mode = pass ? "SA_RESTART" : "no SA_RESTART";
		uint64_t seed = 110 + (uint64_t)pass;

		if (fl_sc_pair(family, &c, &s))
			return ev_setup_fail(__LINE__);
		off = 0;
		k = ev_fill_peer(c, &off, seed);
		fl_trace("%s: filling the peer: %s", mode, ev_fill_result(k));
		memset(&d, 0, sizeof(d));
		d.fd = s;
		d.seed = seed;
		ev_handler(pass);
		fl_sc_fill(buf, off, sizeof(buf), seed);
		ev_script_init(&sc, seed);
		sc.drain = &d;
		ev_add(&sc, 100, EV_KILL, 0, 0, 0);
		ev_add(&sc, pass ? 200 : 1400, EV_DRAIN, 0, 0, 0);
		ev_script_start(&sc);
		x = send(c, buf, sizeof(buf), MSG_NOSIGNAL);
		fl_trace("%s: blocking send(64 KiB) -> %s; handler ran %d", mode,
			 ev_send_outcome(x, sizeof(buf)), (int)ev_sigs);
		if (x > 0)
			off += (uint64_t)x;
		ev_script_stop(&sc);
		ev_drain_start(&d);
		if (ev_write(c, off, 1000, seed, 3000))
			fl_trace("%s: final write failed", mode);
		off += 1000;
		shutdown(c, SHUT_WR);
		ev_drain_join(&d);
		if (d.r.got == off && d.r.bad < 0 && d.r.eof)
			fl_trace("%s: reader got every accepted byte, in order, then EOF", mode);
		else
			fl_trace("%s: reader: %s", mode, ev_verdict(&d.r, off, 1));
		close(c);
		close(s);
	}
	return 0;
}
FL_SCENARIO("ev-signal-send", FL_SC_REDIRECTS, sc_signal_send)

/* poll, select and epoll_wait interrupted by a signal: EINTR, even with
 * SA_RESTART (they are never restarted). */
static int sc_signal_waits(int family)
{
	struct ev_script sc;
	int c, s, ep, k;

	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	ep = ev_epoll(s, EPOLLIN);
	if (ep < 0)
		return ev_setup_fail(__LINE__);
	for (k = 0; k < 3; k++) {
		static const enum ev_how how[3] = { EV_POLL, EV_SELECT, EV_EPOLL_LT };
		int r;

		ev_handler(1);
		ev_script_init(&sc, 200);
		ev_add(&sc, 100, EV_KILL, 0, 0, 0);
		ev_add(&sc, 1500, EV_W, c, 0, 1); /* only if the wait did not return */
		ev_script_start(&sc);
		r = ev_wait(how[k], ep, s, POLLIN, 3000);
		fl_trace("SA_RESTART: %s(3 s) for reading, nothing sent -> %s; handler ran %d",
			 ev_how_name(how[k]), r < 0 ? fl_ret(r) : ev_bits(r), (int)ev_sigs);
		ev_script_stop(&sc);
	}
	/* Then it still works. */
	ev_exchange("after the signals", c, s, 1000, 201);
	close(ep);
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("ev-signal-waits", FL_SC_REDIRECTS, sc_signal_waits)

static void ev_sndtimeo(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The timing class of a call that waited t seconds for a timeout of want:
 * from 50 ms early (timer granularity) to 700 ms late. */
static const char *ev_about(double t, double want)
{
	return t >= want - 0.05 && t <= want + 0.7 ? "after about the timeout" :
	       t < want ? "too early" : "too late";
}

/*
 * Sockets with a timeout: a blocking recv or send interrupted by a signal
 * gives EINTR even with SA_RESTART (socket calls with a timeout are not
 * restarted, signal(7)); a recv without a signal gives EAGAIN once the
 * timeout expires. Every accepted byte still arrives, in order.
 */
static int sc_signal_timeo(int family)
{
	static uint8_t big[EV_BIG_SEND];
	struct ev_drain d = { 0 };
	struct ev_script sc;
	uint8_t buf[4096];
	uint64_t off = 0;
	double t0;
	ssize_t x;
	int c, s, k;

	/* recv */
	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	ev_rcvtimeo(s, 1000);
	ev_handler(1);
	ev_script_init(&sc, 210);
	ev_add(&sc, 100, EV_KILL, 0, 0, 0);
	ev_add(&sc, 1400, EV_W, c, 0, 100); /* only if recv did not return */
	ev_script_start(&sc);
	x = recv(s, buf, sizeof(buf), 0);
	fl_trace("SO_RCVTIMEO 1 s, SA_RESTART: blocking recv -> %s; handler ran %d",
		 x > 0 ? "data" : fl_ret(x), (int)ev_sigs);
	ev_script_stop(&sc);
	ev_rcvtimeo(s, 300);
	t0 = fl_sc_now();
	x = recv(s, buf, sizeof(buf), 0);
	fl_trace("SO_RCVTIMEO 300 ms, nothing sent: blocking recv -> %s %s",
		 x > 0 ? "data" : fl_ret(x), ev_about(fl_sc_now() - t0, 0.3));
	ev_exchange("recv timeouts", c, s, 1000, 211);
	close(c);
	close(s);

	/* send */
	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	k = ev_fill_peer(c, &off, 212);
	fl_trace("filling the peer: %s", ev_fill_result(k));
	ev_sndtimeo(c, 1000);
	d.fd = s;
	d.seed = 212;
	ev_handler(1);
	fl_sc_fill(big, off, sizeof(big), 212);
	ev_script_init(&sc, 212);
	sc.drain = &d;
	ev_add(&sc, 100, EV_KILL, 0, 0, 0);
	ev_add(&sc, 1400, EV_DRAIN, 0, 0, 0); /* only if send did not return */
	ev_script_start(&sc);
	x = send(c, big, sizeof(big), MSG_NOSIGNAL);
	fl_trace("SO_SNDTIMEO 1 s, SA_RESTART, peer full: blocking send(8 MiB) -> %s; handler ran %d",
		 ev_send_outcome(x, sizeof(big)), (int)ev_sigs);
	if (x > 0)
		off += (uint64_t)x;
	ev_script_stop(&sc);
	/* (Not checked: a send timing out on a full peer. TCP itself may find
	 * room after a while: the idle receiver's queue gets collapsed and its
	 * window reopens.) */
	ev_sndtimeo(c, 3000);
	ev_drain_start(&d);
	if (ev_write(c, off, 1000, 212, 3000))
		fl_trace("final write failed");
	off += 1000;
	shutdown(c, SHUT_WR);
	ev_drain_join(&d);
	if (d.r.got == off && d.r.bad < 0 && d.r.eof)
		fl_trace("reader got every accepted byte, in order, then EOF");
	else
		fl_trace("reader: %s", ev_verdict(&d.r, off, 1));
	close(c);
	close(s);
	return 0;
}
FL_SCENARIO("ev-signal-timeo", FL_SC_REDIRECTS, sc_signal_timeo)

/* A blocking accept with nothing pending: EINTR without SA_RESTART;
 * restarted with it, returning the connection that comes later. */
static int sc_signal_accept(int family)
{
	struct ev_script sc;
	struct ev_rd r;
	int port, l = fl_sc_listen(family, &port), c, s;

	if (l < 0)
		return ev_setup_fail(__LINE__);
	ev_handler(0);
	ev_script_init(&sc, 120);
	sc.family = family;
	sc.port = port;
	ev_add(&sc, 100, EV_KILL, 0, 0, 0);
	ev_add(&sc, 1500, EV_CONNECT, 0, 0, 0); /* only if accept did not return */
	ev_script_start(&sc);
	s = accept(l, NULL, NULL);
	fl_trace("no SA_RESTART: blocking accept -> %s; handler ran %d",
		 s >= 0 ? "a connection" : fl_ret(s), (int)ev_sigs);
	ev_script_stop(&sc);
	if (s >= 0)
		close(s);
	if (sc.out >= 0)
		close(sc.out);
	c = fl_sc_connect(family, port);
	s = accept(l, NULL, NULL);
	if (c < 0 || s < 0 || fl_sc_warmup(c, s))
		return ev_setup_fail(__LINE__);
	ev_exchange("after EINTR", c, s, 1000, 121);
	close(c);
	close(s);

	ev_handler(1);
	ev_script_init(&sc, 122);
	sc.family = family;
	sc.port = port;
	ev_add(&sc, 100, EV_KILL, 0, 0, 0);
	ev_add(&sc, 100, EV_CONNECT, 0, 0, 300);
	ev_script_start(&sc);
	s = accept(l, NULL, NULL);
	fl_trace("SA_RESTART: blocking accept -> %s; handler ran %d",
		 s >= 0 ? "a connection" : fl_ret(s), (int)ev_sigs);
	ev_script_join(&sc);
	if (s >= 0) {
		r = ev_read(s, 0, 300, 122, 1000, 0);
		fl_trace("SA_RESTART: server read %s", ev_verdict(&r, 300, 0));
		close(s);
	}
	if (sc.out >= 0)
		close(sc.out);
	close(l);
	return 0;
}
FL_SCENARIO("ev-signal-accept", FL_SC_REDIRECTS, sc_signal_accept)

/*
 * A blocking connect that blocks: the listener (backlog 0) has a full
 * accept queue, so the SYN is dropped and retransmitted a second later.
 * Without SA_RESTART: EINTR, the handshake goes on, the socket becomes
 * writable once the queue has room and is then usable. With SA_RESTART:
 * connect returns 0 once the handshake is done.
 */
static int ev_signal_connect(int family, int restart)
{
	const char *mode = restart ? "SA_RESTART" : "no SA_RESTART";
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct ev_script sc;
	int port, l = ev_listen(family, 0, &port), c1, c2, a, r;

	if (l < 0 || getsockname(l, (struct sockaddr *)&ss, &len))
		return ev_setup_fail(__LINE__);
	c1 = fl_sc_connect(family, port); /* fills the queue */
	c2 = socket(family, SOCK_STREAM, 0);
	if (c1 < 0 || c2 < 0)
		return ev_setup_fail(__LINE__);
	ev_handler(restart);
	ev_script_init(&sc, 130);
	ev_add(&sc, 100, EV_KILL, 0, 0, 0);
	ev_add(&sc, restart ? 200 : 1400, EV_ACCEPT, l, 0, 0);
	ev_script_start(&sc);
	r = connect(c2, (struct sockaddr *)&ss, len);
	fl_trace("%s: blocking connect, accept queue full -> %s; handler ran %d", mode, fl_ret(r),
		 (int)ev_sigs);
	if (restart) {
		ev_script_join(&sc);
	} else {
		ev_script_stop(&sc);
		if (sc.accepted < 0)
			sc.accepted = accept(l, NULL, NULL); /* room for c2 */
		fl_trace("%s: poll(3 s) for writing -> %s", mode,
			 ev_bits(ev_wait(EV_POLL, -1, c2, POLLOUT, 3000)));
		fl_trace("%s: %s", mode, ev_so_error(c2));
	}
	if (sc.accepted < 0 || fl_sc_warmup(c1, sc.accepted))
		return ev_setup_fail(__LINE__);
	ev_exchange(mode, c1, sc.accepted, 500, 131);
	a = accept(l, NULL, NULL);
	if (a < 0 || fl_sc_warmup(c2, a))
		return ev_setup_fail(__LINE__);
	ev_exchange(mode, c2, a, 500, 133);
	close(a);
	close(sc.accepted);
	close(c1);
	close(c2);
	close(l);
	return 0;
}

static int sc_signal_connect_eintr(int family) { return ev_signal_connect(family, 0); }
static int sc_signal_connect_restart(int family) { return ev_signal_connect(family, 1); }
FL_SCENARIO("ev-signal-connect-eintr", FL_SC_REDIRECTS | FL_SC_SLOW, sc_signal_connect_eintr)
FL_SCENARIO("ev-signal-connect-restart", FL_SC_REDIRECTS | FL_SC_SLOW, sc_signal_connect_restart)

/* ============================================================= dribbles */

/* Runs the script in a child process (fork: no other thread may run). */
static pid_t ev_script_fork(struct ev_script *sc)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		ev_script_main(sc);
		_exit(0);
	}
	return pid;
}

enum ev_dribble { EV_DR_EPOLL, EV_DR_POLL, EV_DR_READ, EV_DR_NODELAY, EV_DR_THREAD };

#define EV_DR_PIECES 10
#define EV_DR_SIZE 50
#define EV_DR_GAP 30

/*
 * The writer sends 10 pieces of 50 bytes, 30 ms apart, while the reader
 * waits in epoll_wait, poll or a blocking read: each piece arrives within
 * 1 s of the reader starting to wait for it (nothing stalls), in order.
 * The writer is another process (EV_DR_THREAD: a thread of the reader's).
 */
static int ev_dribble(int family, enum ev_dribble mode)
{
	struct ev_script sc;
	struct ev_rd r;
	int c, s, ep = -1, i, one = 1, st = 0;
	uint64_t seed = 140 + (uint64_t)mode;
	const char *how = mode == EV_DR_EPOLL ? "epoll_wait" : mode == EV_DR_READ ? "read" : "poll";
	pid_t pid = -1;

	if (fl_sc_pair(family, &c, &s))
		return ev_setup_fail(__LINE__);
	if (mode == EV_DR_NODELAY)
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (mode == EV_DR_READ)
		ev_rcvtimeo(s, 1100);
	else
		ev_nonblock(s, 1);
	if (mode == EV_DR_EPOLL && (ep = ev_epoll(s, EPOLLIN)) < 0)
		return ev_setup_fail(__LINE__);
	ev_script_init(&sc, seed);
	for (i = 0; i < EV_DR_PIECES; i++)
		ev_add(&sc, EV_DR_GAP, EV_W, c, (uint64_t)i * EV_DR_SIZE, EV_DR_SIZE);
	ev_add(&sc, EV_DR_GAP, EV_SHUTWR, c, 0, 0);
	if (mode == EV_DR_THREAD) {
		ev_script_start(&sc);
	} else {
		pid = ev_script_fork(&sc);
		if (pid < 0)
			return ev_setup_fail(__LINE__);
		close(c);
	}
	for (i = 0; i < EV_DR_PIECES; i++) {
		double t0 = fl_sc_now(), deadline = t0 + 1.0 + EV_DR_GAP / 1000.0;
		uint8_t buf[EV_DR_SIZE], want[EV_DR_SIZE];
		size_t got = 0;
		int ok = 1;

		while (got < EV_DR_SIZE && ev_ms_left(deadline)) {
			ssize_t x;

			if (mode == EV_DR_EPOLL) {
				if (ev_wait(EV_EPOLL_LT, ep, s, POLLIN, ev_ms_left(deadline)) <= 0)
					continue;
			} else if (mode != EV_DR_READ) {
				if (ev_wait(EV_POLL, -1, s, POLLIN, ev_ms_left(deadline)) <= 0)
					continue;
			}
			x = read(s, buf + got, EV_DR_SIZE - got);
			if (x > 0)
				got += (size_t)x;
			else if (x == 0 || (errno != EAGAIN && errno != EINTR))
				break;
		}
		fl_sc_fill(want, (uint64_t)i * EV_DR_SIZE, got, seed);
		if (got && memcmp(buf, want, got))
			ok = 0;
		if (got == EV_DR_SIZE && fl_sc_now() <= deadline)
			fl_trace("piece %d (reader in %s): arrived within 1 s, %s", i, how,
				 ok ? "in order" : "WRONG BYTES");
		else
			fl_trace("piece %d (reader in %s): stalled (not all within 1 s)", i, how);
	}
	if (mode == EV_DR_THREAD)
		ev_script_join(&sc);
	r = ev_read(s, EV_DR_PIECES * EV_DR_SIZE, 0, seed, 1000, 1);
	fl_trace("then %s", ev_verdict(&r, 0, 1));
	if (pid > 0) {
		waitpid(pid, &st, 0);
		fl_trace("writer exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	} else {
		close(c);
	}
	close(s);
	if (ep >= 0)
		close(ep);
	return 0;
}

static int sc_dribble_epoll(int family) { return ev_dribble(family, EV_DR_EPOLL); }
static int sc_dribble_poll(int family) { return ev_dribble(family, EV_DR_POLL); }
static int sc_dribble_read(int family) { return ev_dribble(family, EV_DR_READ); }
static int sc_dribble_nodelay(int family) { return ev_dribble(family, EV_DR_NODELAY); }
static int sc_dribble_thread(int family) { return ev_dribble(family, EV_DR_THREAD); }
FL_SCENARIO("ev-dribble-epoll", FL_SC_REDIRECTS, sc_dribble_epoll)
FL_SCENARIO("ev-dribble-poll", FL_SC_REDIRECTS, sc_dribble_poll)
FL_SCENARIO("ev-dribble-read", FL_SC_REDIRECTS, sc_dribble_read)
FL_SCENARIO("ev-dribble-nodelay", FL_SC_REDIRECTS, sc_dribble_nodelay)
FL_SCENARIO("ev-dribble-thread", FL_SC_REDIRECTS, sc_dribble_thread)

/* Waits (in poll, up to 1 s) until n pattern bytes from *off arrived;
 * *off advances past what did. */
static const char *ev_arrives(int s, uint64_t *off, uint64_t n, uint64_t seed)
{
	struct ev_rd r = ev_read(s, *off, n, seed, 1000, 0);

	*off += r.got;
	if (r.got == n && r.bad < 0)
		return "arrived in order within 1 s";
	return r.bad >= 0 ? "arrived WRONG" : "stalled (not all within 1 s)";
}

/* Whether anything is readable within ms: the "held back" timing class. */
static const char *ev_held(int s, int ms)
{
	return fl_sc_readable_within(s, ms) ? "readable" : "nothing readable";
}

/*
 * Corked writes by another process (TCP_CORK, or send with MSG_MORE): held
 * back (nothing readable within 50 ms); released by the uncork, or by the
 * next send without MSG_MORE, made 30 ms later while the reader waits in
 * poll: all within 1 s. Corked bytes never released still arrive within
 * 1 s (Linux's 200 ms cork ceiling), the writer blocked in read meanwhile.
 */
static int ev_corked(int family, int cork)
{
	int c, s, w2r[2], r2w[2], i, st, one = 1, zero = 0;
	uint64_t seed = cork ? 160 : 150, off = 0, per = cork ? 60 : 50;
	const char *what = cork ? "corked, 3 writes of 20" : "send(20, MSG_MORE)";
	struct ev_rd r;
	pid_t pid;

	if (fl_sc_pair(family, &c, &s) || pipe(w2r) || pipe(r2w))
		return ev_setup_fail(__LINE__);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return ev_setup_fail(__LINE__);
	if (pid == 0) {
		uint8_t buf[64];

		close(s);
		for (i = 0; i <= 3; i++) {
			if (cork) {
				setsockopt(c, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
				fl_sc_write_pattern(c, off, 20, seed);
				fl_sc_write_pattern(c, off + 20, 20, seed);
				fl_sc_write_pattern(c, off + 40, 20, seed);
			} else {
				fl_sc_fill(buf, off, 20, seed);
				if (send(c, buf, 20, MSG_MORE) != 20)
					_exit(1);
			}
			ev_token_send(w2r[1], 'm');
			if (ev_token_wait(r2w[0]) < 0) /* the reader checked */
				_exit(1);
			if (i == 3)
				break; /* the last round is never released */
			fl_sc_sleep_ms(30);
			if (cork) {
				setsockopt(c, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero));
			} else {
				fl_sc_fill(buf, off + 20, 30, seed);
				if (send(c, buf, 30, 0) != 30)
					_exit(1);
			}
			off += per;
		}
		if (ev_token_wait(r2w[0]) < 0) /* the reader got it */
			_exit(1);
		shutdown(c, SHUT_WR);
		_exit(0);
	}
	close(c);
	ev_nonblock(s, 1);
	for (i = 0; i < 3; i++) {
		if (ev_token_wait(w2r[0]) < 0)
			break;
		fl_trace("round %d: %s: within 50 ms: %s", i, what, ev_held(s, 50));
		ev_token_send(r2w[1], 'g');
		fl_trace("round %d: %s 30 ms later, reader in poll: %s", i,
			 cork ? "uncorked" : "send(30)", ev_arrives(s, &off, per, seed));
	}
	if (ev_token_wait(w2r[0]) >= 0) {
		fl_trace("last: %s: within 50 ms: %s", what, ev_held(s, 50));
		ev_token_send(r2w[1], 'g');
		fl_trace("last: never released: %s",
			 ev_arrives(s, &off, cork ? 60 : 20, seed));
		ev_token_send(r2w[1], 'x');
	}
	r = ev_read(s, off, 0, seed, 2000, 1);
	fl_trace("then %s", ev_verdict(&r, 0, 1));
	waitpid(pid, &st, 0);
	fl_trace("writer exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	close(s);
	close(w2r[0]);
	close(w2r[1]);
	close(r2w[0]);
	close(r2w[1]);
	return 0;
}

static int sc_dribble_msg_more(int family) { return ev_corked(family, 0); }
static int sc_dribble_cork(int family) { return ev_corked(family, 1); }
FL_SCENARIO("ev-dribble-msg-more", FL_SC_REDIRECTS, sc_dribble_msg_more)
FL_SCENARIO("ev-dribble-cork", FL_SC_REDIRECTS, sc_dribble_cork)

/*
 * A writer process makes five small writes of 100 bytes while its reader
 * is not reading, then sleeps in nanosleep (a call the shim does not see).
 * TCP has all 500 bytes in the reader's queue as the writes return; the
 * reader gets them within 1 s (the shim's flusher: 200 us).
 */
static int sc_writer_sleeps(int family)
{
	int c, s, w2r[2], i, st;
	struct ev_rd r;
	pid_t pid;

	if (fl_sc_pair(family, &c, &s) || pipe(w2r))
		return ev_setup_fail(__LINE__);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return ev_setup_fail(__LINE__);
	if (pid == 0) {
		close(s);
		for (i = 0; i < 5; i++)
			fl_sc_write_pattern(c, (uint64_t)i * 100, 100, 190);
		ev_token_send(w2r[1], 'w');
		fl_sc_sleep_ms(3000); /* killed before */
		_exit(0);
	}
	close(c);
	if (ev_token_wait(w2r[0]) < 0)
		return ev_setup_fail(__LINE__);
	r = ev_read(s, 0, 500, 190, 1000, 0);
	fl_trace("writer asleep after 5 writes of 100: reader got %s%s", ev_verdict(&r, 500, 0),
		 r.got == 500 ? " within 1 s" : "");
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	r = ev_read(s, r.got, 0, 190, 1000, 1);
	fl_trace("writer killed: then %s", ev_verdict(&r, 0, 1));
	close(s);
	close(w2r[0]);
	close(w2r[1]);
	return 0;
}
FL_SCENARIO("ev-writer-sleeps", FL_SC_REDIRECTS, sc_writer_sleeps)

/* ===================================================== many connections */

#define EV_MANY 50
#define EV_MANY_SEED 170

/* Each stream starts with the warm-up's bytes (none unless FL_SC_WARMUP),
 * which the client sends and reads back before the rest. */
static uint64_t ev_many_len(int i)
{
	return fl_sc_warmup_bytes() + 1000 + 37 * (uint64_t)i;
}

struct ev_many_client {
	int family, port, ok, connected;
};

/* 50 blocking clients (a process of their own): connect all, write round-robin in 100-byte pieces,
 * shut down writing, then read each echo to EOF. */
static void ev_many_client_main(struct ev_many_client *m)
{
	int fd[EV_MANY], i, more = 1;
	uint64_t off, warm = fl_sc_warmup_bytes();

	for (i = 0; i < EV_MANY; i++) {
		fd[i] = fl_sc_connect(m->family, m->port);
		if (fd[i] >= 0)
			m->connected++;
	}
	/* The warm-up (conformance.h) through the echo server: the first
	 * bytes of each stream, sent and read back whole before the rest, so
	 * that under deferred enrollment both ends enroll and the rest can be
	 * redirected. A stream whose warm-up failed counts as not ok. */
	for (i = 0; warm && i < EV_MANY; i++) {
		int64_t bad = -1;

		if (fd[i] >= 0 && (fl_sc_write_pattern(fd[i], 0, warm, EV_MANY_SEED) ||
				   fl_sc_read_pattern(fd[i], 0, warm, EV_MANY_SEED, &bad) != (ssize_t)warm ||
				   bad >= 0)) {
			close(fd[i]);
			fd[i] = -1;
		}
	}
	for (off = warm; more; off += 100) {
		more = 0;
		for (i = 0; i < EV_MANY; i++) {
			uint64_t len = ev_many_len(i);

			if (fd[i] < 0 || off >= len)
				continue;
			fl_sc_write_pattern(fd[i], off, len - off < 100 ? len - off : 100, EV_MANY_SEED);
			more = 1;
		}
	}
	for (i = 0; i < EV_MANY; i++)
		if (fd[i] >= 0)
			shutdown(fd[i], SHUT_WR);
	for (i = 0; i < EV_MANY; i++) {
		struct ev_rd r;

		if (fd[i] < 0)
			continue;
		r = ev_read(fd[i], warm, ev_many_len(i) - warm, EV_MANY_SEED, 3000, 1);
		if (r.got == ev_many_len(i) - warm && r.bad < 0 && r.eof)
			m->ok++;
		close(fd[i]);
	}
}

static int ev_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * 50 connections through one epoll loop (level or edge triggered): the
 * server echoes what it reads, checks each stream against the pattern,
 * and closes at EOF. Every stream and every echo byte-exact, with EOF.
 */
static int ev_many(int family, int et)
{
	struct ev_many_client m = { .family = family };
	struct {
		int fd;
		uint64_t got;
		int bad, done;
	} conn[EV_MANY];
	uint64_t lens[EV_MANY], want[EV_MANY];
	int l, ep, nconn = 0, ndone = 0, nbad = 0, i, same, res[2], st;
	pid_t pid;
	double deadline;
	struct epoll_event e = { .events = EPOLLIN | (et ? EPOLLET : 0) };

	l = fl_sc_listen(family, &m.port);
	if (l < 0)
		return ev_setup_fail(__LINE__);
	ev_nonblock(l, 1);
	ep = epoll_create1(EPOLL_CLOEXEC);
	e.data.u32 = ~0u;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &e))
		return ev_setup_fail(__LINE__);
	/* The clients are another process: none of their calls flush the
	 * server's buffers, nor the server's theirs. */
	if (pipe(res))
		return ev_setup_fail(__LINE__);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return ev_setup_fail(__LINE__);
	if (pid == 0) {
		int out[2];

		close(l);
		close(ep);
		ev_many_client_main(&m);
		out[0] = m.connected;
		out[1] = m.ok;
		_exit(write(res[1], out, sizeof(out)) == sizeof(out) ? 0 : 1);
	}
	close(res[1]);
	deadline = fl_sc_now() + 8.0;
	while (ndone < EV_MANY && ev_ms_left(deadline)) {
		struct epoll_event ev[16];
		int n = epoll_wait(ep, ev, 16, ev_ms_left(deadline)), k;

		for (k = 0; k < n; k++) {
			uint32_t id = ev[k].data.u32;

			if (id == ~0u) {
				int a;

				while (nconn < EV_MANY && (a = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					struct epoll_event ce = { .events = EPOLLIN | (et ? EPOLLET : 0) };

					conn[nconn].fd = a;
					conn[nconn].got = 0;
					conn[nconn].bad = 0;
					conn[nconn].done = 0;
					ce.data.u32 = (uint32_t)nconn;
					epoll_ctl(ep, EPOLL_CTL_ADD, a, &ce);
					nconn++;
					if (!et)
						break;
				}
				continue;
			}
			/* Level: one read per event; edge: until EAGAIN. */
			do {
				uint8_t buf[4096], chk[4096];
				ssize_t x = read(conn[id].fd, buf, sizeof(buf));

				if (x < 0)
					break;
				if (x == 0) {
					shutdown(conn[id].fd, SHUT_WR);
					epoll_ctl(ep, EPOLL_CTL_DEL, conn[id].fd, NULL);
					close(conn[id].fd);
					conn[id].done = 1;
					ndone++;
					break;
				}
				fl_sc_fill(chk, conn[id].got, (size_t)x, EV_MANY_SEED);
				if (memcmp(buf, chk, (size_t)x))
					conn[id].bad = 1;
				{
					/* Echo (small: a short write waits in poll). */
					ssize_t w = 0;

					while (w < x) {
						ssize_t y = write(conn[id].fd, buf + w, (size_t)(x - w));

						if (y > 0) {
							w += y;
						} else if (y < 0 && errno == EAGAIN) {
							struct pollfd p = { .fd = conn[id].fd, .events = POLLOUT };

							if (poll(&p, 1, 1000) <= 0)
								break;
						} else {
							break;
						}
					}
				}
				conn[id].got += (uint64_t)x;
			} while (et);
		}
	}
	{
		int in[2] = { -1, -1 };
		struct pollfd p = { .fd = res[0], .events = POLLIN };

		if (poll(&p, 1, 8000) == 1 && read(res[0], in, sizeof(in)) == sizeof(in)) {
			m.connected = in[0];
			m.ok = in[1];
		}
		close(res[0]);
		waitpid(pid, &st, 0);
	}
	for (i = 0; i < nconn; i++) {
		lens[i] = conn[i].got;
		nbad += conn[i].bad;
		if (!conn[i].done)
			close(conn[i].fd);
	}
	for (i = 0; i < EV_MANY; i++)
		want[i] = ev_many_len(i);
	qsort(lens, (size_t)nconn, sizeof(lens[0]), ev_u64_cmp);
	same = nconn == EV_MANY && !memcmp(lens, want, sizeof(want));
	fl_trace("clients connected %d; server accepted %d, saw EOF on %d", m.connected, nconn, ndone);
	fl_trace("server: streams in order %d, lengths as sent: %s", nconn - nbad, same ? "yes" : "no");
	fl_trace("clients: echoes byte-exact then EOF: %d", m.ok);
	close(ep);
	close(l);
	return 0;
}

static int sc_many_lt(int family) { return ev_many(family, 0); }
static int sc_many_et(int family) { return ev_many(family, 1); }
FL_SCENARIO("ev-epoll-many-lt", FL_SC_REDIRECTS, sc_many_lt)
FL_SCENARIO("ev-epoll-many-et", FL_SC_REDIRECTS, sc_many_et)

/* ============================================== close while peer waits */

/* The peer closes while the reader is blocked in read: with nothing sent
 * the read returns 0; after 100 bytes the reader gets them, then 0. */
static int sc_close_during_read(int family)
{
	struct ev_script sc;
	uint8_t buf[200];
	int c, s, pass;

	for (pass = 0; pass < 2; pass++) {
		uint64_t n = pass ? 100 : 0, got = 0;
		double t0;
		ssize_t x;
		int ok = 1;

		if (fl_sc_pair(family, &c, &s))
			return ev_setup_fail(__LINE__);
		ev_rcvtimeo(s, 2000);
		ev_script_init(&sc, 180);
		if (n)
			ev_add(&sc, 100, EV_W, c, 0, n);
		ev_add(&sc, n ? 0 : 100, EV_CLOSE, c, 0, 0);
		ev_script_start(&sc);
		t0 = fl_sc_now();
		do {
			x = read(s, buf, sizeof(buf));
			if (x > 0) {
				uint8_t want[200];

				fl_sc_fill(want, got, (size_t)x, 180);
				if (got + (uint64_t)x > n || memcmp(buf, want, (size_t)x))
					ok = 0;
				got += (uint64_t)x;
			}
		} while (x > 0 || (x < 0 && errno == EINTR));
		fl_trace("peer closed %s while the reader was in read(): got %llu bytes%s, then "
			 "read -> %s%s",
			 n ? "after 100 bytes" : "with nothing sent", (unsigned long long)got,
			 ok ? "" : " (WRONG)", fl_ret(x), fl_sc_now() - t0 < 1.1 ? " within 1 s" : " late");
		ev_script_join(&sc);
		close(s);
	}
	return 0;
}
FL_SCENARIO("ev-close-during-read", FL_SC_REDIRECTS, sc_close_during_read)

/* The peer closes while the reader is blocked in epoll_wait for
 * EPOLLIN|EPOLLRDHUP: woken with both (nothing sent), or RDHUP within
 * 1 s after the data (100 bytes sent just before the close). */
static int sc_close_during_epoll(int family)
{
	struct ev_script sc;
	struct ev_rd r;
	int c, s, ep, pass;

	for (pass = 0; pass < 2; pass++) {
		uint64_t n = pass ? 100 : 0;
		int bits, all = 0;
		double deadline;

		if (fl_sc_pair(family, &c, &s))
			return ev_setup_fail(__LINE__);
		ev_nonblock(s, 1);
		ep = ev_epoll(s, EPOLLIN | EPOLLRDHUP);
		if (ep < 0)
			return ev_setup_fail(__LINE__);
		ev_script_init(&sc, 185);
		if (n)
			ev_add(&sc, 100, EV_W, c, 0, n);
		ev_add(&sc, n ? 0 : 100, EV_CLOSE, c, 0, 0);
		ev_script_start(&sc);
		bits = ev_wait(EV_EPOLL_LT, ep, s, 0, 2000);
		if (!n) {
			fl_trace("peer closed with nothing sent, reader in epoll_wait: -> %s",
				 ev_bits(bits));
		} else {
			/* Data first, maybe the FIN in the same wakeup: only
			 * whether RDHUP comes, within 1 s, is TCP's promise. */
			deadline = fl_sc_now() + 1.0;
			all = bits > 0 ? bits : 0;
			while (!(all & EPOLLRDHUP) && ev_ms_left(deadline)) {
				ev_script_join(&sc); /* the close is done */
				bits = ev_wait(EV_EPOLL_LT, ep, s, 0, ev_ms_left(deadline));
				if (bits > 0)
					all |= bits;
				else
					break;
			}
			fl_trace("peer closed after 100 bytes, reader in epoll_wait: IN %s, RDHUP %s",
				 all & EPOLLIN ? "yes" : "no",
				 all & EPOLLRDHUP ? "within 1 s" : "missing");
		}
		ev_script_join(&sc);
		r = ev_read(s, 0, n, 185, 1000, 1);
		fl_trace("  read %s", ev_verdict(&r, n, 1));
		close(s);
		close(ep);
	}
	return 0;
}
FL_SCENARIO("ev-close-during-epoll", FL_SC_REDIRECTS, sc_close_during_epoll)
