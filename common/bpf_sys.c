// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpf_sys.c - raw bpf(2) wrappers. */
#include "bpf_sys.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>

static long fl_bpf(int cmd, union bpf_attr *attr)
{
	long r = syscall(SYS_bpf, cmd, attr, sizeof(*attr));

	return r < 0 ? -errno : r;
}

int fl_bpf_obj_get(const char *path)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.pathname = (__u64)(unsigned long)path;
	return (int)fl_bpf(BPF_OBJ_GET, &a);
}

int fl_bpf_map_update(int map_fd, const void *key, const void *value, __u64 flags)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (__u32)map_fd;
	a.key = (__u64)(unsigned long)key;
	a.value = (__u64)(unsigned long)value;
	a.flags = flags;
	return (int)fl_bpf(BPF_MAP_UPDATE_ELEM, &a);
}

int fl_bpf_map_lookup(int map_fd, const void *key, void *value)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (__u32)map_fd;
	a.key = (__u64)(unsigned long)key;
	a.value = (__u64)(unsigned long)value;
	return (int)fl_bpf(BPF_MAP_LOOKUP_ELEM, &a);
}

int fl_bpf_map_delete(int map_fd, const void *key)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (__u32)map_fd;
	a.key = (__u64)(unsigned long)key;
	return (int)fl_bpf(BPF_MAP_DELETE_ELEM, &a);
}

int fl_bpf_map_get_fd_by_id(__u32 id)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_id = id;
	return (int)fl_bpf(BPF_MAP_GET_FD_BY_ID, &a);
}
