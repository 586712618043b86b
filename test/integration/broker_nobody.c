// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * broker_nobody - a process that is not root is accelerated through
 * "fastlocal daemon", and cannot touch what is not its own
 * (docs/security.md).
 *
 * The test runs as root under the shim, starts the broker on a private
 * socket for the test's pin dir, and runs children as the real user
 * nobody (setgroups/setgid/setuid, then exec of a copy of this program in
 * a directory nobody can read, with the shim preloaded):
 *   - a nobody server and a nobody client: both ends enrolled (in nobody's
 *     slot domain), both directions redirected, byte-exact;
 *   - nobody cannot open a pin, detach a program, or get a map or program
 *     by id; cannot make the broker unenroll, enroll, adopt or mark a socket
 *     root created (handed to it over a unix socket); cannot enroll with a
 *     slot of another domain or one that does not hold its socket's cookie;
 *     root's own connection keeps flowing byte-exact afterwards;
 *   - a root server and a nobody client: byte-exact, and accelerated both
 *     ways (each end's slot is in its own domain; the verdict reads the
 *     peer's through the outer map);
 *   - a prefork server (nginx): a root master under the shim listens,
 *     forks, and its worker becomes nobody without an exec: the worker's
 *     end is enrolled by the broker, not with root's handles;
 *   - a nobody end whose peer runs without the shim never joins the
 *     sockhash alone: the broker tells it to wait (a client whose server's
 *     port never had a server under the shim, a server whose client's end
 *     never comes), and a client whose port had one joins, then leaves.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <linux/types.h>

#include "fltest.h"
#include "fltest_broker.h"
#include "fastlocal.h"
#include "../../common/broker_proto.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define XFER (4 * MiB)

/*
 * Ports of their own, used by no other test, for the subtests about
 * whether an end joins the sockhash alone: a port marked as having had a
 * server under the shim stays marked until the next load of the pin dir,
 * which the tests of a job slot share (struct fl_joined, listening).
 */
#define PORT_PAIR "24686"        /* nobody server and client: listen() marks it */
#define PORT_NEVER_SHIM "24687"  /* only ever a server without the shim */
#define PORT_ONCE_SHIM "24688"   /* root under the shim listens, then a server without */
#define PORT_PLAIN_CLIENT "24689" /* a nobody server, a client without the shim */
#define PORT_RAW_LISTEN "24690"  /* a nobody server whose listen() bypassed the shim */

/* Owned by main (set once before any subtest): the private directory with
 * copies of this program and the shim, the broker's socket and pid. */
static char fl_dir[256], fl_sock[300], fl_self[300], fl_shim[300];
static pid_t fl_daemon = -1;
/* Owned by the subtests (one at a time): a pin dir for the next nobody
 * child instead of the test's, NULL for the test's. */
static const char *fl_child_pins;

/* ------------------------------------------------------------ helpers */

/* Forks a child that execs this program's copy with "--nobody MODE ARG";
 * out_fd becomes its fd 3 and in_fd its stdin when not -1 (every other fd
 * of ours is close-on-exec). As nobody: the shim preloaded and the broker
 * named. Else it stays root with the shim switched off (FASTLOCAL=0): a
 * peer that never enrolls. */
static pid_t fl_spawn(const char *mode, const char *arg, int out_fd, int in_fd, int as_nobody)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	if (in_fd >= 0)
		dup2(in_fd, 0);
	if (out_fd >= 0)
		dup2(out_fd, 3);
	if (!as_nobody) {
		setenv("FASTLOCAL", "0", 1);
	} else if (fl_t_become_nobody(fl_shim, fl_sock)) {
		fprintf(stderr, "cannot become nobody: %s\n", strerror(errno));
		_exit(126);
	}
	if (as_nobody && fl_child_pins)
		setenv("FASTLOCAL_PIN_DIR", fl_child_pins, 1);
	unsetenv("FASTLOCAL_ADOPT");
	execl(fl_self, fl_self, "--nobody", mode, arg ? arg : "-", (char *)NULL);
	fprintf(stderr, "exec %s: %s\n", fl_self, strerror(errno));
	_exit(127);
}

static pid_t fl_spawn_nobody(const char *mode, const char *arg, int out_fd, int in_fd)
{
	return fl_spawn(mode, arg, out_fd, in_fd, 1);
}

static pid_t fl_spawn_plain(const char *mode, const char *arg, int out_fd, int in_fd)
{
	return fl_spawn(mode, arg, out_fd, in_fd, 0);
}

static int fl_wait_ok(pid_t pid, const char *what)
{
	int st = 0;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "  %s: exit status %d\n", what, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -1;
	}
	return 0;
}

/* Writes n pattern bytes (seed), then reads n and checks them (seed2). */
static int fl_write_pattern(int fd, size_t n, uint64_t seed)
{
	uint8_t buf[16 * KiB];
	size_t off = 0, k;
	ssize_t w;

	while (off < n) {
		k = n - off < sizeof(buf) ? n - off : sizeof(buf);
		fl_t_pattern(buf, off, k, seed);
		w = write(fd, buf, k);
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

static int fl_read_pattern(int fd, size_t n, uint64_t seed)
{
	uint8_t buf[16 * KiB];
	size_t off = 0;
	ssize_t r;

	while (off < n) {
		r = read(fd, buf, n - off < sizeof(buf) ? n - off : sizeof(buf));
		if (r <= 0)
			return -1;
		if (fl_t_pattern_check(buf, off, (size_t)r, seed) >= 0)
			return -2;
		off += (size_t)r;
	}
	return 0;
}

/* One request to the broker, as a shim would make it; the broker's errno
 * (0 for success) or -1 when it could not be asked. */
static int fl_ask(uint32_t op, int fd, uint32_t slot, struct fl_broker_rep *rep, int *rfd)
{
	union fl_broker_cmsg cm;
	struct fl_broker_req q = { FL_BROKER_MAGIC, FL_ABI_VERSION, op, slot };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct iovec iov = { &q, sizeof(q) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), r = -1;

	if (rfd)
		*rfd = -1;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", fl_sock);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		goto out;
	if (fd >= 0)
		fl_broker_attach_fd(&mh, &cm, fd);
	if (sendmsg(s, &mh, 0) != sizeof(q))
		goto out;
	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = rep;
	iov.iov_len = sizeof(*rep);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	if (recvmsg(s, &mh, MSG_CMSG_CLOEXEC) != sizeof(*rep))
		goto out;
	c = CMSG_FIRSTHDR(&mh);
	if (rfd && c && c->cmsg_type == SCM_RIGHTS)
		memcpy(rfd, CMSG_DATA(c), sizeof(int));
	r = rep->err;
out:
	if (s >= 0)
		close(s);
	return r;
}

/* --------------------------------------------- the children (as nobody) */

/* Binds a listening socket to the loopback's port (a number; "-": any),
 * SO_REUSEADDR; the socket or -1. raw: listen() as a raw system call,
 * which the shim never sees (as for a socket systemd made). */
static int fl_listen_on_as(const char *port, struct sockaddr_in *a, int raw)
{
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = strcmp(port, "-") ? htons((uint16_t)atoi(port)) : 0;
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)a, sizeof(*a)) ||
	    (raw ? syscall(SYS_listen, l, 4) : listen(l, 4))) {
		if (l >= 0)
			close(l);
		return -1;
	}
	return l;
}

static int fl_listen_on(const char *port, struct sockaddr_in *a)
{
	return fl_listen_on_as(port, a, 0);
}

