// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * slow_reader - flow control (docs/kernel.md#no-backpressure): a receiver
 * that reads slowly, or not at all, bounds what a sender can queue, as plain
 * TCP does.
 *
 * Raw sockmap redirection has no backpressure: a non-blocking sender had
 * 64 MiB accepted with nobody reading. Under the shim a redirected direction
 * keeps at most the receiver's budget unread (the SO_RCVBUF it asked for when
 * the application set one, else 7/8 of the maximum of tcp_rmem), then falls back to
 * TCP, whose window ends in EAGAIN; a blocking writer waits for the reader.
 *
 * Runs in a network namespace of its own. Note that the "mem" figure of
 * /proc/net/sockstat is tcp_memory_allocated, which the kernel keeps for the
 * whole host, not per namespace, so the memory check is made against a
 * baseline taken just before the stream, and the bytes in flight between
 * the application's writer and reader are checked as well (exact, this
 * test's own). That figure is host-wide: another test streaming at the
 * same time would add its own memory, so this one runs alone.
 */
/* fl-test-alone: checks /proc/net/sockstat TCP memory, which is host-wide */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "fltest.h"
#include "fltest_netns.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)
#define FL_CHUNK (64 * 1024)
#define FL_PAGE 4096ULL

/* Everything a subtest opened, closed whatever happens. */
struct fl_fds {
	int fd[8];
	int n;
};

static int fl_keep(struct fl_fds *f, int fd)
{
	if (fd >= 0 && f->n < 8)
		f->fd[f->n++] = fd;
	return fd;
}

static void fl_close_all(struct fl_fds *f)
{
	while (f->n > 0)
		close(f->fd[--f->n]);
}

static int fl_sockopt_int(int fd, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, name, &v, &len) ? -1 : v;
}

/* The three numbers of a /proc/sys/net/ipv4/tcp_[rw]mem file. */
static int fl_tcp_mem3(const char *name, unsigned long long v[3])
{
	char path[96];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]);
	fclose(f);
	return n == 3 ? 0 : -1;
}

/* "TCP: ... mem N" of /proc/net/sockstat: pages, or -1. */
static long long fl_sockstat_tcp_mem(void)
{
	char line[256];
	long long v = -1;
	FILE *f = fopen("/proc/net/sockstat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *m;

		if (strncmp(line, "TCP:", 4) || !(m = strstr(line, " mem ")))
			continue;
		v = strtoll(m + 5, NULL, 10);
		break;
	}
	fclose(f);
	return v;
}

/* A connected loopback pair whose listener had SO_RCVBUF = rcvbuf (0: not
 * set) before accept(): the accepted socket inherits it. */
