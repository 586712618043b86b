// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pin_dir.c - resolving the pin dir and making sure bpffs is under it. */
#include "pin_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "cli_conf.h"
#include "fastlocal.h"

#define FL_BPFFS_MOUNTPOINT "/sys/fs/bpf"

int fl_pin_dir_resolve(struct fl_pin_dir *pd, const char *flag_value, char *err, size_t errlen)
{
	const char *env = getenv("FASTLOCAL_PIN_DIR");
	const char *v = FL_DEFAULT_PIN_DIR;
	size_t n;

	pd->source = "default";
	if (flag_value) {
		v = flag_value;
		pd->source = "--pin-dir";
	} else if (env && *env) {
		v = env;
		pd->source = "FASTLOCAL_PIN_DIR";
	} else {
		/* IMPORTANT: the configuration file's pin_dir too, or "load" would
		 * pin where the shims never look. The shim's own evaluation, so
		 * both read the same file the same way (an invalid value there
		 * falls back to the default in both). */
		static struct fl_config cfg; /* ~8 KiB: off the stack; the CLI is one thread */
		struct fl_conf_origin o;

		fl_cli_conf_eval(&cfg, &o, false);
		if (o.from[FL_K_PIN_DIR] == FL_FROM_FILE) {
			snprintf(pd->source_text, sizeof(pd->source_text), "file %s:%u", o.file,
				 o.line[FL_K_PIN_DIR]);
			snprintf(pd->path, sizeof(pd->path), "%s", cfg.pin_dir);
			v = pd->path;
			pd->source = pd->source_text;
		}
	}
	if (v[0] != '/') {
		snprintf(err, errlen, "pin dir '%s' (from %s) must be an absolute path", v, pd->source);
		return -1;
	}
	n = strlen(v);
	while (n > 1 && v[n - 1] == '/')
		n--;
	if (n >= sizeof(pd->path) - 32) {
		snprintf(err, errlen, "pin dir (from %s) is too long", pd->source);
		return -1;
	}
	memmove(pd->path, v, n); /* v may be pd->path (from the file) */
	pd->path[n] = '\0';
	return 0;
}

int fl_pin_path(char *buf, size_t len, const struct fl_pin_dir *pd, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", pd->path, name);

	return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

int fl_is_bpffs(const char *path)
{
	struct statfs st;

	if (statfs(path, &st))
		return -1;
	return st.f_type == BPF_FS_MAGIC;
}

/* The deepest existing ancestor of path (path itself if it exists). */
static void fl_existing_ancestor(const char *path, char *out, size_t len)
{
	struct stat st;
	char *slash;

	snprintf(out, len, "%s", path);
	while (stat(out, &st) != 0) {
		slash = strrchr(out, '/');
		if (!slash || slash == out) {
			snprintf(out, len, "/");
			return;
		}
		*slash = '\0';
	}
}

/* mkdir -p, mode 0700 (pins are root's unless a later step opens them up). */
static int fl_mkdir_p(const char *path)
{
	char buf[256];
	char *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return (mkdir(buf, 0700) && errno != EEXIST) ? -1 : 0;
}

static int fl_mount_bpffs(char *err, size_t errlen)
{
	if (mkdir(FL_BPFFS_MOUNTPOINT, 0700) && errno != EEXIST) {
		snprintf(err, errlen, "bpffs is not mounted and %s cannot be created: %s",
			 FL_BPFFS_MOUNTPOINT, strerror(errno));
		return -1;
	}
	if (mount("bpf", FL_BPFFS_MOUNTPOINT, "bpf", 0, "mode=0700")) {
		snprintf(err, errlen, "bpffs is not mounted on %s and mounting it failed: %s%s",
			 FL_BPFFS_MOUNTPOINT, strerror(errno),
			 errno == EPERM ? " (mounting needs CAP_SYS_ADMIN)" : "");
		return -1;
	}
	return 0;
}

int fl_pin_dir_prepare(const struct fl_pin_dir *pd, char *err, size_t errlen)
{
	char anc[sizeof(pd->path)];
	int is_bpf;

	fl_existing_ancestor(pd->path, anc, sizeof(anc));
	is_bpf = fl_is_bpffs(anc);
	if (is_bpf < 0) {
		snprintf(err, errlen, "cannot inspect %s: %s", anc, strerror(errno));
		return -1;
	}
	if (!is_bpf) {
		/* IMPORTANT: only the standard mount point is mounted on the user's
		 * behalf; a pin dir elsewhere must already be on bpffs. */
		size_t mlen = strlen(FL_BPFFS_MOUNTPOINT);

		if (strcmp(anc, FL_BPFFS_MOUNTPOINT) != 0 ||
		    strncmp(pd->path, FL_BPFFS_MOUNTPOINT, mlen) != 0 || pd->path[mlen] != '/') {
			snprintf(err, errlen,
				 "%s is not on a bpf filesystem (mount one with: mount -t bpf bpf DIR)",
				 pd->path);
			return -1;
		}
		if (fl_mount_bpffs(err, errlen))
			return -1;
	}
	if (fl_mkdir_p(pd->path)) {
		snprintf(err, errlen, "cannot create pin dir %s: %s", pd->path, strerror(errno));
		return -1;
	}
	if (fl_is_bpffs(pd->path) != 1) {
		snprintf(err, errlen, "%s is not on a bpf filesystem", pd->path);
		return -1;
	}
	return 0;
}
