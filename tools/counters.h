/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* counters.h - the counters of the programs and the shims, read and named. */
#ifndef FL_COUNTERS_H
#define FL_COUNTERS_H

#include <stddef.h>
#include <linux/types.h>

#include "fastlocal.h"
#include "pins.h"

struct fl_counters {
	__u64 stat[FL_STAT__NR];   /* the programs' (per-CPU, summed) */
	__u64 ustat[FL_USTAT__NR]; /* the shims' */
	__u64 enrolled;            /* sockhash entries now */
	__u64 slots_used;          /* slots with a live owner now, every domain */
	__u32 slot_domains;        /* slot domains that exist (0: root's; one per broker uid) */
};

/* A counter's index and its JSON key; the keys are stable
 * (docs/observability.md). */
struct fl_counter_name {
	int idx;
	const char *key;
	const char *errno_name; /* fallbacks: what fastlocal_enroll_fd() returns */
};

#define FL_NR(a) (sizeof(a) / sizeof((a)[0]))

/* Bytes that went over TCP, by reason (fl_stats indexes). */
extern const struct fl_counter_name fl_pass_reasons[9];
/* Fallbacks at enrollment (fl_ustats indexes). */
extern const struct fl_counter_name fl_fallback_names[13];
/* The SYN nonce of non-loopback connections (fl_stats indexes). */
extern const struct fl_counter_name fl_nonce_names[4];
/* Flushes of batched bytes, by trigger (fl_ustats indexes). */
extern const struct fl_counter_name fl_flush_names[7];

/* The key of a reason the verdict recorded in a slot's dir_reason. */
const char *fl_pass_reason_key(unsigned idx);

/* Reads every counter from the pins. 0, or -1 with a message. */
int fl_counters_read(const struct fl_pins *pins, struct fl_counters *c, char *err, size_t errlen);

/* Sum of the flush counters: how many batches went to the kernel. */
__u64 fl_counters_flushes(const struct fl_counters *c);

#endif
