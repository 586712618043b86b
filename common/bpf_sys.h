/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bpf_sys.h - the few bpf(2) commands the shim needs, as raw system calls.
 *
 * IMPORTANT: the shim does not link libbpf. It is loaded into every host
 * program, and libbpf would bring libelf and zlib along and could clash with
 * a program's own copy. Each function returns 0 / an fd, or -errno.
 */
#ifndef FL_BPF_SYS_H
#define FL_BPF_SYS_H

#include <linux/types.h>

int fl_bpf_obj_get(const char *path);
int fl_bpf_map_update(int map_fd, const void *key, const void *value, __u64 flags);
int fl_bpf_map_lookup(int map_fd, const void *key, void *value);
int fl_bpf_map_delete(int map_fd, const void *key);
/* Needs CAP_SYS_ADMIN: only a root shim and the broker use it. */
int fl_bpf_map_get_fd_by_id(__u32 id);

#endif
