/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sc_shared.h - what the "shared-*" scenarios (sc_shared*.c) have in common:
 * one socket held by two processes, two threads or two fds, a reader that
 * waits on it in one of several ways and a writer that sends 1 MiB through
 * it to an echo, which sends it back to the reader.
 *
 * Nothing here may hang: every reader and writer runs against a deadline
 * (SH_STALL_MS) and reports "stalled" instead, so that a hang under the
 * shim is a trace difference, never a blocked suite.
 */
#ifndef FL_SC_SHARED_H
#define FL_SC_SHARED_H

#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <sys/types.h>

#define SH_TOTAL   (1u << 20) /* bytes the writer sends, the reader gets back */
#define SH_CHUNK   65536u     /* bytes per write(), and per read() at most */
#define SH_SEED    0x5aull    /* the pattern of the 1 MiB */
#define SH_STALL_MS 5000      /* a reader or writer that waits longer gives up */
#define SH_RES_LEN 128        /* a role's one-line result */

/* How the reader waits for its bytes. */
enum sh_wait {
	SH_READ,     /* blocking read() */
	SH_POLL,     /* poll(), then read() */
	SH_EPOLL_LT, /* epoll_wait() level-triggered, then read() */
	SH_EPOLL_ET, /* epoll_wait() edge-triggered, then recv(MSG_DONTWAIT) to EAGAIN */
	SH_SELECT,   /* select(), then read() */
	SH_WAITALL,  /* recv(64 KiB, MSG_WAITALL): whole blocks only */
	SH_RCVTIMEO, /* recv() with SO_RCVTIMEO of 3 s: never expires on TCP */
	SH_FREAD,    /* fread() of 64 KiB from a FILE (fdopen) */
	SH_NWAIT
};

extern const char *const sh_wait_name[SH_NWAIT];

/* The reader: reads fd (or fp for SH_FREAD) until EOF, checking the 1 MiB
 * pattern; res gets e.g. "1048576 bytes, in order, then EOF". */
void sh_reader(int fd, FILE *fp, enum sh_wait w, char *res, size_t len);

/* The writer: waits until thread `reader` (a tid, 0: do not wait) is asleep
 * in a wait of its own, then writes the 1 MiB in 64 KiB write()s and
 * shuts the socket down for writing. */
void sh_writer(int fd, pid_t reader, char *res, size_t len);

/* Waits (at most ms) until thread tid sleeps in a system call that waits
 * for a socket (read, recv*, poll, select, epoll_wait...): the moment a
 * reader is "already waiting". 0 once it does, -1 if it never did. */
int sh_wait_blocked(pid_t tid, int ms);

/* A role's result, through a pipe or socket to the scenario's process. */
void sh_send_result(int fd, const char *res);
/* Reads it (waiting at most ms); "no answer" when none came. */
void sh_recv_result(int fd, char *res, size_t len, int ms);

/* waitpid() with a deadline; the child is killed if it has not exited by
 * then. Returns the exit code, 128+signal when killed by one, or -1. */
int sh_reap(pid_t pid, int ms);

/* A per-thread deadline: after ms, and every 100 ms after that, the
 * calling thread gets a signal whose handler does nothing but note it
 * (installed without SA_RESTART), so any blocking call it is in returns
 * EINTR. sh_expired() tells whether it fired. */
struct sh_deadline {
	timer_t timer;
	int on;
};
void sh_deadline_start(struct sh_deadline *d, int ms);
void sh_deadline_stop(struct sh_deadline *d);
int sh_expired(void);

#endif
