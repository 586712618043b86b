/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * unpaired.h - an enrolled socket whose peer never enrolls leaves the
 * sockhash, so that the shim's end alone never makes a connection slower
 * than plain TCP (docs/design.md "A peer that never enrolls").
 */
#ifndef FL_UNPAIRED_H
#define FL_UNPAIRED_H

#include "socket/fdtable.h"

/* The decision, out of line: looks at the slot, and leaves when the peer has
 * certainly had its chance to enroll and has not. */
void fl_unpaired_check(int fd, struct fl_fd *e);

/* After a successful write on an enrolled socket: one flag test once the
 * question is settled, which it is for every socket whose peer enrolled. */
static inline void fl_unpaired_after_send(int fd, struct fl_fd *e)
{
	if (__builtin_expect(__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & FL_FDF_PAIRED, 1))
		return;
	fl_unpaired_check(fd, e);
}

#endif
