// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * wait_spin - epoll_wait() and a blocking receive of an enrolled socket
 * under the shim look for events up to FASTLOCAL_SPIN_USEC (default 20 us)
 * before they sleep (preload/base/spin.h); they must still be epoll_wait
 * and recv: every event delivered, a signal ending the wait as TCP's
 * (EINTR, or for a recv with SA_RESTART and no timeout, going on), the
 * timeout kept.
 *
 * A plain socket program run under the shim in the default configuration;
 * the pairs are warmed up (fl_t_warmup) so that both ends are enrolled.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "fltest.h"

static int fl_pair(int *c, int *s)
{
	if (fl_t_tcp_pair(AF_INET, c, s))
		return -1;
	return fl_t_warmup(*c, *s);
}

static int fl_epoll_for(int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	int ep = epoll_create1(0);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		return -1;
	return ep;
}

/* ------------------------------------------------ request/response */

struct fl_echo {
	int fd, err;
	long n;
};

/* Answers each 64 B request with its bytes, waiting in epoll_wait. */
static void *fl_echo_loop(void *arg)
{
	struct fl_echo *x = arg;
	struct epoll_event ev;
	char buf[64];
	int ep = fl_epoll_for(x->fd);
	long i;

	for (i = 0; i < x->n && ep >= 0; i++) {
		size_t got = 0;

		while (got < sizeof(buf)) {
			ssize_t r;

			if (epoll_wait(ep, &ev, 1, 5000) != 1) {
				x->err = 1;
				return NULL;
			}
			r = recv(x->fd, buf + got, sizeof(buf) - got, MSG_DONTWAIT);
			if (r <= 0 && !(r < 0 && errno == EAGAIN)) {
				x->err = 2;
				return NULL;
			}
			got += r > 0 ? (size_t)r : 0;
		}
		if (send(x->fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) {
			x->err = 3;
			return NULL;
		}
	}
	close(ep);
	return NULL;
}

/* Both ends wait in epoll_wait: the look before sleeping is what serves
 * them, and every byte must be the one sent. */
static int test_event_loops_exchange_20000_requests_each_byte_checked(void)
{
	struct fl_echo x = { .n = 20000 };
	struct epoll_event ev;
	char req[64], got[64];
	int c, s, ep;
	double t0;
	pthread_t th;
	uint64_t looked, found;
	long i;

	FL_T_CHECK(fl_pair(&c, &s) == 0, "no enrolled pair");
	x.fd = s;
	FL_T_CHECK((ep = fl_epoll_for(c)) >= 0, "epoll");
	looked = fl_t_status_u64("waits.looked");
	found = fl_t_status_u64("waits.found");
	FL_T_CHECK(looked != UINT64_MAX && found != UINT64_MAX, "fastlocal status has no waits.*");
	pthread_create(&th, NULL, fl_echo_loop, &x);
	t0 = fl_t_now();
	for (i = 0; i < x.n; i++) {
		size_t n = 0;

		memset(req, (int)('a' + i % 26), sizeof(req));
		req[0] = (char)(i & 0x7f);
		FL_T_CHECK(send(c, req, sizeof(req), 0) == (ssize_t)sizeof(req), "send %ld", i);
		while (n < sizeof(got)) {
			ssize_t r;

			FL_T_CHECK(epoll_wait(ep, &ev, 1, 5000) == 1, "request %ld: no answer in 5 s", i);
			r = recv(c, got + n, sizeof(got) - n, MSG_DONTWAIT);
			FL_T_CHECK(r > 0 || (r < 0 && errno == EAGAIN), "recv: %s", strerror(errno));
			n += r > 0 ? (size_t)r : 0;
		}
		FL_T_CHECK(!memcmp(got, req, sizeof(req)), "answer %ld differs from its request", i);
	}
	pthread_join(th, NULL);
	FL_T_CHECK_EQ(x.err, 0, "the echo loop failed");
	looked = fl_t_status_u64("waits.looked") - looked;
	found = fl_t_status_u64("waits.found") - found;
	printf("  %ld round trips through two epoll loops in %.2f s; %llu waits looked, %llu found "
	       "their answer meanwhile\n",
	       x.n, fl_t_now() - t0, (unsigned long long)looked, (unsigned long long)found);
	/* Counted: the status says whether the looks pay (observability.md).
	 * How many pay depends on the machine: under ASan with other tests
	 * running, 0 of 3694 did (the peer was not running meanwhile). */
	FL_T_CHECK(looked > 0 && found <= looked, "waits.found grew by %llu, waits.looked by %llu",
		   (unsigned long long)found, (unsigned long long)looked);
	close(ep);
	close(c);
	close(s);
	return 0;
}

/* ------------------------------------------------ signals */

static volatile int fl_hits; /* the handler's runs (one thread's) */

/* Waits that may run out instead of ending by their signal
 * (fl_signals_end_waits says why), and when each signal is sent. */
#define FL_MISSED_MAX 4
#define FL_SIGNAL_AFTER(i) ((i) % 10 == 9 ? 100e-6 : ((i) % 10) * 1.5e-6)

static void fl_on_usr1(int sig)
{
	(void)sig;
	fl_hits++;
}

enum fl_wait_kind { FL_WAIT_EPOLL, FL_WAIT_RECV, FL_WAIT_POLL };

static const char *const fl_wait_name[] = { "epoll_wait", "recv", "poll" };

struct fl_waiter {
	enum fl_wait_kind kind;
	int ep, fd, ready, sent, done, n, missed;
	int results[200], errs[200], early[200];
};

/* One wait of 200 ms: epoll_wait, poll, or a blocking recv of fd with
 * SO_RCVTIMEO; 0 when it ran out (recv: EAGAIN), -1 with errno. */
static int fl_wait_once(struct fl_waiter *w)
{
	struct epoll_event ev;
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	char b;
	ssize_t r;

	switch (w->kind) {
	case FL_WAIT_EPOLL:
		return epoll_wait(w->ep, &ev, 1, 200);
	case FL_WAIT_POLL:
		return poll(&p, 1, 200);
	case FL_WAIT_RECV:
		break;
	}
	r = recv(w->fd, &b, 1, 0);
	return r < 0 && errno == EAGAIN ? 0 : (int)r;
}

/* Waits on an idle socket 200 times; each wait must end by the signal the
 * main thread sends right after it starts (within the look or later). */
static void *fl_signal_waiter(void *arg)
{
	struct fl_waiter *w = arg;
	int i;

	for (i = 0; i < 200; i++) {
		__atomic_store_n(&w->ready, i + 1, __ATOMIC_RELEASE);
		double t0 = fl_t_now();

		w->early[i] = fl_hits != i; /* its handler ran before the call */
		w->results[i] = fl_wait_once(w);
		w->errs[i] = errno;
		/* A recv whose look spent the signal sleeps out its timeout,
		 * and the retry after the kernel's EAGAIN (rx_retry.h) then
		 * reports EINTR: only the time shows that the signal did not
		 * end the wait. */
		if (w->results[i] < 0 && fl_t_now() - t0 >= 0.1)
			w->results[i] = 0;
		while (__atomic_load_n(&w->sent, __ATOMIC_ACQUIRE) <= i)
			; /* its signal came before the wait ended: wait for the count */
		w->missed += !w->early[i] && w->results[i] == 0;
		if (w->missed > FL_MISSED_MAX)
			break; /* failed already: no need to wait out the rest */
	}
	w->n = i < 200 ? i + 1 : 200;
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * IMPORTANT: epoll_wait is never restarted after a handler, SA_RESTART or
 * not; event loops rely on the EINTR to look at the flag their handler
 * set. A look before sleeping that swallowed the signal and then slept
 * would hang such a loop: here the wait would end by its 200 ms timeout.
 * The signal comes 0 to 12 us after the wait starts, within the 20 us
 * look (every tenth one 100 us after, when the thread sleeps). A signal
 * whose handler runs before the call begins is the program's own race (epoll_pwait exists for it), and the test can only
 * see it up to its last look at the count: a waiter preempted between
 * that look and the call (two busy CPUs, ASan) loses its signal with or
 * without the shim, so 2% of the waits may run out. Shown able to fail:
 * with the look's check of the handler count taken out, the waits ran
 * out one after another.
 */

static int fl_signals_end_waits(int flags, enum fl_wait_kind kind)
{
	struct sigaction sa = { .sa_handler = fl_on_usr1, .sa_flags = flags };
	struct timeval tv = { 0, 200000 };
	struct fl_waiter w = { 0 };
	int c, s, i, early = 0, missed = 0;
	pthread_t th;

	fl_hits = 0;
	FL_T_CHECK(fl_pair(&c, &s) == 0, "no enrolled pair");
	FL_T_CHECK(!sigaction(SIGUSR1, &sa, NULL), "sigaction");
	w.kind = kind;
	w.fd = s;
	w.ep = -1;
	if (kind == FL_WAIT_RECV)
		FL_T_CHECK(!setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), "SO_RCVTIMEO");
	if (kind == FL_WAIT_EPOLL)
		FL_T_CHECK((w.ep = fl_epoll_for(s)) >= 0, "epoll");
	pthread_create(&th, NULL, fl_signal_waiter, &w);
	for (i = 0; i < 200; i++) {
		double t0;

		/* Spun for, not slept for: a thread woken on these machines
		 * takes longer than the look lasts. */
		while (__atomic_load_n(&w.ready, __ATOMIC_ACQUIRE) <= i &&
		       !__atomic_load_n(&w.done, __ATOMIC_ACQUIRE))
			;
		if (__atomic_load_n(&w.done, __ATOMIC_ACQUIRE))
			break;
		t0 = fl_t_now();
		while (fl_t_now() - t0 < FL_SIGNAL_AFTER(i))
			;
		pthread_kill(th, SIGUSR1);
		__atomic_store_n(&w.sent, i + 1, __ATOMIC_RELEASE);
	}
	pthread_join(th, NULL);
	for (i = 0; i < w.n; i++) {
		early += w.early[i];
		if (w.early[i])
			continue; /* before the call: the program's own race, shim or not */
		FL_T_CHECK(w.results[i] == -1 || w.results[i] == 0,
			   "wait %d returned %d: events on an idle socket", i, w.results[i]);
		FL_T_CHECK(w.results[i] == 0 || w.errs[i] == EINTR, "wait %d failed: %s", i,
			   strerror(w.errs[i]));
	}
	missed = w.missed;
	printf("  200 signals (%s, %s): %d before their wait began, %d waits ran out instead\n",
	       fl_wait_name[kind], flags ? "SA_RESTART" : "no SA_RESTART", early,
	       missed);
	FL_T_CHECK(early < 100, "%d of 200 signals came before their wait began", early);
	FL_T_CHECK(missed <= FL_MISSED_MAX, "%d waits ran out instead of ending by their signal "
		   "(at most %d may)", missed, FL_MISSED_MAX);
	if (w.ep >= 0)
		close(w.ep);
	close(c);
	close(s);
	return 0;
}

static int test_a_signal_ends_the_wait_with_eintr(void)
{
	return fl_signals_end_waits(0, FL_WAIT_EPOLL);
}

static int test_a_signal_ends_the_wait_with_eintr_with_sa_restart(void)
{
	return fl_signals_end_waits(SA_RESTART, FL_WAIT_EPOLL);
}

/* poll is never restarted either. */
static int test_a_signal_ends_poll_with_eintr_with_sa_restart_too(void)
{
	return fl_signals_end_waits(SA_RESTART, FL_WAIT_POLL);
}

/* A socket with SO_RCVTIMEO: TCP's recv ends with EINTR at a handler,
 * SA_RESTART or not (sock_intr_errno). */
static int test_a_signal_ends_a_blocking_recv_with_eintr(void)
{
	return fl_signals_end_waits(0, FL_WAIT_RECV);
}

static int test_a_signal_ends_a_blocking_recv_with_a_timeout_with_sa_restart_too(void)
{
	return fl_signals_end_waits(SA_RESTART, FL_WAIT_RECV);
}

/* Without a timeout and with SA_RESTART, TCP restarts the recv: a signal
 * during the look must not end it; the byte sent 5 ms later is its answer. */
struct fl_restarted {
	int fd, ready;
	ssize_t r;
	int err;
	char b;
};

static void *fl_restarted_recv(void *arg)
{
	struct fl_restarted *x = arg;

	__atomic_store_n(&x->ready, 1, __ATOMIC_RELEASE);
	x->r = recv(x->fd, &x->b, 1, 0);
	x->err = errno;
	return NULL;
}

static int test_with_sa_restart_a_blocking_recv_goes_on_to_its_byte(void)
{
	struct sigaction sa = { .sa_handler = fl_on_usr1, .sa_flags = SA_RESTART };
	int c, s, i;

	FL_T_CHECK(fl_pair(&c, &s) == 0, "no enrolled pair");
	FL_T_CHECK(!sigaction(SIGUSR1, &sa, NULL), "sigaction");
	for (i = 0; i < 50; i++) {
		struct fl_restarted x = { .fd = s };
		pthread_t th;
		double t0;

		fl_hits = 0;
		pthread_create(&th, NULL, fl_restarted_recv, &x);
		while (!__atomic_load_n(&x.ready, __ATOMIC_ACQUIRE))
			;
		t0 = fl_t_now();
		while (fl_t_now() - t0 < (i % 10) * 1.5e-6)
			;
		pthread_kill(th, SIGUSR1);
		usleep(5000);
		FL_T_CHECK(send(c, "y", 1, 0) == 1, "send");
		pthread_join(th, NULL);
		FL_T_CHECK(x.r == 1 && x.b == 'y', "recv %d returned %zd (%s) instead of its byte", i,
			   x.r, x.r < 0 ? strerror(x.err) : "");
	}
	close(c);
	close(s);
	return 0;
}

/* ------------------------------------------------ timeout */

static int test_the_timeout_is_kept(void)
{
	struct epoll_event ev;
	int c, s, ep, i, r;
	double t0, t;

	FL_T_CHECK(fl_pair(&c, &s) == 0, "no enrolled pair");
	FL_T_CHECK((ep = fl_epoll_for(s)) >= 0, "epoll");
	for (i = 0; i < 20; i++) {
		t0 = fl_t_now();
		r = epoll_wait(ep, &ev, 1, 10);
		t = fl_t_now() - t0;
		FL_T_CHECK_EQ(r, 0, "an idle wait of 10 ms returned events");
		FL_T_CHECK(t >= 0.0099, "a 10 ms wait returned after %.3f ms", t * 1e3);
		FL_T_CHECK(t < 0.5, "a 10 ms wait took %.1f ms", t * 1e3);
	}
	/* and a byte that comes during the wait ends it */
	FL_T_CHECK(send(c, "x", 1, 0) == 1, "send");
	FL_T_CHECK_EQ(epoll_wait(ep, &ev, 1, 1000), 1, "the byte sent was not reported");
	close(ep);
	close(c);
	close(s);
	return 0;
}

int main(void)
{
	FL_T_RUN("two event loops exchange 20000 requests, every byte checked",
		 test_event_loops_exchange_20000_requests_each_byte_checked);
	FL_T_RUN("a signal during epoll_wait ends it with EINTR, 200 times",
		 test_a_signal_ends_the_wait_with_eintr);
	FL_T_RUN("a signal during epoll_wait ends it with EINTR with SA_RESTART too, 200 times",
		 test_a_signal_ends_the_wait_with_eintr_with_sa_restart);
	FL_T_RUN("epoll_wait keeps its timeout and reports a byte that comes",
		 test_the_timeout_is_kept);
	FL_T_RUN("a signal during poll ends it with EINTR with SA_RESTART, 200 times",
		 test_a_signal_ends_poll_with_eintr_with_sa_restart_too);
	FL_T_RUN("a signal during a blocking recv with SO_RCVTIMEO ends it with EINTR, 200 times",
		 test_a_signal_ends_a_blocking_recv_with_eintr);
	FL_T_RUN("a signal during a blocking recv with SO_RCVTIMEO ends it with EINTR with "
		 "SA_RESTART too, 200 times",
		 test_a_signal_ends_a_blocking_recv_with_a_timeout_with_sa_restart_too);
	FL_T_RUN("with SA_RESTART and no timeout a signal leaves a blocking recv waiting for its "
		 "byte, 50 times",
		 test_with_sa_restart_a_blocking_recv_goes_on_to_its_byte);
	return fl_t_exit_status();
}
