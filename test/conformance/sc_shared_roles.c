// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sc_shared_roles.c - the reader and the writer of the shared-* scenarios
 * (sc_shared.h), their deadline, and the exec'd child that plays either.
 */
#include "sc_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "conformance.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid /* glibc 2.36 names no accessor */
#endif

/* The deadline's signal: no scenario and nothing in the shim uses it. */
#define SH_SIG SIGUSR2

const char *const sh_wait_name[SH_NWAIT] = {
	[SH_READ] = "read",         [SH_POLL] = "poll",       [SH_EPOLL_LT] = "epoll-level",
	[SH_EPOLL_ET] = "epoll-edge", [SH_SELECT] = "select", [SH_WAITALL] = "waitall",
	[SH_RCVTIMEO] = "rcvtimeo", [SH_FREAD] = "fread",
};

/* ------------------------------------------------------------ deadline */

/* Per thread: the deadline signal reached this thread (its handler runs in
 * the thread the timer names). */
static __thread volatile sig_atomic_t sh_fired;

static void sh_on_deadline(int sig)
{
	(void)sig;
	sh_fired = 1;
}

void sh_deadline_start(struct sh_deadline *d, int ms)
{
	struct sigaction sa;
	struct sigevent sev;
	/* IMPORTANT: repeated after the first expiry. A signal that lands
	 * between two calls interrupts nothing; the next one (100 ms later)
	 * interrupts the call that was entered after it. */
	struct itimerspec its = { .it_interval = { 0, 100 * 1000000L },
				  .it_value = { ms / 1000, (long)(ms % 1000) * 1000000L } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sh_on_deadline; /* no SA_RESTART: blocking calls return EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SH_SIG, &sa, NULL);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SH_SIG;
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	sh_fired = 0;
	d->on = !timer_create(CLOCK_MONOTONIC, &sev, &d->timer) &&
		!timer_settime(d->timer, 0, &its, NULL);
}

void sh_deadline_stop(struct sh_deadline *d)
{
	if (d->on)
		timer_delete(d->timer);
	d->on = 0;
}

int sh_expired(void)
{
	return sh_fired;
}

/* --------------------------------------------------------- blocked? */

/* IMPORTANT: /proc/TID/syscall names the call a sleeping thread is in; the
 * writer waits for that rather than for a fixed time, so "the reader was
 * already waiting when the bytes came" holds on a loaded machine too. */

int sh_wait_blocked(pid_t tid, int ms)
{
	static const long waits[] = {
		SYS_read, SYS_readv, SYS_recvfrom, SYS_recvmsg, SYS_poll, SYS_ppoll, SYS_select,
		SYS_pselect6, SYS_epoll_wait, SYS_epoll_pwait,
#ifdef SYS_epoll_pwait2
		SYS_epoll_pwait2,
#endif
	};
	char path[64], line[256];
	double end = fl_sc_now() + ms / 1000.0;
	size_t i;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)tid);
	do {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, line, sizeof(line) - 1) : -1;
		char *endp;
		long nr;

		if (fd >= 0)
			close(fd);
		if (n > 0) {
			line[n] = 0;
			/* "running", or the number of the call it sleeps in */
			nr = strtol(line, &endp, 10);
			if (endp != line)
				for (i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
					if (nr == waits[i])
						return 0;
		}
		fl_sc_sleep_ms(1);
	} while (fl_sc_now() < end);
	return -1;
}

/* ------------------------------------------------------------- reader */

/* Waits for readability the way w does; 1 readable, 0 timed out, -1 error
 * (errno). */
static int sh_wait_readable(int fd, int ep, enum sh_wait w)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct epoll_event ev;
	struct timeval tv = { SH_STALL_MS / 1000, 0 };
	fd_set rd;
	int r;

	switch (w) {
	case SH_POLL:
		return poll(&p, 1, SH_STALL_MS);
	case SH_EPOLL_LT:
	case SH_EPOLL_ET:
		r = epoll_wait(ep, &ev, 1, SH_STALL_MS);
		return r > 0 ? 1 : r;
	case SH_SELECT:
		FD_ZERO(&rd);
		FD_SET(fd, &rd);
		r = select(fd + 1, &rd, NULL, NULL, &tv);
		return r > 0 ? 1 : r;
	default:
		return 1;
	}
}