static int fl_pair(struct fl_fds *f, int rcvbuf, int *client, int *server)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int lfd, one = 1;

	lfd = fl_keep(f, socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	FL_T_CHECK(lfd >= 0, "socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (rcvbuf)
		FL_T_CHECK(setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) == 0,
			   "SO_RCVBUF on the listener: %s", strerror(errno));
	FL_T_CHECK(bind(lfd, (struct sockaddr *)&a, len) == 0 && listen(lfd, 8) == 0 &&
		   getsockname(lfd, (struct sockaddr *)&a, &len) == 0, "listen: %s",
		   strerror(errno));
	*client = fl_keep(f, socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	FL_T_CHECK(*client >= 0, "socket: %s", strerror(errno));
	FL_T_CHECK(connect(*client, (struct sockaddr *)&a, len) == 0, "connect: %s",
		   strerror(errno));
	*server = fl_keep(f, accept4(lfd, NULL, NULL, SOCK_CLOEXEC));
	FL_T_CHECK(*server >= 0, "accept: %s", strerror(errno));
	/* Flow control is the redirect path's: the warm-up enrolls both ends
	 * (in the default configuration, once they have moved 4096 bytes). */
	FL_T_CHECK(fl_t_warmup(*client, *server) == 0, "warm-up");
	return 0;
}

/* Reads exactly len pattern bytes starting at stream offset off; checks them. */
static int fl_read_exact(int fd, uint64_t off, uint64_t len, uint64_t seed)
{
	static uint8_t buf[1 << 20];
	uint64_t got = 0;

	while (got < len) {
		size_t want = len - got < sizeof(buf) ? (size_t)(len - got) : sizeof(buf);
		ssize_t r = read(fd, buf, want);
		int64_t bad;

		if (r < 0 && errno == EINTR)
			continue;
		FL_T_CHECK(r > 0, "read at offset %llu of %llu: %s", (unsigned long long)(off + got),
			   (unsigned long long)(off + len), r ? strerror(errno) : "early EOF");
		bad = fl_t_pattern_check(buf, off + got, (size_t)r, seed);
		FL_T_CHECK(bad < 0, "byte %lld is wrong (lost, duplicated or reordered data)",
			   (long long)bad);
		got += (uint64_t)r;
	}
	return 0;
}

/* ------------------------------------------------------ (a) non-blocking */

static int fl_nonblocking_body(struct fl_fds *f)
{
	const uint64_t seed = 77, cap = 256 * MiB;
	static uint8_t buf[FL_CHUNK];
	uint64_t red0, fb0, flow0, red1, fb1, flow1, gate0, gate1, off = 0, bound, resume;
	int c, s, ep, rcvbuf, snd0, snd1, n, flags;
	struct epoll_event ev = { .events = EPOLLOUT };
	struct timeval tmo = { .tv_sec = 5 };
	double t0, waited;

	if (fl_pair(f, 256 * KiB, &c, &s))
		return -1;
	/* The budget: what the accepted socket reads back (the kernel doubles). */
	rcvbuf = fl_sockopt_int(s, SO_RCVBUF);
	FL_T_CHECK(rcvbuf >= (int)(256 * KiB), "the accepted socket did not inherit SO_RCVBUF "
		   "(reads back %d)", rcvbuf);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)); /* a stall fails, not hangs */
	flags = fcntl(c, F_GETFL);
	FL_T_CHECK(flags >= 0 && fcntl(c, F_SETFL, flags | O_NONBLOCK) == 0, "O_NONBLOCK: %s",
		   strerror(errno));
	snd0 = fl_sockopt_int(c, SO_SNDBUF);

	red0 = fl_t_status_u64("redirected_bytes");
	fb0 = fl_t_status_u64("flow_control_fallbacks");
	flow0 = fl_t_status_u64("passed_bytes_by_reason.flow_control");
	gate0 = fl_t_status_u64("gate_opened");
	FL_T_CHECK(red0 != UINT64_MAX && fb0 != UINT64_MAX && flow0 != UINT64_MAX &&
		   gate0 != UINT64_MAX, "status --json gave no counters");

	/* The server reads nothing; the client writes until EAGAIN. */
	for (;;) {
		ssize_t w;

		fl_t_pattern(buf, off, sizeof(buf), seed);
		w = write(c, buf, sizeof(buf));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		FL_T_CHECK(w > 0, "write at offset %llu: %s", (unsigned long long)off,
			   w ? strerror(errno) : "wrote 0 bytes");
		off += (uint64_t)w;
		FL_T_CHECK(off < cap, "%llu bytes accepted with nobody reading: no backpressure "
			   "(docs/kernel.md#no-backpressure)", (unsigned long long)off);
	}
	snd1 = fl_sockopt_int(c, SO_SNDBUF);
	red1 = fl_t_status_u64("redirected_bytes");
	fb1 = fl_t_status_u64("flow_control_fallbacks");
	flow1 = fl_t_status_u64("passed_bytes_by_reason.flow_control");
	bound = 2ULL * (uint64_t)rcvbuf + (uint64_t)snd1 + (uint64_t)rcvbuf;
	printf("  budget (receiver's SO_RCVBUF read back) %d, sender's SO_SNDBUF %d (%d before), "
	       "accepted %llu before EAGAIN, bound 2 x budget + SO_SNDBUF + SO_RCVBUF = %llu; "
	       "redirected %llu, passed for flow control %llu, %llu flow-control fallbacks\n",
	       rcvbuf, snd1, snd0, (unsigned long long)off, (unsigned long long)bound,
	       (unsigned long long)(red1 - red0), (unsigned long long)(flow1 - flow0),
	       (unsigned long long)(fb1 - fb0));
	FL_T_CHECK(off < bound, "%llu bytes accepted with nobody reading, bound %llu",
		   (unsigned long long)off, (unsigned long long)bound);
	FL_T_CHECK(red1 - red0 > 0, "nothing was redirected");
	/* Nothing was read, so every redirected byte is unread: at most the
	 * budget plus one message (docs/design.md, section 3). */
	FL_T_CHECK(red1 - red0 <= (uint64_t)rcvbuf + FL_CHUNK, "%llu bytes redirected and unread, "
		   "over the budget %d + one message", (unsigned long long)(red1 - red0), rcvbuf);
	FL_T_CHECK(fb1 > fb0, "flow_control_fallbacks did not grow");

	/* Level-triggered EPOLLOUT after EAGAIN: not writable (no busy loop). */
	ep = fl_keep(f, epoll_create1(EPOLL_CLOEXEC));
	FL_T_CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev) == 0, "epoll: %s",
		   strerror(errno));
	t0 = fl_t_now();
	n = epoll_wait(ep, &ev, 1, 100);
	waited = fl_t_now() - t0;
	FL_T_CHECK(n == 0, "epoll_wait reported the full socket %s (events 0x%x) after %.3fs",
		   n > 0 ? "writable" : "in error", n > 0 ? ev.events : 0, waited);
	FL_T_CHECK(waited >= 0.09, "epoll_wait returned after %.3fs, not 0.1s", waited);

	/* The server drains: every accepted byte, in order. */
	if (fl_read_exact(s, 0, off, seed))
		return -1;
	n = epoll_wait(ep, &ev, 1, 1000);
	FL_T_CHECK(n == 1 && (ev.events & EPOLLOUT), "not writable again after the drain");

	/*
	 * Back on redirect once the reader caught up: half a budget more, each
	 * write read at once. The first write after the EAGAIN is the
	 * exception: the kernel keeps the verdict of the message whose push to
	 * TCP failed (psock->eval stays __SK_PASS when tcp_bpf_push() fails) and
	 * sends the next one over TCP without running the program at all.
	 */
	resume = (uint64_t)rcvbuf / 2;
	red0 = fl_t_status_u64("redirected_bytes");
	for (uint64_t end = off + resume; off < end;) {
		size_t len = end - off < sizeof(buf) ? (size_t)(end - off) : sizeof(buf);
		ssize_t w;

		fl_t_pattern(buf, off, len, seed);
		w = write(c, buf, len);
		FL_T_CHECK(w > 0, "write after the drain: %s", w ? strerror(errno) : "0 bytes");
		if (fl_read_exact(s, off, (uint64_t)w, seed))
			return -1;
		off += (uint64_t)w;
	}
	red1 = fl_t_status_u64("redirected_bytes");
	gate1 = fl_t_status_u64("gate_opened");
	printf("  after the drain: %llu more bytes, %llu redirected, gate opened %llu times in "
	       "all\n", (unsigned long long)resume, (unsigned long long)(red1 - red0),
	       (unsigned long long)(gate1 - gate0));
	FL_T_CHECK(red1 - red0 >= resume - FL_CHUNK, "after the drain only %llu of %llu bytes "
		   "were redirected", (unsigned long long)(red1 - red0),
		   (unsigned long long)resume);
	FL_T_CHECK(gate1 - gate0 >= 2, "the gate did not open again after the fallback");

	/* Nothing more than was written: EOF after the last byte. */
	shutdown(c, SHUT_WR);
	FL_T_CHECK(read(s, buf, sizeof(buf)) == 0, "extra bytes or no EOF after the stream");
	return 0;
}

