/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fltest.h - helpers for fastlocal's integration tests and tools.
 *
 * A test program runs subtests named in plain English with FL_T_RUN; each
 * prints "PASS: <name>" or "FAIL: <name>: <why>", which test/run.sh counts.
 */
#ifndef FL_TEST_H
#define FL_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>

/* ---- reporting */
extern int fl_t_failed; /* subtests failed so far in this program */

/* Records why the current subtest failed (the first reason wins). */
void fl_t_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define FL_T_CHECK(cond, ...)                                         \
	do {                                                          \
		if (!(cond)) {                                        \
			fl_t_fail(__FILE__, __LINE__, __VA_ARGS__);   \
			return -1;                                    \
		}                                                     \
	} while (0)

/*
 * Checks that print both values when they fail, like the kernel selftests'
 * ASSERT_EQ: FL_T_CHECK_EQ(got, want, "what", ...) fails the subtest with
 * "what: got == want does not hold: got is 3, want is 4" and returns -1.
 * For integers (signed ones print signed); what is a printf format. Each
 * operand is evaluated once.
 */
#define FL_T_CHECK_EQ(a, b, ...) FL_T__CMP(a, ==, b, __VA_ARGS__)
#define FL_T_CHECK_NE(a, b, ...) FL_T__CMP(a, !=, b, __VA_ARGS__)
#define FL_T_CHECK_LT(a, b, ...) FL_T__CMP(a, <, b, __VA_ARGS__)
#define FL_T_CHECK_LE(a, b, ...) FL_T__CMP(a, <=, b, __VA_ARGS__)
#define FL_T_CHECK_GT(a, b, ...) FL_T__CMP(a, >, b, __VA_ARGS__)
#define FL_T_CHECK_GE(a, b, ...) FL_T__CMP(a, >=, b, __VA_ARGS__)

/* Two strings (NULL allowed) are equal; both are printed, quoted. */
#define FL_T_CHECK_STR_EQ(a, b, ...)                                              \
	do {                                                                      \
		if (fl_t_check_str_eq(__FILE__, __LINE__, (a), (b), #a, #b,       \
				      __VA_ARGS__))                               \
			return -1;                                                \
	} while (0)

/* len bytes at a and b are equal; prints the first differing offset and
 * the two bytes there. */
#define FL_T_CHECK_MEM_EQ(a, b, len, ...)                                         \
	do {                                                                      \
		if (fl_t_check_mem_eq(__FILE__, __LINE__, (a), (b), (len), #a, #b, \
				      __VA_ARGS__))                               \
			return -1;                                                \
	} while (0)

/* Signed integer types print signed, everything else unsigned. */
#define FL_T__SIGNED(x)                                                            \
	_Generic((x), signed char: 1, short: 1, int: 1, long: 1, long long: 1,    \
		 char: ((char)-1 < 0), default: 0)

/* Both operands in their common type (the usual arithmetic conversions,
 * as the bare comparison would do), so that mixing int and size_t does not
 * trip -Wsign-compare; the signedness printed is each operand's own. */
#define FL_T__CMP(a, op, b, ...)                                                  \
	do {                                                                      \
		__typeof__((a) + (b)) fl_t_a_ = (a), fl_t_b_ = (b);               \
		if (!(fl_t_a_ op fl_t_b_)) {                                      \
			fl_t_fail_cmp(__FILE__, __LINE__, #a, #op, #b,            \
				      FL_T__SIGNED(a), (uint64_t)fl_t_a_,         \
				      FL_T__SIGNED(b), (uint64_t)fl_t_b_,         \
				      __VA_ARGS__);                               \
			return -1;                                                \
		}                                                                 \
	} while (0)

/* The failure of a comparison: "what: a op b does not hold: a is A, b is B".
 * a_signed/b_signed: print the value as int64_t. */
void fl_t_fail_cmp(const char *file, int line, const char *a, const char *op, const char *b,
		   int a_signed, uint64_t av, int b_signed, uint64_t bv, const char *fmt, ...)
	__attribute__((format(printf, 10, 11)));

