// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * spawn_while_writing - a child made by vfork() (Python's subprocess, and
 * any program that spawns that way) leaves the parent's sockets alone.
 *
 * A vfork() child runs in its parent's memory, without the fork hooks,
 * until it execs; the parent waits meanwhile. Python's subprocess closes
 * the fds it does not pass with close_range() there, then execs. Under the
 * shim that close_range() went through the shim's record of fds, which is
 * the parent's: it forgot the parent's open sockets, and waited for the
 * lock of one that a parent thread held while blocked writing to a peer
 * that did not read, and the parent with it, as long as that write lasted
 * (seen: subprocess.run() hung; test: forever here, the reader never reads
 * until the spawn is done). The child's exec also drained the parent's
 * send buffers, which are the parent's to send.
 *
 * Each subtest runs in a process of its own, watched from outside: a
 * spawn that hangs is killed after FL_SPAWN_LIMIT seconds and fails.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "fltest.h"

#define MiB (1024 * 1024)
#define FL_TOTAL (64 * MiB)
#define FL_SEED 0x5a3
#define FL_SPAWN_LIMIT 20 /* seconds */

struct fl_writer {
	int fd;
	uint8_t *buf;
	ssize_t ret;
};

static void *fl_write_all(void *arg)
{
	struct fl_writer *w = arg;
	size_t done = 0;

	while (done < FL_TOTAL) {
		ssize_t n = write(w->fd, w->buf + done, FL_TOTAL - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->ret = -1;
			return NULL;
		}
		done += (size_t)n;
	}
	w->ret = (ssize_t)done;
	return NULL;
}

/* vfork(), then in the child what Python's subprocess does: dup2() one
 * onto stdin, close every fd but the standard ones with close_range(),
 * exec.
 * 0 if the child ran /bin/true and exited 0. */
