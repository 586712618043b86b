// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pins.c - opening and removing the pinned program and maps. */
#include "pins.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

const struct fl_pin_entry fl_pin_entries[] = {
	{ FL_PIN_MAP_META, 0 },
	{ FL_PIN_MAP_STATS, 0 },
	{ FL_PIN_MAP_SOCKHASH, 0 },
	{ FL_PIN_PROG_VERDICT, 1 },
};
const size_t fl_pin_entries_nr = sizeof(fl_pin_entries) / sizeof(fl_pin_entries[0]);

static int *fl_pins_slot(struct fl_pins *pins, const char *name)
{
	if (!strcmp(name, FL_PIN_PROG_VERDICT))
		return &pins->prog_fd;
	if (!strcmp(name, FL_PIN_MAP_SOCKHASH))
		return &pins->sockhash_fd;
	if (!strcmp(name, FL_PIN_MAP_STATS))
		return &pins->stats_fd;
	return &pins->meta_fd;
}

int fl_pins_open(struct fl_pins *pins, const struct fl_pin_dir *pd, char *err, size_t errlen)
{
	char path[512];
	size_t i, found = 0;
	__u32 zero = 0;

	memset(pins, 0, sizeof(*pins));
	pins->prog_fd = pins->sockhash_fd = pins->stats_fd = pins->meta_fd = -1;
	for (i = 0; i < fl_pin_entries_nr; i++) {
		int fd;

		if (fl_pin_path(path, sizeof(path), pd, fl_pin_entries[i].name))
			goto toolong;
		fd = bpf_obj_get(path);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;
			snprintf(err, errlen, "cannot open pin %s: %s%s", path, strerror(errno),
				 errno == EACCES || errno == EPERM ? " (run as root)" : "");
			fl_pins_close(pins);
			return -1;
		}
		*fl_pins_slot(pins, fl_pin_entries[i].name) = fd;
		found++;
	}
	pins->state = found == 0 ? FL_PINS_NONE :
		      found == fl_pin_entries_nr ? FL_PINS_PRESENT : FL_PINS_PARTIAL;
	if (pins->meta_fd >= 0 && bpf_map_lookup_elem(pins->meta_fd, &zero, &pins->meta)) {
		snprintf(err, errlen, "cannot read %s/%s: %s", pd->path, FL_PIN_MAP_META,
			 strerror(errno));
		fl_pins_close(pins);
		return -1;
	}
	return 0;
toolong:
	snprintf(err, errlen, "pin dir path too long");
	fl_pins_close(pins);
	return -1;
}

void fl_pins_close(struct fl_pins *pins)
{
	int *fds[] = { &pins->prog_fd, &pins->sockhash_fd, &pins->stats_fd, &pins->meta_fd };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int fl_pins_remove(const struct fl_pin_dir *pd, int keep_dir, char *err, size_t errlen)
{
	char path[512];
	size_t i;
	int removed = 0;

	/* IMPORTANT: removing a pin never frees a map that a process still holds
	 * open; shims keep the sockhash referenced while they have enrolled
	 * sockets, so unloading loses no queued byte (kernel-facts trap 2). */
	for (i = fl_pin_entries_nr; i-- > 0;) {
		if (fl_pin_path(path, sizeof(path), pd, fl_pin_entries[i].name)) {
			snprintf(err, errlen, "pin dir path too long");
			return -1;
		}
		if (unlink(path) == 0) {
			removed++;
		} else if (errno != ENOENT) {
			snprintf(err, errlen, "cannot remove %s: %s%s", path, strerror(errno),
				 errno == EACCES || errno == EPERM ? " (run as root)" : "");
			return -1;
		}
	}
	/* The directory goes only if it is now empty (ENOTEMPTY: someone else's files). */
	if (!keep_dir && rmdir(pd->path) && errno != ENOENT && errno != ENOTEMPTY) {
		snprintf(err, errlen, "cannot remove %s: %s", pd->path, strerror(errno));
		return -1;
	}
	return removed;
}