static int test_nonblocking_sender(void)
{
	struct fl_fds f = { .n = 0 };
	int r = fl_nonblocking_body(&f);

	fl_close_all(&f);
	return r;
}

/* ------------------------------------------------ (b) blocking, slow reader */

struct fl_slow {
	int wfd, rfd;
	uint64_t total, seed;
	uint64_t written, read;  /* atomics: progress of each side */
	int done;                /* atomic: the reader finished (or failed) */
	int werr, rerr;
	int64_t bad;
	double t0, slow_for;
	/* sampler results */
	long long mem_max;
	uint64_t inflight_max;
	int samples;
};

static void *fl_slow_writer(void *arg)
{
	struct fl_slow *s = arg;
	static uint8_t buf[FL_CHUNK];
	uint64_t off = 0;

	while (off < s->total) {
		size_t done = 0;

		fl_t_pattern(buf, off, sizeof(buf), s->seed);
		while (done < sizeof(buf)) {
			ssize_t w = write(s->wfd, buf + done, sizeof(buf) - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				s->werr = w < 0 ? errno : EPIPE;
				return NULL;
			}
			done += (size_t)w;
			__atomic_store_n(&s->written, off + done, __ATOMIC_RELAXED);
		}
		off += sizeof(buf);
	}
	return NULL;
}

