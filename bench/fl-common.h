/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fl-common.h - what fl-bench's workloads share: the verification pattern,
 * connected pairs and listeners over TCP or AF_UNIX, exact reads and writes.
 * Named flb_* (fl-bench): no name is shared with the shim's fl_* functions.
 */
#ifndef FL_BENCH_COMMON_H
#define FL_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define PERIOD ((1 << 20) + 7) /* bytes before the pattern repeats */

/* 2 * PERIOD bytes: any slice of up to PERIOD bytes is contiguous. */
extern uint8_t *fl_pat;

struct fl_opts {
	int is_unix, nodelay, split; /* split: writer on CPU 0, reader on CPU 1 */
	int poll;                    /* ping-pong: poll() for POLLIN before each read */
	size_t size, rbuf;
	double seconds;
	long iters, conns;
};

double flb_now(void);
void flb_die(const char *what) __attribute__((noreturn));
void flb_pattern_init(void);
void flb_pin(int cpu);

/* A listening socket (TCP on 127.0.0.1, or abstract AF_UNIX); *addr and
 * *len say how to connect to it. */
int flb_listen(const struct fl_opts *o, struct sockaddr_storage *addr, socklen_t *len);
/* A socket connected to addr, with TCP_NODELAY if asked for. */
int flb_connect(const struct fl_opts *o, const struct sockaddr_storage *addr, socklen_t len);
/* TCP_NODELAY on an accepted socket if asked for. */
void flb_accepted(const struct fl_opts *o, int fd);
/* A connected pair: client c, server s. */
void flb_pair(const struct fl_opts *o, int *c, int *s);

void flb_write_all(int fd, const uint8_t *p, size_t n);
/* Reads exactly n bytes at stream offset *pos and checks them. */
void flb_read_check(int fd, uint8_t *buf, size_t n, uint64_t *pos);
/* Checks n received bytes against the pattern at stream offset pos; exits
 * with a message if any is wrong. */
void flb_check(const uint8_t *buf, size_t n, uint64_t pos);

/* The workloads; each prints one line of key=value pairs. */
int fl_stream(const struct fl_opts *o);
int fl_pingpong(const struct fl_opts *o);
int fl_rr(const struct fl_opts *o);
int fl_churn(const struct fl_opts *o);

#endif
