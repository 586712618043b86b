/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fltest_netns.h - running a test in a network namespace of its own. */
#ifndef FL_TEST_NETNS_H
#define FL_TEST_NETNS_H

/* Moves this process into a new network namespace with loopback up, so that
 * /proc/net/snmp counts only this test's segments. 0 or -1. */
int fl_t_private_netns(void);

/* Runs argv (a program such as ip or nft) without LD_PRELOAD, so neither the
 * shim nor ASan's runtime is in it; kills it after timeout seconds. Its exit
 * status, or -1. */
int fl_t_run_plain(char *const argv[], double timeout);

/* "ip [-n NS] ARGS...": args is NULL-terminated, at most 12 of them. */
int fl_t_ip(const char *ns, const char *const *args);
#define FL_T_IP(ns, ...) fl_t_ip(ns, (const char *const[]){ __VA_ARGS__, NULL })

/* Moves this process into the named namespace (/run/netns/NAME, made by
 * "ip netns add"). Not "ip netns exec": that remounts /sys and so hides the
 * pins in /sys/fs/bpf, and the shim would fail open to plain TCP. 0 or -1. */
int fl_t_netns_enter(const char *name);

#endif
