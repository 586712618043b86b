// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fltest.c - helpers for fastlocal's integration tests and tools. */
#include "fltest.h"
#include "../../common/clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

int fl_t_failed;
static char fl_t_why[1024];

void fl_t_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (fl_t_why[0])
		return;
	n = snprintf(fl_t_why, sizeof(fl_t_why), "%s:%d: ", file, line);
	va_start(ap, fmt);
	vsnprintf(fl_t_why + n, sizeof(fl_t_why) - (size_t)n, fmt, ap);
	va_end(ap);
}

/* Starts fl_t_why with the check's "file:line: what: " (what: fmt, ap), the
 * prefix every failed check prints; returns the offset after it. */
static size_t fl_t_why_what(const char *file, int line, const char *fmt, va_list ap)
{
	size_t n = (size_t)snprintf(fl_t_why, sizeof(fl_t_why), "%s:%d: ", file, line);

	if (n < sizeof(fl_t_why))
		vsnprintf(fl_t_why + n, sizeof(fl_t_why) - n, fmt, ap);
	n = strlen(fl_t_why);
	if (n + 2 < sizeof(fl_t_why)) {
		memcpy(fl_t_why + n, ": ", 3);
		n += 2;
	}
	return n;
}

static int fl_t_fmt_value(char *buf, size_t len, int is_signed, uint64_t v)
{
	if (is_signed)
		return snprintf(buf, len, "%lld", (long long)(int64_t)v);
	if (v > 0xffff)
		return snprintf(buf, len, "%llu (0x%llx)", (unsigned long long)v,
				(unsigned long long)v);
	return snprintf(buf, len, "%llu", (unsigned long long)v);
}

void fl_t_fail_cmp(const char *file, int line, const char *a, const char *op, const char *b,
		   int a_signed, uint64_t av, int b_signed, uint64_t bv, const char *fmt, ...)
{
	char va[48], vb[48];
	va_list ap;
	size_t n;

	if (fl_t_why[0])
		return;
	fl_t_fmt_value(va, sizeof(va), a_signed, av);
	fl_t_fmt_value(vb, sizeof(vb), b_signed, bv);
	va_start(ap, fmt);
	n = fl_t_why_what(file, line, fmt, ap);
	va_end(ap);
	if (n < sizeof(fl_t_why))
		snprintf(fl_t_why + n, sizeof(fl_t_why) - n, "%s %s %s does not hold: %s is %s, %s is %s",
			 a, op, b, a, va, b, vb);
}

int fl_t_check_str_eq(const char *file, int line, const char *a, const char *b, const char *ea,
		      const char *eb, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if ((a == b) || (a && b && !strcmp(a, b)))
		return 0;
	if (fl_t_why[0])
		return -1;
	va_start(ap, fmt);
	n = fl_t_why_what(file, line, fmt, ap);
	va_end(ap);
	if (n < sizeof(fl_t_why))
		snprintf(fl_t_why + n, sizeof(fl_t_why) - n, "%s is %s%s%s, %s is %s%s%s", ea,
			 a ? "\"" : "", a ? a : "NULL", a ? "\"" : "", eb, b ? "\"" : "",
			 b ? b : "NULL", b ? "\"" : "");
	return -1;
}

int fl_t_check_mem_eq(const char *file, int line, const void *a, const void *b, size_t len,
		      const char *ea, const char *eb, const char *fmt, ...)
{
	const uint8_t *x = a, *y = b;
	va_list ap;
	size_t i, n;

	for (i = 0; i < len && x[i] == y[i]; i++)
		;
	if (i == len)
		return 0;
	if (fl_t_why[0])
		return -1;
	va_start(ap, fmt);
	n = fl_t_why_what(file, line, fmt, ap);
	va_end(ap);
	if (n < sizeof(fl_t_why))
		snprintf(fl_t_why + n, sizeof(fl_t_why) - n,
			 "%s and %s differ at offset %zu of %zu: 0x%02x vs 0x%02x", ea, eb, i, len,
			 x[i], y[i]);
	return -1;
}

bool fl_t_setup(bool ok, const char *what)
{
	if (ok) {
		printf("setup: %s\n", what);
	} else {
		printf("FAIL: setup: %s%s%s\n", what, fl_t_why[0] ? ": " : "", fl_t_why);
		fl_t_failed++;
		ok = false;
	}
	fl_t_why[0] = '\0';
	fflush(stdout);
	return ok;
}

