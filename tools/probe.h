/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * probe.h - what this process may do and what this kernel can do.
 *
 * Every kernel-compatibility check of the CLI lives in probe.c, each with
 * the kernel version or commit that it depends on.
 */
#ifndef FL_PROBE_H
#define FL_PROBE_H

#include <stddef.h>

#define FL_SYSFS_BTF "/sys/kernel/btf/vmlinux"

/* 0 if the effective capabilities allow loading; else -1 and a sentence
 * naming the missing privilege. */
int fl_probe_load_privileges(char *err, size_t errlen);

/* 0 if BTF is readable at btf_path (NULL: the running kernel's). */
int fl_probe_btf(const char *btf_path, char *err, size_t errlen);

/* 0 if the kernel has SOCKHASH maps and SK_MSG programs. */
int fl_probe_sockmap(char *err, size_t errlen);

/* The message fl_probe_sockmap gives; exposed so the test log can show it. */
const char *fl_probe_sockmap_message(void);

/* 0 if sockets tell their network namespace (SO_NETNS_COOKIE). */
int fl_probe_netns_cookie(char *err, size_t errlen);

/*
 * Whether FIONREAD of a socket that holds redirected bytes also counts the
 * bytes in its TCP queue, tried on a private sockmap and a loopback pair:
 * 1 it does, 0 it counts the redirected queue alone (docs/kernel.md#fionread;
 * Linux 6.18 does this, and the shim adds TCP's queue itself), -1 it cannot
 * be told (err says why; needs root).
 */
int fl_probe_fionread(char *err, size_t errlen);

/* Opens the root of the cgroup v2 hierarchy (O_RDONLY|O_DIRECTORY) and puts
 * its path in path_out. Mounts cgroup2 on FL_CGROUP2_FALLBACK when no cgroup2
 * is mounted. Returns the fd, or -1 with a message. */
#define FL_CGROUP2_FALLBACK "/run/fastlocal/cgroup2"
int fl_cgroup2_root(char *path_out, size_t pathlen, char *err, size_t errlen);

#endif
