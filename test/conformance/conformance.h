/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * conformance.h - the differential TCP conformance suite.
 *
 * Each scenario is a small client/server interaction written against the
 * plain socket API. test/conformance/run.sh runs every scenario twice, once
 * on plain TCP and once with the shim preloaded into both ends, and compares
 * the TRACES they print: any difference is a failure. So a scenario prints
 * only what TCP guarantees and an application can rely on, never what may
 * legitimately vary between two TCP runs (how many bytes one read() returned,
 * timings): bytes and their order (as counts and verdicts), return values,
 * errno names, readiness, EOF, and the timing class ("arrives" / "stalls").
 *
 * A scenario is a function registered with FL_SCENARIO(name, flags, fn). It
 * gets the address family (AF_INET or AF_INET6) and returns 0, or non-zero
 * when it could not run at all (setup failure: reported as such).
 */
#ifndef FL_CONFORMANCE_H
#define FL_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Scenario flags. */
#define FL_SC_REDIRECTS (1u << 0) /* under the shim, bytes must be redirected */
#define FL_SC_SLOW      (1u << 1) /* takes more than a second */

struct fl_scenario {
	const char *name;
	unsigned flags;
	int (*fn)(int family);
	const char *file;
	struct fl_scenario *next;
	const void *arg; /* for scenarios generated from a table: fl_sc_arg() */
};

void fl_sc_register(struct fl_scenario *sc);
/* The arg of the scenario being run (NULL for FL_SCENARIO ones). A table of
 * cases registers one fl_scenario per case, all with one fn, and fn finds
 * its case here. */
const void *fl_sc_arg(void);

#define FL_SCENARIO(name_, flags_, fn_)                                          \
	static struct fl_scenario fl_sc_##fn_ = { name_, flags_, fn_, __FILE__, 0, 0 }; \
	__attribute__((constructor)) static void fl_sc_reg_##fn_(void)           \
	{                                                                        \
		fl_sc_register(&fl_sc_##fn_);                                    \
	}

/* A child mode: "conformance --child NAME ARGS..." runs fn(argc, argv) with
 * the ARGS; for scenarios that fork+exec this binary (exec, fd inheritance). */
struct fl_child {
	const char *name;
	int (*fn)(int argc, char **argv);
	struct fl_child *next;
};

void fl_child_register(struct fl_child *ch);

#define FL_CHILD(name_, fn_)                                              \
	static struct fl_child fl_ch_##fn_ = { name_, fn_, 0 };           \
	__attribute__((constructor)) static void fl_ch_reg_##fn_(void)    \
	{                                                                 \
		fl_child_register(&fl_ch_##fn_);                          \
	}

/* ---- the trace (stdout, line-buffered) */
void fl_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "ECONNRESET", "EAGAIN", ... (or "E<n>") */
const char *fl_errname(int err);
/* "n" for n >= 0, else "-1 <ERRNAME>" from errno: a call's result as traced */
const char *fl_ret(ssize_t r);

/* ---- setup */
/* A connected pair over loopback: c from connect(), s from accept(),
 * warmed up (fl_sc_warmup below). */
int fl_sc_pair(int family, int *c, int *s);
/* The same without the warm-up: for a scenario about the threshold itself
 * (a pending pair, bytes before enrollment), which moves its own bytes. */
int fl_sc_pair_cold(int family, int *c, int *s);
/*
 * The warm-up, for passes with deferred enrollment (FASTLOCAL_ENROLL_AFTER
 * > 0, the default 4096): run.sh sets FL_SC_WARMUP to the threshold, for
 * the plain run and the shim run alike. One request/answer round of that
 * many bytes each way, read whole: each end moves past the threshold over
 * TCP, so both enroll (the client joins on its read of the answer), and
 * nothing is left unread, so both directions' gates are open and the
 * scenario's own bytes are the first that can be redirected. Nothing is
 * traced unless it fails, so traces do not change. With FL_SC_WARMUP unset
 * or 0 it does nothing: the scenario meets enrollment at connect/accept
 * (FASTLOCAL_ENROLL_AFTER=0) exactly as written.
 *
 * fl_sc_pair does it. A scenario that makes its connection otherwise calls
 * fl_sc_warmup(c, s) once the pair is connected, before the I/O it is
 * about, or each end its half (fl_sc_warmup_client/_server) when the ends
 * are in different processes. Blocking or not, 0 or -1 (traced).
 */
size_t fl_sc_warmup_bytes(void);
int fl_sc_warmup(int c, int s);
int fl_sc_warmup_client(int c);
int fl_sc_warmup_server(int s);
/* A listener on loopback; *port gets its port. */
int fl_sc_listen(int family, int *port);
int fl_sc_connect(int family, int port);
/* Re-runs this binary: argv for execv of "<self> <args...>". */
const char *fl_sc_self(void);

/* ---- data: a position-dependent pattern, as in the integration tests */
void fl_sc_fill(uint8_t *buf, uint64_t off, size_t len, uint64_t seed);
/* Writes n pattern bytes from offset off; 0 or -1. */
int fl_sc_write_pattern(int fd, uint64_t off, size_t n, uint64_t seed);
/* Reads exactly n bytes and checks them against the pattern from offset
 * off. Returns n, fewer at EOF, or -1 (errno) on error; *bad gets the
 * offset of the first wrong byte or -1. */
ssize_t fl_sc_read_pattern(int fd, uint64_t off, size_t n, uint64_t seed, int64_t *bad);

/* ---- timing classes */
/* 1 if fd becomes readable within ms milliseconds, else 0. */
int fl_sc_readable_within(int fd, int ms);
double fl_sc_now(void);
void fl_sc_sleep_ms(int ms);

#endif
