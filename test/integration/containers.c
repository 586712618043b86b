// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * containers - two network namespaces on one bridge, as two containers on one
 * host: their connection is accelerated, and two such hosts-in-a-host with
 * the same addresses and ports never exchange a byte.
 *
 * A "host" is three namespaces made with "ip netns add" (names carry the
 * pid): one holds a bridge, the two others each have a veth into it, with
 * 10.78.0.1/24 (the client's) and 10.78.0.2/24 (the server's). The server and
 * the client are this program again (argv[1] == "role"), entered into their
 * namespace with setns() and exec()ed, so that each is a process of its own
 * with the shim preloaded (LD_PRELOAD is inherited from "fastlocal run") and
 * with FASTLOCAL=0 when the test wants plain TCP. Each streams 8 MiB of its
 * pattern both ways at once and reports, through a pipe: whether every byte
 * arrived intact, its socket's record in the pinned fl_sk (enrolled? its
 * key's scope and its nonce), its namespace cookie, and how much Tcp OutSegs
 * grew in its own namespace (/proc/net/snmp read inside it).
 *
 * The same two namespaces then hold applications that are not root, as in
 * most containers: the roles become the user nobody after setns() and
 * before exec(), see no pins, and are enrolled through "fastlocal daemon"
 * (started on a private socket for the test's load). The parent checks the
 * live connection with "fastlocal conns --json": both ends enrolled, owned
 * by the two nobody processes, both directions redirected. Through a port
 * mapping (DNAT in the server's namespace) the broker refuses both ends as
 * not on this host (EREMOTE), and the bytes go over TCP, exact.
 *
 * Why this can fail: a cross-namespace peer that is not proven to be on this
 * host stays on TCP (enrollment and redirected bytes do not grow, OutSegs
 * grows by thousands); a pairing that crosses the two hosts delivers the
 * other pattern (byte check) or pairs with a socket that never enrolled.
 */
/* fl-test-env: FASTLOCAL_ENROLL_AFTER=0 */
/* (Enrollment at connect/accept: this test proves pairing across
 * namespaces, the key, the nonce, isolation, by exact counts of redirected
 * bytes and of Tcp OutSegs, which need both ends in the sockhash from the
 * first byte. A threaded stream's start in the default configuration is
 * stream.c's and lifecycle.c's.)
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <bpf/bpf.h>

#include "fastlocal.h"
#include "fltest.h"
#include "fltest_broker.h"
#include "fltest_netns.h"
#include "../../common/kernel_compat.h"

#define MiB (1024ULL * 1024ULL)
#define FL_CT_BYTES (8 * MiB) /* per direction */
/* Of which at least this many are redirected: all but the first
 * enroll_after bytes, which go over TCP by design in the default
 * configuration (each end enrolls once it has moved that many). */
#define FL_CT_REDIRECTED (FL_CT_BYTES - fl_t_enroll_after())
#define FL_CT_PORT 7788
#define FL_CT_CPORT 41000
#define FL_CT_CLIENT_IP "10.78.0.1"
#define FL_CT_SERVER_IP "10.78.0.2"
#define FL_CT_CLIENT_IP6 "fd78::1"
#define FL_CT_SERVER_IP6 "fd78::2"
#define FL_CT_TIMEOUT 20.0
/* Segments an accelerated transfer may still cost in one namespace: the
 * handshake, the FIN and its ACK, and a few window updates. 8 MiB over TCP
 * is more than 5700 data segments one way alone. */
#define FL_CT_FAST_SEGS 50
#define FL_CT_PLAIN_SEGS 2000

/* What a role process reports. */
struct fl_ct_report {
	int ok;            /* every byte arrived, in order, exactly */
	int enrolled;      /* its fl_sk record says FL_SK_ENROLLED */
	uint64_t outsegs;  /* Tcp OutSegs growth in its namespace */
	uint64_t scope;    /* its key's scope */
	uint64_t nonce;    /* its fl_sk nonce */
	uint64_t netns;    /* SO_NETNS_COOKIE */
	unsigned uid;      /* its real uid, so that "as nobody" is proven */
	double started, ended;
	char why[160];
};

/* One running pair: the server and the client process and their pipes. */
struct fl_ct_pair {
	pid_t pid[2];      /* [0] client, [1] server */
	int report[2];     /* read ends */
	struct fl_ct_report r[2];
};

/* Owned by main's thread: the namespaces of two "hosts" ([h][0] bridge,
 * [h][1] client, [h][2] server), whether each was made, and this binary. */
static char fl_ct_ns[2][3][48];
static int fl_ct_made[2][3];
static char fl_ct_self[4096];
static char fl_ct_gate_env[32]; /* FL_CT_GATE for the clients, "" for none */
static char fl_ct_hold_env[32]; /* FL_CT_HOLD for both roles, "" for none */
static volatile pid_t fl_ct_kids[4];
/* Owned by main's thread. When fl_ct_nobody is set, roles run as the user
 * nobody: the copies of this program and of the shim in fl_ct_dir (the
 * build tree need not be readable by nobody), enrolled through the broker
 * fl_ct_daemon serving fl_ct_sock. fl_ct_dport: the port the clients
 * connect to, 0 for the server's own (FL_CT_PORT). */
static int fl_ct_nobody, fl_ct_dport;
static char fl_ct_dir[128], fl_ct_copy[128], fl_ct_shim[128], fl_ct_sock[160];
static volatile pid_t fl_ct_daemon = -1;

/* ---------------------------------------------------------------- roles */

/* With FL_CT_GATE="ARMED_FD,GATE_FD" in the environment, a client says it
 * is connected on ARMED_FD and waits for a byte on GATE_FD: so that several
 * transfers start at the same moment. 0, or -1. */
static int fl_ct_wait_gate(void)
{
	const char *g = getenv("FL_CT_GATE");
	int armed, gate;
	char c;

	if (!g)
		return 0;
	if (sscanf(g, "%d,%d", &armed, &gate) != 2)
		return -1;
	return write(armed, "k", 1) == 1 && read(gate, &c, 1) == 1 ? 0 : -1;
}

/* With FL_CT_HOLD="DONE_FD,RELEASE_FD", a role says its transfer is done on
 * DONE_FD and keeps its connection open until a byte on RELEASE_FD: so that
 * the test can look at the live connection. 0, or -1. */
static int fl_ct_hold(void)
{
	const char *g = getenv("FL_CT_HOLD");
	int done, release;
	char c;

	if (!g)
		return 0;
	if (sscanf(g, "%d,%d", &done, &release) != 2)
		return -1;
	return write(done, "d", 1) == 1 && read(release, &c, 1) == 1 ? 0 : -1;
}

static int fl_ct_role_socket(int serve, const char *addr, int port, int cport, int ready_fd,
			     int go_fd, char *why, size_t wl)
{
	int family = strchr(addr, ':') ? AF_INET6 : AF_INET, fd, l, one = 1;
	struct sockaddr_storage ss, me;
	socklen_t len, mlen;
	char c;

	if (fl_t_sockaddr(family, addr, (uint16_t)port, &ss, &len) ||
	    fl_t_sockaddr(family, family == AF_INET6 ? "::" : "0.0.0.0", (uint16_t)cport, &me,
			  &mlen)) {
		snprintf(why, wl, "bad address %s", addr);
		return -1;
	}
	if (serve) {
		l = socket(family, SOCK_STREAM, 0);
		if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(l, (struct sockaddr *)&ss, len) || listen(l, 4)) {
			snprintf(why, wl, "listen on %s:%d: %s", addr, port, strerror(errno));
			return -1;
		}
		if (write(ready_fd, "r", 1) != 1)
			return -1;
		/* Both ends start once both are enrolled: a byte written
		 * before its peer is enrolled goes over TCP (and later ones
		 * wait behind it, the ordering gate of design.md), which
		 * would blur the OutSegs proof. The accept comes after the
		 * client's connect (and enrollment): an accepting end joins
		 * only once its peer is in the sockhash, else it waits and
		 * joins at its first call after the client's, and the
		 * client's first bytes may go over TCP meanwhile. */
		if (read(go_fd, &c, 1) != 1) {
			snprintf(why, wl, "the client never connected");
			close(l);
			return -1;
		}
		fd = accept(l, NULL, NULL);
		close(l);
		if (fd < 0)
			snprintf(why, wl, "accept: %s", strerror(errno));
		else if (write(ready_fd, "a", 1) != 1)
			snprintf(why, wl, "cannot tell the client to start");
		return fd;
	}
	fd = socket(family, SOCK_STREAM, 0);
	if (fd >= 0 && cport) {
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(fd, (struct sockaddr *)&me, mlen)) {
			snprintf(why, wl, "bind the client to port %d: %s", cport, strerror(errno));
			close(fd);
			return -1;
		}
	}
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len)) {
		snprintf(why, wl, "connect to %s:%d: %s", addr, port, strerror(errno));
		return -1;
	}
	if (write(go_fd, "c", 1) != 1 || read(ready_fd, &c, 1) != 1) {
		snprintf(why, wl, "the server never accepted");
		close(fd);
		return -1;
	}
	if (fl_ct_wait_gate()) {
		snprintf(why, wl, "the start gate never opened");
		close(fd);
		return -1;
	}
	return fd;
}

