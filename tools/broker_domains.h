/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * broker_domains.h - the broker's slot domains: one mmap-able slot array
 * per uid, created on that uid's first request and added to
 * fl_slot_domains (fastlocal.h, "Slot domains"; docs/security.md).
 */
#ifndef FL_BROKER_DOMAINS_H
#define FL_BROKER_DOMAINS_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "fastlocal.h"

struct fl_domains {
	int outer;                             /* fl_slot_domains */
	int uid_map;                           /* fl_domain_uid */
	int fd[FL_DOMAINS_MAX];                /* each domain's array, -1: none */
	struct fl_slot *slots[FL_DOMAINS_MAX]; /* mapped read-write by the broker */
	__u32 n[FL_DOMAINS_MAX];               /* its number of slots */
	uid_t uid[FL_DOMAINS_MAX];             /* its owner (domain 0: root) */
};

/* Takes the two maps (fds stay the caller's) and maps domain 0 and every
 * domain a broker created before. 0, or -1 with a message. */
int fl_domains_open(struct fl_domains *d, int outer, int uid_map, char *err, size_t errlen);
void fl_domains_close(struct fl_domains *d);

/* uid's domain, created if it has none (root: 0). The domain number, or
 * -errno (-ENOSPC: FL_DOMAINS_MAX reached). */
int fl_domain_of(struct fl_domains *d, uid_t uid, bool create);

/* The slot a reference names, in any domain, or NULL. */
struct fl_slot *fl_domains_slot(const struct fl_domains *d, __u32 ref);

/* How many domains exist. */
unsigned fl_domains_count(const struct fl_domains *d);

#endif
