/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* pins.h - the set of pinned objects that one "fastlocal load" leaves behind. */
#ifndef FL_PINS_H
#define FL_PINS_H

#include <stddef.h>
#include <linux/types.h>

#include "fastlocal.h"
#include "pin_dir.h"

/* Every pinned object, in the order they are created (removed in reverse). */
enum fl_pin {
	FL_PIN_META,
	FL_PIN_STATS,
	FL_PIN_USTATS,
	FL_PIN_JOINED,     /* fl_joined: bumped when a socket joins the sockhash */
	FL_PIN_SLOTS,
	FL_PIN_SLOT_INDEX,
	FL_PIN_DOMAINS,    /* fl_slot_domains: every user's slot array */
	FL_PIN_DOM_UID,    /* fl_domain_uid: the broker's domain -> uid */
	FL_PIN_SK,
	FL_PIN_SOCKHASH,
	FL_PIN_ESTABLISHED,
	FL_PIN_VERDICT,
	FL_PIN_SOCKOPS,
	FL_PIN_SOCKOPS_LINK,
	FL_PIN_HOLDERS,      /* fl_holders: who else holds a socket (cgroup getsockopt) */
	FL_PIN_HOLDERS_LINK,
	FL_PIN__NR,
};

/* File name of each pin in the pin dir. */
extern const char *const fl_pin_names[FL_PIN__NR];

enum fl_pins_state {
	FL_PINS_NONE,    /* nothing of ours pinned */
	FL_PINS_PARTIAL, /* some pins missing: an interrupted load, or another ABI */
	FL_PINS_PRESENT, /* every pin there */
};

struct fl_pins {
	enum fl_pins_state state;
	int fd[FL_PIN__NR]; /* -1 when not pinned */
	struct fl_meta meta; /* zero unless the meta map could be read */
};

/* Opens what is pinned. Returns 0 (see pins->state), or -1 with a message
 * when a pin exists but cannot be opened (permissions, wrong type). */
int fl_pins_open(struct fl_pins *pins, const struct fl_pin_dir *pd, char *err, size_t errlen);
void fl_pins_close(struct fl_pins *pins);

/* The kernel's id of a program fd (and its tag in hex into tag_out[17],
 * unless NULL), or of a map fd; 0 for fd < 0 or when it cannot be read. */
__u32 fl_prog_id(int fd, char *tag_out);
__u32 fl_map_id(int fd);

/* Removes every pin of ours and, unless keep_dir, then the directory if it
 * is empty. Returns the number of pins removed, or -1 with a message. */
int fl_pins_remove(const struct fl_pin_dir *pd, int keep_dir, char *err, size_t errlen);

#endif
