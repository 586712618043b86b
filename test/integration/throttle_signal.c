// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * throttle_signal - a signal that reaches a writer while the shim holds it
 * for its reader ends the write as it ends TCP's (signal(7)).
 *
 * A blocking writer whose reader is a budget behind waits in the shim
 * (preload/tx/throttle.c), where TCP's would wait in the kernel for room.
 * The shim's wait used to end on a signal and then hand the write to the
 * kernel, which took it over TCP: the handler had run, the write went on,
 * and a program that times out a send with alarm() without SA_RESTART
 * then waited in the kernel for a reader that never came. A handler
 * without SA_RESTART, or a socket with SO_SNDTIMEO, ends TCP's wait with
 * EINTR (or the count already sent); with SA_RESTART and no timeout TCP
 * goes on waiting. Checked with default settings: the writer is sent its
 * signal once it sleeps in the shim (its system call, read from /proc, is
 * clock_nanosleep), and every byte it was told went arrives, in order.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "fltest.h"

#define FL_CHUNK (64 * 1024)
#define FL_CAP (64ULL << 20) /* the write that is never interrupted ends here */
#define FL_RCVBUF (256 * 1024) /* the reader's budget: reached at once */

/* A check that fails the subtest and goes on, so that the writer thread
 * is always freed and joined. */
#define FL_EXPECT(ok, cond, ...)                                        \
	((cond) ? true : (fl_t_fail(__FILE__, __LINE__, __VA_ARGS__), (ok) = false))

static volatile sig_atomic_t fl_handled;

static void fl_on_usr1(int sig)
{
	(void)sig;
	fl_handled++;
}

struct fl_writer {
	int fd;
	pid_t tid;     /* the writer thread's, for /proc and tgkill */
	uint64_t sent; /* bytes its sends returned */
	ssize_t last;  /* the last send's return */
	int err;       /* and its errno */
	int done;
};

static void *fl_writer_main(void *arg)
{
	struct fl_writer *w = arg;
	static uint8_t buf[FL_CHUNK];

	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (w->sent < FL_CAP) {
		fl_t_pattern(buf, w->sent, sizeof(buf), 77);
		w->last = send(w->fd, buf, sizeof(buf), MSG_NOSIGNAL);
		w->err = errno;
		if (w->last > 0)
			w->sent += (uint64_t)w->last;
		if (w->last != (ssize_t)sizeof(buf))
			break;
	}
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* True once thread tid sleeps in clock_nanosleep (the shim's wait). */
static bool fl_in_nanosleep(pid_t tid)
{
	return fl_t_thread_syscall(tid) == SYS_clock_nanosleep;
}

static bool fl_wait_done(struct fl_writer *w, double secs)
{
	double end = fl_t_now() + secs;

	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) && fl_t_now() < end)
		usleep(1000);
	return __atomic_load_n(&w->done, __ATOMIC_ACQUIRE);
}

/*
 * flags: the handler's sa_flags; timeo: SO_SNDTIMEO in seconds (0: none);
 * ends: whether TCP's write ends at the signal (else it goes on, and the
 * reader then takes everything).
 */
