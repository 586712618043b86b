// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sc_shared.c - one connected socket held by two processes, two threads or
 * two fds: a reader waits on it while a writer sends 1 MiB through it to an
 * echo process, which sends every byte back to the reader.
 *
 * Why: a reader asleep in TCP's own recvmsg when its socket joins the
 * sockhash waits on TCP's queue only and never sees a redirected byte
 * (docs/design.md, "No reader in flight"). The shim counts the readers it
 * sees; these are the ones it cannot count: a reader in another process
 * (fork, SCM_RIGHTS, exec with or without the shim), behind another fd
 * (dup) or inside stdio (fread on an fdopen()ed FILE).
 *
 * The cases are a cross product, one scenario each, named
 *   shared-<where the reader is>-reads-<how it waits>-<before|after>-threshold-<client|server>
 * - where: the other process reads and this one writes ("fork-child-reads",
 *   "scm-receiver-reads", "exec-child-reads", "exec-noshim-child-reads"),
 *   the reverse ("fork-parent-reads", "scm-sender-reads",
 *   "exec-parent-reads", "exec-noshim-parent-reads": the other process
 *   writes), or a second thread reads while the main thread writes, through
 *   the same fd ("thread-reads"), a dup()ed one ("dup-thread-reads") or an
 *   fdopen()ed FILE with fread ("stdio-thread-reads", which waits in fread
 *   only). "exec" re-runs this binary, which inherits LD_PRELOAD; "exec-noshim"
 *   runs it with LD_PRELOAD removed from its environment.
 * - how: blocking read, poll, epoll_wait level- and edge-triggered, select
 *   (each then reads), recv(MSG_WAITALL), recv with SO_RCVTIMEO.
 * - before: the socket is shared and the reader waits before the
 *   connection has moved a byte (FASTLOCAL_ENROLL_AFTER defaults to 4096),
 *   then the writer sends 1 MiB. after: the connection first moves 16 KiB
 *   each way (4 round trips of 4 KiB, by this process alone), which enrolls
 *   both ends, and only then is the socket shared.
 * - client/server: the shared socket is the client's end (the echo process
 *   accepted) or the server's end (the echo process connected).
 *
 * The trace is what TCP promises: the writer's and the reader's whole
 * outcome (1 MiB in order, then EOF), exit codes. A reader that gets no
 * byte for SH_STALL_MS gives up and says "STALLED" (sc_shared.h), so a hang
 * under the shim is a difference, not a blocked suite.
 *
 * Which cases must redirect (FL_SC_REDIRECTS): only the "after" ones.
 * - after: both ends were enrolled and in the sockhash while each was held
 *   by one process alone, so the echo end redirects into the shared socket
 *   from then on (a socket enrolled before it was shared stays a redirect
 *   target: any reader that enters recvmsg after the join runs tcp_bpf's,
 *   which reads both queues) and the shared socket's own writes are
 *   redirected as well. Under every FASTLOCAL_ENROLL_AFTER (0 enrolls at
 *   connect/accept, 1 at the first byte, 4096 during the warm-up).
 * - before: the socket is shared when it reaches the threshold, so under
 *   the new design it is not enrolled at all (fallback "shared") and its
 *   peer, announced, waits outside the sockhash: the whole transfer may
 *   stay on TCP, which is right. (With FASTLOCAL_ENROLL_AFTER=0 the shared
 *   end is announced at connect/accept and may join while shared; then only
 *   its writes are redirected, never bytes into it. Either way nothing is
 *   required.)
 *
 * Left out of the cross product: stdio readers wait only in fread (a FILE
 * has no poll of its own), and a second thread only ever reads (a reader
 * thread with a writing main thread is the case that hangs; the reverse is
 * the same two calls in the same process).
 */
#include "sc_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "conformance.h"

extern char **environ;

enum sh_how { SH_FORK, SH_SCM, SH_EXEC, SH_EXEC_NOSHIM, SH_THREAD, SH_DUP, SH_STDIO };

struct sh_place {
	const char *name;
	enum sh_how how;
	int other_reads; /* the other process (thread) reads; this one writes */
	const char *other, *self; /* the two, as the trace names them */
};