/* argv: role serve|fetch ADDR PORT CPORT BYTES SEED REPORT_FD READY_FD GO_FD.
 * The server writes 'r' to READY_FD once it listens; the client writes 'c'
 * to GO_FD once connected (enrolled), the server reads it, accepts
 * (enrolled) and answers 'a' on READY_FD; then both stream. */
static int fl_ct_role(char **argv)
{
	int serve = !strcmp(argv[2], "serve"), rep = atoi(argv[8]), fd, sk;
	struct fl_t_stream s = { .total = strtoull(argv[6], NULL, 10), .wsize = 64 * 1024,
				 .seed = strtoull(argv[7], NULL, 10) };
	struct fl_ct_report r = { 0 };
	uint64_t o0 = fl_t_tcp_outsegs();
	socklen_t ol = sizeof(r.netns);
	char path[512];
	struct fl_sk st;

	alarm(30);
	fd = fl_ct_role_socket(serve, argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[9]),
			       atoi(argv[10]), r.why, sizeof(r.why));
	if (fd >= 0) {
		s.wfd = s.rfd = fd;
		r.started = fl_t_now();
		r.ok = fl_t_stream_run(&s, 1) == 0;
		r.ended = fl_t_now();
		if (fl_ct_hold())
			snprintf(r.why, sizeof(r.why), "the test never released the connection");
		if (!r.ok)
			snprintf(r.why, sizeof(r.why), "received %llu of %llu bytes, first wrong "
				 "at %lld, error %s", (unsigned long long)s.received,
				 (unsigned long long)s.total, (long long)s.bad_offset,
				 strerror(s.error));
		/* As nobody the pin does not open (enrolled stays 0): the
		 * parent asks "fastlocal conns" instead. */
		snprintf(path, sizeof(path), "%s/%s", fl_t_pin_dir(), FL_PIN_MAP_SK);
		sk = bpf_obj_get(path);
		if (sk >= 0 && !bpf_map_lookup_elem(sk, &fd, &st)) {
			r.enrolled = !!(st.flags & FL_SK_ENROLLED);
			r.scope = st.key.scope;
			r.nonce = st.nonce;
		}
		if (sk >= 0)
			close(sk);
		r.uid = getuid();
		if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &r.netns, &ol))
			r.netns = 0;
		close(fd);
	}
	r.outsegs = fl_t_tcp_outsegs() - o0;
	return write(rep, &r, sizeof(r)) == sizeof(r) ? 0 : 1;
}

/* ------------------------------------------------------------ topology */

static void fl_ct_kill_kids(void)
{
	int i;

	for (i = 0; i < 4; i++)
		if (fl_ct_kids[i] > 0) {
			kill(fl_ct_kids[i], SIGKILL);
			waitpid(fl_ct_kids[i], NULL, 0);
			fl_ct_kids[i] = 0;
		}
}

static void fl_ct_cleanup(void)
{
	int h, i;

	fl_ct_kill_kids();
	if (fl_ct_daemon > 0) {
		kill(fl_ct_daemon, SIGTERM);
		waitpid(fl_ct_daemon, NULL, 0);
		fl_ct_daemon = -1;
	}
	if (fl_ct_dir[0]) {
		fl_t_sh("rm -rf '%s'", fl_ct_dir);
		fl_ct_dir[0] = 0;
	}
	for (h = 0; h < 2; h++)
		for (i = 0; i < 3; i++)
			if (fl_ct_made[h][i]) {
				if (FL_T_IP(NULL, "netns", "del", fl_ct_ns[h][i]))
					fprintf(stderr, "containers: could not delete namespace "
						"%s\n", fl_ct_ns[h][i]);
				fl_ct_made[h][i] = 0;
			}
}

static void fl_ct_on_signal(int sig)
{
	static const char msg[] = "FAIL: containers: interrupted or timed out\n";

	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	fl_ct_cleanup();
	_exit(128 + sig);
}

