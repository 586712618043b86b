// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * splice_pump - a proxy's splice loop over enrolled sockets: 256 MiB
 * through socket -> pipe -> socket, byte-exact, never stalling.
 *
 * One thread pumps, as haproxy does in splice mode: O_NONBLOCK sockets, a
 * blocking pipe that only the pump itself drains, SPLICE_F_NONBLOCK both
 * ways, poll() for readiness. A writer thread feeds the pump's upstream
 * socket, a reader thread checks every byte coming out downstream. The
 * shim emulates splice out of an enrolled socket
 * (docs/kernel.md#splice-blind); an emulation that blocks on the pipe, or
 * reads from the socket more than the pipe takes, stalls the pump for good
 * or loses bytes.
 *
 * The pump runs in a child (this program again, "--pump") with the
 * settings under test: the default (FASTLOCAL_ENROLL_AFTER unset, so
 * connections switch over once they moved 4 KiB) and enrollment at
 * connect/accept (FASTLOCAL_ENROLL_AFTER=0). A child that makes no
 * progress for 15 s reports the stall itself; one that does not end in
 * 100 s is killed: either is a FAIL line, never a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "fltest.h"

#define MiB (1024ULL * 1024ULL)
#define FL_PUMP_BYTES (256 * MiB)
#define FL_PUMP_SEED 77
#define FL_STALL_S 15
#define FL_LIMIT_S 100
#define FL_OUT_MAX 3000

/* ------------------------------------------------------ the child: pump */

/* Progress, written by the pump and reader threads, read by the watchdog. */
static uint64_t fl_pumped, fl_verified;

struct fl_end {
	pthread_t th;
	int fd;
	uint64_t done;
	int64_t bad;
	int err;
	ssize_t last;
};

static void *fl_writer(void *arg)
{
	struct fl_end *w = arg;
	uint8_t buf[65536];

	while (w->done < FL_PUMP_BYTES) {
		size_t k = sizeof(buf), off = 0;

		fl_t_pattern(buf, w->done, k, FL_PUMP_SEED);
		while (off < k) {
			ssize_t r = send(w->fd, buf + off, k - off, MSG_NOSIGNAL);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				w->err = errno;
				goto out;
			}
			off += (size_t)r;
		}
		w->done += k;
	}
out:
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

static void *fl_reader(void *arg)
{
	struct fl_end *r = arg;
	uint8_t buf[65536];
	int64_t at;

	r->bad = -1;
	while ((r->last = read(r->fd, buf, 16384)) > 0) {
		at = fl_t_pattern_check(buf, r->done, (size_t)r->last, FL_PUMP_SEED);
		if (at >= 0 && r->bad < 0)
			r->bad = at;
		r->done += (uint64_t)r->last;
		__atomic_store_n(&fl_verified, r->done, __ATOMIC_RELAXED);
	}
	r->err = errno;
	return NULL;
}

/* Ends the child if neither the pump nor the reader moved for FL_STALL_S. */
static void *fl_watchdog(void *arg)
{
	uint64_t last = UINT64_MAX, now;
	int idle = 0;

	(void)arg;
	for (;;) {
		sleep(1);
		now = __atomic_load_n(&fl_pumped, __ATOMIC_RELAXED) +
		      __atomic_load_n(&fl_verified, __ATOMIC_RELAXED);
		idle = now == last ? idle + 1 : 0;
		last = now;
		if (idle >= FL_STALL_S) {
			printf("STALL pumped=%llu verified=%llu\n",
			       (unsigned long long)__atomic_load_n(&fl_pumped, __ATOMIC_RELAXED),
			       (unsigned long long)__atomic_load_n(&fl_verified, __ATOMIC_RELAXED));
			fflush(stdout);
			_exit(3);
		}
	}
	return NULL;
}

static void fl_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* The pump: up -> pipe -> down until up's EOF and an empty pipe. */
static int fl_pump(int up, int down, int p[2], const char **why)
{
	uint64_t inpipe = 0;
	int eof = 0, full = 0;
	ssize_t r;

	*why = "EOF";
	while (!eof || inpipe) {
		struct pollfd pf[2] = { { .fd = up, .events = eof || full ? 0 : POLLIN },
					{ .fd = down, .events = inpipe ? POLLOUT : 0 } };

		if (poll(pf, 2, 1000) < 0 && errno != EINTR) {
			*why = "poll failed";
			return -1;
		}
		if (!eof && !full && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			r = splice(up, NULL, p[1], NULL, 1 << 20, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (r > 0)
				inpipe += (uint64_t)r;
			else if (r == 0)
				eof = 1;
			else if (errno == EAGAIN)
				full = inpipe > 0; /* readable, yet EAGAIN: the pipe is full */
			else if (errno != EINTR) {
				*why = strerror(errno);
				return -1;
			}
		}
		if (inpipe) {
			/* At most FL_OUT_MAX at a time, as into a peer's small
			 * window: the pipe's buffers are often taken in part, and
			 * a buffer with a few bytes left still holds its slot: the
			 * pipe is full with room to spare in bytes. */
			r = splice(p[0], NULL, down, NULL, inpipe < FL_OUT_MAX ? inpipe : FL_OUT_MAX,
				   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (r > 0) {
				inpipe -= (uint64_t)r;
				full = 0;
				__atomic_fetch_add(&fl_pumped, (uint64_t)r, __ATOMIC_RELAXED);
			} else if (r < 0 && errno != EAGAIN && errno != EINTR) {
				*why = strerror(errno);
				return -1;
			}
		}
	}
	return 0;
}

static int fl_pump_main(void)
{
	struct fl_end w = { 0 }, rd = { 0 };
	pthread_t wd;
	const char *why;
	int a, a2, b1, b, p[2], rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* FL_PUMP_NO_PROC: as in a container without /proc, where the shim
	 * cannot reopen its internal pipe through /proc/self/fd and makes a
	 * pipe per call instead (rx/splice.c, fl_ip_make). */
	if (getenv("FL_PUMP_NO_PROC") &&
	    (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	     umount2("/proc", MNT_DETACH) || !access("/proc/self/fd", F_OK))) {
		printf("SETUP failed: cannot hide /proc: %s\n", strerror(errno));
		return 2;
	}
	if (fl_t_tcp_pair(AF_INET, &a, &a2) || fl_t_tcp_pair(AF_INET, &b1, &b) || pipe(p)) {
		printf("SETUP failed: %s\n", strerror(errno));
		return 2;
	}
	fl_nonblock(a2);
	fl_nonblock(b1);
	pthread_create(&wd, NULL, fl_watchdog, NULL);
	w.fd = a;
	rd.fd = b;
	pthread_create(&rd.th, NULL, fl_reader, &rd);
	pthread_create(&w.th, NULL, fl_writer, &w);
	rc = fl_pump(a2, b1, p, &why);
	shutdown(b1, SHUT_WR);
	pthread_join(w.th, NULL);
	pthread_join(rd.th, NULL);
	printf("RESULT pump=%s pumped=%llu written=%llu writer_err=%d verified=%llu bad=%lld "
	       "reader_end=%zd reader_err=%d\n", rc ? why : "EOF",
	       (unsigned long long)fl_pumped, (unsigned long long)w.done, w.err,
	       (unsigned long long)rd.done, (long long)rd.bad, rd.last, rd.last < 0 ? rd.err : 0);
	return 0;
}

/* ------------------------------------------------- the parent: the tests */

/* Runs "self --pump" with FASTLOCAL_ENROLL_AFTER set to enroll_after (NULL:
 * unset, the default), without /proc if no_proc; its last output line into
 * line. 0, or -1 with why. */
static int fl_run_pump(const char *enroll_after, int no_proc, char *line, size_t len)
{
	double t0 = fl_t_now();
	char buf[512];
	size_t have = 0;
	int out[2], st = 0, done = 0;
	pid_t pid;

	line[0] = '\0';
	if (pipe(out))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		if (enroll_after)
			setenv("FASTLOCAL_ENROLL_AFTER", enroll_after, 1);
		else
			unsetenv("FASTLOCAL_ENROLL_AFTER");
		if (no_proc) {
			/* LeakSanitizer reads /proc at exit (the SAN build). */
			const char *a = getenv("ASAN_OPTIONS");
			char opts[512];

			snprintf(opts, sizeof(opts), "%s%sdetect_leaks=0", a ? a : "", a && *a ? ":" : "");
			setenv("ASAN_OPTIONS", opts, 1);
			setenv("FL_PUMP_NO_PROC", "1", 1);
		}
		execl("/proc/self/exe", "splice_pump", "--pump", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	while (!done) {
		struct pollfd p = { .fd = out[0], .events = POLLIN };
		ssize_t r;

		if (fl_t_now() - t0 > FL_LIMIT_S) {
			kill(pid, SIGKILL);
			snprintf(line, len, "KILLED: no end after %d s", FL_LIMIT_S);
			break;
		}
		if (poll(&p, 1, 500) <= 0)
			continue;
		r = read(out[0], buf + have, sizeof(buf) - 1 - have);
		if (r <= 0) {
			done = 1;
			break;
		}
		have += (size_t)r;
		buf[have] = '\0';
		/* Keep the last complete line. */
		for (char *nl; (nl = strchr(buf, '\n'));) {
			*nl = '\0';
			snprintf(line, len, "%s", buf);
			memmove(buf, nl + 1, strlen(nl + 1) + 1);
			have = strlen(buf);
		}
		if (have >= sizeof(buf) - 1)
			have = 0;
	}
	close(out[0]);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		if (!line[0] || strncmp(line, "KILLED", 6))
			snprintf(line + strlen(line), len - strlen(line), " (child status %d)", st);
		return -1;
	}
	return 0;
}

static int fl_pump_case(const char *enroll_after, int no_proc)
{
	unsigned long long pumped = 0, written = 0, verified = 0;
	long long bad = 0, end = 0;
	uint64_t sp0, sp1, red0, red1;
	int werr = -1, rerr = -1;
	char line[400], pump[64] = "";

	sp0 = fl_t_status_u64("splice_emulated_bytes");
	red0 = fl_t_status_u64("redirected_bytes");
	FL_T_CHECK(fl_run_pump(enroll_after, no_proc, line, sizeof(line)) == 0, "the pump stalled or failed: %s",
		   line);
	sp1 = fl_t_status_u64("splice_emulated_bytes");
	red1 = fl_t_status_u64("redirected_bytes");
	FL_T_CHECK(sscanf(line, "RESULT pump=%63s pumped=%llu written=%llu writer_err=%d "
			  "verified=%llu bad=%lld reader_end=%lld reader_err=%d",
			  pump, &pumped, &written, &werr, &verified, &bad, &end, &rerr) == 8,
		   "unexpected result: %s", line);
	printf("  %s; %llu bytes spliced out of enrolled sockets, %llu redirected\n", line,
	       (unsigned long long)(sp1 - sp0), (unsigned long long)(red1 - red0));
	FL_T_CHECK(!strcmp(pump, "EOF") && werr == 0 && written == FL_PUMP_BYTES,
		   "the pump or its writer failed: %s", line);
	FL_T_CHECK(verified == FL_PUMP_BYTES && bad == -1 && end == 0,
		   "the reader got %llu of %llu bytes, first wrong byte %lld, last read %lld "
		   "(errno %d)", verified, (unsigned long long)FL_PUMP_BYTES, bad, end, rerr);
	/* The emulation must have been used: the test is about it. */
	FL_T_CHECK(sp0 != UINT64_MAX && sp1 != UINT64_MAX && sp1 - sp0 >= FL_PUMP_BYTES / 2,
		   "only %llu bytes were spliced out of enrolled sockets",
		   (unsigned long long)(sp1 - sp0));
	FL_T_CHECK(red1 - red0 > 0, "nothing was redirected");
	return 0;
}

static int fl_pump_default(void)
{
	return fl_pump_case(NULL, 0);
}

static int fl_pump_eager(void)
{
	return fl_pump_case("0", 0);
}

static int fl_pump_no_proc(void)
{
	return fl_pump_case(NULL, 1);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--pump"))
		return fl_pump_main();
	setvbuf(stdout, NULL, _IOLBF, 0);
	FL_T_RUN("a one-thread splice pump moves 256 MiB socket -> pipe -> socket byte-exact "
		 "(default settings)", fl_pump_default);
	FL_T_RUN("a one-thread splice pump moves 256 MiB socket -> pipe -> socket byte-exact "
		 "(FASTLOCAL_ENROLL_AFTER=0)", fl_pump_eager);
	FL_T_RUN("the same without /proc (a pipe of its own per splice), default settings",
		 fl_pump_no_proc);
	return fl_t_exit_status();
}
