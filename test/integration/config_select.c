// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * config_select - the configuration decides which real connections are
 * accelerated: ports/skip_ports, addresses/skip_addresses (IPv4-mapped IPv6
 * as IPv4), enabled=off from a file, the environment over the file, and
 * FASTLOCAL_ONLY_CMDS / FASTLOCAL_SKIP_CMDS across a fork+exec tree.
 *
 * Each scenario execs this binary again under another name (a symlink:
 * fl-sel-top, fl-sel-alpha, fl-sel-beta), with the scenario's environment,
 * so that each process reads its configuration fresh. The processes make
 * loopback connections, check their bytes, report their ports and hold the
 * connections open; the test then asks "fastlocal conns --json" which ends
 * are enrolled (with pid and comm) and checks the fallback counters.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "fltest.h"

static char fl_dir[] = "/tmp/fl-config-select-XXXXXX";

/* One connection per spec "FAMILY/ADDR/PORT" (4 or 6, PORT 0: any): bytes
 * both ways, checked; then "name sport cport" on report_fd; then waits for
 * EOF on release_fd. Exit status 0 if every byte arrived intact. */
static int leaf(int report_fd, int release_fd, int n, char **spec)
{
	uint8_t buf[16384];
	char line[256], addr[64];
	int i, c, s, bad = 0;

	for (i = 0; i < n; i++) {
		struct fl_t_addr a = { 0 };
		struct sockaddr_storage ss;
		socklen_t len;
		uint16_t sport = 0, cport = 0;
		unsigned port;

		if (sscanf(spec[i], "%*c/%63[^/]/%u", addr, &port) != 2)
			return 2;
		a.family = spec[i][0] == '6' ? AF_INET6 : AF_INET;
		a.addr = addr;
		a.port = (uint16_t)port;
		if (fl_t_tcp_pairs(&a, 1, &c, &s)) {
			dprintf(report_fd, "error %s: %s\n", spec[i], strerror(errno));
			return 1;
		}
		fl_t_pattern(buf, 0, sizeof(buf), (uint64_t)i + 1);
		if (send(c, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
		    recv(s, buf, sizeof(buf), MSG_WAITALL) != (ssize_t)sizeof(buf) ||
		    fl_t_pattern_check(buf, 0, sizeof(buf), (uint64_t)i + 1) >= 0 ||
		    send(s, buf, 100, 0) != 100 || recv(c, buf, 100, MSG_WAITALL) != 100 ||
		    fl_t_pattern_check(buf, 0, 100, (uint64_t)i + 1) >= 0)
			bad = 1;
		len = sizeof(ss);
		if (!getsockname(s, (struct sockaddr *)&ss, &len))
			sport = ntohs(((struct sockaddr_in *)&ss)->sin_port); /* same offset in6 */
		len = sizeof(ss);
		if (!getsockname(c, (struct sockaddr *)&ss, &len))
			cport = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		snprintf(line, sizeof(line), "%s %u %u %d\n", program_invocation_short_name, sport,
			 cport, i);
		if (write(report_fd, line, strlen(line)) < 0)
			return 1;
	}
	/* Hold the connections until the test has looked at them. */
	while (read(release_fd, buf, 1) > 0)
		;
	return bad;
}

static void exec_as(const char *name, const char *mode, int report_fd, int release_fd, char **rest,
		    int nrest)
{
	char path[128], rfd[16], lfd[16];
	char *argv[16];
	int i, k = 0;

	snprintf(path, sizeof(path), "%s/%s", fl_dir, name);
	snprintf(rfd, sizeof(rfd), "%d", report_fd);
	snprintf(lfd, sizeof(lfd), "%d", release_fd);
	argv[k++] = path;
	argv[k++] = (char *)mode;
	argv[k++] = rfd;
	argv[k++] = lfd;
	for (i = 0; i < nrest && k < 15; i++)
		argv[k++] = rest[i];
	argv[k] = NULL;
	execv(path, argv);
	_exit(127);
}

/* fl-sel-top: forks alpha and beta (each execs under its own name) and one
 * child that does not exec (keeps the top's name and configuration); then
 * makes a connection itself. */
static int tree(int report_fd, int release_fd)
{
	char *spec[] = { "4/127.0.0.1/0" };
	pid_t kids[3];
	int i, st, bad = 0;

	for (i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			return 1;
		if (kids[i] == 0) {
			if (i == 0)
				exec_as("fl-sel-alpha", "leaf", report_fd, release_fd, spec, 1);
			if (i == 1)
				exec_as("fl-sel-beta", "leaf", report_fd, release_fd, spec, 1);
			_exit(leaf(report_fd, release_fd, 1, spec));
		}
	}
	bad |= leaf(report_fd, release_fd, 1, spec);
	for (i = 0; i < 3; i++)
		if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	return bad;
}

/* A free TCP port on 127.0.0.1 (bound and released; the scenario binds it
 * again at once). */
static uint16_t free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t p = 0;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sin, len) &&
	    !getsockname(fd, (struct sockaddr *)&sin, &len))
		p = ntohs(sin.sin_port);
	if (fd >= 0)
		close(fd);
	return p;
}