static const struct sh_place sh_places[] = {
	{ "fork-child-reads", SH_FORK, 1, "child", "parent" },
	{ "fork-parent-reads", SH_FORK, 0, "child", "parent" },
	{ "scm-receiver-reads", SH_SCM, 1, "receiver", "sender" },
	{ "scm-sender-reads", SH_SCM, 0, "receiver", "sender" },
	{ "exec-child-reads", SH_EXEC, 1, "exec'd child", "parent" },
	{ "exec-parent-reads", SH_EXEC, 0, "exec'd child", "parent" },
	{ "exec-noshim-child-reads", SH_EXEC_NOSHIM, 1, "exec'd child without LD_PRELOAD", "parent" },
	{ "exec-noshim-parent-reads", SH_EXEC_NOSHIM, 0, "exec'd child without LD_PRELOAD", "parent" },
	{ "thread-reads", SH_THREAD, 1, "second thread", "main thread" },
	{ "dup-thread-reads", SH_DUP, 1, "second thread, dup()ed fd", "main thread" },
	{ "stdio-thread-reads", SH_STDIO, 1, "second thread, fread() of fdopen()", "main thread" },
};
#define SH_NPLACES (sizeof(sh_places) / sizeof(sh_places[0]))

struct sh_case {
	const struct sh_place *pl;
	enum sh_wait w;
	int after;  /* shared after the connection moved 16 KiB each way */
	int server; /* the shared socket is the server's end */
};

/* The connection: x here, its peer in the echo process. */
struct sh_conn {
	int x;
	pid_t echo;
	pid_t helper; /* SCM: the receiving process, forked before the connection */
	int unix_sk;  /* SCM: to the helper */
};

#define SH_WARM_ROUNDS 4
#define SH_WARM_SIZE   4096
#define SH_WARM_SEED   0x77ull

/* --------------------------------------------------------------- echo */

