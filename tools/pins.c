// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pins.c - opening and removing the pinned programs, maps and link. */
#include "pins.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

const char *const fl_pin_names[FL_PIN__NR] = {
	[FL_PIN_META] = FL_PIN_MAP_META,
	[FL_PIN_STATS] = FL_PIN_MAP_STATS,
	[FL_PIN_USTATS] = FL_PIN_MAP_USTATS,
	[FL_PIN_JOINED] = FL_PIN_MAP_JOINED,
	[FL_PIN_SLOTS] = FL_PIN_MAP_SLOTS,
	[FL_PIN_SLOT_INDEX] = FL_PIN_MAP_SLOT_IDX,
	[FL_PIN_DOMAINS] = FL_PIN_MAP_DOMAINS,
	[FL_PIN_DOM_UID] = FL_PIN_MAP_DOM_UID,
	[FL_PIN_SK] = FL_PIN_MAP_SK,
	[FL_PIN_SOCKHASH] = FL_PIN_MAP_SOCKHASH,
	[FL_PIN_ESTABLISHED] = FL_PIN_MAP_ESTABLISHED,
	[FL_PIN_VERDICT] = FL_PIN_PROG_VERDICT,
	[FL_PIN_SOCKOPS] = FL_PIN_PROG_SOCKOPS,
	[FL_PIN_SOCKOPS_LINK] = FL_PIN_LINK_SOCKOPS,
	[FL_PIN_HOLDERS] = FL_PIN_PROG_HOLDERS,
	[FL_PIN_HOLDERS_LINK] = FL_PIN_LINK_HOLDERS,
};

int fl_pins_open(struct fl_pins *pins, const struct fl_pin_dir *pd, char *err, size_t errlen)
{
	char path[512];
	int i, found = 0;
	__u32 zero = 0;

	memset(pins, 0, sizeof(*pins));
	for (i = 0; i < FL_PIN__NR; i++)
		pins->fd[i] = -1;
	for (i = 0; i < FL_PIN__NR; i++) {
		if (fl_pin_path(path, sizeof(path), pd, fl_pin_names[i])) {
			snprintf(err, errlen, "pin dir path too long");
			goto fail;
		}
		pins->fd[i] = bpf_obj_get(path);
		if (pins->fd[i] >= 0) {
			found++;
		} else if (errno != ENOENT) {
			snprintf(err, errlen, "cannot open pin %s: %s%s", path, strerror(errno),
				 errno == EACCES || errno == EPERM ? " (run as root)" : "");
			goto fail;
		}
	}
	pins->state = found == 0 ? FL_PINS_NONE :
		      found == FL_PIN__NR ? FL_PINS_PRESENT : FL_PINS_PARTIAL;
	/* A meta map of another ABI has another value size: leave meta zero. */
	if (pins->fd[FL_PIN_META] >= 0)
		bpf_map_lookup_elem(pins->fd[FL_PIN_META], &zero, &pins->meta);
	return 0;
fail:
	fl_pins_close(pins);
	return -1;
}

void fl_pins_close(struct fl_pins *pins)
{
	int i;

	for (i = 0; i < FL_PIN__NR; i++) {
		if (pins->fd[i] >= 0)
			close(pins->fd[i]);
		pins->fd[i] = -1;
	}
}

/* Pin names an older ABI used that this one no longer has; removed too, so
 * that unload and --replace leave a clean directory. */
static const char *const fl_pin_names_retired[] = { NULL };

static int fl_unlink_pin(const struct fl_pin_dir *pd, const char *name, char *err, size_t errlen)
{
	char path[512];

	if (fl_pin_path(path, sizeof(path), pd, name)) {
		snprintf(err, errlen, "pin dir path too long");
		return -1;
	}
	if (unlink(path) == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	snprintf(err, errlen, "cannot remove %s: %s%s", path, strerror(errno),
		 errno == EACCES || errno == EPERM ? " (run as root)" : "");
	return -1;
}

int fl_pins_remove(const struct fl_pin_dir *pd, int keep_dir, char *err, size_t errlen)
{
	int i, r, removed = 0;

	/*
	 * IMPORTANT: removing a pin never frees a map that a process still holds
	 * open; shims keep the sockhash referenced while they have enrolled
	 * sockets, so unloading loses no queued byte (docs/kernel.md#loss,
	 * #psock-holds).
	 * Removing the sockops link pin detaches sockops: sockets established
	 * from then on get no ISN record, so no new enrollment happens.
	 */
	for (i = FL_PIN__NR; i-- > 0;) {
		r = fl_unlink_pin(pd, fl_pin_names[i], err, errlen);
		if (r < 0)
			return -1;
		removed += r;
	}
	for (i = 0; fl_pin_names_retired[i]; i++) {
		r = fl_unlink_pin(pd, fl_pin_names_retired[i], err, errlen);
		if (r < 0)
			return -1;
		removed += r;
	}
	/* The directory goes only if it is now empty (ENOTEMPTY: someone else's files). */
	if (!keep_dir && rmdir(pd->path) && errno != ENOENT && errno != ENOTEMPTY) {
		snprintf(err, errlen, "cannot remove %s: %s", pd->path, strerror(errno));
		return -1;
	}
	return removed;
}

__u32 fl_prog_id(int fd, char *tag_out)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int i;

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	for (i = 0; i < 8 && tag_out; i++)
		sprintf(tag_out + 2 * i, "%02x", info.tag[i]);
	return info.id;
}

__u32 fl_map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}
