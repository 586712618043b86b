/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * slot_view.h - every slot domain mapped read-only, for the CLI.
 *
 * Slots live in one array per user (fastlocal.h, "Slot domains"); status,
 * conns and top read all of them through the outer map fl_slot_domains.
 */
#ifndef FL_SLOT_VIEW_H
#define FL_SLOT_VIEW_H

#include <stddef.h>
#include <linux/types.h>

#include "fastlocal.h"
#include "pins.h"

struct fl_slot_view {
	const struct fl_slot *dom[FL_DOMAINS_MAX]; /* NULL: no such domain */
	__u32 n[FL_DOMAINS_MAX];                   /* its number of slots */
	unsigned domains;                          /* how many exist */
};

/* Maps every domain. 0, or -1 with errno (the outer map unreadable). */
int fl_slot_view_open(struct fl_slot_view *v, const struct fl_pins *pins);
void fl_slot_view_close(struct fl_slot_view *v);

/* The slot a reference names, or NULL. */
const struct fl_slot *fl_slot_view_at(const struct fl_slot_view *v, __u32 ref);

/* Slots with an owner, in every domain. */
__u64 fl_slot_view_used(const struct fl_slot_view *v);

#endif