static int fl_spawn_true(int dup_fd)
{
	pid_t kid;
	int st;

	kid = vfork();
	if (kid < 0)
		return -1;
	if (kid == 0) {
		/* dup2 onto stdin, then the socket's own number closed and
		 * taken again by a dup: all in the child's fd table only. */
		if (dup_fd >= 0 && (dup2(dup_fd, 0) < 0 || close(dup_fd) || dup(1) < 0))
			_exit(126);
		close_range(3, ~0U, 0);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return 0;
}

/* The scenario, in a process of its own: 1, 2... for the step that failed. */
static int fl_scenario(int dup_onto_stdin)
{
	static uint8_t got[1 << 16];
	struct fl_writer w = { 0 };
	uint64_t red0, red1, off = 0;
	pthread_t th;
	int c, s;

	if (fl_t_tcp_pair(AF_INET, &c, &s) || fl_t_warmup(c, s))
		return 1;
	w.fd = c;
	w.buf = malloc(FL_TOTAL);
	if (!w.buf)
		return 1;
	fl_t_pattern(w.buf, 0, FL_TOTAL, FL_SEED);
	if (pthread_create(&th, NULL, fl_write_all, &w))
		return 1;
	usleep(300000); /* the writer is now waiting for a reader that does not read */
	if (fl_spawn_true(dup_onto_stdin ? c : -1))
		return 2;
	/* The parent's socket is whole: every byte arrives, in order... */
	while (off < FL_TOTAL) {
		ssize_t n = read(s, got, sizeof(got));

		if (n <= 0 || fl_t_pattern_check(got, off, (size_t)n, FL_SEED) >= 0)
			return 3;
		off += (uint64_t)n;
	}
	pthread_join(th, NULL);
	if (w.ret != FL_TOTAL)
		return 3;
	/* ...and the shim still knows it: its next bytes are redirected. */
	red0 = fl_t_status_u64("redirected_bytes");
	memset(got, 'r', sizeof(got));
	if (write(c, got, sizeof(got)) != (ssize_t)sizeof(got))
		return 4;
	for (off = 0; off < sizeof(got);) {
		ssize_t n = read(s, got, sizeof(got) - off);

		if (n <= 0)
			return 4;
		off += (uint64_t)n;
	}
	red1 = fl_t_status_u64("redirected_bytes");
	if (red1 - red0 < sizeof(got))
		return 5;
	return 0;
}

static int fl_run_watched(int dup_onto_stdin)
{
	static const char *const what[] = {
		"", "setting up the pair failed", "the vfork child failed",
		"the parent's stream was not whole after the spawn",
		"a round trip after the spawn failed",
		"after the spawn the parent's socket was no longer redirected (the shim forgot it)",
	};
	double t0 = fl_t_now();
	pid_t p;
	int st;

	fflush(stdout);
	p = fork();
	FL_T_CHECK(p >= 0, "fork: %s", strerror(errno));
	if (p == 0)
		_exit(fl_scenario(dup_onto_stdin));
	while (waitpid(p, &st, WNOHANG) == 0) {
		if (fl_t_now() - t0 > FL_SPAWN_LIMIT) {
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			FL_T_CHECK(0, "the spawn hung for %d s while a thread of its parent was blocked "
				      "writing", FL_SPAWN_LIMIT);
		}
		usleep(20000);
	}
	FL_T_CHECK(WIFEXITED(st), "the scenario died (status %#x)", st);
	FL_T_CHECK(WEXITSTATUS(st) == 0, "%s",
		   WEXITSTATUS(st) < (int)(sizeof(what) / sizeof(what[0])) ? what[WEXITSTATUS(st)] :
									       "failed");
	printf("  spawned and checked in %.2f s\n", fl_t_now() - t0);
	return 0;
}

static int test_close_range(void)
{
	return fl_run_watched(0);
}

static int test_dup2_then_close_range(void)
{
	return fl_run_watched(1);
}

/* ------------------------------------------- the socket as the child's stdin */

static const char *fl_self;

#define FL_STDIN_BYTES (64 * 1024)

/* The new image's part: FL_STDIN_BYTES of the pattern from stdin. */
static int fl_stdin_reader(void)
{
	static uint8_t buf[FL_STDIN_BYTES];
	size_t got = 0;

	while (got < sizeof(buf)) {
		ssize_t n = read(0, buf + got, sizeof(buf) - got);

		if (n <= 0)
			return 2;
		got += (size_t)n;
	}
	return fl_t_pattern_check(buf, 0, sizeof(buf), FL_SEED) >= 0 ? 3 : 0;
}

/* vfork(); the child: the socket onto stdin, the rest closed, this program
 * as "stdin-reader" with env. The child's pid, or -1. */
static pid_t fl_spawn_reader(int sock, char **env)
{
	pid_t kid = vfork();

	if (kid == 0) {
		if (dup2(sock, 0) < 0)
			_exit(126);
		close_range(3, ~0U, 0);
		execle(fl_self, fl_self, "stdin-reader", (char *)NULL, env);
		_exit(127);
	}
	return kid;
}

/*
 * A vfork child dup2()s the socket onto its stdin, closes the rest and
 * execs a program under the shim (this one), which reads it. Its shim must
 * adopt the socket (FASTLOCAL_ADOPT): the child's dup2 happened behind the
 * shim's record, which is the parent's, so the exec names stdin from the
 * child's own fd table. The new image logs what it adopted.
 */
static int test_the_socket_as_the_childs_stdin(void)
{
	static uint8_t data[FL_STDIN_BYTES];
	char logpath[] = "/tmp/fl-spawn-log-XXXXXX", logvar[64], line[256];
	char *env[256];
	extern char **environ;
	int c = -1, s = -1, lf, st = -1, n = 0, found = 0;
	FILE *f;
	pid_t kid;

	lf = mkstemp(logpath);
	FL_T_CHECK(lf >= 0, "mkstemp");
	close(lf);
	snprintf(logvar, sizeof(logvar), "FASTLOCAL_LOG_FILE=%s", logpath);
	while (environ[n] && n < 250) {
		env[n] = environ[n];
		n++;
	}
	env[n++] = "FASTLOCAL_LOG=debug";
	env[n++] = logvar;
	env[n] = NULL;
	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &c, &s) == 0 && fl_t_warmup(c, s) == 0,
		   "connect and warm up a pair");
	fflush(stdout);
	kid = fl_spawn_reader(s, env);
	FL_T_CHECK(kid > 0, "vfork: %s", strerror(errno));
	fl_t_pattern(data, 0, sizeof(data), FL_SEED);
	FL_T_CHECK(write(c, data, sizeof(data)) == (ssize_t)sizeof(data), "write");
	FL_T_CHECK(waitpid(kid, &st, 0) == kid && WIFEXITED(st), "the child did not exit");
	FL_T_CHECK(WEXITSTATUS(st) == 0, "the child read its stdin wrong (status %d)",
		   WEXITSTATUS(st));
	f = fopen(logpath, "r");
	FL_T_CHECK(f, "no log");
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "fd 0 inherited through exec: adopted"))
			found = 1;
	fclose(f);
	unlink(logpath);
	close(c);
	close(s);
	FL_T_CHECK(found, "the new image did not adopt its stdin, the enrolled socket");
	return 0;
}

int main(int argc, char **argv)
{
	fl_self = argv[0];
	if (argc > 1 && !strcmp(argv[1], "stdin-reader"))
		return fl_stdin_reader();
	setvbuf(stdout, NULL, _IOLBF, 0);
	FL_T_RUN("a vfork child that closes the fds with close_range and execs, while a thread of "
		 "its parent is blocked writing, neither waits nor makes the parent forget its socket",
		 test_close_range);
	FL_T_RUN("the same with the blocked socket dup2()ed onto the child's stdin, closed and its "
		 "number taken by a dup() first",
		 test_dup2_then_close_range);
	FL_T_RUN("a vfork child passes the socket as stdin to a program under the shim: the "
		 "program adopts it",
		 test_the_socket_as_the_childs_stdin);
	return fl_t_exit_status();
}