/* One read the way w reads. */
static ssize_t sh_read_once(int fd, FILE *fp, enum sh_wait w, uint8_t *buf)
{
	size_t n;

	switch (w) {
	case SH_EPOLL_ET:
		return recv(fd, buf, SH_CHUNK, MSG_DONTWAIT);
	case SH_WAITALL:
		return recv(fd, buf, SH_CHUNK, MSG_WAITALL);
	case SH_RCVTIMEO:
		return recv(fd, buf, SH_CHUNK, 0);
	case SH_FREAD:
		n = fread(buf, 1, SH_CHUNK, fp);
		if (n)
			return (ssize_t)n;
		if (feof(fp))
			return 0;
		return -1; /* ferror: errno is the read's */
	default:
		return read(fd, buf, SH_CHUNK);
	}
}

void sh_reader(int fd, FILE *fp, enum sh_wait w, char *res, size_t len)
{
	uint8_t *buf = malloc(SH_CHUNK), *want = malloc(SH_CHUNK);
	struct timeval tmo = { 3, 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct sh_deadline dl;
	uint64_t got = 0;
	int64_t bad = -1;
	int eof = 0, err = 0, stalled = 0, timedout = 0, short_block = 0, ep = -1;
	double last = fl_sc_now(), waited = 0; /* since the last byte; for SH_RCVTIMEO */
	int need_wait = w == SH_POLL || w == SH_EPOLL_LT || w == SH_EPOLL_ET || w == SH_SELECT;
	const int waits = need_wait;
	ssize_t n;
	size_t i;

	if (!buf || !want) {
		snprintf(res, len, "could not run (no memory)");
		free(buf);
		free(want);
		return;
	}
	if (w == SH_RCVTIMEO && setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)))
		err = errno;
	if (w == SH_EPOLL_LT || w == SH_EPOLL_ET) {
		if (w == SH_EPOLL_ET)
			ev.events |= EPOLLET;
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			err = errno;
	}
	sh_deadline_start(&dl, SH_STALL_MS);
	while (!eof && !err && !stalled && !timedout) {
		if (need_wait) {
			int r = sh_wait_readable(fd, ep, w);

			if (r == 0 || (r < 0 && errno == EINTR && sh_expired())) {
				stalled = 1;
				break;
			}
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				err = errno;
				break;
			}
			/* Edge-triggered: drain until EAGAIN before waiting again. */
			need_wait = w != SH_EPOLL_ET;
		}
		n = sh_read_once(fd, fp, w, buf);
		if (n < 0) {
			if (errno == EINTR && sh_expired()) {
				stalled = 1;
			} else if (errno == EINTR) {
				if (fp)
					clearerr(fp);
			} else if (w == SH_EPOLL_ET && errno == EAGAIN) {
				need_wait = 1;
			} else if (w == SH_RCVTIMEO && errno == EAGAIN) {
				timedout = 1;
				waited = fl_sc_now() - last;
			} else {
				err = errno;
			}
			continue;
		}
		if (n == 0) {
			eof = 1;
			break;
		}
		last = fl_sc_now();
		if (w == SH_WAITALL && (size_t)n < SH_CHUNK)
			short_block = 1; /* TCP returns whole blocks (the total is a multiple) */
		if (got + (uint64_t)n <= SH_TOTAL) {
			fl_sc_fill(want, got, (size_t)n, SH_SEED);
			for (i = 0; i < (size_t)n && bad < 0; i++)
				if (buf[i] != want[i])
					bad = (int64_t)(got + i);
		} else if (bad < 0) {
			bad = (int64_t)SH_TOTAL; /* more than was sent */
		}
		got += (uint64_t)n;
		/* A short fread(): EOF (next call says so), or its read failed. */
		if (w == SH_FREAD && ferror(fp)) {
			if (sh_expired())
				stalled = 1;
			else
				err = errno ? errno : EIO;
		}
		if (waits && w != SH_EPOLL_ET)
			need_wait = 1;
	}
	sh_deadline_stop(&dl);
	if (ep >= 0)
		close(ep);
	free(buf);
	free(want);
	/* Only the whole outcome is TCP's promise; partial counts appear only
	 * in the lines of a failure. */
	if (got == SH_TOTAL && eof && bad < 0 && !short_block)
		snprintf(res, len, "%u bytes, in order, then EOF", SH_TOTAL);
	else if (stalled)
		snprintf(res, len, "STALLED: %llu of %u bytes after %d s without data",
			 (unsigned long long)got, SH_TOTAL, SH_STALL_MS / 1000);
	else if (timedout)
		snprintf(res, len, "EAGAIN after %llu of %u bytes, %.0f ms after the last byte "
			 "(SO_RCVTIMEO is 3 s: %s)", (unsigned long long)got, SH_TOTAL, waited * 1000,
			 waited < 2.9 ? "a spurious EAGAIN" : "timed out");
	else if (err)
		snprintf(res, len, "ERROR %s after %llu of %u bytes", fl_errname(err),
			 (unsigned long long)got, SH_TOTAL);
	else if (bad >= 0)
		snprintf(res, len, "WRONG bytes from offset %lld (%llu bytes in all)", (long long)bad,
			 (unsigned long long)got);
	else if (short_block)
		snprintf(res, len, "recv(MSG_WAITALL) returned a SHORT block (%llu bytes in all)",
			 (unsigned long long)got);
	else
		snprintf(res, len, "EOF after %llu of %u bytes", (unsigned long long)got, SH_TOTAL);
}