static int fl_signal_body(int sa_flags, int timeo, bool ends)
{
	static uint8_t buf[FL_CHUNK];
	struct sigaction sa = { 0 };
	struct fl_writer w = { 0 };
	int c = -1, s = -1, rcvbuf = FL_RCVBUF;
	uint64_t got = 0;
	bool ok = true, waiting;
	pthread_t th;
	double t0;

	sa.sa_handler = fl_on_usr1;
	sa.sa_flags = sa_flags;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	fl_handled = 0;
	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "a connected pair");
	FL_T_CHECK(fl_t_warmup(c, s) == 0, "the warm-up");
	/* The reader's budget: its SO_RCVBUF as read back (design.md §3). */
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (timeo) {
		struct timeval tv = { timeo, 0 };

		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	w.fd = c;
	FL_T_CHECK(pthread_create(&th, NULL, fl_writer_main, &w) == 0, "pthread_create");
	t0 = fl_t_now();
	do {
		usleep(200);
		waiting = __atomic_load_n(&w.tid, __ATOMIC_ACQUIRE) && fl_in_nanosleep(w.tid);
	} while (!waiting && !__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) && fl_t_now() - t0 < 10);
	if (FL_EXPECT(ok, waiting,
		      "the writer waits in the shim for its reader (%llu bytes sent, last "
		      "send %zd %s)",
		      (unsigned long long)w.sent, w.last, strerror(w.err)))
		syscall(SYS_tgkill, getpid(), w.tid, SIGUSR1);
	if (ok && ends) {
		FL_EXPECT(ok, fl_wait_done(&w, 3),
			  "the signal ends the write within 3 s (it went on: %llu bytes sent)",
			  (unsigned long long)w.sent);
		if (ok)
			FL_EXPECT(ok, (w.last < 0 && w.err == EINTR) || (w.last >= 0 && w.last < FL_CHUNK),
				  "the write ends with EINTR or the count it sent (got %zd, %s)",
				  w.last, w.last < 0 ? strerror(w.err) : "no error");
	} else if (ok) {
		usleep(300 * 1000); /* TCP's write would go on waiting for room */
		FL_EXPECT(ok, !__atomic_load_n(&w.done, __ATOMIC_ACQUIRE),
			  "with SA_RESTART and no timeout the write waits on (it ended: %zd %s)",
			  w.last, w.last < 0 ? strerror(w.err) : "");
	}
	FL_EXPECT(ok, fl_handled == 1, "the handler ran once (%d)", (int)fl_handled);
	/* The reader takes everything: the writer, if still writing, goes on
	 * to its cap; every byte it was told went must arrive, in order. */
	while (!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) || got < w.sent) {
		ssize_t n = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
		int64_t bad;

		if (n < 0 && errno == EAGAIN) {
			usleep(100);
			continue;
		}
		if (!FL_EXPECT(ok, n > 0, "the reader: %zd %s after %llu bytes", n,
			       n < 0 ? strerror(errno) : "EOF", (unsigned long long)got))
			break;
		bad = fl_t_pattern_check(buf, got, (size_t)n, 77);
		if (!FL_EXPECT(ok, bad < 0, "byte %llu is wrong",
			       (unsigned long long)(got + (uint64_t)bad)))
			break;
		got += (uint64_t)n;
	}
	if (!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE))
		shutdown(c, SHUT_RDWR); /* a failed reader: free the writer */
	pthread_join(th, NULL);
	FL_EXPECT(ok, got == w.sent, "every byte sent arrived (%llu of %llu)",
		  (unsigned long long)got, (unsigned long long)w.sent);
	if (!ends)
		FL_EXPECT(ok, w.sent == FL_CAP, "once the reader reads, the write goes on to its end");
	close(c);
	close(s);
	signal(SIGUSR1, SIG_IGN);
	return ok ? 0 : -1;
}

static int test_no_restart(void) { return fl_signal_body(0, 0, true); }
static int test_timeout(void) { return fl_signal_body(SA_RESTART, 5, true); }
static int test_restart(void) { return fl_signal_body(SA_RESTART, 0, false); }

static void fl_on_alarm(int sig)
{
	static const char msg[] = "FAIL: throttle_signal: timed out (a subtest hung)\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(1);
}

int main(void)
{
	signal(SIGALRM, fl_on_alarm);
	signal(SIGPIPE, SIG_IGN);
	alarm(100); /* a hang fails the test instead of the suite */
	FL_T_RUN("a handler without SA_RESTART ends a write held for its reader with EINTR",
		 test_no_restart);
	FL_T_RUN("a handler with SA_RESTART ends a held write on a socket with SO_SNDTIMEO",
		 test_timeout);
	FL_T_RUN("a handler with SA_RESTART leaves a held write without timeout waiting, and "
		 "every byte arrives once the reader reads",
		 test_restart);
	return fl_t_exit_status();
}