/* Namespace i of host h: lo up, eth0 (a veth whose other end is a port of
 * the bridge br0 in the host's bridge namespace) with addr. */
static int fl_ct_make_end(int h, int i, const char *addr, const char *addr6)
{
	const char *ns = fl_ct_ns[h][i], *br = fl_ct_ns[h][0];
	const char *port = i == 1 ? "pa" : "pb";

	FL_T_CHECK(FL_T_IP(NULL, "netns", "add", ns) == 0, "ip netns add %s failed", ns);
	fl_ct_made[h][i] = 1;
	FL_T_CHECK(FL_T_IP(ns, "link", "set", "lo", "up") == 0, "%s: cannot bring lo up", ns);
	FL_T_CHECK(FL_T_IP(ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns",
			   br) == 0, "%s: cannot add a veth into %s", ns, br);
	FL_T_CHECK(FL_T_IP(br, "link", "set", port, "master", "br0") == 0 &&
		   FL_T_IP(br, "link", "set", port, "up") == 0, "%s: cannot attach %s", br, port);
	/* nodad: the IPv6 address is usable at once, not after duplicate
	 * address detection. */
	FL_T_CHECK(FL_T_IP(ns, "addr", "add", addr, "dev", "eth0") == 0 &&
		   FL_T_IP(ns, "addr", "add", addr6, "dev", "eth0", "nodad") == 0 &&
		   FL_T_IP(ns, "link", "set", "eth0", "up") == 0, "%s: cannot set up eth0", ns);
	return 0;
}

static int fl_ct_make_host(int h)
{
	const char *br = fl_ct_ns[h][0];

	FL_T_CHECK(FL_T_IP(NULL, "netns", "add", br) == 0, "ip netns add %s failed", br);
	fl_ct_made[h][0] = 1;
	FL_T_CHECK(FL_T_IP(br, "link", "add", "br0", "type", "bridge") == 0 &&
		   FL_T_IP(br, "link", "set", "br0", "up") == 0, "%s: cannot make the bridge", br);
	if (fl_ct_make_end(h, 1, FL_CT_CLIENT_IP "/24", FL_CT_CLIENT_IP6 "/64") ||
	    fl_ct_make_end(h, 2, FL_CT_SERVER_IP "/24", FL_CT_SERVER_IP6 "/64"))
		return -1;
	return 0;
}

/* --------------------------------------------------------------- pairs */

/* Forks, enters namespace ns and runs this program's role there. */
static pid_t fl_ct_spawn(const char *ns, const char *role, const char *addr, int cport,
			 uint64_t seed, int rep_fd, int ready_fd, int go_fd, int plain)
{
	char cp[16], bytes[32], sd[32], rf[16], yf[16], gf[16], port[16];
	const char *exe;
	pid_t pid;

	snprintf(port, sizeof(port), "%d",
		 fl_ct_dport && !strcmp(role, "fetch") ? fl_ct_dport : FL_CT_PORT);
	snprintf(cp, sizeof(cp), "%d", cport);
	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)FL_CT_BYTES);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	snprintf(rf, sizeof(rf), "%d", rep_fd);
	snprintf(yf, sizeof(yf), "%d", ready_fd);
	snprintf(gf, sizeof(gf), "%d", go_fd);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid != 0)
		return pid;
	if (fl_t_netns_enter(ns)) {
		fprintf(stderr, "containers: cannot enter %s: %s\n", ns, strerror(errno));
		_exit(126);
	}
	if (plain)
		setenv("FASTLOCAL", "0", 1);
	if (fl_ct_gate_env[0] && !strcmp(role, "fetch"))
		setenv("FL_CT_GATE", fl_ct_gate_env, 1);
	if (fl_ct_hold_env[0])
		setenv("FL_CT_HOLD", fl_ct_hold_env, 1);
	/* After setns (which needs CAP_SYS_ADMIN) and before exec: what a
	 * container runtime does for an application that is not root. */
	if (fl_ct_nobody && fl_t_become_nobody(fl_ct_shim, fl_ct_sock)) {
		fprintf(stderr, "containers: cannot become nobody: %s\n", strerror(errno));
		_exit(126);
	}
	exe = fl_ct_nobody ? fl_ct_copy : fl_ct_self;
	execl(exe, exe, "role", role, addr, port, cp, bytes, sd, rf, yf, gf, (char *)NULL);
	_exit(127);
}

/* Starts the server of host h on addr, waits until it listens, starts the
 * client. */
static int fl_ct_start_at(int h, const char *addr, uint64_t seed, int cport, int plain,
			  struct fl_ct_pair *p)
{
	int rep[2][2], ready[2], go[2], i;
	struct pollfd pfd;
	char c;

	memset(p, 0, sizeof(*p));
	FL_T_CHECK(!pipe(rep[0]) && !pipe(rep[1]) && !pipe(ready) && !pipe(go), "pipe: %s",
		   strerror(errno));
	p->pid[1] = fl_ct_spawn(fl_ct_ns[h][2], "serve", addr, 0, seed, rep[1][1], ready[1], go[0],
				plain);
	fl_ct_kids[2 * h + 1] = p->pid[1];
	close(ready[1]);
	pfd = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	FL_T_CHECK(poll(&pfd, 1, 5000) == 1 && read(ready[0], &c, 1) == 1 && c == 'r',
		   "the server in %s did not start listening", fl_ct_ns[h][2]);
	p->pid[0] = fl_ct_spawn(fl_ct_ns[h][1], "fetch", addr, cport, seed, rep[0][1], ready[0],
				go[1], plain);
	fl_ct_kids[2 * h] = p->pid[0];
	close(ready[0]);
	close(go[0]);
	close(go[1]);
	for (i = 0; i < 2; i++) {
		close(rep[i][1]);
		p->report[i] = rep[i][0];
	}
	FL_T_CHECK(p->pid[0] > 0 && p->pid[1] > 0, "fork: %s", strerror(errno));
	return 0;
}

static int fl_ct_start(int h, uint64_t seed, int cport, int plain, struct fl_ct_pair *p)
{
	return fl_ct_start_at(h, FL_CT_SERVER_IP, seed, cport, plain, p);
}