/* server PORT: listen (on PORT, "-": any), tell the port on fd 3, accept, send "r",
 * read XFER (seed 1), write XFER (seed 2), say "done" on fd 3, wait for fd 0 to
 * close, exit. */
static int fl_child_server(const char *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int l = fl_listen_on(port, &a), s, r;
	char c;

	if (l < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) ||
	    write(3, &a.sin_port, sizeof(a.sin_port)) != sizeof(a.sin_port))
		return 2;
	s = accept(l, NULL, NULL);
	/* Enrolled now (at accept, or by the warm-up past the default
	 * threshold): tell the client to go, so that none of its bytes go over
	 * TCP before this end is in the sockhash. */
	if (s < 0 || fl_t_warmup_half(s, 0) || write(s, "r", 1) != 1)
		return 3;
	r = fl_read_pattern(s, XFER, 1);
	if (r) {
		fprintf(stderr, "server: %s\n", r == -2 ? "wrong bytes" : strerror(errno));
		return 4;
	}
	if (fl_write_pattern(s, XFER, 2))
		return 5;
	if (write(3, "d", 1) != 1)
		return 6;
	while (read(0, &c, 1) > 0)
		;
	close(s);
	return 0;
}

/* client PORT: connect, wait for "r", write XFER (seed 1), read XFER (seed 2), "done"
 * on fd 3, wait for fd 0 to close. */
static int fl_child_client(const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0), r;
	char c;

	a.sin_port = htons((uint16_t)atoi(port));
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) || fl_t_warmup_half(s, 1) ||
	    read(s, &c, 1) != 1 || c != 'r')
		return 2;
	if (fl_write_pattern(s, XFER, 1))
		return 3;
	r = fl_read_pattern(s, XFER, 2);
	if (r) {
		fprintf(stderr, "client: %s\n", r == -2 ? "wrong bytes" : strerror(errno));
		return 4;
	}
	if (write(3, "d", 1) != 1)
		return 5;
	while (read(0, &c, 1) > 0)
		;
	close(s);
	return 0;
}

/* echo PORT: as root with the shim switched off (FASTLOCAL=0), a peer that
 * never enrolls: listens (on PORT, "-": any), writes its port on fd 3,
 * echoes one connection until EOF. */
static int fl_child_echo_as(const char *port, int raw)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int l = fl_listen_on_as(port, &a, raw), s;

	if (l < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) ||
	    write(3, &a.sin_port, sizeof(a.sin_port)) != sizeof(a.sin_port))
		return 2;
	s = accept(l, NULL, NULL);
	if (s < 0)
		return 3;
	return fl_t_echo(s) ? 4 : 0;
}

/*
 * Lockstep echo rounds of 64 KiB against port, each checked (pattern seed),
 * sleeping every_us before each round and pause_us before round pause_at.
 * pausing PORT: 64 rounds with a pause longer than the shim's grace for a
 * missing peer (preload/enroll/unpaired.c) halfway, so that this end leaves
 * the sockhash before the second half. paced PORT: 60 rounds 50 ms apart
 * (3 s): time for ends that wait to ask the broker again.
 */
static int fl_child_rounds(const char *port, int rounds, uint64_t seed, unsigned every_us,
			   int pause_at, unsigned pause_us)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static uint8_t out[64 * KiB], in[64 * KiB];
	int s = socket(AF_INET, SOCK_STREAM, 0), r;
	size_t o;
	ssize_t n;

	a.sin_port = htons((uint16_t)atoi(port));
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		return 2;
	for (r = 0; r < rounds; r++) {
		if (every_us)
			usleep(every_us);
		if (r == pause_at)
			usleep(pause_us);
		fl_t_pattern(out, (uint64_t)r * sizeof(out), sizeof(out), seed);
		for (o = 0; o < sizeof(out); o += (size_t)n)
			if ((n = write(s, out + o, sizeof(out) - o)) <= 0)
				return 3;
		for (o = 0; o < sizeof(in); o += (size_t)n)
			if ((n = read(s, in + o, sizeof(in) - o)) <= 0)
				return 4;
		if (fl_t_pattern_check(in, (uint64_t)r * sizeof(in), sizeof(in), seed) >= 0)
			return 5;
	}
	close(s);
	return 0;
}

#define EXPECT(cond, ...)                                       \
	do {                                                    \
		if (!(cond)) {                                  \
			fprintf(stderr, "nobody: " __VA_ARGS__); \
			fputc('\n', stderr);                    \
			return 1;                               \
		}                                               \
	} while (0)

/* privileges IDS: no pin opens; no detach; no program, map or link by id
 * (IDS: "prog_id,map_id,link_id" of the test's load). */
