/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* object_id.h - the identity of the BPF object this binary embeds. */
#ifndef FL_OBJECT_ID_H
#define FL_OBJECT_ID_H

#include <linux/types.h>

/* Defined in cmd_load.c, the one file that includes the skeleton (which
 * holds the object's bytes: a second includer would embed a second copy).
 * FNV-1a of the embedded object's bytes. "load" records it in the meta map
 * and compares it on the next load (same value: nothing to do); "doctor"
 * compares it with what is loaded. The Makefile maps the build paths out
 * of the object's debug info, so two builds of one commit in different
 * folders have the same identity. */
__u64 fl_object_hash(void);

#endif
