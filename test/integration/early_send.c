// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * early_send - docs/kernel.md#reorder: a client that writes right after
 * connect(), before the server's accept(), sends those bytes over TCP; its
 * next bytes must not overtake them. Once the server has read the early
 * data the gate opens and the rest goes by redirect.
 *
 * Each round: the client writes A at once; the server accepts 200 ms later,
 * reads A and answers; the client writes B and C; the server must read A,
 * B, C in order. 100 rounds, ten at a time. Counters are checked exactly:
 * every A over TCP, every B, C and answer redirected. A last variant writes
 * B right after accept(), before the server reads A: only the gate keeps B
 * from overtaking A there.
 *
 * With enrollment at connect/accept: the client is enrolled when it writes
 * A, which is what makes A's bytes "not_enrolled" and the answer's
 * "peer_not_enrolled", counted exactly below. Deferred enrollment (the
 * default) crosses the same gate later, with bytes already read: that is
 * lazy_enroll.c's and the conformance passes' (conformance.sh, _lazy.sh).
 */
/* fl-test-env: FASTLOCAL_ENROLL_AFTER=0 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "fltest.h"

#define ROUNDS_PER_THREAD 10
#define THREADS 10
#define LEN_A 1000
#define LEN_B 3000
#define LEN_C 5000

struct fl_round_ctx {
	int family;
	int idx;
	int eager;  /* write B as soon as the server accepted, before it read A */
	int failed;
	char why[256];
};

static int fl_write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fl_read_all(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* One round; 0 if the server read A, B, C intact and in order. */
static int fl_round(struct fl_round_ctx *x, uint64_t seed)
{
	static __thread uint8_t out[LEN_A + LEN_B + LEN_C], in[LEN_A + LEN_B + LEN_C];
	struct sockaddr_storage ss;
	socklen_t len;
	int lfd, c = -1, s = -1, r = -1;
	int64_t bad;
	char ok[2];

	fl_t_pattern(out, 0, sizeof(out), seed);
	if (fl_t_sockaddr(x->family, NULL, 0, &ss, &len))
		return -1;
	lfd = socket(x->family, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, len) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&ss, &len))
		goto out;
	c = socket(x->family, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&ss, len) || fl_write_all(c, out, LEN_A))
		goto out;
	usleep(200 * 1000); /* the server is slow to accept */
	s = accept(lfd, NULL, NULL);
	if (s < 0)
		goto out;
	if (x->eager) {
		/* docs/kernel.md#reorder: B is sent while A still waits unread in
		 * the server's TCP queue; were B redirected, the server would read
		 * B before A. */
		if (fl_write_all(c, out + LEN_A, LEN_B) || fl_read_all(s, in, LEN_A + LEN_B) ||
		    fl_write_all(c, out + LEN_A + LEN_B, LEN_C) ||
		    fl_read_all(s, in + LEN_A + LEN_B, LEN_C))
			goto out;
	} else if (fl_read_all(s, in, LEN_A) || fl_write_all(s, (const uint8_t *)"ok", 2) ||
		   fl_read_all(c, (uint8_t *)ok, 2) || memcmp(ok, "ok", 2) ||
		   fl_write_all(c, out + LEN_A, LEN_B) ||
		   fl_write_all(c, out + LEN_A + LEN_B, LEN_C) ||
		   fl_read_all(s, in + LEN_A, LEN_B + LEN_C)) {
		goto out;
	}
	bad = fl_t_pattern_check(in, 0, sizeof(in), seed);
	if (bad >= 0) {
		snprintf(x->why, sizeof(x->why), "round %llu: byte %lld out of order (A %d, B %d, C %d)",
			 (unsigned long long)seed, (long long)bad, LEN_A, LEN_B, LEN_C);
		goto out;
	}
	r = 0;
out:
	if (r && !x->why[0])
		snprintf(x->why, sizeof(x->why), "round %llu: a socket call failed: %s",
			 (unsigned long long)seed, strerror(errno));
	if (c >= 0)
		close(c);
	if (s >= 0)
		close(s);
	if (lfd >= 0)
		close(lfd);
	return r;
}

static void *fl_rounds(void *arg)
{
	struct fl_round_ctx *x = arg;
	int i;

	for (i = 0; i < ROUNDS_PER_THREAD && !x->failed; i++)
		if (fl_round(x, (uint64_t)x->idx * 100 + (uint64_t)i))
			x->failed = 1;
	return NULL;
}