/* Waits for both processes of host h and reads their reports. */
static int fl_ct_finish(int h, struct fl_ct_pair *p)
{
	static const char *what[2] = { "client", "server" };
	double deadline = fl_t_now() + FL_CT_TIMEOUT;
	int i, st, ok = 0;

	for (i = 0; i < 2; i++) {
		struct pollfd pfd = { .fd = p->report[i], .events = POLLIN };
		int ms = (int)((deadline - fl_t_now()) * 1000);

		if (poll(&pfd, 1, ms > 0 ? ms : 0) == 1 &&
		    read(p->report[i], &p->r[i], sizeof(p->r[i])) == sizeof(p->r[i]))
			ok++;
		close(p->report[i]);
	}
	for (i = 0; i < 2; i++) {
		if (ok != 2)
			kill(p->pid[i], SIGKILL);
		waitpid(p->pid[i], &st, 0);
		fl_ct_kids[2 * h + i] = 0;
	}
	FL_T_CHECK(ok == 2, "host %d: a role process did not report within %.0fs", h,
		   FL_CT_TIMEOUT);
	for (i = 0; i < 2; i++)
		FL_T_CHECK(p->r[i].ok, "host %d: the %s's bytes: %s", h, what[i], p->r[i].why);
	return 0;
}

/* ---------------------------------------------------------------- tests */

/* The first accelerated transfer's reports and what "fastlocal conns
 * --json" said of it while it was open ("KIND SCOPE"), for the nonce
 * subtest; written and read by main's thread only (subtests run one after
 * the other). */
static struct fl_ct_pair fl_ct_fast;
static char fl_ct_conns_line[256];

static int test_make_host(void)
{
	const char *pre = getenv("LD_PRELOAD");

	FL_T_CHECK(pre && strstr(pre, "libfastlocal"), "LD_PRELOAD has no libfastlocal.so: run "
		   "this test under 'fastlocal run' (test/run.sh does)");
	return fl_ct_make_host(0);
}

/*
 * Runs host 0's pair with both ends held open after their transfer, and
 * while they are runs "fastlocal conns --json | jq -r 'jq'" (for the live
 * connection: conns forgets a closed one) into out (empty if it did not
 * get that far). 0, or -1 when the pair failed.
 */
static int fl_ct_run_held(uint64_t seed, struct fl_ct_pair *p, const char *jq, char *out,
			  size_t outlen)
{
	int done[2], release[2], got = 0, r;
	char buf[2];

	out[0] = 0;
	FL_T_CHECK(!pipe(done) && !pipe(release), "pipe: %s", strerror(errno));
	snprintf(fl_ct_hold_env, sizeof(fl_ct_hold_env), "%d,%d", done[1], release[0]);
	r = fl_ct_start(0, seed, 0, 0, p);
	fl_ct_hold_env[0] = 0;
	close(done[1]);
	close(release[0]);
	while (!r && got < 2) {
		struct pollfd pfd = { .fd = done[0], .events = POLLIN };
		ssize_t n = poll(&pfd, 1, 10000) == 1 ? read(done[0], buf, sizeof(buf)) : -1;

		if (n <= 0)
			break;
		got += (int)n;
	}
	if (got == 2)
		fl_t_sh_out(out, outlen, "'%s' conns --json | jq -r '%s'", fl_t_cli(), jq);
	if (write(release[1], "rr", 2) != 2)
		got = 0;
	close(done[0]);
	close(release[1]);
	if (r || fl_ct_finish(0, p))
		return -1;
	FL_T_CHECK_EQ(got, 2, "the two ends did not finish their transfer");
	return 0;
}

static int test_accelerated_across_namespaces(void)
{
	uint64_t e0 = fl_t_status_u64("enrolled_total"), d0 = fl_t_status_u64("redirected_bytes");
	uint64_t e1, d1;
	struct fl_ct_pair *p = &fl_ct_fast;
	char conns[256], jq[512];
	int i;

	FL_T_CHECK(e0 != UINT64_MAX && d0 != UINT64_MAX, "status --json gave no counters");
	snprintf(jq, sizeof(jq), ".connections[] | select(.a.addr == \"%s\" and .b.addr == \"%s\" "
		 "and .b.port == %d and .a.enrolled and .b.enrolled) | .scope_kind + \" \" + .scope",
		 FL_CT_CLIENT_IP, FL_CT_SERVER_IP, FL_CT_PORT);
	if (fl_ct_run_held(501, p, jq, conns, sizeof(conns)))
		return -1;
	snprintf(fl_ct_conns_line, sizeof(fl_ct_conns_line), "%s", conns);
	e1 = fl_t_status_u64("enrolled_total");
	d1 = fl_t_status_u64("redirected_bytes");
	printf("  enrolled %llu, redirected %llu bytes; Tcp OutSegs grew by %llu (client's "
	       "namespace) and %llu (server's)\n", (unsigned long long)(e1 - e0),
	       (unsigned long long)(d1 - d0), (unsigned long long)p->r[0].outsegs,
	       (unsigned long long)p->r[1].outsegs);
	for (i = 0; i < 2; i++)
		FL_T_CHECK(p->r[i].enrolled, "the %s's socket was not enrolled",
			   i ? "server" : "client");
	FL_T_CHECK(e1 - e0 >= 2, "enrolled_total grew by %llu, expected 2",
		   (unsigned long long)(e1 - e0));
	FL_T_CHECK(d1 - d0 >= 2 * FL_CT_REDIRECTED, "redirected_bytes grew by %llu, expected >= %llu",
		   (unsigned long long)(d1 - d0), (unsigned long long)(2 * FL_CT_REDIRECTED));
	for (i = 0; i < 2; i++)
		FL_T_CHECK(p->r[i].outsegs < FL_CT_FAST_SEGS, "Tcp OutSegs in the %s's namespace "
			   "grew by %llu, expected < %d", i ? "server" : "client",
			   (unsigned long long)p->r[i].outsegs, FL_CT_FAST_SEGS);
	return 0;
}

static int test_plain_tcp_costs_segments(void)
{
	uint64_t f0 = fl_t_status_u64("fallbacks.disabled");
	struct fl_ct_pair p;
	int i;

	if (fl_ct_start(0, 502, 0, 1, &p) || fl_ct_finish(0, &p))
		return -1;
	printf("  with FASTLOCAL=0, Tcp OutSegs grew by %llu (client's namespace) and %llu "
	       "(server's)\n", (unsigned long long)p.r[0].outsegs,
	       (unsigned long long)p.r[1].outsegs);
	for (i = 0; i < 2; i++) {
		FL_T_CHECK(!p.r[i].enrolled, "FASTLOCAL=0 and still enrolled");
		FL_T_CHECK(p.r[i].outsegs >= FL_CT_PLAIN_SEGS, "Tcp OutSegs in the %s's namespace "
			   "grew by only %llu over plain TCP: the proof above proves nothing",
			   i ? "server" : "client", (unsigned long long)p.r[i].outsegs);
	}
	FL_T_CHECK(fl_t_status_u64("fallbacks.disabled") - f0 >= 2,
		   "fallbacks.disabled did not count both ends");
	return 0;
}