bool fl_t_setup_run(const char *what, int (*fn)(void))
{
	int r;

	fl_t_why[0] = '\0';
	r = fn();
	return fl_t_setup(r == 0 && !fl_t_why[0], what);
}

const char *fl_t_reason(void)
{
	return fl_t_why;
}

void fl_t_run(const char *name, int (*fn)(void))
{
	double t0 = fl_t_now();
	int r;

	fl_t_why[0] = '\0';
	r = fn();
	if (r == 0 && !fl_t_why[0]) {
		printf("PASS: %s (%.2fs)\n", name, fl_t_now() - t0);
	} else {
		printf("FAIL: %s: %s\n", name, fl_t_why[0] ? fl_t_why : "returned an error");
		fl_t_failed++;
	}
	fl_t_why[0] = '\0'; /* not a reason for what comes next (fl_t_setup) */
	fflush(stdout);
}

int fl_t_exit_status(void)
{
	return fl_t_failed ? 1 : 0;
}

static const char *fl_t_env(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		fprintf(stderr, "fltest: %s is not set (run the tests through test/run.sh)\n", name);
		exit(2);
	}
	return v;
}

const char *fl_t_cli(void) { return fl_t_env("FL_TEST_CLI"); }
const char *fl_t_lib(void) { return fl_t_env("FL_TEST_LIB"); }
const char *fl_t_pin_dir(void) { return fl_t_env("FASTLOCAL_PIN_DIR"); }

double fl_t_now(void)
{
	return fl_clock_s(CLOCK_MONOTONIC);
}

int fl_t_tcp_pairs(const struct fl_t_addr *a, size_t n, int *client, int *server)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	size_t i, made = 0;
	int lfd, one = 1;

	if (fl_t_sockaddr(a->family, a->addr, a->port, &ss, &len))
		return -1;
	lfd = socket(a->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, len) || listen(lfd, 1024) ||
	    getsockname(lfd, (struct sockaddr *)&ss, &len))
		goto fail;
	for (made = 0; made < n; made++) {
		client[made] = socket(a->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (client[made] < 0)
			goto fail;
		if (a->cport) {
			struct sockaddr_storage cs;
			socklen_t clen;

			setsockopt(client[made], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (fl_t_sockaddr(a->family, a->addr, (uint16_t)(a->cport + made), &cs, &clen) ||
			    bind(client[made], (struct sockaddr *)&cs, clen))
				goto fail_one;
		}
		if (connect(client[made], (struct sockaddr *)&ss, len))
			goto fail_one;
		server[made] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (server[made] < 0)
			goto fail_one;
	}
	close(lfd);
	return 0;
fail_one:
	close(client[made]);
fail:
	for (i = 0; i < made; i++) {
		close(client[i]);
		close(server[i]);
	}
	close(lfd);
	return -1;
}

int fl_t_sockaddr(int family, const char *addr, uint16_t port, struct sockaddr_storage *ss,
		  socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		*len = sizeof(*in);
		return inet_pton(AF_INET, addr ? addr : "127.0.0.1", &in->sin_addr) == 1 ? 0 : -1;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return inet_pton(AF_INET6, addr ? addr : "::1", &in6->sin6_addr) == 1 ? 0 : -1;
	}
}

int fl_t_tcp_pair(int family, int *client, int *server)
{
	struct fl_t_addr a = { .family = family };

	return fl_t_tcp_pairs(&a, 1, client, server);
}

size_t fl_t_enroll_after(void)
{
	const char *v = getenv("FASTLOCAL_ENROLL_AFTER");

	/* test/run.sh gives no configuration file: the variable or the default. */
	return v && *v ? (size_t)strtoul(v, NULL, 10) : 4096;
}

