/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* config.h - the shim's switches, read from the environment once. */
#ifndef FL_CONFIG_H
#define FL_CONFIG_H

enum fl_log_level { FL_LOG_OFF, FL_LOG_ERROR, FL_LOG_WARN, FL_LOG_INFO, FL_LOG_DEBUG };

/* A connection is enrolled once it has moved this many bytes: one that
 * closes sooner (connect, a small request and answer, close) would pay for
 * enrollment and never get it back (docs/design.md, "Short connections"). */
#define FL_ENROLL_AFTER_DEFAULT 4096u

struct fl_config {
	int enabled;         /* FASTLOCAL=0 turns the shim into a pure pass-through */
	int log_level;       /* FASTLOCAL_LOG=off|error|warn|info|debug; off when unset */
	int log_set;         /* FASTLOCAL_LOG named a level: the user chose, even "off" */
	int run;             /* FASTLOCAL_RUN=1 (set by "fastlocal run"): acceleration was
			      * asked for, so say once if it is impossible */
	int backtrace;       /* FASTLOCAL_BACKTRACE=1: fatal signals log a backtrace
			      * (crash.c), debug fallback lines carry one (log.h) */
	int batch;           /* FASTLOCAL_BATCH=off: every write goes to the kernel at once */
	int compat;          /* FASTLOCAL_TCP_COMPAT=off: no TCP-conformance fixes (compat.h);
			      * for showing what they fix, never for production */
	unsigned flush_bytes; /* FASTLOCAL_FLUSH_BYTES: buffer size, 16 KiB..4 MiB, default 256 KiB */
	unsigned flush_usec;  /* FASTLOCAL_FLUSH_USEC: longest wait of a buffered byte, default 200 */
	unsigned enroll_after; /* FASTLOCAL_ENROLL_AFTER: bytes a connection moves over TCP
				* before it is enrolled (0: at connect/accept), default 4096 */
	char pin_dir[256];
	char broker[108];     /* FASTLOCAL_BROKER: "fastlocal daemon"'s socket, asked when the
			       * pins cannot be opened (not root); default
			       * /run/fastlocal/broker.sock, "" = never ask */
	char log_file[4096];  /* FASTLOCAL_LOG_FILE: append log lines here; "" = stderr */
	char unwind_lib[256]; /* FASTLOCAL_UNWIND_LIB: libunwind to dlopen, default
			       * libunwind.so.8 */
};

/* Owned by config.c: written once by fl_config_slow() under its
 * pthread_once, then fl_config_ready is set (release) and nothing changes
 * again; readers that see fl_config_ready (acquire) need no lock. */
extern struct fl_config fl_cfg;
extern int fl_config_ready;

const struct fl_config *fl_config_slow(void);

/* The configuration, read on first use and never changed afterwards, so
 * callers may keep the pointer. IMPORTANT: inline, because the write path
 * asks for it on every call; pthread_once through the PLT cost 5% of a
 * 64-byte write. */
static inline const struct fl_config *fl_config(void)
{
	if (__builtin_expect(__atomic_load_n(&fl_config_ready, __ATOMIC_ACQUIRE), 1))
		return &fl_cfg;
	return fl_config_slow();
}

#endif