static int fl_child_privileges(const char *ids)
{
	static const char *const pins[] = {
		FL_PIN_PROG_VERDICT, FL_PIN_PROG_SOCKOPS, FL_PIN_LINK_SOCKOPS, FL_PIN_MAP_SOCKHASH,
		FL_PIN_MAP_SK, FL_PIN_MAP_SLOTS, FL_PIN_MAP_SLOT_IDX, FL_PIN_MAP_USTATS,
		FL_PIN_MAP_DOMAINS, FL_PIN_MAP_DOM_UID,
	};
	unsigned prog = 0, map = 0, link = 0;
	char path[512];
	size_t i;
	int fd, cg;

	EXPECT(getuid() == FL_T_NOBODY && geteuid() == FL_T_NOBODY, "not running as nobody");
	EXPECT(sscanf(ids, "%u,%u,%u", &prog, &map, &link) == 3, "bad ids '%s'", ids);
	for (i = 0; i < sizeof(pins) / sizeof(pins[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", fl_t_pin_dir(), pins[i]);
		fd = bpf_obj_get(path);
		EXPECT(fd < 0 && (errno == EACCES || errno == EPERM), "opened pin %s (fd %d, %s)",
		       pins[i], fd, strerror(errno));
	}
	fd = bpf_prog_get_fd_by_id(prog);
	EXPECT(fd < 0 && errno == EPERM, "got the verdict program by id: %s", strerror(errno));
	fd = bpf_map_get_fd_by_id(map);
	EXPECT(fd < 0 && errno == EPERM, "got the sockhash by id: %s", strerror(errno));
	fd = bpf_link_get_fd_by_id(link);
	EXPECT(fd < 0 && errno == EPERM, "got the sockops link by id: %s", strerror(errno));
	/* Detaching sockops from the cgroup root by type alone (no program fd:
	 * nobody has none). Whatever the kernel answers, it must fail; the
	 * parent then checks that the program is still attached. */
	cg = open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY);
	EXPECT(cg >= 0, "open /sys/fs/cgroup: %s", strerror(errno));
	EXPECT(bpf_prog_detach(cg, BPF_CGROUP_SOCK_OPS) < 0, "detached sockops from the cgroup root");
	close(cg);
	return 0;
}

/* others: fd 3 is a unix socket carrying a TCP socket root created and
 * enrolled (SCM_RIGHTS). The broker must refuse every request about it. */
static int fl_child_others(void)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	char b;
	struct iovec iov = { &b, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	struct fl_broker_rep rep;
	int fd = -1, err;

	EXPECT(recvmsg(3, &mh, 0) == 1 && CMSG_FIRSTHDR(&mh), "no socket from root");
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	err = fl_ask(FL_BROKER_UNENROLL, fd, 0, &rep, NULL);
	EXPECT(err == EPERM, "unenroll of root's socket answered %d (%s)", err, strerror(err));
	err = fl_ask(FL_BROKER_ADOPT, fd, 0, &rep, NULL);
	EXPECT(err == EPERM, "adopt (read) of root's socket answered %d", err);
	err = fl_ask(FL_BROKER_MARK_OFF, fd, 0, &rep, NULL);
	EXPECT(err == EPERM, "mark-off of root's socket answered %d", err);
	err = fl_ask(FL_BROKER_ENROLL, fd, FL_SLOT_REF(1, 0), &rep, NULL);
	EXPECT(err == EPERM, "enroll of root's socket answered %d", err);
	printf("  root's socket refused: unenroll, adopt, mark-off, enroll all EPERM\n");
	return 0;
}

/* forge: nobody's own connection, enrolled with forged slots (refused),
 * with a unix socket (refused), then with its true slot (accepted). */
static int fl_child_forge(void)
{
	struct fl_broker_rep rep;
	struct fl_slot *slots;
	uint64_t cookie = 0;
	socklen_t cl = sizeof(cookie);
	int c, s, dfd, err, u[2];
	uint32_t dom, idx = 7;

	/* A pair the shim of this process does not see (raw system calls), so
	 * that only this test's requests touch it. */
	{
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(a);
		int l = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);

		EXPECT(l >= 0 && !bind(l, (struct sockaddr *)&a, sizeof(a)) && !listen(l, 1) &&
		       !getsockname(l, (struct sockaddr *)&a, &len), "listener");
		c = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
		EXPECT(!syscall(SYS_connect, c, (struct sockaddr *)&a, sizeof(a)), "connect");
		s = (int)syscall(SYS_accept4, l, NULL, NULL, 0);
		EXPECT(s >= 0, "accept");
		close(l);
	}
	EXPECT(!getsockopt(c, SOL_SOCKET, SO_COOKIE, &cookie, &cl), "SO_COOKIE");
	err = fl_ask(FL_BROKER_HELLO, -1, 0, &rep, &dfd);
	EXPECT(!err && dfd >= 0 && rep.domain > 0, "hello answered %d", err);
	dom = rep.domain;
	slots = mmap(NULL, (size_t)rep.nslots * sizeof(*slots), PROT_READ | PROT_WRITE, MAP_SHARED,
		     dfd, 0);
	EXPECT(slots != MAP_FAILED, "mmap of our domain: %s", strerror(errno));
	/* A slot of root's domain, and of a domain that is not ours. */
	err = fl_ask(FL_BROKER_ENROLL, c, FL_SLOT_REF(0, idx), &rep, NULL);
	EXPECT(err == EPERM, "enroll with a slot of domain 0 answered %d", err);
	err = fl_ask(FL_BROKER_ENROLL, c, FL_SLOT_REF(dom + 1, idx), &rep, NULL);
	EXPECT(err == EPERM, "enroll with a slot of domain %u answered %d", dom + 1, err);
	/* Our domain, but the slot does not hold this socket's cookie. */
	__atomic_store_n(&slots[idx].owner, cookie + 1, __ATOMIC_SEQ_CST);
	err = fl_ask(FL_BROKER_ENROLL, c, FL_SLOT_REF(dom, idx), &rep, NULL);
	EXPECT(err == EPERM, "enroll with a slot owned by another cookie answered %d", err);
	/* Not a TCP socket. */
	EXPECT(!socketpair(AF_UNIX, SOCK_STREAM, 0, u), "socketpair");
	err = fl_ask(FL_BROKER_ENROLL, u[0], FL_SLOT_REF(dom, idx), &rep, NULL);
	EXPECT(err == EPROTOTYPE, "enroll of a unix socket answered %d", err);
	/* The control: the true slot is accepted, so the refusals above were
	 * for the reasons tested. */
	__atomic_store_n(&slots[idx].owner, cookie, __ATOMIC_SEQ_CST);
	err = fl_ask(FL_BROKER_ENROLL, c, FL_SLOT_REF(dom, idx), &rep, NULL);
	EXPECT(err == 0, "enroll with our own slot answered %d (%s)", err, strerror(err));
	err = fl_ask(FL_BROKER_ENROLL, c, FL_SLOT_REF(dom, idx), &rep, NULL);
	EXPECT(err == EALREADY, "a second enroll answered %d", err);
	printf("  forged slots refused (domain 0, domain %u, wrong cookie), unix socket refused, "
	       "own slot %#x accepted\n", dom + 1, FL_SLOT_REF(dom, idx));
	return 0;
}

/* Bytes one way after exec: more than the default budget (tcp_rmem's max,
 * at most 32 MiB here), so that a reader whose reads were not counted (not
 * adopted) would make the direction fall back to TCP. */
#define ADOPT_XFER (40 * MiB)

/*
 * adopt "-": a pair enrolled through the broker, 64 KiB each way, then
 * execv of this program with the two fds ("adopt C,S").
 * adopt "C,S": the new image's shim adopted both (ADOPT); ADOPT_XFER each
 * way byte-exact; then SO_RCVLOWAT on S takes it off the fast path through
 * the broker (UNENROLL) and bytes still arrive exact; and a pair the shim
 * did not see is marked off (MARK_OFF), moves 1 MiB and closes. Between
 * the transfer and SO_RCVLOWAT: "d" on fd 3, then waits for stdin to close.
 */
static int fl_child_adopt(const char *arg)
{
	struct fl_t_stream st[2];
	struct fl_broker_rep rep;
	uint64_t cookie = 0;
	socklen_t cl = sizeof(cookie);
	int c, s, lowat = 2;
	char fds[32], ch;

	if (!strcmp(arg, "-")) {
		char *args[] = { fl_self, (char *)"--nobody", (char *)"adopt", fds, NULL };

		EXPECT(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "no pair");
		EXPECT(fl_write_pattern(c, 64 * KiB, 3) == 0 && fl_read_pattern(s, 64 * KiB, 3) == 0 &&
		       fl_write_pattern(s, 64 * KiB, 4) == 0 && fl_read_pattern(c, 64 * KiB, 4) == 0,
		       "64 KiB before exec not exact");
		fcntl(c, F_SETFD, 0);
		fcntl(s, F_SETFD, 0);
		snprintf(fds, sizeof(fds), "%d,%d", c, s);
		execv(fl_self, args);
		EXPECT(0, "execv: %s", strerror(errno));
	}
	EXPECT(sscanf(arg, "%d,%d", &c, &s) == 2, "bad fds");
	EXPECT(fl_ask(FL_BROKER_ADOPT, s, 0, &rep, NULL) == 0 && FL_SLOT_DOM(rep.slot) != 0 &&
	       !getsockopt(s, SOL_SOCKET, SO_COOKIE, &cookie, &cl) && rep.cookie == cookie,
	       "after exec the socket is not enrolled in our domain");
	memset(st, 0, sizeof(st));
	st[0] = (struct fl_t_stream){ .wfd = c, .rfd = s, .total = ADOPT_XFER, .wsize = 65536,
				      .seed = 7 };
	st[1] = (struct fl_t_stream){ .wfd = s, .rfd = c, .total = ADOPT_XFER, .wsize = 65536,
				      .seed = 8 };
	EXPECT(fl_t_stream_run(st, 2) == 0, "after exec: bytes lost or reordered");
	/* The parent looks at the connection now. */
	EXPECT(write(3, "d", 1) == 1, "fd 3");
	while (read(0, &ch, 1) > 0)
		;
	/* Off the fast path through the broker: the shim's fl_unenroll. */
	EXPECT(!setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)), "SO_RCVLOWAT");
	EXPECT(fl_ask(FL_BROKER_ADOPT, s, 0, &rep, NULL) == ENODATA,
	       "still enrolled after SO_RCVLOWAT (broker says %d)", rep.err);
	EXPECT(fl_write_pattern(c, 64 * KiB, 9) == 0 && fl_read_pattern(s, 64 * KiB, 9) == 0,
	       "after unenroll: bytes lost or reordered");
	{
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(a);
		int l = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0), rc, rs;

		EXPECT(l >= 0 && !bind(l, (struct sockaddr *)&a, sizeof(a)) && !listen(l, 1) &&
		       !getsockname(l, (struct sockaddr *)&a, &len), "listener");
		rc = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
		EXPECT(!syscall(SYS_connect, rc, (struct sockaddr *)&a, sizeof(a)), "connect");
		rs = (int)syscall(SYS_accept4, l, NULL, NULL, 0);
		EXPECT(rs >= 0 && fl_ask(FL_BROKER_MARK_OFF, rc, 0, &rep, NULL) == 0 &&
		       fl_ask(FL_BROKER_MARK_OFF, rs, 0, &rep, NULL) == 0, "mark-off refused");
		EXPECT(fl_write_pattern(rc, MiB, 10) == 0 && fl_read_pattern(rs, MiB, 10) == 0,
		       "marked-off pair not exact");
		syscall(SYS_close, rc);
		syscall(SYS_close, rs);
		syscall(SYS_close, l);
	}
	return 0;
}

