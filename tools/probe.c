// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* probe.c - privilege and kernel feature checks, in one place. */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <bpf/libbpf.h>

#ifndef CAP_BPF
#define CAP_BPF 39 /* Linux 5.8, commit a17b53c4a4b5 ("bpf, capability: Introduce CAP_BPF") */
#endif

static int fl_has_cap(const struct __user_cap_data_struct d[2], int cap)
{
	return !!(d[cap / 32].effective & (1u << (cap % 32)));
}

int fl_probe_load_privileges(char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};
	int bpf_ok, net_ok;

	if (syscall(SYS_capget, &hdr, d)) {
		snprintf(err, errlen, "cannot read this process's capabilities: %s", strerror(errno));
		return -1;
	}
	/* Creating a SOCKHASH and loading SK_MSG needs bpf_capable() (CAP_BPF
	 * or CAP_SYS_ADMIN) and, SK_MSG being a networking type, CAP_NET_ADMIN
	 * (or CAP_SYS_ADMIN); see kernel/bpf/syscall.c: bpf_prog_load(). */
	bpf_ok = fl_has_cap(d, CAP_BPF) || fl_has_cap(d, CAP_SYS_ADMIN);
	net_ok = fl_has_cap(d, CAP_NET_ADMIN) || fl_has_cap(d, CAP_SYS_ADMIN);
	if (bpf_ok && net_ok)
		return 0;
	snprintf(err, errlen, "loading needs %s%s%s (run as root, e.g. with sudo)",
		 bpf_ok ? "" : "CAP_BPF", (!bpf_ok && !net_ok) ? " and " : "",
		 net_ok ? "" : "CAP_NET_ADMIN");
	return -1;
}

int fl_probe_btf(const char *btf_path, char *err, size_t errlen)
{
	const char *p = btf_path ? btf_path : FL_SYSFS_BTF;

	if (access(p, R_OK) == 0)
		return 0;
	if (btf_path)
		snprintf(err, errlen, "cannot read BTF file %s: %s", p, strerror(errno));
	else
		snprintf(err, errlen,
			 "this kernel has no BTF (%s: %s); it needs CONFIG_DEBUG_INFO_BTF=y, "
			 "or give a BTF file with --btf FILE", p, strerror(errno));
	return -1;
}

const char *fl_probe_sockmap_message(void)
{
	return "this kernel has no sockmap support (SOCKHASH maps and SK_MSG programs, "
	       "Linux 4.18+ with CONFIG_BPF_STREAM_PARSER=y)";
}

int fl_probe_sockmap(char *err, size_t errlen)
{
	/* SOCKHASH: Linux 4.18, commit 81110384441a ("bpf: sockmap, add hash map support"). */
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_SOCKHASH, NULL) == 1 &&
	    libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SK_MSG, NULL) == 1)
		return 0;
	snprintf(err, errlen, "%s", fl_probe_sockmap_message());
	return -1;
}

/* The mount point of a cgroup2 mount whose root is the hierarchy's root, from
 * /proc/self/mountinfo ("... root mountpoint ... - cgroup2 source opts"). */
static int fl_find_cgroup2(char *out, size_t len)
{
	char line[4096], root[1024], mnt[1024], *dash;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		dash = strstr(line, " - cgroup2 ");
		if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2)
			continue;
		if (!strcmp(root, "/") && strlen(mnt) < len) {
			snprintf(out, len, "%s", mnt);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

int fl_cgroup2_root(char *path_out, size_t pathlen, char *err, size_t errlen)
{
	int fd;

	if (!fl_find_cgroup2(path_out, pathlen)) {
		/* Hybrid or v1-only systems may have no cgroup2 mount; the v2
		 * hierarchy exists anyway and sockops attach to its root. */
		snprintf(path_out, pathlen, "%s", FL_CGROUP2_FALLBACK);
		if ((mkdir("/run/fastlocal", 0755) && errno != EEXIST) ||
		    (mkdir(path_out, 0755) && errno != EEXIST) ||
		    mount("cgroup2", path_out, "cgroup2", 0, NULL)) {
			snprintf(err, errlen, "no cgroup2 is mounted and mounting one on %s failed: %s",
				 path_out, strerror(errno));
			return -1;
		}
	}
	fd = open(path_out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		snprintf(err, errlen, "cannot open the cgroup2 root %s: %s", path_out, strerror(errno));
	return fd;
}
