// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* slot_view.c - every slot domain mapped read-only, for the CLI. */
#include "slot_view.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

static const struct fl_slot *fl_map_domain(__u32 id, __u32 *n)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	void *p = MAP_FAILED;
	int fd = bpf_map_get_fd_by_id(id);

	if (fd < 0)
		return NULL;
	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(fd, &info, &len) && info.value_size == sizeof(struct fl_slot) &&
	    info.max_entries) {
		*n = info.max_entries;
		p = mmap(NULL, (size_t)*n * sizeof(struct fl_slot), PROT_READ, MAP_SHARED, fd, 0);
	}
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

int fl_slot_view_open(struct fl_slot_view *v, const struct fl_pins *pins)
{
	int outer = pins->fd[FL_PIN_DOMAINS];
	__u32 d, id;

	memset(v, 0, sizeof(*v));
	if (outer < 0)
		return 0; /* nothing loaded: no slots */
	for (d = 0; d < FL_DOMAINS_MAX; d++) {
		/* A user-space lookup in a map of maps gives the inner map's id. */
		if (bpf_map_lookup_elem(outer, &d, &id))
			continue;
		v->dom[d] = fl_map_domain(id, &v->n[d]);
		v->domains += v->dom[d] != NULL;
	}
	return 0;
}

void fl_slot_view_close(struct fl_slot_view *v)
{
	__u32 d;

	for (d = 0; d < FL_DOMAINS_MAX; d++)
		if (v->dom[d])
			munmap((void *)v->dom[d], (size_t)v->n[d] * sizeof(struct fl_slot));
	memset(v, 0, sizeof(*v));
}

const struct fl_slot *fl_slot_view_at(const struct fl_slot_view *v, __u32 ref)
{
	__u32 d = FL_SLOT_DOM(ref), i = FL_SLOT_IDX(ref);

	return d < FL_DOMAINS_MAX && v->dom[d] && i < v->n[d] ? &v->dom[d][i] : NULL;
}

__u64 fl_slot_view_used(const struct fl_slot_view *v)
{
	__u64 used = 0;
	__u32 d, i;

	for (d = 0; d < FL_DOMAINS_MAX; d++)
		for (i = 0; v->dom[d] && i < v->n[d]; i++)
			used += __atomic_load_n(&v->dom[d][i].owner, __ATOMIC_RELAXED) != 0;
	return used;
}
