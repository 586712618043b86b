/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* enroll.h - putting one connected TCP socket into the pinned sockhash. */
#ifndef FL_ENROLL_H
#define FL_ENROLL_H

/* Enrolls fd under its own key, so that its peer's messages can be
 * redirected into it and its messages into the peer. Returns 0, or -errno:
 * -ECANCELED when FASTLOCAL=0, -ENOENT when nothing is loaded, -ENOTSUP for a
 * socket that is not a connected AF_INET/AF_INET6 TCP socket, -EEXIST when
 * the key is taken, or the kernel's error for the insert. Never closes fd. */
int fl_enroll(int fd);

#endif
