/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * kernel_compat.h - kernel interface constants newer than some C libraries'
 * headers, for the shim, the CLI and the tests alike.
 *
 * Each is defined only when the headers lack it, with the Linux version and
 * the commit that added it: on an older kernel the call using it fails
 * (ENOPROTOOPT, EINVAL), which the caller handles; the value is never a
 * guess.
 */
#ifndef FL_KERNEL_COMPAT_H
#define FL_KERNEL_COMPAT_H

/* getsockopt(SOL_SOCKET): the socket's network namespace cookie.
 * Linux 5.14, commit e8b9eab99232 ("net: retrieve netns cookie via
 * getsocketopt"). */
#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/* The capability that allows bpf(2) without CAP_SYS_ADMIN.
 * Linux 5.8, commit a17b53c4a4b5 ("bpf, capability: Introduce CAP_BPF"). */
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

#endif