/* holder: 1 MiB redirected into a socket nobody has not read yet; "d" on
 * fd 3; when stdin closes, read it (2 s at most) and check every byte. */
static int fl_child_holder(void)
{
	struct timeval tv = { 2, 0 };
	int c, s;
	char ch;

	EXPECT(fl_t_tcp_pair(AF_INET, &c, &s) == 0, "no pair");
	EXPECT(fl_write_pattern(c, MiB, 11) == 0, "write");
	EXPECT(write(3, "d", 1) == 1, "fd 3");
	while (read(0, &ch, 1) > 0)
		;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	EXPECT(fl_read_pattern(s, MiB, 11) == 0, "the unread MiB did not survive: %s",
	       strerror(errno));
	printf("  nobody read its 1 MiB byte-exact after the unload\n");
	return 0;
}

static int fl_child(const char *mode, const char *arg)
{
	if (!strcmp(mode, "holder"))
		return fl_child_holder();
	if (!strcmp(mode, "adopt"))
		return fl_child_adopt(arg);
	if (!strcmp(mode, "server"))
		return fl_child_server(arg);
	if (!strcmp(mode, "client"))
		return fl_child_client(arg);
	if (!strcmp(mode, "privileges"))
		return fl_child_privileges(arg);
	if (!strcmp(mode, "others"))
		return fl_child_others();
	if (!strcmp(mode, "forge"))
		return fl_child_forge();
	if (!strcmp(mode, "echo"))
		return fl_child_echo_as(arg, 0);
	if (!strcmp(mode, "echo-raw"))
		return fl_child_echo_as(arg, 1);
	if (!strcmp(mode, "paced"))
		return fl_child_rounds(arg, 60, 6, 50000, -1, 0);
	if (!strcmp(mode, "pausing"))
		return fl_child_rounds(arg, 64, 5, 0, 32, 300000);
	return 100;
}

/*
 * "--master": a prefork server, as nginx runs. Root under the shim, it
 * listens (its port on fd 3), forks a worker that becomes nobody without
 * an exec, and waits for it; the worker accepts one connection and echoes
 * XFER bytes checked, then exits. IMPORTANT: the master must not hand the
 * worker handles it opened as root (preload/kernel/maps.h,
 * fl_maps_mark_listener): the worker is nobody, and enrolls through the
 * broker.
 */
static int fl_master(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), s, st;
	pid_t w;

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *)&a, &len) ||
	    write(3, &a.sin_port, sizeof(a.sin_port)) != sizeof(a.sin_port))
		return 2;
	close(3);
	w = fork();
	if (w == 0) {
		if (setgroups(0, NULL) || setgid(FL_T_NOBODY) || setuid(FL_T_NOBODY))
			_exit(3);
		s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		_exit(s < 0 || fl_read_pattern(s, XFER, 21) || fl_write_pattern(s, XFER, 22) ? 4 : 0);
	}
	close(l);
	if (w < 0 || waitpid(w, &st, 0) != w)
		return 5;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ------------------------------------------------------------ the parent */

/* The connection whose a end (connect) is pid_a: "ok" when both ends are
 * enrolled and both directions moved bytes by redirect; prints them. */
static int fl_check_conn(pid_t pid_a, pid_t pid_b, uint64_t want)
{
	char out[512];
	unsigned long long ab = 0, ba = 0, ta = 0, tb = 0;
	int ea = 0, eb = 0;

	if (fl_t_sh_out(out, sizeof(out),
			"'%s' conns --json | jq -r '.connections[] | select(.a.pid == %d and "
			".b.pid == %d) | \"\\(.a.enrolled) \\(.b.enrolled) \\(.a_to_b.redirected_bytes) "
			"\\(.b_to_a.redirected_bytes) \\(.a_to_b.bytes) \\(.b_to_a.bytes)\"'",
			fl_t_cli(), (int)pid_a, (int)pid_b) || !out[0]) {
		fprintf(stderr, "  no connection from pid %d to pid %d in conns\n", (int)pid_a,
			(int)pid_b);
		return -1;
	}
	{
		char a[8] = "", b[8] = "";

		if (sscanf(out, "%7s %7s %llu %llu %llu %llu", a, b, &ab, &ba, &ta, &tb) != 6)
			return -1;
		ea = !strcmp(a, "true");
		eb = !strcmp(b, "true");
	}
	printf("  conns: a enrolled %d, b enrolled %d; a->b %llu of %llu B redirected, "
	       "b->a %llu of %llu B\n", ea, eb, ab, ta, ba, tb);
	if (!want) /* after exec: at least ADOPT_XFER redirected each way */
		return ea && eb && ab >= ADOPT_XFER && ba >= ADOPT_XFER ? 0 : -1;
	/* b -> a also carried the server's one-byte "go"; both directions the
	 * warm-up's bytes (fl_t_warmup_half, over TCP while the ends enroll). */
	return ea && eb && ta == want + fl_t_enroll_after() && tb == want + 1 + fl_t_enroll_after() &&
	       ab >= want / 2 && ba >= want / 2 ? 0 : -1;
}

