/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* pin_dir.h - where the pins live, and the bpf filesystem under them. */
#ifndef FL_PIN_DIR_H
#define FL_PIN_DIR_H

#include <stddef.h>

struct fl_pin_dir {
	char path[256];
	const char *source; /* "--pin-dir", "FASTLOCAL_PIN_DIR", "default", or
			     * source_text ("file /etc/fastlocal.conf:3") */
	char source_text[320];
};

/* Precedence: the --pin-dir flag, then FASTLOCAL_PIN_DIR, then pin_dir in the
 * configuration file (as the shim reads it), then the default.
 * Returns 0, or -1 with a message for an unusable value. */
int fl_pin_dir_resolve(struct fl_pin_dir *pd, const char *flag_value, char *err, size_t errlen);

/* "<dir>/<name>" into buf; -1 if it does not fit. */
int fl_pin_path(char *buf, size_t len, const struct fl_pin_dir *pd, const char *name);

/* Makes sure pd->path is a directory on a bpf filesystem: mounts bpffs on
 * /sys/fs/bpf when that is where the path goes and nothing is mounted, and
 * creates the directory. 0, or -1 with a one-line reason in err. */
int fl_pin_dir_prepare(const struct fl_pin_dir *pd, char *err, size_t errlen);

/* 1 if path is on a bpf filesystem, 0 if not, -1 if it cannot be told. */
int fl_is_bpffs(const char *path);

#endif
