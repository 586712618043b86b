/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fltest_broker.h - "fastlocal daemon" and processes of the user nobody in a
 * test. */
#ifndef FL_TEST_BROKER_H
#define FL_TEST_BROKER_H

#include <sys/types.h>

#define FL_T_NOBODY 65534

/* Starts "fastlocal daemon --socket sock --pin-dir pins" without the shim
 * (the broker is no client), dying with the test (PR_SET_PDEATHSIG), and
 * waits until it says it serves. Its pid, or -1 (its one line on stderr). */
pid_t fl_t_daemon_start(const char *sock, const char *pins);

/* SIGTERM, then waits: 0 when it exited 0 and removed sock, else -1. */
int fl_t_daemon_stop(pid_t pid, const char *sock);

/* A directory nobody can read and enter (/tmp/NAME-PID) with copies of the
 * running program and of the shim, which may sit in a tree nobody cannot
 * read. Writes their paths (each of size len); 0 or -1. */
int fl_t_nobody_copies(const char *name, char *dir, char *self, char *shim, size_t len);

/* In a child about to exec: the shim (after ASan's runtime in a SAN build:
 * FL_TEST_ASAN_RT) preloaded and the broker named, then the real user
 * nobody without supplementary groups. 0 or -1 (errno set). */
int fl_t_become_nobody(const char *shim, const char *broker_sock);

#endif