static int test_nobody_pair_accelerated(void)
{
	uint64_t w0 = fl_t_status_u64("waited_for_server.waited"), w1;
	int sp[2], cp[2], go[2];
	uint16_t port = 0;
	char port_s[16], d;
	pid_t srv, cli;
	int ok;

	FL_T_CHECK(!pipe2(sp, O_CLOEXEC) && !pipe2(cp, O_CLOEXEC) && !pipe2(go, O_CLOEXEC), "pipes");
	srv = fl_spawn_nobody("server", PORT_PAIR, sp[1], go[0]);
	FL_T_CHECK(read(sp[0], &port, sizeof(port)) == sizeof(port), "the server said no port");
	snprintf(port_s, sizeof(port_s), "%u", ntohs(port));
	/* The client sees no pins at all (as in a container without the
	 * host's bpffs): it asks the broker too. */
	fl_child_pins = "/nonexistent/fastlocal-pins";
	cli = fl_spawn_nobody("client", port_s, cp[1], go[0]);
	fl_child_pins = NULL;
	close(sp[1]);
	close(cp[1]);
	close(go[0]);
	ok = read(sp[0], &d, 1) == 1 && read(cp[0], &d, 1) == 1;
	/* Both ends alive, the data moved: what fastlocal saw of it. */
	ok = ok && fl_check_conn(cli, srv, XFER) == 0;
	close(go[1]);
	/* Wait for both, whatever the first says. */
	ok = (fl_wait_ok(srv, "server") == 0) + (fl_wait_ok(cli, "client") == 0) == 2 && ok;
	close(sp[0]);
	close(cp[0]);
	w1 = fl_t_status_u64("waited_for_server.waited");
	FL_T_CHECK(ok, "the nobody pair was not byte-exact and redirected both ways");
	/* The server's listen() marked its port through the broker. */
	FL_T_CHECK(w0 != UINT64_MAX && w1 == w0,
		   "waited_for_server.waited went from %llu to %llu: the nobody client should not "
		   "have waited for a server whose listen() ran under the shim",
		   (unsigned long long)w0, (unsigned long long)w1);
	return 0;
}

/* Our sockops program (id in "prog,map,link") is still attached at the
 * cgroup root: it is reached through its link. */
static int fl_sockops_attached(const char *ids)
{
	unsigned prog, map, link;
	struct bpf_link_info li;
	__u32 len = sizeof(li);
	int fd, ok;

	if (sscanf(ids, "%u,%u,%u", &prog, &map, &link) != 3)
		return 0;
	fd = bpf_link_get_fd_by_id(link);
	memset(&li, 0, sizeof(li));
	ok = fd >= 0 && !bpf_obj_get_info_by_fd(fd, &li, &len) && li.type == BPF_LINK_TYPE_CGROUP &&
	     li.cgroup.cgroup_id != 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Silent connections to the broker, held open by this process. */
#define SILENT 100

static int test_silent_callers_delay_nobody(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int silent[SILENT], i, n = 0, r;
	double t0 = fl_t_now();

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", fl_sock);
	for (i = 0; i < SILENT; i++) {
		silent[n] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (silent[n] >= 0 && !connect(silent[n], (struct sockaddr *)&a, sizeof(a)))
			n++;
		else if (silent[n] >= 0)
			close(silent[n]);
	}
	/* Served one after the other, they would hold the broker 200 ms each. */
	r = test_nobody_pair_accelerated();
	for (i = 0; i < n; i++)
		close(silent[i]);
	printf("  %d silent connections open; the pair took %.2f s\n", n, fl_t_now() - t0);
	FL_T_CHECK(n == SILENT, "only %d silent connections", n);
	return r;
}

static int test_nobody_has_no_privilege(void)
{
	char ids[128], path[512];
	int vfd, hfd, lfd;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", fl_t_pin_dir(), FL_PIN_PROG_VERDICT);
	vfd = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/%s", fl_t_pin_dir(), FL_PIN_MAP_SOCKHASH);
	hfd = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/%s", fl_t_pin_dir(), FL_PIN_LINK_SOCKOPS);
	lfd = bpf_obj_get(path);
	FL_T_CHECK(vfd >= 0 && hfd >= 0 && lfd >= 0, "root cannot open the pins");
	{
		struct bpf_prog_info pi = { 0 };
		struct bpf_map_info mi = { 0 };
		struct bpf_link_info li = { 0 };
		__u32 l1 = sizeof(pi), l2 = sizeof(mi), l3 = sizeof(li);

		FL_T_CHECK(!bpf_obj_get_info_by_fd(vfd, &pi, &l1) &&
			   !bpf_obj_get_info_by_fd(hfd, &mi, &l2) &&
			   !bpf_obj_get_info_by_fd(lfd, &li, &l3), "ids");
		snprintf(ids, sizeof(ids), "%u,%u,%u", pi.id, mi.id, li.id);
	}
	close(vfd);
	close(hfd);
	close(lfd);
	pid = fl_spawn_nobody("privileges", ids, -1, -1);
	FL_T_CHECK(fl_wait_ok(pid, "privileges") == 0, "nobody got hold of a program, map or link");
	FL_T_CHECK(fl_sockops_attached(ids), "our sockops program is no longer attached");
	return 0;
}

/* Root's enrolled connection, kept across the attacks. */
static int fl_root_c = -1, fl_root_s = -1;

static int test_root_socket_refused(void)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	char b = 'x';
	struct iovec iov = { &b, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *c;
	struct fl_broker_rep rep;
	int u[2];
	pid_t pid;

	/* Enrolled by its first bytes (the warm-up), as a root program's is. */
	FL_T_CHECK(fl_t_tcp_pair(AF_INET, &fl_root_c, &fl_root_s) == 0 &&
		   fl_t_warmup(fl_root_c, fl_root_s) == 0, "no root pair");
	/* Root itself may ask about any socket: the control for EPERM below. */
	FL_T_CHECK(fl_ask(FL_BROKER_ADOPT, fl_root_s, 0, &rep, NULL) == 0 && FL_SLOT_DOM(rep.slot) == 0,
		   "root's accepted socket is not enrolled in domain 0 (broker says %d)", rep.err);
	FL_T_CHECK(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u), "socketpair");
	memset(&cm, 0, sizeof(cm));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fl_root_s, sizeof(int));
	pid = fl_spawn_nobody("others", NULL, u[1], -1);
	close(u[1]);
	FL_T_CHECK(sendmsg(u[0], &mh, 0) == 1, "cannot hand the socket over: %s", strerror(errno));
	close(u[0]);
	FL_T_CHECK(fl_wait_ok(pid, "others") == 0,
		   "the broker did something for nobody with root's socket");
	/* Still root's, still enrolled. */
	FL_T_CHECK(fl_ask(FL_BROKER_ADOPT, fl_root_s, 0, &rep, NULL) == 0,
		   "root's socket lost its enrollment");
	return 0;
}

static int test_forged_slots_refused(void)
{
	pid_t pid = fl_spawn_nobody("forge", NULL, -1, -1);

	FL_T_CHECK(fl_wait_ok(pid, "forge") == 0, "the broker accepted a forged slot");
	return 0;
}

static int test_root_keeps_flowing(void)
{
	struct fl_t_stream st[2] = {
		{ .wfd = fl_root_c, .rfd = fl_root_s, .total = 8 * MiB, .wsize = 4096, .seed = 5 },
		{ .wfd = fl_root_s, .rfd = fl_root_c, .total = 8 * MiB, .wsize = 1000, .seed = 6 },
	};
	uint64_t red0 = fl_t_status_u64("redirected_bytes"), red;

	FL_T_CHECK(fl_t_stream_run(st, 2) == 0, "root's connection lost or reordered bytes");
	red = fl_t_status_u64("redirected_bytes") - red0;
	printf("  root's pair: 16 MiB byte-exact, %llu B redirected\n", (unsigned long long)red);
	FL_T_CHECK(red >= 8 * MiB, "root's pair no longer redirects");
	close(fl_root_c);
	close(fl_root_s);
	return 0;
}