static void *fl_slow_sampler(void *arg)
{
	struct fl_slow *s = arg;
	struct timespec ten_ms = { 0, 10 * 1000 * 1000 };

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		long long mem = fl_sockstat_tcp_mem();
		uint64_t r = __atomic_load_n(&s->read, __ATOMIC_RELAXED);
		uint64_t w = __atomic_load_n(&s->written, __ATOMIC_RELAXED);

		if (mem > s->mem_max)
			s->mem_max = mem;
		if (w > r && w - r > s->inflight_max)
			s->inflight_max = w - r;
		s->samples++;
		nanosleep(&ten_ms, NULL);
	}
	return NULL;
}

/* 64 KiB reads with a 200 us pause for the first slow_for seconds, then
 * 1 MiB reads at full speed; every byte checked. */
static void fl_slow_read(struct fl_slow *s)
{
	static uint8_t buf[1 << 20];
	struct timespec pause = { 0, 200 * 1000 };
	uint64_t got = 0;

	while (got < s->total) {
		int slow = fl_t_now() - s->t0 < s->slow_for;
		ssize_t r = read(s->rfd, buf, slow ? FL_CHUNK : sizeof(buf));
		int64_t bad;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			s->rerr = r < 0 ? errno : ECONNRESET;
			break;
		}
		bad = fl_t_pattern_check(buf, got, (size_t)r, s->seed);
		if (bad >= 0 && s->bad < 0)
			s->bad = bad;
		got += (uint64_t)r;
		__atomic_store_n(&s->read, got, __ATOMIC_RELAXED);
		if (s->bad >= 0)
			break;
		if (slow)
			nanosleep(&pause, NULL);
	}
}