/* Runs the rounds; puts the counter deltas in *red, *pass, *reason. */
static int fl_rounds_all(int family, int eager, const char *reason_key, uint64_t *red,
			 uint64_t *pass, uint64_t *reason)
{
	struct fl_round_ctx x[THREADS];
	pthread_t th[THREADS];
	uint64_t red0, pass0, reason0;
	int i;

	memset(x, 0, sizeof(x));
	red0 = fl_t_status_u64("redirected_bytes");
	pass0 = fl_t_status_u64("passed_bytes");
	reason0 = fl_t_status_u64(reason_key);
	for (i = 0; i < THREADS; i++) {
		x[i].family = family;
		x[i].idx = i;
		x[i].eager = eager;
		pthread_create(&th[i], NULL, fl_rounds, &x[i]);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < THREADS; i++)
		FL_T_CHECK(!x[i].failed, "%s", x[i].why);
	*red = fl_t_status_u64("redirected_bytes") - red0;
	*pass = fl_t_status_u64("passed_bytes") - pass0;
	*reason = fl_t_status_u64(reason_key) - reason0;
	return 0;
}

static int fl_early_send(int family)
{
	uint64_t red, pass, gate;

	if (fl_rounds_all(family, 0, "passed_bytes_by_reason.peer_not_enrolled", &red, &pass, &gate))
		return -1;
	printf("  %d rounds: %llu bytes over TCP (the early A's), %llu redirected\n",
	       THREADS * ROUNDS_PER_THREAD, (unsigned long long)pass, (unsigned long long)red);
	/* Exactly: every A went over TCP (the server was not enrolled yet),
	 * every answer, B and C by redirect. */
	FL_T_CHECK(pass == (uint64_t)THREADS * ROUNDS_PER_THREAD * LEN_A && gate == pass,
		   "%llu bytes went over TCP (%llu because the peer was not enrolled), expected %d",
		   (unsigned long long)pass, (unsigned long long)gate,
		   THREADS * ROUNDS_PER_THREAD * LEN_A);
	FL_T_CHECK(red == (uint64_t)THREADS * ROUNDS_PER_THREAD * (LEN_B + LEN_C + 2),
		   "%llu bytes were redirected, expected %d", (unsigned long long)red,
		   THREADS * ROUNDS_PER_THREAD * (LEN_B + LEN_C + 2));
	return 0;
}

/* B goes while A is unread: the gate must keep B (and C, until A and B are
 * read) on TCP, and the server must still read A, B, C in order. */
static int test_eager_second_write_stays_behind_the_first(void)
{
	uint64_t red, pass, gate;

	if (fl_rounds_all(AF_INET, 1, "passed_bytes_by_reason.ordering_gate", &red, &pass, &gate))
		return -1;
	printf("  %d rounds: %llu bytes over TCP (%llu held back by the ordering gate), %llu "
	       "redirected\n", THREADS * ROUNDS_PER_THREAD, (unsigned long long)pass,
	       (unsigned long long)gate, (unsigned long long)red);
	FL_T_CHECK(gate >= (uint64_t)THREADS * ROUNDS_PER_THREAD * LEN_B,
		   "only %llu bytes were held back by the gate; every B should have been",
		   (unsigned long long)gate);
	FL_T_CHECK(red + pass == (uint64_t)THREADS * ROUNDS_PER_THREAD * (LEN_A + LEN_B + LEN_C),
		   "bytes counted: %llu, expected %d", (unsigned long long)(red + pass),
		   THREADS * ROUNDS_PER_THREAD * (LEN_A + LEN_B + LEN_C));
	return 0;
}

static int test_early_send_ipv4(void)
{
	return fl_early_send(AF_INET);
}

static int test_early_send_ipv6(void)
{
	return fl_early_send(AF_INET6);
}

int main(void)
{
	FL_T_RUN("IPv4: data written before accept() is read first, then the rest is redirected",
		 test_early_send_ipv4);
	FL_T_RUN("IPv6: data written before accept() is read first, then the rest is redirected",
		 test_early_send_ipv6);
	FL_T_RUN("a write made before the server read the early data stays behind it",
		 test_eager_second_write_stays_behind_the_first);
	return fl_t_exit_status();
}