static int test_adopt_unenroll_mark_off(void)
{
	int cp[2], go[2], ok;
	uint64_t off0 = fl_t_status_u64("passed_bytes_by_reason.switched_off"), off;
	char d;
	pid_t pid;

	FL_T_CHECK(!pipe2(cp, O_CLOEXEC) && !pipe2(go, O_CLOEXEC), "pipes");
	pid = fl_spawn_nobody("adopt", NULL, cp[1], go[0]);
	close(cp[1]);
	close(go[0]);
	ok = read(cp[0], &d, 1) == 1;
	/* Both ends in one process (pid): a is the connect()ing end. Redirected
	 * past the budget both ways: the new image counts its reads. */
	ok = ok && fl_check_conn(pid, pid, 0) == 0;
	close(go[1]);
	ok = fl_wait_ok(pid, "adopt") == 0 && ok;
	close(cp[0]);
	off = fl_t_status_u64("passed_bytes_by_reason.switched_off") - off0;
	printf("  marked-off pair: %llu B counted as switched_off\n", (unsigned long long)off);
	FL_T_CHECK(ok, "after exec, adoption, unenroll or the bytes went wrong");
	FL_T_CHECK(off >= MiB, "the pair marked off through the broker was not counted");
	return 0;
}

/* Root server (this process, the shim through the pins: domain 0), nobody
 * client (the broker: nobody's domain). */
static int test_mixed_pair(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), s, cp[2], go[2], ok;
	char port_s[16], d;
	pid_t cli;

	FL_T_CHECK(l >= 0 && !bind(l, (struct sockaddr *)&a, sizeof(a)) && !listen(l, 4) &&
		   !getsockname(l, (struct sockaddr *)&a, &len), "listener");
	FL_T_CHECK(!pipe2(cp, O_CLOEXEC) && !pipe2(go, O_CLOEXEC), "pipes");
	snprintf(port_s, sizeof(port_s), "%u", ntohs(a.sin_port));
	cli = fl_spawn_nobody("client", port_s, cp[1], go[0]);
	close(cp[1]);
	close(go[0]);
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	ok = s >= 0 && fl_t_warmup_half(s, 0) == 0 && write(s, "r", 1) == 1 &&
	     fl_read_pattern(s, XFER, 1) == 0 && fl_write_pattern(s, XFER, 2) == 0;
	ok = ok && read(cp[0], &d, 1) == 1;
	ok = ok && fl_check_conn(cli, getpid(), XFER) == 0;
	close(go[1]);
	ok = fl_wait_ok(cli, "client") == 0 && ok;
	close(s);
	close(l);
	close(cp[0]);
	FL_T_CHECK(ok, "root server / nobody client: not byte-exact, or not redirected both ways");
	return 0;
}

/* Counters read around a subtest about an end that may join alone. */
struct fl_alone_counts {
	uint64_t enrolled, brokered, waited, left;
};

static void fl_alone_read(struct fl_alone_counts *c, const char *waited)
{
	c->enrolled = fl_t_status_u64("enrolled_total");
	c->brokered = fl_t_status_u64("broker.enrolled_total");
	c->waited = fl_t_status_u64(waited);
	c->left = fl_t_status_u64("unpaired_left_total");
}

/* A nobody end that the broker told to wait never joined, and waited once. */
static int fl_check_never_joined(const struct fl_alone_counts *a, const struct fl_alone_counts *b,
				 const char *waited, const char *who)
{
	FL_T_CHECK(a->enrolled != UINT64_MAX && b->enrolled == a->enrolled &&
		   a->brokered != UINT64_MAX && b->brokered == a->brokered,
		   "enrolled_total went from %llu to %llu, broker.enrolled_total from %llu to %llu: "
		   "the nobody %s's end joined the sockhash alone",
		   (unsigned long long)a->enrolled, (unsigned long long)b->enrolled,
		   (unsigned long long)a->brokered, (unsigned long long)b->brokered, who);
	FL_T_CHECK(a->waited != UINT64_MAX && b->waited != UINT64_MAX && b->waited - a->waited == 1,
		   "%s went from %llu to %llu: the broker should have told the nobody %s's end to "
		   "wait, and counted it once", waited, (unsigned long long)a->waited,
		   (unsigned long long)b->waited, who);
	FL_T_CHECK(a->left != UINT64_MAX && b->left == a->left,
		   "unpaired_left_total went from %llu to %llu", (unsigned long long)a->left,
		   (unsigned long long)b->left);
	return 0;
}

/* An echo server on port (server: "echo", root with the shim switched
 * off, or "echo-raw", nobody under the shim with a raw listen()) and a
 * nobody client under the shim (client: "pausing" or "paced"): 0 when both
 * ended well, every round byte-exact. */
static int fl_echo_rounds(const char *server, const char *port, const char *client)
{
	int nobody = !strcmp(server, "echo-raw"), sp[2];
	uint16_t p = 0;
	char port_s[16];
	pid_t srv, cli;

	FL_T_CHECK(!pipe2(sp, O_CLOEXEC), "pipe");
	srv = fl_spawn(server, port, sp[1], -1, nobody);
	close(sp[1]);
	FL_T_CHECK(srv > 0 && read(sp[0], &p, sizeof(p)) == sizeof(p),
		   "the echo server said no port");
	close(sp[0]);
	snprintf(port_s, sizeof(port_s), "%u", ntohs(p));
	cli = fl_spawn_nobody(client, port_s, -1, -1);
	FL_T_CHECK((fl_wait_ok(cli, client) == 0) + (fl_wait_ok(srv, server) == 0) == 2,
		   "%s echo rounds of 64 KiB were not byte-exact (see above)", client);
	return 0;
}

/* A nobody client whose server never ran under the shim on its port: the
 * broker tells it to wait, as a root shim waits by itself; it never joins,
 * every byte comes back exact. */
static int test_nobody_client_never_joins_alone(void)
{
	struct fl_alone_counts c0, c1;

	fl_alone_read(&c0, "waited_for_server.waited");
	if (fl_echo_rounds("echo", PORT_NEVER_SHIM, "pausing"))
		return -1;
	fl_alone_read(&c1, "waited_for_server.waited");
	return fl_check_never_joined(&c0, &c1, "waited_for_server.waited", "client");
}

/* A nobody client whose port had a server under the shim (root listened
 * there), but whose server never enrolls (a root echo server with the shim
 * switched off), joins, then leaves the sockhash through the broker, which
 * counts it, and every byte comes back exact. */
static int test_nobody_alone_leaves(void)
{
	uint64_t u0 = fl_t_status_u64("unpaired_left_total"), u1;
	struct sockaddr_in a;
	int l = fl_listen_on(PORT_ONCE_SHIM, &a);

	/* (this process is under the shim: its listen() marked the port) */
	FL_T_CHECK(l >= 0, "listen on port %s: %s", PORT_ONCE_SHIM, strerror(errno));
	close(l);
	if (fl_echo_rounds("echo", PORT_ONCE_SHIM, "pausing"))
		return -1;
	u1 = fl_t_status_u64("unpaired_left_total");
	FL_T_CHECK(u0 != UINT64_MAX && u1 != UINT64_MAX && u1 - u0 == 1,
		   "unpaired_left_total went from %llu to %llu: nobody's end, whose peer never "
		   "enrolled, should have left the sockhash once, through the broker",
		   (unsigned long long)u0, (unsigned long long)u1);
	return 0;
}

/*
 * A nobody server whose listen() bypassed the shim (a raw system call, as
 * for a socket systemd made) and a nobody client under the shim: the port
 * is marked only when the server's end would enroll, so the client's end
 * may wait; the server's end waits for the client's. Both join within
 * their next requests to the broker, and the bytes are redirected.
 */