struct scenario {
	const char *env[4];   /* NAME=VALUE set for the tree */
	const char *conf;     /* a configuration file's contents, or NULL */
	const char *mode;     /* "tree" or "leaf" */
	char *spec[4];        /* leaf: the connections */
	int nspec;
	int lines;            /* report lines expected */
	const char *want;     /* "name=1 #2=0 ...": each connection enrolled (1) or not */
	unsigned excluded;    /* expected growth of fallbacks.excluded */
	unsigned disabled;    /* expected growth of fallbacks.disabled */
};

/* Whether the report line's connection should be enrolled: by program name
 * ("fl-sel-beta=0"), else by index ("#1=1"). -1 if the scenario says nothing. */
static int wanted(const char *want, const char *name, int idx)
{
	char key[80];
	const char *p;

	snprintf(key, sizeof(key), "%s=", name);
	p = strstr(want, key);
	if (!p) {
		snprintf(key, sizeof(key), "#%d=", idx);
		p = strstr(want, key);
	}
	return p ? p[strlen(key)] == '1' : -1;
}

/* Counts " comm:port " in the list of enrolled ends. */
static int enrolled_ends(const char *ends, const char *name, unsigned port)
{
	char tok[96];
	const char *p = ends;
	int n = 0;

	snprintf(tok, sizeof(tok), " %.15s:%u ", name, port);
	while ((p = strstr(p, tok))) {
		n++;
		p++;
	}
	return n;
}

static int run_scenario(const struct scenario *sc)
{
	uint64_t ex0 = fl_t_status_u64("fallbacks.excluded");
	uint64_t dis0 = fl_t_status_u64("fallbacks.disabled");
	char lines[16][128], ends[8192], conf[64] = "";
	int report[2], release[2], got = 0, st, i;
	size_t have = 0;
	char rbuf[4096];
	pid_t pid;

	FL_T_CHECK(pipe2(report, 0) == 0 && pipe2(release, 0) == 0, "pipes");
	if (sc->conf) {
		FILE *f;

		snprintf(conf, sizeof(conf), "%s/fastlocal.conf", fl_dir);
		f = fopen(conf, "w");
		FL_T_CHECK(f && fputs(sc->conf, f) >= 0 && !fclose(f), "writing %s", conf);
	}
	pid = fork();
	FL_T_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(report[0]);
		close(release[1]);
		setenv("FASTLOCAL_CONF", conf, 1); /* "": no file, whatever /etc holds */
		for (i = 0; i < 4 && sc->env[i]; i++)
			putenv((char *)sc->env[i]);
		exec_as("fl-sel-top", sc->mode, report[1], release[0], (char **)sc->spec, sc->nspec);
	}
	close(report[1]);
	close(release[0]);
	/* Every connection reported (made, bytes checked, held open). */
	while (got < sc->lines) {
		struct pollfd p = { .fd = report[0], .events = POLLIN };
		char *nl;
		ssize_t r;

		if (poll(&p, 1, 10000) <= 0)
			break;
		r = read(report[0], rbuf + have, sizeof(rbuf) - 1 - have);
		if (r <= 0)
			break;
		have += (size_t)r;
		rbuf[have] = 0;
		while ((nl = strchr(rbuf, '\n')) && got < 16) {
			*nl = 0;
			snprintf(lines[got++], sizeof(lines[0]), "%s", rbuf);
			have -= (size_t)(nl + 1 - rbuf);
			memmove(rbuf, nl + 1, have + 1);
		}
	}
	ends[0] = ' ';
	i = fl_t_sh_out(ends + 1, sizeof(ends) - 2, "'%s' conns --json | jq -r '[.connections[] | "
			"(.a, .b) | select(.enrolled) | \"\\(.comm):\\(.port)\"] | join(\" \")'",
			fl_t_cli());
	strcat(ends, " ");
	close(release[1]);
	close(report[0]);
	FL_T_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	FL_T_CHECK(got == sc->lines, "%d of %d connections reported (%s)", got, sc->lines,
		   got ? lines[0] : "none");
	FL_T_CHECK(i == 0, "fastlocal conns --json failed");
	FL_T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "the processes' bytes were not intact (status %d)", st);
	for (i = 0; i < got; i++) {
		char name[64];
		unsigned sport, cport;
		int idx, w, n;

		FL_T_CHECK(sscanf(lines[i], "%63s %u %u %d", name, &sport, &cport, &idx) == 4,
			   "report line '%s'", lines[i]);
		w = wanted(sc->want, name, idx);
		n = enrolled_ends(ends, name, sport) + enrolled_ends(ends, name, cport);
		FL_T_CHECK(w >= 0, "no expectation for %s", lines[i]);
		FL_T_CHECK(n == (w ? 2 : 0), "%s connection %d (ports %u, %u): %d ends enrolled, "
			   "expected %d; enrolled ends:%s", name, idx, sport, cport, n, w ? 2 : 0, ends);
	}
	FL_T_CHECK(fl_t_status_u64("fallbacks.excluded") - ex0 == sc->excluded,
		   "fallbacks.excluded grew by %llu, expected %u",
		   (unsigned long long)(fl_t_status_u64("fallbacks.excluded") - ex0), sc->excluded);
	FL_T_CHECK(fl_t_status_u64("fallbacks.disabled") - dis0 == sc->disabled,
		   "fallbacks.disabled grew by %llu, expected %u",
		   (unsigned long long)(fl_t_status_u64("fallbacks.disabled") - dis0), sc->disabled);
	printf("  enrolled ends:%s\n", ends);
	return 0;
}