static int fl_port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &l))
		return -1;
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static int test_nonce_and_netns_scope(void)
{
	const struct fl_ct_report *c = &fl_ct_fast.r[0], *s = &fl_ct_fast.r[1];
	char want[64], out[256];
	uint64_t netns = 0;
	socklen_t ol = sizeof(netns);
	char path[512];
	struct fl_sk st[2];
	int fd[2], sk, i;

	FL_T_CHECK(c->nonce && c->nonce == s->nonce, "the two ends' nonces: %#llx and %#llx, "
		   "expected equal and nonzero", (unsigned long long)c->nonce,
		   (unsigned long long)s->nonce);
	FL_T_CHECK(c->scope == c->nonce && s->scope == s->nonce, "a cross-namespace key's scope "
		   "is not its nonce");
	FL_T_CHECK(c->netns && s->netns && c->netns != s->netns && c->scope != c->netns &&
		   s->scope != s->netns, "namespace cookies %llu/%llu, scope %#llx",
		   (unsigned long long)c->netns, (unsigned long long)s->netns,
		   (unsigned long long)c->scope);
	/* conns pairs the two ends by their keys: one line means both ends'
	 * keys carry this scope. */
	snprintf(want, sizeof(want), "nonce 0x%016llx", (unsigned long long)c->nonce);
	FL_T_CHECK(!strcmp(fl_ct_conns_line, want), "fastlocal conns --json showed \"%s\" for "
		   "the connection, expected \"%s\"", fl_ct_conns_line, want);
	/* A loopback pair here: keyed by this namespace's cookie, no nonce. */
	snprintf(path, sizeof(path), "%s/%s", fl_t_pin_dir(), FL_PIN_MAP_SK);
	sk = bpf_obj_get(path);
	FL_T_CHECK(sk >= 0 && fl_t_tcp_pair(AF_INET, &fd[0], &fd[1]) == 0 &&
		   fl_t_warmup(fd[0], fd[1]) == 0, "loopback pair");
	FL_T_CHECK(!getsockopt(fd[0], SOL_SOCKET, SO_NETNS_COOKIE, &netns, &ol), "netns cookie");
	for (i = 0; i < 2; i++)
		FL_T_CHECK(!bpf_map_lookup_elem(sk, &fd[i], &st[i]), "no fl_sk record");
	close(sk);
	snprintf(want, sizeof(want), "netns 0x%016llx", (unsigned long long)netns);
	fl_t_sh_out(out, sizeof(out), "'%s' conns --json | jq -r '.connections[] | "
		    "select(.a.port == %d and .a.addr == \"127.0.0.1\") | .scope_kind + \" \" + "
		    ".scope'", fl_t_cli(), fl_port_of(fd[0]));
	close(fd[0]);
	close(fd[1]);
	FL_T_CHECK(!strcmp(out, want), "fastlocal conns --json showed \"%s\" for the loopback "
		   "pair, expected \"%s\"", out, want);
	for (i = 0; i < 2; i++) {
		FL_T_CHECK(st[i].flags & FL_SK_ENROLLED, "the loopback pair was not enrolled");
		FL_T_CHECK(st[i].key.scope == netns && !st[i].nonce, "loopback end %d: scope %llu, "
			   "nonce %#llx; expected the netns cookie %llu and no nonce", i,
			   (unsigned long long)st[i].key.scope, (unsigned long long)st[i].nonce,
			   (unsigned long long)netns);
	}
	return 0;
}

/* The nonce and the key sockops records use the IPv6 fields: the same. */
static int test_accelerated_over_ipv6(void)
{
	uint64_t d0 = fl_t_status_u64("redirected_bytes");
	struct fl_ct_pair p;
	int i;

	if (fl_ct_start_at(0, FL_CT_SERVER_IP6, 503, FL_CT_CPORT, 0, &p) || fl_ct_finish(0, &p))
		return -1;
	for (i = 0; i < 2; i++)
		FL_T_CHECK(p.r[i].enrolled && p.r[i].nonce && p.r[i].scope == p.r[0].nonce,
			   "the %s was not enrolled under the shared nonce",
			   i ? "server" : "client");
	FL_T_CHECK(fl_t_status_u64("redirected_bytes") - d0 >= 2 * FL_CT_REDIRECTED,
		   "redirected_bytes grew by less than %llu", (unsigned long long)(2 * FL_CT_REDIRECTED));
	for (i = 0; i < 2; i++)
		FL_T_CHECK(p.r[i].outsegs < FL_CT_FAST_SEGS, "Tcp OutSegs grew by %llu",
			   (unsigned long long)p.r[i].outsegs);
	return 0;
}

/* A listener in the server's namespace that never accepts: the handshakes
 * to it cannot complete anyway (their last ACK is dropped). */
static void fl_ct_idle_server(int ready_fd)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int l, one = 1;
	char c;

	if (fl_t_netns_enter(fl_ct_ns[0][2]) ||
	    fl_t_sockaddr(AF_INET, FL_CT_SERVER_IP, FL_CT_PORT + 1, &ss, &len))
		_exit(1);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&ss, len) || listen(l, 4) || write(ready_fd, "r", 1) != 1)
		_exit(1);
	(void)!read(ready_fd, &c, 1); /* until the test closes its end */
	_exit(0);
}

/* The client's half: connect(), then at once a write of enroll_after bytes
 * (none with enrollment at connect/accept), the call that enrolls it in the
 * default configuration, before its bytes leave; then exit 0 if its socket
 * is enrolled, 3 if it is not. */
static void fl_ct_early_client(void)
{
	struct sockaddr_storage ss;
	char path[512];
	struct fl_sk st;
	socklen_t len;
	size_t n;
	int fd, sk;

	if (fl_t_netns_enter(fl_ct_ns[0][1]) ||
	    fl_t_sockaddr(AF_INET, FL_CT_SERVER_IP, FL_CT_PORT + 1, &ss, &len))
		_exit(1);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len))
		_exit(2);
	n = fl_t_enroll_after();
	if (n) {
		char *b = calloc(1, n);

		if (!b || write(fd, b, n) != (ssize_t)n)
			_exit(2);
	}
	snprintf(path, sizeof(path), "%s/%s", fl_t_pin_dir(), FL_PIN_MAP_SK);
	sk = bpf_obj_get(path);
	if (sk < 0 || bpf_map_lookup_elem(sk, &fd, &st))
		_exit(4);
	_exit(st.flags & FL_SK_ENROLLED ? 0 : 3);
}