static int test_nobody_raw_listen_pair_joins(void)
{
	uint64_t b0 = fl_t_status_u64("broker.enrolled_total"), b1;
	uint64_t r0 = fl_t_status_u64("redirected_bytes"), r1;

	if (fl_echo_rounds("echo-raw", PORT_RAW_LISTEN, "paced"))
		return -1;
	b1 = fl_t_status_u64("broker.enrolled_total");
	r1 = fl_t_status_u64("redirected_bytes");
	FL_T_CHECK(b0 != UINT64_MAX && b1 != UINT64_MAX && b1 - b0 == 2,
		   "broker.enrolled_total went from %llu to %llu: both nobody ends should have "
		   "joined", (unsigned long long)b0, (unsigned long long)b1);
	FL_T_CHECK(r0 != UINT64_MAX && r1 != UINT64_MAX && r1 - r0 >= 1 * MiB,
		   "only %llu bytes redirected of 2 x 3.75 MiB", (unsigned long long)(r1 - r0));
	printf("  %llu bytes redirected of 2 x 3.75 MiB\n", (unsigned long long)(r1 - r0));
	return 0;
}

/* A nobody server whose client runs without the shim: the broker tells its
 * accepting end to wait for its peer; it never joins, byte-exact. */
static int test_nobody_server_never_joins_alone(void)
{
	struct fl_alone_counts c0, c1;
	int sp[2], cp[2], go[2], ok;
	uint16_t port = 0;
	char port_s[16], d;
	pid_t srv, cli;

	fl_alone_read(&c0, "waited_for_peer.waited");
	FL_T_CHECK(!pipe2(sp, O_CLOEXEC) && !pipe2(cp, O_CLOEXEC) && !pipe2(go, O_CLOEXEC), "pipes");
	srv = fl_spawn_nobody("server", PORT_PLAIN_CLIENT, sp[1], go[0]);
	FL_T_CHECK(read(sp[0], &port, sizeof(port)) == sizeof(port), "the server said no port");
	snprintf(port_s, sizeof(port_s), "%u", ntohs(port));
	cli = fl_spawn_plain("client", port_s, cp[1], go[0]);
	close(sp[1]);
	close(cp[1]);
	close(go[0]);
	ok = read(sp[0], &d, 1) == 1 && read(cp[0], &d, 1) == 1;
	close(go[1]);
	ok = (fl_wait_ok(srv, "server") == 0) + (fl_wait_ok(cli, "plain client") == 0) == 2 && ok;
	close(sp[0]);
	close(cp[0]);
	fl_alone_read(&c1, "waited_for_peer.waited");
	FL_T_CHECK(ok, "%u bytes each way between a nobody server and a plain client: not "
		   "byte-exact (see above)", XFER);
	return fl_check_never_joined(&c0, &c1, "waited_for_peer.waited", "server");
}

/* A prefork server (fl_master): its nobody worker's end enrolls through
 * the broker, both directions redirected, byte-exact. */
static int test_prefork_worker_enrolls_through_the_broker(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint64_t b0 = fl_t_status_u64("broker.enrolled_total");
	uint64_t r0 = fl_t_status_u64("redirected_bytes"), b1, r1;
	int sp[2], c = -1, ok;
	pid_t master;

	FL_T_CHECK(!pipe2(sp, O_CLOEXEC), "pipe");
	master = fork();
	if (master == 0) {
		dup2(sp[1], 3);
		setenv("FASTLOCAL_BROKER", fl_sock, 1);
		execl(fl_self, fl_self, "--master", (char *)NULL);
		_exit(127);
	}
	close(sp[1]);
	FL_T_CHECK(master > 0 && read(sp[0], &a.sin_port, sizeof(a.sin_port)) == sizeof(a.sin_port),
		   "the master said no port");
	close(sp[0]);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ok = c >= 0 && !connect(c, (struct sockaddr *)&a, sizeof(a)) &&
	     fl_write_pattern(c, XFER, 21) == 0 && fl_read_pattern(c, XFER, 22) == 0;
	if (c >= 0)
		close(c);
	ok = (fl_wait_ok(master, "master") == 0) && ok;
	b1 = fl_t_status_u64("broker.enrolled_total");
	r1 = fl_t_status_u64("redirected_bytes");
	FL_T_CHECK(ok, "%u bytes each way through a prefork worker: not byte-exact (see above)",
		   XFER);
	FL_T_CHECK(b0 != UINT64_MAX && b1 != UINT64_MAX && b1 - b0 == 1,
		   "broker.enrolled_total went from %llu to %llu: the nobody worker's end should "
		   "have been enrolled by the broker (once), not with the master's root handles",
		   (unsigned long long)b0, (unsigned long long)b1);
	FL_T_CHECK(r0 != UINT64_MAX && r1 != UINT64_MAX && r1 - r0 >= XFER,
		   "only %llu bytes redirected of %u each way", (unsigned long long)(r1 - r0), XFER);
	return 0;
}

static int fl_start_daemon(void)
{
	fl_daemon = fl_t_daemon_start(fl_sock, getenv("FASTLOCAL_PIN_DIR"));
	return fl_daemon > 0 ? 0 : -1;
}

/*
 * In a load of its own (so that the suite's domains are not used up): a
 * process that switches its effective uid asks HELLO as 128 different
 * users. Each of the first FL_DOMAINS_MAX - 1 gets a domain of its own, a
 * user asking again gets the same one, the next user gets ENOSPC.
 */
static int fl_hello_as(const char *sock, uid_t uid, struct fl_broker_rep *rep)
{
	int r, dfd = -1;

	if (seteuid(uid))
		return -1;
	snprintf(fl_sock, sizeof(fl_sock), "%s", sock);
	r = fl_ask(FL_BROKER_HELLO, -1, 0, rep, &dfd);
	if (dfd >= 0)
		close(dfd);
	return seteuid(0) ? -1 : r;
}

static int test_domains_are_capped(void)
{
	char pins[256], sock[300];
	struct fl_broker_rep rep;
	int st = 0, r;
	pid_t d, child;

	snprintf(pins, sizeof(pins), "%s-domains", fl_t_pin_dir());
	snprintf(sock, sizeof(sock), "%s/run/domains.sock", fl_dir);
	FL_T_CHECK(fl_t_sh("'%s' load --pin-dir '%s' >/dev/null", fl_t_cli(), pins) == 0,
		   "cannot load into %s", pins);
	d = fl_t_daemon_start(sock, pins);
	if (d < 0) {
		fl_t_sh("'%s' unload --pin-dir '%s' >/dev/null", fl_t_cli(), pins);
		FL_T_CHECK(0, "the second broker did not start");
	}
	/* seteuid in a child: this process keeps its own credentials. */
	child = fork();
	if (!child) {
		uid_t u;

		for (u = 0; u < FL_DOMAINS_MAX - 1; u++) {
			r = fl_hello_as(sock, 200000 + u, &rep);
			if (r || rep.domain != u + 1) {
				fprintf(stderr, "  uid %u: hello %d, domain %u\n", 200000 + u, r,
					rep.domain);
				_exit(1);
			}
		}
		r = fl_hello_as(sock, 200000 + 5, &rep);
		if (r || rep.domain != 6)
			_exit(2);
		r = fl_hello_as(sock, 300000, &rep);
		if (r != ENOSPC) {
			fprintf(stderr, "  uid 300000: hello %d, not ENOSPC\n", r);
			_exit(3);
		}
		_exit(0);
	}
	r = waitpid(child, &st, 0) == child && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (!r)
		r = fl_t_sh("'%s' status --pin-dir '%s' --socket '%s' --json | "
			    "jq -e '.slot_domains == %d and .broker.domains == %d' >/dev/null",
			    fl_t_cli(), pins, sock, FL_DOMAINS_MAX, FL_DOMAINS_MAX) ? 4 : 0;
	kill(d, SIGTERM);
	waitpid(d, NULL, 0);
	fl_t_sh("'%s' unload --pin-dir '%s' >/dev/null", fl_t_cli(), pins);
	printf("  %d users got a domain each, the next one ENOSPC (step %d)\n", FL_DOMAINS_MAX - 1, r);
	FL_T_CHECK(r == 0, "the domain cap did not hold (step %d)", r);
	return 0;
}