/* n pattern bytes (seed) written to fd, or read from it and checked. */
static int fl_t_warm_io(int fd, int writing, size_t n, uint64_t seed)
{
	uint8_t *b = malloc(n);
	size_t k = 0;
	int r = -1;

	if (!b)
		return -1;
	if (writing) {
		fl_t_pattern(b, 0, n, seed);
		while (k < n) {
			ssize_t w = write(fd, b + k, n - k);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				goto done;
			k += (size_t)w;
		}
	} else if (recv(fd, b, n, MSG_WAITALL) != (ssize_t)n || fl_t_pattern_check(b, 0, n, seed) >= 0) {
		goto done;
	}
	r = 0;
done:
	free(b);
	return r;
}

int fl_t_echo(int fd)
{
	static char buf[64 * 1024];
	ssize_t n, o, w;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (o = 0; o < n; o += w)
			if ((w = write(fd, buf + o, (size_t)(n - o))) <= 0)
				return -1;
	return n == 0 ? 0 : -1;
}

int fl_t_warmup_half(int fd, int client)
{
	size_t n = fl_t_enroll_after();

	if (!n)
		return 0;
	if (client)
		return fl_t_warm_io(fd, 1, n, 4096) || fl_t_warm_io(fd, 0, n, 4097) ? -1 : 0;
	return fl_t_warm_io(fd, 0, n, 4096) || fl_t_warm_io(fd, 1, n, 4097) ? -1 : 0;
}

int fl_t_warmup(int c, int s)
{
	size_t n = fl_t_enroll_after();

	if (!n)
		return 0;
	/* One request and one answer, each read whole before the next write:
	 * what a real exchange does, and it leaves no byte unread over TCP. */
	return fl_t_warm_io(c, 1, n, 4096) || fl_t_warm_io(s, 0, n, 4096) ||
	       fl_t_warm_io(s, 1, n, 4097) || fl_t_warm_io(c, 0, n, 4097) ? -1 : 0;
}

fl_t_enroll_fn fl_t_enroll(void)
{
	static fl_t_enroll_fn fn;
	void *h;

	if (fn)
		return fn;
	h = dlopen(fl_t_lib(), RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "fltest: dlopen %s: %s\n", fl_t_lib(), dlerror());
		return NULL;
	}
	fn = (fl_t_enroll_fn)dlsym(h, "fastlocal_enroll_fd");
	return fn;
}

/* Word i of the stream is i * an odd constant ^ seed: a bijection of the
 * position, so any lost, duplicated or shifted byte changes what is read,
 * and cheap enough (one multiply per 8 bytes) not to be the bottleneck. */
static inline uint64_t fl_t_word(uint64_t i, uint64_t seed)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ (seed * 0xbf58476d1ce4e5b9ULL);
}

void fl_t_pattern(uint8_t *buf, uint64_t off, size_t len, uint64_t seed)
{
	size_t i = 0;

	while (i < len && ((off + i) & 7)) { /* unaligned head */
		uint64_t pos = off + i;

		buf[i++] = (uint8_t)(fl_t_word(pos >> 3, seed) >> (8 * (pos & 7)));
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t w = fl_t_word((off + i) >> 3, seed);

		memcpy(buf + i, &w, 8); /* little-endian: byte k of the word at offset k */
	}
	for (; i < len; i++) { /* tail */
		uint64_t pos = off + i;

		buf[i] = (uint8_t)(fl_t_word(pos >> 3, seed) >> (8 * (pos & 7)));
	}
}

int64_t fl_t_pattern_check(const uint8_t *buf, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t tmp[16384];
	size_t done = 0, i;

	while (done < len) {
		size_t n = len - done < sizeof(tmp) ? len - done : sizeof(tmp);

		fl_t_pattern(tmp, off + done, n, seed);
		if (memcmp(tmp, buf + done, n))
			for (i = 0; i < n; i++)
				if (tmp[i] != buf[done + i])
					return (int64_t)(off + done + i);
		done += n;
	}
	return -1;
}

static void *fl_t_writer(void *arg)
{
	struct fl_t_stream *s = arg;
	uint8_t *buf = malloc(s->wsize);
	uint64_t off = 0;
	int hooked = 0;

	if (!buf) {
		s->error = ENOMEM;
		return NULL;
	}
	while (off < s->total) {
		size_t n = s->total - off < s->wsize ? (size_t)(s->total - off) : s->wsize;
		size_t done = 0;

		fl_t_pattern(buf, off, n, s->seed);
		while (done < n) {
			ssize_t w = write(s->wfd, buf + done, n - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				s->error = w < 0 ? errno : EPIPE;
				free(buf);
				return NULL;
			}
			done += (size_t)w;
		}
		off += n;
		if (s->hook && !hooked && s->hook_at && off >= s->hook_at) {
			hooked = 1;
			s->hook(s->hook_arg);
		}
	}
	free(buf);
	return NULL;
}