/*
 * The active end may enroll as soon as connect() returns (at connect, or by
 * a first write of enroll_after bytes), and must then find the passive end
 * on this host. The passive end is recorded when it sends its SYN-ACK, not
 * only once the last ACK of the handshake reaches it: here that ACK is
 * dropped (nftables in the server's namespace), so the server's end is not
 * established when the client enrolls, and the client must be enrolled
 * anyway.
 */
static int test_client_enrolls_before_server_established(void)
{
	char sns[64], port[8], rule[256];
	const char *nft[] = { "ip", "netns", "exec", sns, "nft", rule, NULL };
	uint64_t nl0 = fl_t_status_u64("fallbacks.peer_not_local");
	int sp[2], st = -1, r = 0;
	pid_t srv = -1, cli;
	char c;

	snprintf(sns, sizeof(sns), "%s", fl_ct_ns[0][2]);
	snprintf(port, sizeof(port), "%d", FL_CT_PORT + 1);
	snprintf(rule, sizeof(rule), "add table inet flct; add chain inet flct in { type filter "
		 "hook input priority 0; }; add rule inet flct in tcp dport %s tcp flags == ack "
		 "drop", port);
	FL_T_CHECK(fl_t_run_plain((char *const *)nft, 10.0) == 0,
		   "cannot add the nftables rule (nftables installed?)");
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		r = -1;
	if (!r)
		srv = fork();
	if (srv == 0) {
		close(sp[0]);
		fl_ct_idle_server(sp[1]);
	}
	if (srv > 0 && read(sp[0], &c, 1) == 1) {
		cli = fork();
		if (cli == 0)
			fl_ct_early_client();
		if (cli > 0)
			waitpid(cli, &st, 0);
	}
	if (!r) {
		close(sp[0]);
		close(sp[1]);
	}
	if (srv > 0)
		waitpid(srv, NULL, 0);
	snprintf(rule, sizeof(rule), "delete table inet flct");
	fl_t_run_plain((char *const *)nft, 10.0);
	FL_T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 3, "the client was not enrolled: its "
		   "check ran before the server's end was recorded");
	FL_T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the client failed (status %#x)", st);
	FL_T_CHECK_EQ(fl_t_status_u64("fallbacks.peer_not_local"), nl0, "peer_not_local grew");
	return 0;
}

/* ------------------------------------------------- nobody, brokered */

/* The daemon for this test's load on a private socket, and the copies
 * nobody runs. */
static int fl_ct_start_broker(void)
{
	/* A second call (after a daemon that did not start) keeps the copies. */
	FL_T_CHECK(fl_ct_dir[0] || !fl_t_nobody_copies("fl-ct-nobody", fl_ct_dir, fl_ct_copy,
						       fl_ct_shim, sizeof(fl_ct_dir)),
		   "cannot copy this program and the shim where nobody can run them");
	snprintf(fl_ct_sock, sizeof(fl_ct_sock), "%s/broker.sock", fl_ct_dir);
	fl_ct_daemon = fl_t_daemon_start(fl_ct_sock, fl_t_pin_dir());
	FL_T_CHECK(fl_ct_daemon > 0, "fastlocal daemon did not start on %s", fl_ct_sock);
	return 0;
}

/* Both roles of p ran as nobody. */
static int fl_ct_ran_as_nobody(const struct fl_ct_pair *p)
{
	FL_T_CHECK(p->r[0].uid == FL_T_NOBODY && p->r[1].uid == FL_T_NOBODY,
		   "the roles ran as uid %u and %u, not nobody", p->r[0].uid, p->r[1].uid);
	return 0;
}

/*
 * Applications that are not root in two containers: each sees no pins (its
 * open fails) and is enrolled by the broker, which for a key that is not
 * loopback finds the peer's mirror key among this host's established ends.
 * conns names the nobody processes as the owners and both directions as
 * redirected, with every byte of the transfer counted.
 */
static int test_nobody_accelerated_across_namespaces(void)
{
	struct fl_ct_pair p;
	unsigned long long v[6] = { 0 };
	char conns[256], jq[600], ea[8] = "", eb[8] = "", pa[16] = "", pb[16] = "";
	uint64_t b0, b;
	int i, n, r;

	snprintf(jq, sizeof(jq), ".connections[] | select(.a.addr == \"%s\" and .b.addr == \"%s\" "
		 "and .b.port == %d) | \"\\(.a.enrolled) \\(.b.enrolled) \\(.a_to_b.path) "
		 "\\(.b_to_a.path) \\(.a_to_b.bytes) \\(.b_to_a.bytes) \\(.a_to_b.redirected_bytes) "
		 "\\(.b_to_a.redirected_bytes) \\(.a.pid) \\(.b.pid)\"", FL_CT_CLIENT_IP,
		 FL_CT_SERVER_IP, FL_CT_PORT);
	if (fl_ct_daemon <= 0 && fl_ct_start_broker())
		return -1;
	b0 = fl_t_status_u64("broker.enrolled_total");
	fl_ct_nobody = 1;
	r = fl_ct_run_held(504, &p, jq, conns, sizeof(conns));
	fl_ct_nobody = 0;
	if (r || fl_ct_ran_as_nobody(&p))
		return -1;
	b = fl_t_status_u64("broker.enrolled_total") - b0;
	printf("  conns: \"%s\"; the broker enrolled %llu; Tcp OutSegs grew by %llu (client's "
	       "namespace) and %llu (server's)\n", conns, (unsigned long long)b,
	       (unsigned long long)p.r[0].outsegs, (unsigned long long)p.r[1].outsegs);
	FL_T_CHECK(b >= 2, "the broker's enrolled_total grew by %llu, expected both ends",
		   (unsigned long long)b);
	n = sscanf(conns, "%7s %7s %15s %15s %llu %llu %llu %llu %llu %llu", ea, eb, pa, pb, &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5]);
	FL_T_CHECK(n == 10, "fastlocal conns --json showed no such connection (\"%s\")", conns);
	FL_T_CHECK(!strcmp(ea, "true") && !strcmp(eb, "true"), "enrolled: client %s, server %s",
		   ea, eb);
	FL_T_CHECK(v[4] == (unsigned long long)p.pid[0] && v[5] == (unsigned long long)p.pid[1],
		   "conns names pids %llu and %llu, the nobody roles are %d and %d", v[4], v[5],
		   (int)p.pid[0], (int)p.pid[1]);
	FL_T_CHECK(!strcmp(pa, "redirect") && !strcmp(pb, "redirect"), "paths: client to server "
		   "%s, server to client %s", pa, pb);
	for (i = 0; i < 2; i++)
		FL_T_CHECK(v[i] == FL_CT_BYTES && v[2 + i] >= FL_CT_REDIRECTED, "%s: %llu bytes, "
			   "%llu of them redirected; expected %llu and at least %llu",
			   i ? "server to client" : "client to server", v[i], v[2 + i],
			   (unsigned long long)FL_CT_BYTES, (unsigned long long)FL_CT_REDIRECTED);
	for (i = 0; i < 2; i++)
		FL_T_CHECK(p.r[i].outsegs < FL_CT_FAST_SEGS, "Tcp OutSegs in the %s's namespace "
			   "grew by %llu, expected < %d", i ? "server" : "client",
			   (unsigned long long)p.r[i].outsegs, FL_CT_FAST_SEGS);
	return 0;
}

