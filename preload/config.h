/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* config.h - the shim's switches, read from the environment once. */
#ifndef FL_CONFIG_H
#define FL_CONFIG_H

enum fl_log_level { FL_LOG_OFF, FL_LOG_ERROR, FL_LOG_WARN, FL_LOG_INFO, FL_LOG_DEBUG };

struct fl_config {
	int enabled;         /* FASTLOCAL=0 turns the shim into a pure pass-through */
	int log_level;       /* FASTLOCAL_LOG=error|warn|info|debug */
	int batch;           /* FASTLOCAL_BATCH=off: every write goes to the kernel at once */
	int compat;          /* FASTLOCAL_TCP_COMPAT=off: no TCP-conformance fixes (compat.h);
			      * for showing what they fix, never for production */
	unsigned flush_bytes; /* FASTLOCAL_FLUSH_BYTES: buffer size, 16 KiB..4 MiB, default 256 KiB */
	unsigned flush_usec;  /* FASTLOCAL_FLUSH_USEC: longest wait of a buffered byte, default 200 */
	char pin_dir[256];
};

/* The configuration, read on first use (pthread_once) and never changed
 * afterwards, so callers may keep the pointer. */
const struct fl_config *fl_config(void);

#endif
