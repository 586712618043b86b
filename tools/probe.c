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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../common/kernel_compat.h"

#define FL_NR_INSNS(p) (sizeof(p) / sizeof((p)[0]))

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

int fl_probe_netns_cookie(char *err, size_t errlen)
{
	__u64 cookie = 0;
	socklen_t len = sizeof(cookie);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0) {
		snprintf(err, errlen, "cannot make a socket: %s", strerror(errno));
		return -1;
	}
	/* SO_NETNS_COOKIE: Linux 5.14, commit e8b9eab99232 ("net: retrieve
	 * netns cookie via getsocketopt"). The shim keys connections with it. */
	r = getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len);
	if (r)
		snprintf(err, errlen, "SO_NETNS_COOKIE: %s (Linux 5.14+ needed)", strerror(errno));
	close(fd);
	return r ? -1 : 0;
}

/* A loopback pair, c connected to s; -1 on failure. */
static int fl_probe_pair(int *c, int *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	*c = *s = -1;
	if (l < 0 || bind(l, (struct sockaddr *)&a, al) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		goto fail;
	*c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*c < 0 || connect(*c, (struct sockaddr *)&a, al))
		goto fail;
	*s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (*s < 0)
		goto fail;
	close(l);
	return 0;
fail:
	if (l >= 0)
		close(l);
	if (*c >= 0)
		close(*c);
	*c = -1;
	return -1;
}

/* Waits (at most ~1 s) until FIONREAD of fd reports want bytes; returns the
 * last value seen. */
static int fl_probe_inq_wait(int fd, int want)
{
	int v = -1, i;

	for (i = 0; i < 100; i++) {
		if (ioctl(fd, FIONREAD, &v) || v >= want)
			break;
		usleep(10000);
	}
	return v;
}

int fl_probe_fionread(char *err, size_t errlen)
{
	/* SK_MSG verdict: redirect every message to the ingress of entry 0. */
	struct bpf_insn prog[] = {
		/* r2 = the sockmap (filled in below) */
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_2,
		  .src_reg = BPF_PSEUDO_MAP_FD },
		{ 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_4, .imm = BPF_F_INGRESS },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_msg_redirect_map },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	char bytes[1000] = { 0 };
	int map = -1, pfd = -1, c = -1, s = -1, v, ret = -1;
	__u32 k;

	map = bpf_map_create(BPF_MAP_TYPE_SOCKMAP, "fl_probe", 4, 4, 2, NULL);
	if (map < 0) {
		snprintf(err, errlen, "cannot create a sockmap: %s", strerror(errno));
		goto out;
	}
	prog[0].imm = map;
	pfd = bpf_prog_load(BPF_PROG_TYPE_SK_MSG, "fl_probe", "GPL", prog, FL_NR_INSNS(prog), NULL);
	if (pfd < 0 || bpf_prog_attach(pfd, map, BPF_SK_MSG_VERDICT, 0)) {
		snprintf(err, errlen, "cannot load an SK_MSG program: %s", strerror(errno));
		goto out;
	}
	if (fl_probe_pair(&c, &s)) {
		snprintf(err, errlen, "cannot make a loopback connection: %s", strerror(errno));
		goto out;
	}
	/* 1000 bytes over TCP, left unread; then both ends go into the map
	 * and 10 more bytes are redirected into the reader's queue. */
	if (send(c, bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes) ||
	    fl_probe_inq_wait(s, sizeof(bytes)) != (int)sizeof(bytes)) {
		snprintf(err, errlen, "the loopback connection did not deliver");
		goto out;
	}
	k = 0;
	if (bpf_map_update_elem(map, &k, &s, BPF_ANY) ||
	    (k = 1, bpf_map_update_elem(map, &k, &c, BPF_ANY))) {
		snprintf(err, errlen, "cannot insert into a sockmap: %s", strerror(errno));
		goto out;
	}
	if (send(c, bytes, 10, 0) != 10) {
		snprintf(err, errlen, "cannot send through the sockmap: %s", strerror(errno));
		goto out;
	}
	v = fl_probe_inq_wait(s, sizeof(bytes) + 10);
	if (v == (int)sizeof(bytes) + 10) {
		ret = 1;
	} else if (v >= 0 && v <= 10) {
		ret = 0; /* the redirected queue alone (docs/kernel.md#fionread) */
	} else {
		snprintf(err, errlen, "FIONREAD gave %d, expected %zu or at most 10", v,
			 sizeof(bytes) + 10);
	}
out:
	if (c >= 0)
		close(c);
	if (s >= 0)
		close(s);
	if (pfd >= 0)
		close(pfd);
	if (map >= 0)
		close(map);
	return ret;
}
