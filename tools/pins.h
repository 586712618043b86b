/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* pins.h - the set of pinned objects that one "fastlocal load" leaves behind. */
#ifndef FL_PINS_H
#define FL_PINS_H

#include <stddef.h>
#include <linux/types.h>

#include "fastlocal.h"
#include "pin_dir.h"

/* One pinned object: its file name in the pin dir. */
struct fl_pin_entry {
	const char *name;
	int is_prog;
};

/* All pins, in the order they are created (removed in reverse). */
extern const struct fl_pin_entry fl_pin_entries[];
extern const size_t fl_pin_entries_nr;

enum fl_pins_state {
	FL_PINS_NONE,    /* nothing of ours pinned */
	FL_PINS_PARTIAL, /* some pins missing: an interrupted load or unload */
	FL_PINS_PRESENT, /* every pin there */
};

struct fl_pins {
	enum fl_pins_state state;
	int prog_fd, sockhash_fd, stats_fd, meta_fd; /* -1 when not open */
	struct fl_meta meta;                          /* valid if meta_fd >= 0 */
};

/* Opens what is pinned. Returns 0 (see pins->state), or -1 with a message
 * when a pin exists but cannot be opened (permissions, wrong type). */
int fl_pins_open(struct fl_pins *pins, const struct fl_pin_dir *pd, char *err, size_t errlen);
void fl_pins_close(struct fl_pins *pins);

/* Removes every pin of ours and, unless keep_dir, then the directory if it
 * is empty. Returns the number of pins removed, or -1 with a message. */
int fl_pins_remove(const struct fl_pin_dir *pd, int keep_dir, char *err, size_t errlen);

#endif