/* 0 if equal, else records the failure (both strings) and returns -1. */
int fl_t_check_str_eq(const char *file, int line, const char *a, const char *b, const char *ea,
		      const char *eb, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* 0 if equal, else records the failure (first differing offset) and
 * returns -1. */
int fl_t_check_mem_eq(const char *file, int line, const void *a, const void *b, size_t len,
		      const char *ea, const char *eb, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

/*
 * A setup step (load, namespace, server, daemon): not a subtest, so not
 * counted as passed. ok: it worked; then prints "setup: what" and returns
 * true. Else prints "FAIL: setup: what[: the reason recorded by FL_T_CHECK]",
 * counts a failed subtest (the program exits non-zero) and returns false:
 * the caller skips what depends on it.
 */
bool fl_t_setup(bool ok, const char *what);
/* The same for a setup function written like a subtest (0: it worked). */
bool fl_t_setup_run(const char *what, int (*fn)(void));

/* Why the current subtest failed so far ("" if it has not). */
const char *fl_t_reason(void);

/* Runs one subtest: fn returns 0 for pass. */
void fl_t_run(const char *name, int (*fn)(void));
#define FL_T_RUN(name, fn) fl_t_run(name, fn)

/* Exit status for main: 0 if every subtest passed. */
int fl_t_exit_status(void);

/* ---- environment given by test/run.sh */
const char *fl_t_cli(void);     /* $FL_TEST_CLI: the fastlocal binary */
const char *fl_t_lib(void);     /* $FL_TEST_LIB: libfastlocal.so */
const char *fl_t_pin_dir(void); /* $FASTLOCAL_PIN_DIR */

/* ---- sockets */
struct fl_t_addr {
	int family;       /* AF_INET or AF_INET6 */
	const char *addr; /* listen and connect here; NULL: loopback */
	uint16_t port;    /* listening port; 0: any */
	uint16_t cport;   /* client ports cport, cport+1, ...; 0: any */
};

/* n connected TCP pairs to one listener at *a: client[i] from connect(),
 * server[i] from accept(). 0 or -1 (nothing left open). */
int fl_t_tcp_pairs(const struct fl_t_addr *a, size_t n, int *client, int *server);

struct sockaddr_storage;
/* Fills ss and len from a family, a textual address (NULL: loopback) and a port. */
int fl_t_sockaddr(int family, const char *addr, uint16_t port, struct sockaddr_storage *ss,
		  socklen_t *len);

/* A connected loopback TCP pair (family AF_INET or AF_INET6): *client from
 * connect(), *server from accept(). 0 or -1. */
int fl_t_tcp_pair(int family, int *client, int *server);

/* FASTLOCAL_ENROLL_AFTER as the shim of this test sees it (4096 unless set;
 * test/run.sh reads no configuration file). */
size_t fl_t_enroll_after(void);

/* The warm-up of a fresh connected pair, for a test about what an enrolled
 * connection does: one request of fl_t_enroll_after() bytes from client to
 * server and one answer back, each read whole. Under deferred enrollment
 * (the default) both ends then move past the threshold over TCP and enroll
 * (the client joins on its read of the answer), and nothing is left unread,
 * so both directions redirect from the next byte. Nothing with enrollment
 * at connect/accept (0). 0, or -1 if a byte was wrong or a call failed. */
int fl_t_warmup(int c, int s);
/* The same, one end's half, when the two ends are in two processes: the
 * client writes the request and reads the answer, the server the other
 * way round. */
int fl_t_warmup_half(int fd, int client);

/* Echoes everything read from fd back to it until EOF: 0 at EOF, -1 if a
 * read or write failed. */
int fl_t_echo(int fd);

/* fastlocal_enroll_fd, the shim's explicit enrollment, found with dlopen
 * (the preloaded copy when the program runs under the shim). NULL if the
 * shim cannot be loaded. */
typedef int (*fl_t_enroll_fn)(int fd);
fl_t_enroll_fn fl_t_enroll(void);

/* ---- data */
/* Fills buf with the pattern bytes at stream offsets [off, off+len). The
 * pattern depends on the position and the seed, so a lost, duplicated or
 * reordered byte shows. */
void fl_t_pattern(uint8_t *buf, uint64_t off, size_t len, uint64_t seed);

/* Offset of the first byte of buf that differs from the pattern, or -1. */
int64_t fl_t_pattern_check(const uint8_t *buf, uint64_t off, size_t len, uint64_t seed);

struct fl_t_stream {
	int wfd, rfd;       /* write into wfd, read and verify from rfd */
	uint64_t total;     /* bytes to move */
	size_t wsize;       /* bytes per write() */
	uint64_t seed;
	/* Called by the writer once after 'hook_at' bytes (0: never). */
	uint64_t hook_at;
	void (*hook)(void *arg);
	void *hook_arg;
	/* results */
	uint64_t received;
	int64_t bad_offset; /* first wrong byte, -1 if none */
	int error;          /* errno of a failed read/write, 0 if none */
	double seconds;
};

/* Streams s->total bytes with a writer and a verifying reader thread per
 * stream; all n streams run at once. 0 if every byte arrived intact. */
int fl_t_stream_run(struct fl_t_stream *s, size_t n);

/* ---- system counters */
/* Tcp OutSegs from /proc/net/snmp (this network namespace). */
uint64_t fl_t_tcp_outsegs(void);
/* A counter of a /proc/net/snmp-style file (pairs of "Section: names" and
 * "Section: values" lines), e.g. ("/proc/net/netstat", "TcpExt",
 * "DelayedACKs"); UINT64_MAX if absent. */
uint64_t fl_t_net_counter(const char *file, const char *section, const char *name);

/* The system call thread tid of this process sleeps in (its number, from
 * /proc/self/task/TID/syscall), or -1 if it is running or that cannot be
 * read: how a test knows a thread is blocked in a call, not merely about to
 * make it. */
long fl_t_thread_syscall(pid_t tid);

/* Runs "$FL_TEST_CLI status --json" and returns the value of a numeric key
 * (a jq path such as "fallbacks.insert_ebusy"), or UINT64_MAX. */
uint64_t fl_t_status_u64(const char *key);

/* Runs a shell command, puts its stdout (trailing newlines cut) in out.
 * Returns its exit status, or -1. */
int fl_t_sh_out(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Runs a shell command, returns its exit status (or -1). */
int fl_t_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

double fl_t_now(void);

#endif
