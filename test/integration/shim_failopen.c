// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * shim_failopen - whenever the shim cannot or must not enroll a socket, it
 * says why and the connection carries on over plain TCP, byte-exact.
 *
 * The shim reads its switches once per process, so each case runs in a
 * child process with its own environment.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "fltest.h"

/* Enrolls both ends of a fresh pair, expects 'want' from each, then checks
 * that a 1 MiB stream still arrives intact. Runs in the child. */
static int fl_pair_enroll_expect(int want)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	struct fl_t_stream st = { .total = 1 << 20, .wsize = 1000, .seed = 5 };
	int c, s, r;

	FL_T_CHECK(enroll, "cannot load the shim");
	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "no loopback pair");
	FL_T_CHECK((r = enroll(c)) == want, "enroll returned %d (%s), expected %d", r, strerror(-r),
		   want);
	st.wfd = c;
	st.rfd = s;
	FL_T_CHECK(fl_t_stream_run(&st, 1) == 0, "stream not byte-exact over TCP");
	close(c);
	close(s);
	return 0;
}

/* Runs fn in a child with NAME=VALUE set before the shim is loaded. */
static int fl_in_child(const char *name, const char *value, int (*fn)(int), int arg)
{
	pid_t pid = fork();
	int st;

	FL_T_CHECK(pid >= 0, "fork failed");
	if (pid == 0) {
		setenv(name, value, 1);
		if (fn(arg)) {
			printf("  child: %s\n", fl_t_reason());
			fflush(stdout);
			_exit(1);
		}
		_exit(0);
	}
	FL_T_CHECK(waitpid(pid, &st, 0) == pid, "waitpid failed");
	FL_T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's check failed (see above)");
	return 0;
}

static int test_switched_off(void)
{
	return fl_in_child("FASTLOCAL", "0", fl_pair_enroll_expect, -ECANCELED);
}

static int test_nothing_loaded(void)
{
	return fl_in_child("FASTLOCAL_PIN_DIR", "/sys/fs/bpf/fastlocal-nothing-here",
			   fl_pair_enroll_expect, -ENOENT);
}

static int test_odd_sockets_are_refused(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int udp, unx[2], lst, fresh, pfd[2], r;

	FL_T_CHECK(enroll, "cannot load the shim");
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	FL_T_CHECK((r = enroll(udp)) == -ENOTSUP, "UDP socket: %d", r);
	FL_T_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, unx) == 0, "socketpair");
	FL_T_CHECK((r = enroll(unx[0])) == -ENOTSUP, "AF_UNIX socket: %d", r);
	lst = socket(AF_INET, SOCK_STREAM, 0);
	FL_T_CHECK(bind(lst, (struct sockaddr *)&in, sizeof(in)) == 0 && listen(lst, 1) == 0, "listen");
	FL_T_CHECK((r = enroll(lst)) == -ENOTSUP, "listening socket: %d", r);
	fresh = socket(AF_INET6, SOCK_STREAM, 0);
	FL_T_CHECK((r = enroll(fresh)) == -ENOTSUP, "unconnected socket: %d", r);
	FL_T_CHECK(pipe(pfd) == 0, "pipe");
	FL_T_CHECK((r = enroll(pfd[0])) == -ENOTSOCK, "pipe: %d", r);
	FL_T_CHECK((r = enroll(9999)) == -EBADF, "closed fd: %d", r);
	close(udp); close(unx[0]); close(unx[1]); close(lst); close(fresh);
	close(pfd[0]); close(pfd[1]);
	return 0;
}

/* Enrolling the same socket twice must not replace the live entry (which
 * would drop what is queued in it): the second attempt says EEXIST and the
 * pair keeps working. */
static int test_second_enroll_keeps_the_entry(void)
{
	fl_t_enroll_fn enroll = fl_t_enroll();
	struct fl_t_stream st = { .total = 8 << 20, .wsize = 65536, .seed = 9 };
	uint64_t red0;
	int c, s, r;

	FL_T_CHECK(enroll, "cannot load the shim");
	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "no loopback pair");
	FL_T_CHECK(enroll(c) == 0 && enroll(s) == 0, "first enrollment failed");
	r = enroll(c);
	FL_T_CHECK(r == -EEXIST || r == -EBUSY, "second enrollment returned %d", r);
	red0 = fl_t_status_u64("redirected_bytes");
	st.wfd = c;
	st.rfd = s;
	FL_T_CHECK(fl_t_stream_run(&st, 1) == 0, "stream broken after a second enroll");
	FL_T_CHECK(fl_t_status_u64("redirected_bytes") - red0 >= st.total, "no longer redirected");
	close(c);
	close(s);
	return 0;
}

int main(void)
{
	FL_T_RUN("FASTLOCAL=0 turns enrollment off and TCP carries the bytes", test_switched_off);
	FL_T_RUN("with nothing loaded enrollment fails open to TCP", test_nothing_loaded);
	FL_T_RUN("UDP, AF_UNIX, listening, unconnected and non-sockets are refused",
		 test_odd_sockets_are_refused);
	FL_T_RUN("enrolling a socket twice keeps the live entry", test_second_enroll_keeps_the_entry);
	return fl_t_exit_status();
}
