// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* broker_domains.c - one slot array per uid, made on first need. */
#include "broker_domains.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

static int fl_domain_map(struct fl_domains *d, __u32 dom, int fd)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	void *p;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.value_size != sizeof(struct fl_slot))
		return -EINVAL;
	p = mmap(NULL, (size_t)info.max_entries * sizeof(struct fl_slot), PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	d->fd[dom] = fd;
	d->slots[dom] = p;
	d->n[dom] = info.max_entries;
	return 0;
}

int fl_domains_open(struct fl_domains *d, int outer, int uid_map, char *err, size_t errlen)
{
	struct fl_domain owner;
	__u32 dom, id;
	int fd, r;

	memset(d, 0, sizeof(*d));
	d->outer = outer;
	d->uid_map = uid_map;
	for (dom = 0; dom < FL_DOMAINS_MAX; dom++)
		d->fd[dom] = -1;
	/* Domain 0 (fl_slots), and those a broker made before a restart:
	 * fl_domain_uid says whose each is. */
	for (dom = 0; dom < FL_DOMAINS_MAX; dom++) {
		if (bpf_map_lookup_elem(outer, &dom, &id))
			continue;
		if (dom && (bpf_map_lookup_elem(uid_map, &dom, &owner) || !owner.used))
			continue; /* not one of ours: left alone, never handed out */
		fd = bpf_map_get_fd_by_id(id);
		r = fd < 0 ? -errno : fl_domain_map(d, dom, fd);
		if (r) {
			if (fd >= 0)
				close(fd);
			snprintf(err, errlen, "cannot map slot domain %u: %s", dom, strerror(-r));
			fl_domains_close(d);
			return -1;
		}
		d->uid[dom] = dom ? owner.uid : 0;
	}
	return 0;
}

void fl_domains_close(struct fl_domains *d)
{
	__u32 dom;

	for (dom = 0; dom < FL_DOMAINS_MAX; dom++) {
		if (d->slots[dom])
			munmap(d->slots[dom], (size_t)d->n[dom] * sizeof(struct fl_slot));
		if (d->fd[dom] >= 0)
			close(d->fd[dom]);
		d->slots[dom] = NULL;
		d->fd[dom] = -1;
	}
}

static int fl_domain_create(struct fl_domains *d, uid_t uid)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	struct fl_domain owner = { .uid = (__u32)uid, .used = 1 };
	__u32 dom;
	int fd, r;

	for (dom = 1; dom < FL_DOMAINS_MAX && d->slots[dom]; dom++)
		;
	if (dom == FL_DOMAINS_MAX)
		return -ENOSPC;
	/* Same type, sizes and flags as fl_slots (the outer map's template),
	 * fewer entries: BPF_F_INNER_MAP allows that. */
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fl_slots_uid", sizeof(__u32),
			    sizeof(struct fl_slot), FL_DOMAIN_SLOTS, &opts);
	if (fd < 0)
		return -errno;
	r = fl_domain_map(d, dom, fd);
	/* The owner first: a restarted broker must never hand a domain in
	 * the outer map to anyone but the uid it was made for. */
	if (!r && bpf_map_update_elem(d->uid_map, &dom, &owner, BPF_ANY))
		r = -errno;
	/* BPF_ANY: a map of maps takes no other flag; the slot was free. */
	if (!r && bpf_map_update_elem(d->outer, &dom, &fd, BPF_ANY))
		r = -errno;
	if (r) {
		struct fl_domain none = { 0 };

		bpf_map_update_elem(d->uid_map, &dom, &none, BPF_ANY);
		if (d->slots[dom])
			munmap(d->slots[dom], (size_t)d->n[dom] * sizeof(struct fl_slot));
		d->slots[dom] = NULL;
		d->fd[dom] = -1;
		close(fd);
		return r;
	}
	d->uid[dom] = uid;
	return (int)dom;
}

int fl_domain_of(struct fl_domains *d, uid_t uid, bool create)
{
	__u32 dom;

	if (uid == 0)
		return 0;
	for (dom = 1; dom < FL_DOMAINS_MAX; dom++)
		if (d->slots[dom] && d->uid[dom] == uid)
			return (int)dom;
	return create ? fl_domain_create(d, uid) : -ENOENT;
}

struct fl_slot *fl_domains_slot(const struct fl_domains *d, __u32 ref)
{
	__u32 dom = FL_SLOT_DOM(ref), idx = FL_SLOT_IDX(ref);

	return dom < FL_DOMAINS_MAX && d->slots[dom] && idx < d->n[dom] ? &d->slots[dom][idx] : NULL;
}

unsigned fl_domains_count(const struct fl_domains *d)
{
	unsigned n = 0;
	__u32 dom;

	for (dom = 0; dom < FL_DOMAINS_MAX; dom++)
		n += d->slots[dom] != NULL;
	return n;
}