static void *fl_t_reader(void *arg)
{
	struct fl_t_stream *s = arg;
	size_t cap = 1 << 20;
	uint8_t *buf = malloc(cap);

	if (!buf) {
		s->error = ENOMEM;
		return NULL;
	}
	while (s->received < s->total) {
		ssize_t r = read(s->rfd, buf, cap);
		int64_t bad;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			s->error = r < 0 ? errno : ECONNRESET; /* early EOF */
			break;
		}
		if (s->bad_offset < 0) {
			bad = fl_t_pattern_check(buf, s->received, (size_t)r, s->seed);
			if (bad >= 0)
				s->bad_offset = bad;
		}
		s->received += (uint64_t)r;
	}
	free(buf);
	return NULL;
}

int fl_t_stream_run(struct fl_t_stream *s, size_t n)
{
	pthread_t *th = calloc(2 * n, sizeof(*th));
	pthread_attr_t attr;
	double t0 = fl_t_now();
	size_t i;
	int ok = 1;

	if (!th)
		return -1;
	/* Small stacks: a test may run hundreds of streams at once. */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (i = 0; i < n; i++) {
		s[i].received = 0;
		s[i].bad_offset = -1;
		s[i].error = 0;
		if (pthread_create(&th[2 * i], &attr, fl_t_reader, &s[i]) ||
		    pthread_create(&th[2 * i + 1], &attr, fl_t_writer, &s[i])) {
			fprintf(stderr, "fltest: cannot start stream threads\n");
			exit(2);
		}
	}
	for (i = 0; i < 2 * n; i++)
		pthread_join(th[i], NULL);
	pthread_attr_destroy(&attr);
	free(th);
	for (i = 0; i < n; i++) {
		s[i].seconds = fl_t_now() - t0;
		if (s[i].error || s[i].bad_offset >= 0 || s[i].received != s[i].total)
			ok = 0;
	}
	return ok ? 0 : -1;
}

uint64_t fl_t_net_counter(const char *file, const char *section, const char *name)
{
	FILE *f = fopen(file, "r");
	char names[4096], values[4096];
	size_t sl = strlen(section);
	uint64_t v = UINT64_MAX;

	if (!f)
		return v;
	/* Pairs of lines: "Section: name name ..." then "Section: value ...". */
	while (fgets(names, sizeof(names), f) && fgets(values, sizeof(values), f)) {
		char *sn, *sv, *n, *val;

		if (strncmp(names, section, sl) || names[sl] != ':')
			continue;
		n = strtok_r(names, " \n", &sn);
		val = strtok_r(values, " \n", &sv);
		while (n && val) {
			if (!strcmp(n, name)) {
				v = strtoull(val, NULL, 10);
				break;
			}
			n = strtok_r(NULL, " \n", &sn);
			val = strtok_r(NULL, " \n", &sv);
		}
		break;
	}
	fclose(f);
	return v;
}

uint64_t fl_t_tcp_outsegs(void)
{
	return fl_t_net_counter("/proc/net/snmp", "Tcp", "OutSegs");
}

long fl_t_thread_syscall(pid_t tid)
{
	char path[64], line[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	return line[0] >= '0' && line[0] <= '9' ? strtol(line, NULL, 10) : -1;
}

uint64_t fl_t_status_u64(const char *key)
{
	char out[64];

	if (fl_t_sh_out(out, sizeof(out), "'%s' status --json | jq -r '.%s'", fl_t_cli(), key) ||
	    !out[0] || out[0] < '0' || out[0] > '9')
		return UINT64_MAX;
	return strtoull(out, NULL, 10);
}

int fl_t_sh_out(char *out, size_t len, const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	size_t n;
	FILE *f;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	while (n && (out[n - 1] == '\n'))
		out[--n] = '\0';
	st = pclose(f);
	return (st == -1 || !WIFEXITED(st)) ? -1 : WEXITSTATUS(st);
}

int fl_t_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}
