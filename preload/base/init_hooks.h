/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * init_hooks.h - what each file does when the shim loads, around fork() and
 * at exit. Called only from init.c, the shim's one constructor, one
 * pthread_atfork and one destructor, which fixes their order (see there and
 * docs/design.md, "Start-up and fork"); no other file registers any.
 *
 * A _fork_release hook is the parent's and the child's at once: the file
 * only holds its lock across fork() and has nothing else to do.
 */
#ifndef FL_INIT_HOOKS_H
#define FL_INIT_HOOKS_H

/* At load. */
void fl_crash_init(void);   /* crash.c: the fatal-signal backtrace */
void fl_own_fds_init(void); /* own_fds.c: grows the fd table early */
void fl_adopt_init(void);   /* adopt.c: re-enrolls what exec passed on */

/* Around fork(). */
void fl_sock_rxq_fork_prepare(void); /* sock.c: every socket's rxq.lock */
void fl_sock_rxq_fork_parent(void);
void fl_sock_rxq_fork_child(void);   /* and a fresh lock for one made meanwhile */
void fl_splice_fork_prepare(void); /* splice.c: fl_ip_lock */
void fl_splice_fork_parent(void);
void fl_splice_fork_child(void);  /* closes the internal pipe */
void fl_tx_fork_prepare(void);    /* tx.c: flushes, fl_pending_lock */
void fl_tx_fork_parent(void);
void fl_tx_fork_child(void);      /* drops the child's copies of buffers */
void fl_sock_fork_prepare(void);  /* sock.c: fl_sock_pool_lock; every socket shared */
void fl_sock_fork_release(void);
void fl_maps_fork_prepare(void);  /* maps.c: fl_maps_lock */
void fl_maps_fork_release(void);
void fl_addr_fork_prepare(void);  /* local_addr.c: fl_addr_lock */
void fl_addr_fork_release(void);
void fl_flusher_fork_prepare(void); /* flusher.c: fl_flusher_lock */
void fl_flusher_fork_parent(void);
void fl_flusher_fork_child(void);   /* the thread starts again when needed */
void fl_sig_fork_prepare(void);     /* signals.c: fl_sig_lock */
void fl_sig_fork_release(void);

/* At exit (exit(), return from main). */
void fl_tx_fini(void); /* tx.c: pushes every buffered byte out */

#endif