/* The other end: every byte back, until EOF; then close. */
static void sh_echo(int y)
{
	static uint8_t buf[SH_CHUNK];

	for (;;) {
		ssize_t n = read(y, buf, sizeof(buf)), done = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			_exit(3);
		if (n == 0)
			break;
		while (done < n) {
			ssize_t w = write(y, buf + done, (size_t)(n - done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				_exit(4);
			done += w;
		}
	}
	close(y);
	_exit(0);
}

/* ---------------------------------------------------------- SCM_RIGHTS */

static int sh_send_fd(int us, int fd)
{
	char c = 'f', ctl[CMSG_SPACE(sizeof(int))];
	struct iovec v = { &c, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;

	memset(ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(us, &m, 0) == 1 ? 0 : -1;
}

static int sh_recv_fd(int us, int ms)
{
	char c, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec v = { &c, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	struct pollfd p = { .fd = us, .events = POLLIN };
	struct cmsghdr *cm;
	int fd = -1;

	if (poll(&p, 1, ms) != 1 || recvmsg(us, &m, 0) != 1)
		return -1;
	for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* The receiving process: gets the socket, says so, plays its role. */
static void sh_scm_helper(int us, const struct sh_case *k)
{
	char res[SH_RES_LEN], ack = 'k';
	int fd = sh_recv_fd(us, 20000);

	struct pollfd p = { .fd = us, .events = POLLIN };

	if (fd < 0 || write(us, &ack, 1) != 1)
		_exit(5);
	if (k->pl->other_reads) {
		sh_reader(fd, NULL, k->w, res, sizeof(res));
	} else {
		/* The sender's go: from then on its next wait is its reader's
		 * (before it, it waited for our ack, which would look the same). */
		if (poll(&p, 1, 5000) != 1 || read(us, &ack, 1) != 1)
			_exit(6);
		sh_writer(fd, getppid(), res, sizeof(res));
	}
	sh_send_result(us, res);
	close(fd);
	_exit(0);
}

/* -------------------------------------------------------------- setup */

static void sh_teardown(struct sh_conn *cn)
{
	if (cn->x >= 0)
		close(cn->x);
	if (cn->helper > 0)
		sh_reap(cn->helper, 0);
	if (cn->echo > 0)
		sh_reap(cn->echo, 0);
	if (cn->unix_sk >= 0)
		close(cn->unix_sk);
}

/*
 * IMPORTANT: the echo is a process of its own, not a thread here: it holds
 * the other end alone (it makes it itself, after the fork), so that end
 * enrolls as any unshared socket does, and this process stays
 * single-threaded unless the case itself wants a second thread (a threaded
 * process counts its calls in progress as references: holders.h). For SCM the receiver is forked first, so that it holds the
 * socket only once it is passed. Every child gives up after 30 s (alarm,
 * kept across exec), so a broken run leaves nothing behind.
 */
static int sh_setup(int family, const struct sh_case *k, struct sh_conn *cn)
{
	int port, l, sv[2] = { -1, -1 };

	cn->x = -1;
	cn->echo = cn->helper = -1;
	cn->unix_sk = -1;
	l = fl_sc_listen(family, &port);
	if (l < 0)
		return -1;
	if (k->pl->how == SH_SCM) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
			close(l);
			return -1;
		}
		fflush(stdout);
		cn->helper = fork();
		if (cn->helper == 0) {
			alarm(30);
			close(l);
			close(sv[0]);
			sh_scm_helper(sv[1], k);
		}
		close(sv[1]);
		cn->unix_sk = sv[0];
	}
	fflush(stdout);
	cn->echo = fork();
	if (cn->echo == 0) {
		int y;

		alarm(30);
		if (sv[0] >= 0)
			close(sv[0]);
		y = k->server ? fl_sc_connect(family, port) : accept(l, NULL, NULL);
		close(l);
		if (y < 0)
			_exit(2);
		sh_echo(y);
	}
	if (cn->echo > 0)
		cn->x = k->server ? accept(l, NULL, NULL) : fl_sc_connect(family, port);
	close(l);
	if (cn->x < 0 || (k->pl->how == SH_SCM && cn->helper < 0)) {
		sh_teardown(cn);
		return -1;
	}
	return 0;
}

/* "after": 16 KiB each way, in round trips, by this process alone. */
static void sh_warm_up(int x, char *res, size_t len)
{
	uint8_t buf[SH_WARM_SIZE], want[SH_WARM_SIZE];
	struct sh_deadline dl;
	uint64_t off = 0;
	int i, bad = 0, fail = 0;

	sh_deadline_start(&dl, SH_STALL_MS);
	for (i = 0; i < SH_WARM_ROUNDS && !fail; i++) {
		size_t got = 0;

		fl_sc_fill(buf, off, SH_WARM_SIZE, SH_WARM_SEED);
		if (fl_sc_write_pattern(x, off, SH_WARM_SIZE, SH_WARM_SEED)) {
			fail = 1;
			break;
		}
		while (got < SH_WARM_SIZE) {
			ssize_t n = read(x, buf + got, SH_WARM_SIZE - got);

			if (n < 0 && errno == EINTR && !sh_expired())
				continue;
			if (n <= 0) {
				fail = 1;
				break;
			}
			got += (size_t)n;
		}
		fl_sc_fill(want, off, SH_WARM_SIZE, SH_WARM_SEED);
		if (!fail && memcmp(buf, want, SH_WARM_SIZE))
			bad = 1;
		off += SH_WARM_SIZE;
	}
	sh_deadline_stop(&dl);
	if (fail)
		snprintf(res, len, "FAILED or STALLED in round %d", i + 1);
	else
		snprintf(res, len, "%d bytes each way, echoed %s", SH_WARM_ROUNDS * SH_WARM_SIZE,
			 bad ? "WRONG" : "in order");
}

/* ---------------------------------------------------------- processes */

/* The forked child execs this binary as "--child shared-peer": with the
 * environment as it is (LD_PRELOAD, so the shim, inherited) or without
 * LD_PRELOAD. */
static void sh_exec_peer(const struct sh_case *k, int x, int out)
{
	char w[8], fd[16], o[16], **env = environ;
	char *argv[] = { (char *)fl_sc_self(), "--child", "shared-peer",
			 k->pl->other_reads ? "read" : "write", w, fd, o, NULL };
	size_t n = 0, i, j = 0;

	snprintf(w, sizeof(w), "%d", (int)k->w);
	snprintf(fd, sizeof(fd), "%d", x);
	snprintf(o, sizeof(o), "%d", out);
	if (k->pl->how == SH_EXEC_NOSHIM) {
		while (environ[n])
			n++;
		env = calloc(n + 1, sizeof(*env));
		if (!env)
			_exit(126);
		for (i = 0; i < n; i++)
			if (strncmp(environ[i], "LD_PRELOAD=", 11))
				env[j++] = environ[i];
	}
	execve(fl_sc_self(), argv, env);
	_exit(127);
}

/*
 * The socket goes to another process (fork, SCM_RIGHTS, fork+exec), which
 * plays one role while this one plays the other. *other_exit: its exit.
 * IMPORTANT: only this process traces. The other one sends its one-line
 * result through a pipe (or the SCM socket), printed here after ours, so
 * that the order of the lines never depends on which process ran first.
 */
static void sh_processes(const struct sh_case *k, struct sh_conn *cn, char *rd, char *wr,
			 int *other_exit)
{
	const struct sh_place *pl = k->pl;
	char *mine = pl->other_reads ? wr : rd, *theirs = pl->other_reads ? rd : wr, ack = 0;
	int res[2] = { -1, -1 }, in = -1;
	pid_t pid = -1;
	struct pollfd p;

	if (pl->how == SH_SCM) {
		pid = cn->helper;
		in = cn->unix_sk;
		p.fd = in;
		p.events = POLLIN;
		if (sh_send_fd(cn->unix_sk, cn->x) || poll(&p, 1, 5000) != 1 ||
		    read(in, &ack, 1) != 1 || ack != 'k' ||
		    (!pl->other_reads && write(in, "g", 1) != 1)) {
			snprintf(mine, SH_RES_LEN, "could not pass the socket");
			snprintf(theirs, SH_RES_LEN, "never got the socket");
			*other_exit = sh_reap(pid, 0);
			cn->helper = -1;
			return;
		}
	} else {
		if (pipe(res)) {
			snprintf(mine, SH_RES_LEN, "could not run (pipe)");
			snprintf(theirs, SH_RES_LEN, "could not run (pipe)");
			return;
		}
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			char r[SH_RES_LEN];

			alarm(30);
			close(res[0]);
			if (pl->how != SH_FORK)
				sh_exec_peer(k, cn->x, res[1]);
			if (pl->other_reads)
				sh_reader(cn->x, NULL, k->w, r, sizeof(r));
			else
				sh_writer(cn->x, getppid(), r, sizeof(r));
			sh_send_result(res[1], r);
			_exit(0);
		}
		close(res[1]);
		in = res[0];
		if (pid < 0) {
			close(in);
			snprintf(mine, SH_RES_LEN, "could not run (fork)");
			snprintf(theirs, SH_RES_LEN, "could not run (fork)");
			return;
		}
	}
	if (pl->other_reads)
		sh_writer(cn->x, pid, mine, SH_RES_LEN);
	else
		sh_reader(cn->x, NULL, k->w, mine, SH_RES_LEN);
	sh_recv_result(in, theirs, SH_RES_LEN, 3 * SH_STALL_MS);
	*other_exit = sh_reap(pid, 5000);
	if (pl->how == SH_SCM)
		cn->helper = -1;
	else
		close(in);
}

/* ------------------------------------------------------------ threads */

struct sh_thr {
	int fd;
	FILE *fp;
	enum sh_wait w;
	pid_t tid; /* atomic: set by the reader thread when it starts */
	char res[SH_RES_LEN];
};

static void *sh_reader_thread(void *arg)
{
	struct sh_thr *t = arg;

	__atomic_store_n(&t->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	sh_reader(t->fd, t->fp, t->w, t->res, sizeof(t->res));
	return NULL;
}

/* A second thread reads (through x, a dup of it, or a FILE on it) while
 * the main thread writes through x. */
static void sh_threads(const struct sh_case *k, struct sh_conn *cn, char *rd, char *wr)
{
	struct sh_thr t = { .fd = cn->x, .fp = NULL, .w = k->w, .tid = 0 };
	double end = fl_sc_now() + 2;
	pthread_t th;

	if (k->pl->how == SH_DUP)
		t.fd = dup(cn->x);
	if (k->pl->how == SH_STDIO)
		t.fp = fdopen(cn->x, "r");
	if (t.fd < 0 || (k->pl->how == SH_STDIO && !t.fp) ||
	    pthread_create(&th, NULL, sh_reader_thread, &t)) {
		snprintf(rd, SH_RES_LEN, "could not run (dup, fdopen or thread)");
		snprintf(wr, SH_RES_LEN, "could not run (dup, fdopen or thread)");
		return;
	}
	while (!__atomic_load_n(&t.tid, __ATOMIC_ACQUIRE) && fl_sc_now() < end)
		fl_sc_sleep_ms(1);
	sh_writer(cn->x, __atomic_load_n(&t.tid, __ATOMIC_ACQUIRE), wr, SH_RES_LEN);
	pthread_join(th, NULL);
	snprintf(rd, SH_RES_LEN, "%s", t.res);
	if (k->pl->how == SH_DUP)
		close(t.fd);
	if (t.fp) {
		fclose(t.fp); /* closes x */
		cn->x = -1;
	}
}

/* ----------------------------------------------------------- scenario */

static int sh_run(int family)
{
	const struct sh_case *k = fl_sc_arg();
	char rd[SH_RES_LEN], wr[SH_RES_LEN], warm[SH_RES_LEN];
	struct sh_conn cn;
	int other_exit = -1, threads;

	if (!k || sh_setup(family, k, &cn)) {
		fprintf(stderr, "shared: setup failed: %s\n", strerror(errno));
		return -1;
	}
	threads = k->pl->how == SH_THREAD || k->pl->how == SH_DUP || k->pl->how == SH_STDIO;
	if (k->after) {
		sh_warm_up(cn.x, warm, sizeof(warm));
		fl_trace("warm-up (before sharing): %s", warm);
	}
	if (threads)
		sh_threads(k, &cn, rd, wr);
	else
		sh_processes(k, &cn, rd, wr, &other_exit);
	fl_trace("writer (%s): %s", k->pl->other_reads ? k->pl->self : k->pl->other, wr);
	fl_trace("reader (%s): %s", k->pl->other_reads ? k->pl->other : k->pl->self, rd);
	if (!threads)
		fl_trace("%s: exit %d", k->pl->other, other_exit);
	if (cn.x >= 0)
		close(cn.x);
	cn.x = -1;
	/* Every holder of the shared end is done: the echo has seen EOF. */
	fl_trace("echo process: exit %d", sh_reap(cn.echo, SH_STALL_MS));
	cn.echo = -1;
	sh_teardown(&cn);
	return 0;
}

/* --------------------------------------------------------------- table */

#define SH_MAX_CASES (SH_NPLACES * SH_NWAIT * 4)

/* Written once, by the constructor below, before main. */
static struct sh_case sh_cases[SH_MAX_CASES];
static struct fl_scenario sh_scenarios[SH_MAX_CASES];
static char sh_names[SH_MAX_CASES][80];

__attribute__((constructor)) static void sh_register(void)
{
	size_t n = 0, p;
	int w, after, server;

	for (p = 0; p < SH_NPLACES; p++)
		for (w = 0; w < SH_NWAIT; w++) {
			/* A FILE is read with fread only, and fread needs a FILE. */
			if ((sh_places[p].how == SH_STDIO) != (w == SH_FREAD))
				continue;
			for (after = 0; after < 2; after++)
				for (server = 0; server < 2; server++) {
					struct sh_case *k = &sh_cases[n];
					struct fl_scenario *sc = &sh_scenarios[n];

					k->pl = &sh_places[p];
					k->w = (enum sh_wait)w;
					k->after = after;
					k->server = server;
					snprintf(sh_names[n], sizeof(sh_names[n]),
						 "shared-%s-%s-%s-threshold-%s", sh_places[p].name,
						 sh_wait_name[w], after ? "after" : "before",
						 server ? "server" : "client");
					sc->name = sh_names[n];
					sc->flags = after ? FL_SC_REDIRECTS : 0;
					sc->fn = sh_run;
					sc->file = __FILE__;
					sc->arg = k;
					fl_sc_register(sc);
					n++;
				}
		}
}