static char p1s[48], p2s[48], env_ports[64], env_skip[64], conf_text[256];

static int test_ports(void)
{
	struct scenario sc = { .env = { env_ports }, .mode = "leaf", .spec = { p1s, p2s },
			       .nspec = 2, .lines = 2, .want = "#0=1 #1=0", .excluded = 2 };

	return run_scenario(&sc);
}

static int test_skip_ports(void)
{
	struct scenario sc = { .env = { env_skip }, .mode = "leaf", .spec = { p1s, p2s },
			       .nspec = 2, .lines = 2, .want = "#0=0 #1=1", .excluded = 2 };

	return run_scenario(&sc);
}

/* The file says ports = P2 (and skip_addresses = ::1, harmless here); the
 * environment's FASTLOCAL_PORTS=P1 wins for its key. */
static int test_env_over_file(void)
{
	struct scenario sc = { .env = { env_ports }, .conf = conf_text, .mode = "leaf",
			       .spec = { p1s, p2s }, .nspec = 2, .lines = 2, .want = "#0=1 #1=0",
			       .excluded = 2 };

	return run_scenario(&sc);
}

static int test_addresses(void)
{
	struct scenario sc = { .env = { "FASTLOCAL_ADDRESSES=127.0.0.2" }, .mode = "leaf",
			       .spec = { "4/127.0.0.1/0", "4/127.0.0.2/0", "6/::1/0",
					 "6/::ffff:127.0.0.3/0" },
			       .nspec = 4, .lines = 4, .want = "#0=0 #1=1 #2=0 #3=0",
			       .excluded = 6 };

	return run_scenario(&sc);
}

/* From the file, with prefixes; the IPv4-mapped connection counts as IPv4. */
static int test_skip_addresses_file(void)
{
	struct scenario sc = { .conf = "skip_addresses = 127.0.0.0/8\n", .mode = "leaf",
			       .spec = { "4/127.0.0.1/0", "6/::1/0", "6/::ffff:127.0.0.3/0" },
			       .nspec = 3, .lines = 3, .want = "#0=0 #1=1 #2=0", .excluded = 4 };

	return run_scenario(&sc);
}

static int test_enabled_off_file(void)
{
	struct scenario sc = { .conf = "# switched off by the file\nenabled = off\n", .mode = "leaf",
			       .spec = { "4/127.0.0.1/0", "6/::1/0" }, .nspec = 2, .lines = 2,
			       .want = "#0=0 #1=0", .disabled = 4 };

	return run_scenario(&sc);
}

