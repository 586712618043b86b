/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * holders.h - does anyone but the caller hold this socket?
 *
 * A thread asleep in TCP's own recvmsg when its socket joins the sockhash
 * never sees the bytes redirected into it afterwards (it waits on TCP's
 * queue only): it would sleep forever. Such a reader can sit in another
 * process (fork, SCM_RIGHTS, exec), behind another fd (dup) or in a path
 * the shim cannot see (stdio, raw system calls). Each of them holds a
 * reference to the socket's file: an fd, or the system call in progress.
 * The kernel counts them; the getsockopt hook fl_holders reports the count
 * (bpf/fastlocal.h, FL_SO_HOLDERS).
 */
#ifndef FL_HOLDERS_H
#define FL_HOLDERS_H

/* References to fd's socket beyond the calling fd itself and the asking
 * call: 0 means no other fd, process or call in progress can read it; -1
 * means unknown (nothing loaded answers), which callers treat as shared. */
int fl_holders_others(int fd);

#endif