static int test_daemon_runs(void)
{
	struct stat st;

	FL_T_CHECK(fl_start_daemon() == 0, "fastlocal daemon did not start");
	FL_T_CHECK(!stat(fl_sock, &st) && (st.st_mode & 0777) == 0666, "socket mode %o",
		   st.st_mode & 0777);
	FL_T_CHECK(fl_t_sh("'%s' status --socket '%s' --json | jq -e '.broker.answers' >/dev/null",
			   fl_t_cli(), fl_sock) == 0, "status does not see the broker answer");
	return 0;
}

static int test_daemon_stops(void)
{
	int err = fl_t_daemon_stop(fl_daemon, fl_sock);

	fl_daemon = -1;
	FL_T_CHECK(err == 0, "the daemon did not exit 0 on SIGTERM, or left its socket behind");
	return 0;
}

/*
 * --drain (test/integration/broker_drain.sh runs it without the shim, so
 * that no root process holds the maps): nobody has 1 MiB unread in a socket
 * the broker enrolled; fastlocal is unloaded and the broker exits, so no
 * process holds the sockhash any more. The bytes must still arrive: on this
 * kernel a socket in the sockhash keeps the map alive (its psock holds the
 * verdict program, which holds the maps it uses), so the broker need not.
 */
static int test_drain_after_unload(void)
{
	int cp[2], go[2], st = 0;
	char d;
	pid_t pid;

	FL_T_CHECK(!pipe2(cp, O_CLOEXEC) && !pipe2(go, O_CLOEXEC), "pipes");
	pid = fl_spawn_nobody("holder", NULL, cp[1], go[0]);
	close(cp[1]);
	close(go[0]);
	FL_T_CHECK(read(cp[0], &d, 1) == 1, "the holder did not get ready");
	FL_T_CHECK_EQ(fl_t_sh("'%s' unload >/dev/null", fl_t_cli()), 0, "unload failed");
	FL_T_CHECK(!kill(fl_daemon, SIGTERM) && waitpid(fl_daemon, &st, 0) == fl_daemon &&
		   WIFEXITED(st) && !WEXITSTATUS(st), "the broker did not exit 0 on SIGTERM");
	fl_daemon = -1;
	close(go[1]);
	FL_T_CHECK(fl_wait_ok(pid, "holder") == 0,
		   "bytes queued in nobody's socket were lost when the last map holder went");
	return 0;
}

int main(int argc, char **argv)
{
	ssize_t n;

	if (argc == 4 && !strcmp(argv[1], "--nobody")) {
		snprintf(fl_sock, sizeof(fl_sock), "%s", getenv("FASTLOCAL_BROKER"));
		n = readlink("/proc/self/exe", fl_self, sizeof(fl_self) - 1);
		fl_self[n > 0 ? n : 0] = 0;
		return fl_child(argv[2], argv[3]);
	}
	if (argc == 2 && !strcmp(argv[1], "--master"))
		return fl_master();
	if (!fl_t_setup(geteuid() == 0, "broker_nobody runs as root"))
		return fl_t_exit_status();
	/* Copies nobody can read and execute, wherever the build tree is. */
	if (!fl_t_setup(!fl_t_nobody_copies("broker_nobody", fl_dir, fl_self, fl_shim,
					    sizeof(fl_dir)),
			"copies of the program and the shim that nobody can run"))
		return fl_t_exit_status();
	snprintf(fl_sock, sizeof(fl_sock), "%s/run/broker.sock", fl_dir);
	signal(SIGPIPE, SIG_IGN);
	/* A child that never answers must fail the test, not hang the suite. */
	alarm(120);
	if (argc == 2 && !strcmp(argv[1], "--drain")) {
		if (fl_t_setup(fl_start_daemon() == 0, "fastlocal daemon started"))
			FL_T_RUN("after unload and the broker's exit, nobody's unread MiB is still "
				 "read byte-exact (no process holds the maps)",
				 test_drain_after_unload);
		goto out;
	}
	FL_T_RUN("fastlocal daemon serves a private socket (mode 0666) and status sees it",
		 test_daemon_runs);
	if (fl_daemon > 0) {
		FL_T_RUN("a nobody server and a nobody client (which sees no pins at all) are "
			 "enrolled through the broker and redirect 4 MiB each way byte-exact; the "
			 "server's listen() marked its port, so the client did not wait",
			 test_nobody_pair_accelerated);
		FL_T_RUN("100 silent connections to the broker do not keep a nobody pair from being "
			 "accelerated", test_silent_callers_delay_nobody);
		FL_T_RUN("nobody cannot open a pin, get the program, sockhash or link by id, or detach "
			 "sockops", test_nobody_has_no_privilege);
		FL_T_RUN("the broker refuses nobody every request about a socket root created, "
			 "handed over a unix socket", test_root_socket_refused);
		FL_T_RUN("the broker refuses forged slots (another domain, another cookie) and a "
			 "unix socket", test_forged_slots_refused);
		FL_T_RUN("nobody's sockets survive exec (adopted through the broker, 40 MiB each way "
			 "redirected), leave the fast path on SO_RCVLOWAT and are marked off",
			 test_adopt_unenroll_mark_off);
		FL_T_RUN("root's connection keeps redirecting byte-exact after the attempts",
			 test_root_keeps_flowing);
		FL_T_RUN("a root server and a nobody client redirect both ways byte-exact",
			 test_mixed_pair);
		FL_T_RUN("a prefork server's worker that became nobody after a root master "
			 "listened is enrolled by the broker, 4 MiB each way redirected byte-exact",
			 test_prefork_worker_enrolls_through_the_broker);
		FL_T_RUN("a nobody client whose server never ran under the shim on its port never "
			 "joins the sockhash (the broker tells it to wait), byte-exact",
			 test_nobody_client_never_joins_alone);
		FL_T_RUN("a nobody client whose port had a server under the shim, but whose peer "
			 "never enrolls, leaves the fast path through the broker, byte-exact",
			 test_nobody_alone_leaves);
		FL_T_RUN("a nobody server whose client runs without the shim never joins the "
			 "sockhash (the broker tells it to wait), byte-exact",
			 test_nobody_server_never_joins_alone);
		FL_T_RUN("a nobody server whose listen() bypassed the shim and a nobody client "
			 "both join after waiting, and the bytes are redirected",
			 test_nobody_raw_listen_pair_joins);
		FL_T_RUN("127 users get a slot domain each from the broker, the 128th is refused "
			 "(ENOSPC), status counts them", test_domains_are_capped);
		FL_T_RUN("SIGTERM stops the daemon with status 0 and removes its socket",
			 test_daemon_stops);
	}
out:
	if (fl_daemon > 0) {
		kill(fl_daemon, SIGKILL);
		waitpid(fl_daemon, NULL, 0);
	}
	fl_t_sh("rm -rf '%s'", fl_dir);
	return fl_t_exit_status();
}
