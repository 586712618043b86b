// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * init.c - the shim's one constructor, one pthread_atfork and one destructor.
 *
 * Each file's start-up, fork and exit work is a hook (init_hooks.h) called
 * from here, in the order written below, instead of a constructor or an
 * atfork registration of its own, whose order would be the link order.
 * docs/design.md, "Start-up and fork".
 */
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include "base/init_hooks.h"
#include "base/log.h"
#include "socket/fdtable.h"
#include "tx/linger.h"
#include "tx/tx.h"
#include "calls.h"

/*
 * Before fork(), each file takes the locks its child hook needs. First the
 * held receive bytes' locks of every socket (sock.c): a reader holding one
 * may go on to take the internal pipe's lock (splice.c), and none of their
 * holders waits for anything the later steps take. tx.c's
 * hook first flushes every buffer, which runs the send path: that may count
 * in the maps, log and wake the flusher, so it runs before the maps', the
 * local addresses' and the flusher's locks are taken. Those three, sock.c's
 * pool lock and the internal pipe's lock (splice.c) are leaves: a holder
 * takes no other lock of the shim's (it logs, lock-free, and registers own
 * fds), so their order among themselves cannot deadlock. The order is the
 * one the files' separate registrations had (pthread_atfork runs prepare
 * handlers last registered first, the pipe's registered last, at its first
 * use). sock.c's hook comes right after tx.c's, whose pool lock it took
 * over: the flush runs before it marks every socket shared, as it always
 * did (a shared socket's buffer no longer coalesces on its own initiative).
 * The lingering sockets' lock (tx/linger.c) is a leaf as well (its holder
 * copies an fd and takes a reference), taken after tx.c's flush, whose
 * closes may add to it.
 * The signal handlers' lock (signals.c) is a leaf too, taken last.
 * The settings need no hook: they are read here, at load, before any fork
 * hook exists, and glibc runs a pthread_once that a fork interrupted again
 * in the child (its fork generation), which config.c's reader allows.
 */
static void fl_fork_prepare(void)
{
	fl_sock_rxq_fork_prepare();
	fl_splice_fork_prepare();
	fl_tx_fork_prepare();
	fl_linger_fork_prepare();
	fl_sock_fork_prepare();
	fl_maps_fork_prepare();
	fl_addr_fork_prepare();
	fl_flusher_fork_prepare();
	fl_sig_fork_prepare();
}

/* After fork(), the same in reverse: the last lock taken is released first. */
static void fl_fork_parent(void)
{
	fl_sig_fork_release();
	fl_flusher_fork_parent();
	fl_addr_fork_release();
	fl_maps_fork_release();
	fl_sock_fork_release();
	fl_linger_fork_parent();
	fl_tx_fork_parent();
	fl_splice_fork_parent();
	fl_sock_rxq_fork_parent();
}

/*
 * The process the shim's state belongs to: its pid, set at load and in
 * every fork() child (fl_fork_child). Written only there (at load the
 * process is normally single-threaded; a child has one thread), read
 * lock-free by fl_in_hookless_child.
 */
static pid_t fl_owner_pid;

bool fl_in_hookless_child(void)
{
	return getpid() != __atomic_load_n(&fl_owner_pid, __ATOMIC_RELAXED);
}

static void fl_fork_child(void)
{
	__atomic_store_n(&fl_owner_pid, getpid(), __ATOMIC_RELAXED);
	fl_sig_fork_release();
	fl_flusher_fork_child();
	fl_addr_fork_release();
	fl_maps_fork_release();
	fl_sock_fork_release();
	fl_linger_fork_child();
	fl_tx_fork_child();
	fl_splice_fork_child();
	fl_sock_rxq_fork_child();
}

/*
 * At load, while the process is normally still single-threaded:
 * 0. the settings are read (fl_config), and what was wrong with them is
 *    logged: first, as when the first reader of the settings logged it;
 * 1. the fork hooks, first, so that a fork() from anything below (or from
 *    another thread of the program) already finds them;
 * 2. the crash handler, so that a fault in what follows is reported;
 * 3. the fd table grown to the shim's own fd range (own_fds.c), before the
 *    adoption below enrolls and moves fds there from a single thread;
 * 4. the adoption of the sockets a previous image passed on through exec,
 *    which reads the settings and opens the maps: last, with all the above
 *    in place.
 */
__attribute__((constructor)) static void fl_init(void)
{
	fl_log_config_warnings();
	__atomic_store_n(&fl_owner_pid, getpid(), __ATOMIC_RELAXED);
	pthread_atfork(fl_fork_prepare, fl_fork_parent, fl_fork_child);
	fl_crash_init();
	fl_own_fds_init();
	fl_adopt_init();
}

/* The process is exiting: what is buffered must reach the kernel. */
__attribute__((destructor)) static void fl_fini(void)
{
	fl_tx_fini();
}
