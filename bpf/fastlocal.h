/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fastlocal.h - the layouts that the verdict program and user space share.
 *
 * This is the only place where a map key or value is defined. The BPF side
 * includes it after vmlinux.h, user space after <linux/types.h>; both see the
 * same __u* types, and every struct is laid out with explicit padding so that
 * clang -target bpf and gcc agree byte for byte.
 */
#ifndef FASTLOCAL_H
#define FASTLOCAL_H

#ifndef __bpf__
#include <linux/types.h> /* the BPF side has these from vmlinux.h */
#endif

/* Bumped whenever a layout below changes; "fastlocal load" refuses to mix. */
#define FL_ABI_VERSION 1

#define FL_DEFAULT_PIN_DIR "/sys/fs/bpf/fastlocal"

/* Names of the pins inside the pin dir. */
#define FL_PIN_PROG_VERDICT "prog_verdict"
#define FL_PIN_MAP_SOCKHASH "map_sockhash"
#define FL_PIN_MAP_STATS    "map_stats"
#define FL_PIN_MAP_META     "map_meta"

#define FL_SOCKHASH_MAX 65536

/*
 * struct fl_key - names one end of one TCP connection.
 *
 * IMPORTANT: a loopback 4-tuple repeats in every network namespace, so the
 * namespace (its cookie, which the kernel never reuses) is part of the key.
 * Addresses are always 16 bytes: IPv4 is stored IPv4-mapped (::ffff:a.b.c.d),
 * so a dual-stack AF_INET6 socket and an AF_INET socket of one connection
 * produce matching keys. Addresses are in network order, ports in host order.
 * The peer of (ns, L, R) is (ns, R, L).
 */
struct fl_key {
	__u64 netns_cookie;
	__u32 local_ip[4];
	__u32 remote_ip[4];
	__u16 local_port;
	__u16 remote_port;
	__u32 pad; /* always zero: the whole struct is hashed */
};

/*
 * Counters in the per-CPU stats map (one element; user space sums the CPUs).
 * Indexes are stable: new counters are appended, never renumbered, and the
 * array is sized FL_STAT_SLOTS so that appending does not change the map.
 */
enum fl_stat {
	FL_STAT_REDIRECTED_MSGS = 0,
	FL_STAT_REDIRECTED_BYTES = 1,
	FL_STAT_PASSED_MSGS = 2,
	FL_STAT_PASSED_BYTES = 3,
	FL_STAT__NR,
};
#define FL_STAT_SLOTS 64

struct fl_stats {
	__u64 c[FL_STAT_SLOTS];
};

/*
 * struct fl_meta - written once by "fastlocal load" into the pinned meta map.
 * object_hash identifies the exact BPF object that was loaded, so that a
 * second load can tell "same object, nothing to do" from "different object".
 */
struct fl_meta {
	__u32 abi_version;
	__u32 pad;
	__u64 object_hash;
	__u64 loaded_at_unix;
};

#endif /* FASTLOCAL_H */