/*
 * A container's published port: the nobody client connects to port
 * FL_CT_PORT + 2, which nftables in the server's namespace rewrites (DNAT)
 * to FL_CT_PORT. Each end sees another 4-tuple, so the broker finds neither
 * end's mirror key on this host and refuses both (EREMOTE): both stay on
 * TCP, byte-exact, and nothing of theirs is enrolled while they are open.
 */
static int test_nobody_port_mapping_stays_on_tcp(void)
{
	uint64_t nl0 = fl_t_status_u64("fallbacks.peer_not_local"), nl;
	char sns[64], rule[256], conns[64], jq[300];
	const char *nft[] = { "ip", "netns", "exec", sns, "nft", rule, NULL };
	struct fl_ct_pair p;
	int i, r;

	if (fl_ct_daemon <= 0 && fl_ct_start_broker())
		return -1;
	snprintf(sns, sizeof(sns), "%s", fl_ct_ns[0][2]);
	snprintf(rule, sizeof(rule), "add table ip flctnat; add chain ip flctnat pre { type nat "
		 "hook prerouting priority -100; }; add rule ip flctnat pre tcp dport %d dnat to "
		 "%s:%d", FL_CT_PORT + 2, FL_CT_SERVER_IP, FL_CT_PORT);
	FL_T_CHECK(fl_t_run_plain((char *const *)nft, 10.0) == 0,
		   "cannot add the port mapping (nftables installed?)");
	/* Connections of this test's addresses with an enrolled end: none. */
	snprintf(jq, sizeof(jq), "[.connections[] | select((.a.addr == \"%s\" or .b.addr == \"%s\") "
		 "and (.a.enrolled or .b.enrolled))] | length", FL_CT_CLIENT_IP, FL_CT_CLIENT_IP);
	fl_ct_nobody = 1;
	fl_ct_dport = FL_CT_PORT + 2;
	r = fl_ct_run_held(505, &p, jq, conns, sizeof(conns));
	fl_ct_nobody = 0;
	fl_ct_dport = 0;
	snprintf(rule, sizeof(rule), "delete table ip flctnat");
	fl_t_run_plain((char *const *)nft, 10.0);
	if (r || fl_ct_ran_as_nobody(&p))
		return -1;
	nl = fl_t_status_u64("fallbacks.peer_not_local") - nl0;
	printf("  through the mapping: %s connections with an enrolled end in conns; "
	       "peer_not_local grew by %llu; Tcp OutSegs grew by %llu (client's namespace) and "
	       "%llu (server's)\n", conns,
	       (unsigned long long)nl, (unsigned long long)p.r[0].outsegs,
	       (unsigned long long)p.r[1].outsegs);
	FL_T_CHECK(!strcmp(conns, "0"), "fastlocal conns --json showed %s connections with an "
		   "enrolled end, expected 0", conns);
	FL_T_CHECK(nl >= 2, "fallbacks.peer_not_local grew by %llu, expected both ends refused",
		   (unsigned long long)nl);
	for (i = 0; i < 2; i++)
		FL_T_CHECK(p.r[i].outsegs >= FL_CT_PLAIN_SEGS, "Tcp OutSegs in the %s's namespace "
			   "grew by only %llu: the bytes did not go over TCP",
			   i ? "server" : "client", (unsigned long long)p.r[i].outsegs);
	return 0;
}

static int test_daemon_stops(void)
{
	pid_t d = fl_ct_daemon;

	fl_ct_daemon = -1;
	FL_T_CHECK(fl_t_daemon_stop(d, fl_ct_sock) == 0, "fastlocal daemon did not exit 0 on "
		   "SIGTERM and remove %s", fl_ct_sock);
	return 0;
}

static int test_make_second_host(void)
{
	return fl_ct_make_host(1);
}

