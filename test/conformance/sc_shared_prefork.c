// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sc_shared_prefork.c - the prefork server: one listener shared by fork
 * among several worker processes, each blocked in accept() (or in poll or
 * epoll_wait on the listener, then a non-blocking accept) and serving the
 * connections it gets, one at a time.
 *
 * 4 workers serve 16 client connections (4 client threads of this process,
 * 4 connections each, one after the other); each connection carries 1 MiB
 * that the worker echoes, byte-exact, then EOF both ways. The listener is
 * the shared socket here; every connection is held by one worker and one
 * client thread alone, so every one of them enrolls and redirects under the
 * shim (FL_SC_REDIRECTS), whatever FASTLOCAL_ENROLL_AFTER is. The trace:
 * each connection's verdict, how many connections the workers served in
 * all (which worker served which is the kernel's choice), their exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "conformance.h"
#include "sc_shared.h"

#define PF_WORKERS 4
#define PF_CLIENTS 4 /* threads */
#define PF_CONNS   4 /* per client thread, one after the other */

enum pf_wait { PF_ACCEPT, PF_POLL, PF_EPOLL };

/* One connection served: echo until EOF, then close. 0 or -1. */
static int pf_serve(int a)
{
	static uint8_t buf[SH_CHUNK];

	for (;;) {
		ssize_t n = read(a, buf, sizeof(buf)), done = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (n == 0) {
			close(a);
			return 0;
		}
		while (done < n) {
			ssize_t w = write(a, buf + done, (size_t)(n - done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				goto fail;
			done += w;
		}
	}
fail:
	close(a);
	return -1;
}

/* A worker: waits on the shared listener until it is shut down (accept
 * then fails with EINVAL), serving each connection it gets. Sends its
 * count of served and failed connections to the parent. */
static void pf_worker(int l, enum pf_wait w, int out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = -1, served = 0, failed = 0;
	char msg[32];

	alarm(30);
	if (w == PF_EPOLL) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev))
			_exit(2);
	}
	for (;;) {
		struct pollfd p = { .fd = l, .events = POLLIN };
		int a;

		if (w == PF_POLL && poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
		if (w == PF_EPOLL && epoll_wait(ep, &ev, 1, -1) < 0 && errno != EINTR)
			break;
		a = accept(l, NULL, NULL);
		if (a < 0 && (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED))
			continue; /* another worker took it (non-blocking listener) */
		if (a < 0)
			break; /* EINVAL: the listener was shut down */
		if (pf_serve(a))
			failed++;
		else
			served++;
	}
	snprintf(msg, sizeof(msg), "%d %d", served, failed);
	sh_send_result(out, msg);
	_exit(0);
}

struct pf_client {
	int family, port, ok;
	pthread_t th;
};

/* One connection: 1 MiB in 64 KiB pieces, each read back before the next
 * is sent (no deadlock on full buffers), then EOF both ways. */
static int pf_one(int family, int port)
{
	uint8_t *buf = malloc(SH_CHUNK), *want = malloc(SH_CHUNK);
	uint64_t off;
	int c = fl_sc_connect(family, port), ok = c >= 0 && buf && want;
	char b;

	for (off = 0; ok && off < SH_TOTAL; off += SH_CHUNK) {
		size_t got = 0;

		if (fl_sc_write_pattern(c, off, SH_CHUNK, SH_SEED + port)) {
			ok = 0;
			break;
		}
		while (got < SH_CHUNK) {
			ssize_t n = read(c, buf + got, SH_CHUNK - got);

			if (n < 0 && errno == EINTR && !sh_expired())
				continue;
			if (n <= 0) {
				ok = 0;
				break;
			}
			got += (size_t)n;
		}
		fl_sc_fill(want, off, SH_CHUNK, SH_SEED + port);
		if (ok && memcmp(buf, want, SH_CHUNK))
			ok = 0;
	}
	if (ok && (shutdown(c, SHUT_WR) || read(c, &b, 1) != 0))
		ok = 0;
	if (c >= 0)
		close(c);
	free(buf);
	free(want);
	return ok;
}

static void *pf_client_thread(void *arg)
{
	struct pf_client *cl = arg;
	struct sh_deadline dl;
	int i;

	sh_deadline_start(&dl, 4 * SH_STALL_MS);
	for (i = 0; i < PF_CONNS; i++)
		cl->ok += pf_one(cl->family, cl->port);
	sh_deadline_stop(&dl);
	return NULL;
}

static int pf_run(int family, enum pf_wait w)
{
	struct pf_client cl[PF_CLIENTS];
	int port, l = fl_sc_listen(family, &port), res[PF_WORKERS][2], i, j, ok = 0, served = 0,
		  failed = 0;
	pid_t pid[PF_WORKERS];
	char exits[64] = "", msg[32];

	if (l < 0 || (w != PF_ACCEPT && fcntl(l, F_SETFL, O_NONBLOCK)))
		return -1;
	for (i = 0; i < PF_WORKERS; i++) {
		if (pipe(res[i]))
			return -1;
		fflush(stdout);
		pid[i] = fork();
		if (pid[i] == 0) {
			for (j = 0; j <= i; j++)
				close(res[j][0]);
			pf_worker(l, w, res[i][1]);
		}
		close(res[i][1]);
	}
	for (i = 0; i < PF_CLIENTS; i++) {
		cl[i].family = family;
		cl[i].port = port;
		cl[i].ok = 0;
		if (pthread_create(&cl[i].th, NULL, pf_client_thread, &cl[i]))
			cl[i].ok = -100;
	}
	for (i = 0; i < PF_CLIENTS; i++) {
		if (cl[i].ok != -100)
			pthread_join(cl[i].th, NULL);
		ok += cl[i].ok;
	}
	fl_trace("%d connections, each 1048576 bytes echoed in order then EOF: %d ok",
		 PF_CLIENTS * PF_CONNS, ok);
	/* Wakes every worker in accept, poll or epoll_wait: accept fails. */
	shutdown(l, SHUT_RDWR);
	for (i = 0; i < PF_WORKERS; i++) {
		int s = 0, f = 0;

		sh_recv_result(res[i][0], msg, sizeof(msg), 2 * SH_STALL_MS);
		if (sscanf(msg, "%d %d", &s, &f) == 2) {
			served += s;
			failed += f;
		}
		close(res[i][0]);
	}
	for (i = 0; i < PF_WORKERS; i++)
		snprintf(exits + strlen(exits), sizeof(exits) - strlen(exits), " %d",
			 sh_reap(pid[i], SH_STALL_MS));
	fl_trace("workers served %d connections, %d failed", served, failed);
	fl_trace("workers exit:%s", exits);
	close(l);
	return 0;
}

static int sc_prefork_accept(int family) { return pf_run(family, PF_ACCEPT); }
static int sc_prefork_poll(int family) { return pf_run(family, PF_POLL); }
static int sc_prefork_epoll(int family) { return pf_run(family, PF_EPOLL); }
FL_SCENARIO("shared-prefork-accept", FL_SC_REDIRECTS, sc_prefork_accept)
FL_SCENARIO("shared-prefork-poll-accept", FL_SC_REDIRECTS, sc_prefork_poll)
FL_SCENARIO("shared-prefork-epoll-accept", FL_SC_REDIRECTS, sc_prefork_epoll)