/* ------------------------------------------------------------- writer */

void sh_writer(int fd, pid_t reader, char *res, size_t len)
{
	uint8_t *buf = malloc(SH_CHUNK);
	struct sh_deadline dl;
	uint64_t off = 0;
	int err = 0, stalled = 0;

	if (!buf) {
		snprintf(res, len, "could not run (no memory)");
		return;
	}
	/* The reader waits first, then the bytes come (the case that hangs
	 * when the reader cannot see them). Not a timed assertion: if it
	 * never seems to wait, the writer goes on all the same. */
	if (reader > 0)
		sh_wait_blocked(reader, 3000);
	sh_deadline_start(&dl, SH_STALL_MS);
	while (off < SH_TOTAL && !err && !stalled) {
		size_t done = 0;

		fl_sc_fill(buf, off, SH_CHUNK, SH_SEED);
		while (done < SH_CHUNK) {
			ssize_t w = write(fd, buf + done, SH_CHUNK - done);

			if (w < 0 && errno == EINTR && sh_expired()) {
				stalled = 1;
				break;
			}
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				err = w < 0 ? errno : EIO;
				break;
			}
			done += (size_t)w;
		}
		off += done;
	}
	sh_deadline_stop(&dl);
	free(buf);
	if (stalled)
		snprintf(res, len, "STALLED: %llu of %u bytes written after %d s",
			 (unsigned long long)off, SH_TOTAL, SH_STALL_MS / 1000);
	else if (err)
		snprintf(res, len, "write: ERROR %s after %llu bytes", fl_errname(err),
			 (unsigned long long)off);
	else if (shutdown(fd, SHUT_WR))
		snprintf(res, len, "wrote %u bytes; shutdown: %s", SH_TOTAL, fl_ret(-1));
	else
		snprintf(res, len, "%u bytes in 64 KiB write()s, then shutdown(SHUT_WR)", SH_TOTAL);
}

/* ------------------------------------------------------------ results */

void sh_send_result(int fd, const char *res)
{
	size_t n = strlen(res) + 1, done = 0;

	while (done < n) {
		ssize_t w = write(fd, res + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		done += (size_t)w;
	}
}

void sh_recv_result(int fd, char *res, size_t len, int ms)
{
	double end = fl_sc_now() + ms / 1000.0;
	size_t got = 0;

	while (got < len - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)((end - fl_sc_now()) * 1000);
		ssize_t r;

		if (left <= 0 || poll(&p, 1, left) <= 0)
			break;
		r = read(fd, res + got, len - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (memchr(res, 0, got))
			return;
	}
	res[got] = 0;
	if (!got)
		snprintf(res, len, "NO ANSWER");
}

int sh_reap(pid_t pid, int ms)
{
	double end = fl_sc_now() + ms / 1000.0;
	int st;
	pid_t r;

	for (;;) {
		r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return -1;
		if (fl_sc_now() > end) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			break;
		}
		fl_sc_sleep_ms(2);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* ------------------------------------------------------- exec'd child */

/* conformance --child shared-peer read|write WAIT FD RESULT_FD: plays one
 * role on the inherited fd FD and sends its result through RESULT_FD. The
 * writer waits for its parent, the reader. */
static int sh_peer_child(int argc, char **argv)
{
	char res[SH_RES_LEN];
	int w, fd, out;

	if (argc < 4)
		return 2;
	w = atoi(argv[1]);
	fd = atoi(argv[2]);
	out = atoi(argv[3]);
	if (w < 0 || w >= SH_NWAIT)
		return 2;
	if (!strcmp(argv[0], "read"))
		sh_reader(fd, NULL, (enum sh_wait)w, res, sizeof(res));
	else
		sh_writer(fd, getppid(), res, sizeof(res));
	sh_send_result(out, res);
	close(fd);
	close(out);
	return 0;
}
FL_CHILD("shared-peer", sh_peer_child)