static int test_only_cmds_tree(void)
{
	struct scenario sc = { .env = { "FASTLOCAL_ONLY_CMDS=fl-sel-top, fl-sel-alpha" },
			       .mode = "tree", .lines = 4,
			       .want = "fl-sel-top=1 fl-sel-alpha=1 fl-sel-beta=0", .disabled = 2 };

	return run_scenario(&sc);
}

static int test_skip_cmds_tree(void)
{
	struct scenario sc = { .env = { "FASTLOCAL_SKIP_CMDS=fl-sel-alpha" }, .mode = "tree",
			       .lines = 4, .want = "fl-sel-top=1 fl-sel-alpha=0 fl-sel-beta=1",
			       .disabled = 2 };

	return run_scenario(&sc);
}

static int test_both_cmds_tree(void)
{
	struct scenario sc = { .env = { "FASTLOCAL_SKIP_CMDS=fl-sel-alpha",
					"FASTLOCAL_ONLY_CMDS=fl-sel-top", "FASTLOCAL_LOG=off" },
			       .mode = "tree", .lines = 4,
			       .want = "fl-sel-top=0 fl-sel-alpha=0 fl-sel-beta=0", .disabled = 8 };

	return run_scenario(&sc);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "fl-sel-top", "fl-sel-alpha", "fl-sel-beta" };
	char self[4096], link[128];
	uint16_t p1, p2;
	ssize_t n;
	size_t i;

	if (argc >= 4) {
		/* Run as fl-sel-*: the names live next to argv[0]. */
		const char *slash = strrchr(argv[0], '/');

		if (slash && (size_t)(slash - argv[0]) < sizeof(fl_dir))
			snprintf(fl_dir, (size_t)(slash - argv[0]) + 1, "%s", argv[0]);
	}
	if (argc >= 4 && !strcmp(argv[1], "leaf"))
		return leaf(atoi(argv[2]), atoi(argv[3]), argc - 4, argv + 4);
	if (argc >= 4 && !strcmp(argv[1], "tree"))
		return tree(atoi(argv[2]), atoi(argv[3]));

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || !mkdtemp(fl_dir)) {
		printf("FAIL: cannot set up the program names: %s\n", strerror(errno));
		return 1;
	}
	self[n] = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(link, sizeof(link), "%s/%s", fl_dir, names[i]);
		if (symlink(self, link)) {
			printf("FAIL: symlink %s: %s\n", link, strerror(errno));
			return 1;
		}
	}
	p1 = free_port();
	p2 = free_port();
	while (p2 == p1)
		p2 = free_port();
	snprintf(p1s, sizeof(p1s), "4/127.0.0.1/%u", p1);
	snprintf(p2s, sizeof(p2s), "4/127.0.0.1/%u", p2);
	snprintf(env_ports, sizeof(env_ports), "FASTLOCAL_PORTS=%u", p1);
	snprintf(env_skip, sizeof(env_skip), "FASTLOCAL_SKIP_PORTS=1-2, %u", p1);
	snprintf(conf_text, sizeof(conf_text), "ports = %u\nskip_addresses = ::1\n", p2);

	FL_T_RUN("FASTLOCAL_PORTS accelerates only connections on the listed port", test_ports);
	FL_T_RUN("FASTLOCAL_SKIP_PORTS keeps connections on the listed ports on TCP",
		 test_skip_ports);
	FL_T_RUN("the environment's FASTLOCAL_PORTS wins over the file's ports", test_env_over_file);
	FL_T_RUN("FASTLOCAL_ADDRESSES accelerates only connections with a listed address",
		 test_addresses);
	FL_T_RUN("skip_addresses (file, prefix) keeps IPv4 and IPv4-mapped IPv6 on TCP, not ::1",
		 test_skip_addresses_file);
	FL_T_RUN("enabled = off in the file keeps every connection on TCP, counted as disabled",
		 test_enabled_off_file);
	FL_T_RUN("FASTLOCAL_ONLY_CMDS across fork+exec: only the named programs are accelerated",
		 test_only_cmds_tree);
	FL_T_RUN("FASTLOCAL_SKIP_CMDS across fork+exec: the named program is not accelerated",
		 test_skip_cmds_tree);
	FL_T_RUN("FASTLOCAL_ONLY_CMDS with FASTLOCAL_SKIP_CMDS: nothing is accelerated",
		 test_both_cmds_tree);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(link, sizeof(link), "%s/%s", fl_dir, names[i]);
		unlink(link);
	}
	snprintf(link, sizeof(link), "%s/fastlocal.conf", fl_dir);
	unlink(link);
	rmdir(fl_dir);
	return fl_t_exit_status();
}
