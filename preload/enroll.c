// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* enroll.c - putting one connected TCP socket into the pinned sockhash. */
#include "enroll.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/bpf.h>

#include "bpf_sys.h"
#include "config.h"
#include "key.h"
#include "log.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14, commit e8b9eab99232 ("net: retrieve netns cookie via getsocketopt") */
#endif

/*
 * The process's handle on the pinned sockhash. Owned by this file: opened
 * once under fl_sockhash_lock and published with a release store; read
 * lock-free. IMPORTANT: it is never closed. While this process has enrolled
 * sockets the map must stay alive, or "fastlocal unload" would free it and
 * the kernel would drop every byte queued in those sockets (trap 2).
 */
static int fl_sockhash_fd = -1;
static pthread_mutex_t fl_sockhash_lock = PTHREAD_MUTEX_INITIALIZER;

static int fl_sockhash(void)
{
	int fd = __atomic_load_n(&fl_sockhash_fd, __ATOMIC_ACQUIRE);
	char path[320];

	if (fd >= 0)
		return fd;
	pthread_mutex_lock(&fl_sockhash_lock);
	fd = fl_sockhash_fd;
	if (fd < 0) {
		snprintf(path, sizeof(path), "%s/%s", fl_config()->pin_dir, FL_PIN_MAP_SOCKHASH);
		fd = fl_bpf_obj_get(path);
		if (fd >= 0)
			__atomic_store_n(&fl_sockhash_fd, fd, __ATOMIC_RELEASE);
		else
			fl_debug("cannot open %s: %s", path, strerror(-fd));
	}
	pthread_mutex_unlock(&fl_sockhash_lock);
	return fd;
}

int fl_enroll(int fd)
{
	struct sockaddr_storage local, remote;
	socklen_t llen = sizeof(local), rlen = sizeof(remote), olen;
	struct fl_key key;
	__u64 cookie = 0, value = (__u64)fd;
	int type = 0, proto = 0, map, err;

	if (!fl_config()->enabled)
		return -ECANCELED;
	olen = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen))
		return -errno;
	olen = sizeof(proto);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &olen))
		return -errno;
	if (type != SOCK_STREAM || proto != IPPROTO_TCP)
		return -ENOTSUP;
	if (getsockname(fd, (struct sockaddr *)&local, &llen) ||
	    getpeername(fd, (struct sockaddr *)&remote, &rlen))
		return errno == ENOTCONN ? -ENOTSUP : -errno;
	olen = sizeof(cookie);
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &olen))
		return -errno;
	if (fl_key_build(&key, cookie, &local, &remote))
		return -ENOTSUP;
	map = fl_sockhash();
	if (map < 0)
		return map;
	/* BPF_NOEXIST: replacing a live entry would detach its socket and drop
	 * what is queued in it (trap 2). */
	err = fl_bpf_map_update(map, &key, &value, BPF_NOEXIST);
	if (err)
		fl_debug("fd %d: sockhash insert failed: %s", fd, strerror(-err));
	else
		fl_debug("fd %d: enrolled (local port %u, remote port %u)", fd, key.local_port,
			 key.remote_port);
	return err;
}