/* Both hosts at once: same addresses, same server port, same client port. */
static int test_overlapping_addresses(void)
{
	uint64_t e0 = fl_t_status_u64("enrolled_total"), d0 = fl_t_status_u64("redirected_bytes");
	int h, i, r = 0, armed[2], gate[2], done[2], release[2], got = 0, held = 0;
	struct fl_ct_pair p[2];
	char buf[4], live[64] = "";

	/* Both clients connect, then wait at a gate that opens for both at
	 * once: 8 MiB takes milliseconds, so started one after the other the
	 * transfers would not overlap. IMPORTANT: each of the four ends then
	 * holds its connection open until all four are done (FL_CT_HOLD), and
	 * "fastlocal conns" is asked meanwhile: both hosts' connections, with
	 * the same addresses and ports, are then enrolled at once however the
	 * scheduler ran the two transfers (timestamps compared here once
	 * failed nobody knows how often on a loaded machine: 12 ms apart). */
	FL_T_CHECK(!pipe(armed) && !pipe(gate) && !pipe(done) && !pipe(release), "pipe: %s",
		   strerror(errno));
	snprintf(fl_ct_gate_env, sizeof(fl_ct_gate_env), "%d,%d", armed[1], gate[0]);
	snprintf(fl_ct_hold_env, sizeof(fl_ct_hold_env), "%d,%d", done[1], release[0]);
	r = fl_ct_start(0, 1111, FL_CT_CPORT, 0, &p[0]);
	if (!r && fl_ct_start(1, 2222, FL_CT_CPORT, 0, &p[1])) {
		r = -1;
		fl_ct_kill_kids();
	}
	fl_ct_gate_env[0] = 0;
	fl_ct_hold_env[0] = 0;
	close(armed[1]);
	close(gate[0]);
	close(done[1]);
	close(release[0]);
	while (!r && got < 2) {
		struct pollfd pfd = { .fd = armed[0], .events = POLLIN };
		ssize_t n = poll(&pfd, 1, 10000) == 1 ? read(armed[0], buf, 2) : -1;

		if (n <= 0)
			break;
		got += (int)n;
	}
	if (got == 2 && write(gate[1], "gg", 2) != 2)
		got = 0;
	while (!r && got == 2 && held < 4) {
		struct pollfd pfd = { .fd = done[0], .events = POLLIN };
		ssize_t n = poll(&pfd, 1, (int)(FL_CT_TIMEOUT * 1000)) == 1 ?
				    read(done[0], buf, (size_t)(4 - held)) : -1;

		if (n <= 0)
			break;
		held += (int)n;
	}
	if (held == 4)
		fl_t_sh_out(live, sizeof(live), "'%s' conns --json | jq -r '[.connections[] | "
			    "select(.a.addr == \"%s\" and .a.port == %d and .b.addr == \"%s\" "
			    "and .b.port == %d and .a.enrolled and .b.enrolled)] | length'",
			    fl_t_cli(), FL_CT_CLIENT_IP, FL_CT_CPORT, FL_CT_SERVER_IP, FL_CT_PORT);
	if (write(release[1], "rrrr", 4) != 4)
		held = 0;
	close(armed[0]);
	close(gate[1]);
	close(done[0]);
	close(release[1]);
	if (r)
		return -1;
	for (h = 0; h < 2; h++)
		r |= fl_ct_finish(h, &p[h]);
	FL_T_CHECK_EQ(got, 2, "the two clients did not both connect");
	if (r)
		return -1;
	printf("  %s:%d <- %s:%d in both; host 0 ran %.3f-%.3fs, host 1 %.3f-%.3fs; enrolled "
	       "%llu, redirected %llu bytes; with all four held open %s enrolled at once\n",
	       FL_CT_SERVER_IP, FL_CT_PORT, FL_CT_CLIENT_IP,
	       FL_CT_CPORT, 0.0, p[0].r[0].ended - p[0].r[0].started,
	       p[1].r[0].started - p[0].r[0].started, p[1].r[0].ended - p[0].r[0].started,
	       (unsigned long long)(fl_t_status_u64("enrolled_total") - e0),
	       (unsigned long long)(fl_t_status_u64("redirected_bytes") - d0),
	       live[0] ? live : "none");
	for (h = 0; h < 2; h++)
		for (i = 0; i < 2; i++)
			FL_T_CHECK(p[h].r[i].enrolled, "host %d: the %s was not enrolled", h,
				   i ? "server" : "client");
	FL_T_CHECK(p[0].r[0].nonce != p[1].r[0].nonce, "the two hosts' connections share a nonce");
	FL_T_CHECK_EQ(held, 4, "the four ends did not all finish and hold their connections");
	FL_T_CHECK(atoi(live) == 2, "fastlocal conns showed %s enrolled connection(s) %s:%d -> "
		   "%s:%d while both were open, want 2 (one per host)", live[0] ? live : "no",
		   FL_CT_CLIENT_IP, FL_CT_CPORT, FL_CT_SERVER_IP, FL_CT_PORT);
	FL_T_CHECK_GE(fl_t_status_u64("enrolled_total") - e0, 4, "fewer than 4 ends enrolled");
	FL_T_CHECK(fl_t_status_u64("redirected_bytes") - d0 >= 4 * FL_CT_REDIRECTED,
		   "redirected_bytes grew by less than %llu", (unsigned long long)(4 * FL_CT_REDIRECTED));
	return 0;
}

static int test_remove_namespaces(void)
{
	char path[128], dir[sizeof(fl_ct_dir)];
	int h, i;

	snprintf(dir, sizeof(dir), "%s", fl_ct_dir);
	fl_ct_cleanup();
	FL_T_CHECK(!dir[0] || access(dir, F_OK), "%s is still there", dir);
	for (h = 0; h < 2; h++)
		for (i = 0; i < 3; i++) {
			snprintf(path, sizeof(path), "/run/netns/%s", fl_ct_ns[h][i]);
			FL_T_CHECK(access(path, F_OK) != 0, "%s is still there", path);
		}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *what[3] = { "br", "a", "b" };
	struct sigaction sa;
	ssize_t n;
	int h, i;

	if (argc == 11 && !strcmp(argv[1], "role"))
		return fl_ct_role(argv);
	n = readlink("/proc/self/exe", fl_ct_self, sizeof(fl_ct_self) - 1);
	if (!fl_t_setup(n > 0, "containers finds its own binary"))
		return fl_t_exit_status();
	fl_ct_self[n] = 0;
	for (h = 0; h < 2; h++)
		for (i = 0; i < 3; i++)
			snprintf(fl_ct_ns[h][i], sizeof(fl_ct_ns[h][i]), "fl-ct%d-%s-%d", h, what[i],
				 (int)getpid());
	atexit(fl_ct_cleanup);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fl_ct_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	alarm(90); /* a watchdog: the whole test takes a few seconds */

	/* Setup steps (not subtests): what depends on one that failed is
	 * skipped, and the test fails. */
	if (fl_t_setup_run("two namespaces with a veth each into a bridge in a third",
			   test_make_host)) {
		FL_T_RUN("8 MiB both ways between the two namespaces: byte-exact, both ends enrolled, "
			 "redirected, almost no TCP segments", test_accelerated_across_namespaces);
		FL_T_RUN("the same transfer with FASTLOCAL=0 costs thousands of TCP segments",
			 test_plain_tcp_costs_segments);
		FL_T_RUN("a cross-namespace key is scoped by one nonzero nonce at both ends, a "
			 "loopback key by the namespace cookie", test_nonce_and_netns_scope);
		FL_T_RUN("the same between [fd78::1] and [fd78::2]: byte-exact, enrolled, redirected",
			 test_accelerated_over_ipv6);
		FL_T_RUN("a client enrolled right after connect() finds a server end whose handshake "
			 "has not completed (its last ACK dropped)",
			 test_client_enrolls_before_server_established);
		FL_T_RUN("nobody processes in two namespaces are enrolled through the broker: 8 MiB "
			 "both ways byte-exact, both directions redirected, almost no TCP segments",
			 test_nobody_accelerated_across_namespaces);
		FL_T_RUN("a nobody connection through port mapping (DNAT) stays on TCP: byte-exact, "
			 "refused by the broker as not local, nothing enrolled",
			 test_nobody_port_mapping_stays_on_tcp);
		FL_T_RUN("fastlocal daemon stops on SIGTERM and removes its socket", test_daemon_stops);
		if (fl_t_setup_run("a second bridge with the same addresses", test_make_second_host))
			FL_T_RUN("same addresses and ports on both bridges at once: each side gets its "
				 "own bytes, both accelerated", test_overlapping_addresses);
	}
	fl_t_setup_run("the namespaces and the copies nobody ran are removed",
		       test_remove_namespaces);
	return fl_t_exit_status();
}