static int fl_slow_body(struct fl_fds *f, struct fl_slow *s, pthread_t *wth, pthread_t *sth,
			int *started)
{
	unsigned long long rmem[3], wmem[3];
	uint64_t red0, red1, thr0, thr1, pass0, pass1, budget, bound_pages, bound_inflight;
	struct timeval tmo = { .tv_sec = 10 };
	long long base;
	int c, sv;

	FL_T_CHECK(fl_tcp_mem3("tcp_rmem", rmem) == 0 && fl_tcp_mem3("tcp_wmem", wmem) == 0,
		   "cannot read tcp_rmem/tcp_wmem");
	if (fl_pair(f, 0, &c, &sv))
		return -1;
	/* No SO_RCVBUF: the budget is 7/8 of the maximum of tcp_rmem; the
	 * bound below takes all of it. */
	budget = rmem[2];
	s->wfd = c;
	s->rfd = sv;
	/* A stall fails with EAGAIN instead of hanging the suite. */
	setsockopt(sv, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));

	red0 = fl_t_status_u64("redirected_bytes");
	thr0 = fl_t_status_u64("throttled_writes");
	pass0 = fl_t_status_u64("passed_bytes");
	FL_T_CHECK(red0 != UINT64_MAX && thr0 != UINT64_MAX && pass0 != UINT64_MAX,
		   "status --json gave no counters");
	base = fl_sockstat_tcp_mem();
	FL_T_CHECK(base >= 0, "cannot read /proc/net/sockstat");
	s->mem_max = base;
	s->t0 = fl_t_now();
	FL_T_CHECK(pthread_create(sth, NULL, fl_slow_sampler, s) == 0, "no sampler thread");
	*started |= 1;
	FL_T_CHECK(pthread_create(wth, NULL, fl_slow_writer, s) == 0, "no writer thread");
	*started |= 2;
	fl_slow_read(s);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	pthread_join(*sth, NULL);
	*started &= ~1;
	if (s->rerr || s->bad >= 0)
		shutdown(c, SHUT_RDWR); /* unblock the writer */
	pthread_join(*wth, NULL);
	*started &= ~2;

	red1 = fl_t_status_u64("redirected_bytes");
	thr1 = fl_t_status_u64("throttled_writes");
	pass1 = fl_t_status_u64("passed_bytes");
	/*
	 * The bound. Redirected bytes unread never exceed the budget (the
	 * verdict's rule); bytes that fall back to TCP are bounded by TCP
	 * itself: the sender's buffer (tcp_wmem max) and the receive queue,
	 * which autotuning grows only with what the reader consumes and a slow
	 * reader keeps near tcp_rmem's default, given 4 MiB here; plus 4 MiB
	 * for skb overhead and the per-CPU reserves of tcp_memory_allocated.
	 * Raw redirection, by contrast, would queue the whole 256 MiB.
	 */
	bound_inflight = budget + wmem[2] + 4 * MiB;
	bound_pages = (bound_inflight + 4 * MiB) / FL_PAGE;
	printf("  256 MiB in 64 KiB writes, reader slow for %.1fs: %.2fs, sockstat TCP mem "
	       "%lld pages before, max %lld (+%lld) in %d samples, bound +%llu pages "
	       "((budget %llu + tcp_wmem max %llu + 8 MiB) / 4096); max in flight %llu bytes, "
	       "bound %llu; redirected %llu, passed %llu, throttled writes %llu\n",
	       s->slow_for, fl_t_now() - s->t0, base, s->mem_max, s->mem_max - base, s->samples,
	       (unsigned long long)bound_pages, (unsigned long long)budget,
	       (unsigned long long)wmem[2], (unsigned long long)s->inflight_max,
	       (unsigned long long)bound_inflight, (unsigned long long)(red1 - red0),
	       (unsigned long long)(pass1 - pass0), (unsigned long long)(thr1 - thr0));
	FL_T_CHECK(!s->werr, "write: %s", strerror(s->werr));
	FL_T_CHECK(!s->rerr, "read after %llu bytes: %s", (unsigned long long)s->read,
		   strerror(s->rerr));
	FL_T_CHECK(s->bad < 0, "byte %lld is wrong (lost, duplicated or reordered data)",
		   (long long)s->bad);
	FL_T_CHECK(s->read == s->total, "read %llu of %llu bytes", (unsigned long long)s->read,
		   (unsigned long long)s->total);
	FL_T_CHECK(s->samples >= 10, "only %d memory samples", s->samples);
	FL_T_CHECK(s->inflight_max <= bound_inflight, "%llu bytes in flight, over the bound %llu",
		   (unsigned long long)s->inflight_max, (unsigned long long)bound_inflight);
	FL_T_CHECK((uint64_t)(s->mem_max - base) < bound_pages, "TCP memory grew by %lld pages, "
		   "over the bound %llu", s->mem_max - base, (unsigned long long)bound_pages);
	FL_T_CHECK(thr1 > thr0, "the blocking writer never waited for the slow reader");
	FL_T_CHECK(red1 - red0 >= s->total / 2, "only %llu of %llu bytes were redirected",
		   (unsigned long long)(red1 - red0), (unsigned long long)s->total);
	return 0;
}

static int test_blocking_slow_reader(void)
{
	struct fl_fds f = { .n = 0 };
	struct fl_slow s = { .total = 256 * MiB, .seed = 99, .bad = -1, .slow_for = 1.0 };
	pthread_t wth, sth;
	int started = 0, r;

	r = fl_slow_body(&f, &s, &wth, &sth, &started);
	if (started) {
		/* A failed check left threads running: stop them, then close. */
		__atomic_store_n(&s.done, 1, __ATOMIC_RELEASE);
		if (started & 2)
			shutdown(s.wfd, SHUT_RDWR);
		if (started & 1)
			pthread_join(sth, NULL);
		if (started & 2)
			pthread_join(wth, NULL);
	}
	fl_close_all(&f);
	return r;
}

static void fl_on_alarm(int sig)
{
	static const char msg[] = "FAIL: slow_reader: timed out (a subtest hung)\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(1);
}

int main(void)
{
	if (fl_t_private_netns()) {
		perror("slow_reader: cannot create a private network namespace");
		return 1;
	}
	signal(SIGALRM, fl_on_alarm);
	signal(SIGPIPE, SIG_IGN);
	alarm(55); /* a hang fails the test instead of the suite */
	FL_T_RUN("a non-blocking sender to a reader that reads nothing gets EAGAIN within "
		 "2 budgets + the socket buffers, then every byte in order", test_nonblocking_sender);
	FL_T_RUN("a blocking 256 MiB stream to a slow reader keeps TCP memory bounded and "
		 "arrives byte-exact", test_blocking_slow_reader);
	return fl_t_exit_status();
}
