/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * conf.h - the settings (struct fl_config) and how they are evaluated from
 * built-in defaults, a configuration file and the environment.
 *
 * Pure code, shared by the shim (config.c) and the CLI ("fastlocal config"):
 * buffer and environment lookups in, a filled struct and warning lines out.
 * No globals, no I/O, no allocation, bounded work (docs/configuration.md).
 */
#ifndef FL_CONF_H
#define FL_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf_value.h"

enum fl_log_level { FL_LOG_OFF, FL_LOG_ERROR, FL_LOG_WARN, FL_LOG_INFO, FL_LOG_DEBUG };

/* A connection is enrolled once it has moved this many bytes: one that
 * closes sooner (connect, a small request and answer, close) would pay for
 * enrollment and never get it back (docs/design.md, "Short connections"). */
#define FL_ENROLL_AFTER_DEFAULT 4096u

/* The flow-control budget's bounds (docs/design.md section 3). */
#define FL_BUDGET_MIN (256u << 10)
#define FL_BUDGET_MAX (64u << 20)

#define FL_CONF_DEFAULT_PATH "/etc/fastlocal.conf"
#define FL_CONF_DEFAULT_BROKER "/run/fastlocal/broker.sock"
/* A bigger file is refused whole (one warning): the shim reads it into a
 * static buffer of this size, so it never allocates for it. */
#define FL_CONF_FILE_MAX (64u << 10)
/* A longer line is refused (one warning): values live in fixed arrays. */
#define FL_CONF_LINE_MAX 4096u
/* sizeof(((struct sockaddr_un *)0)->sun_path), without <sys/un.h> here. */
#define FL_CONF_SUN_PATH 108

struct fl_config {
	int enabled;         /* FASTLOCAL / enabled: 0 turns the shim into a pure pass-through;
			      * in the shim also 0 when only_cmds/skip_cmds deselect this program */
	int log_level;       /* FASTLOCAL_LOG / log_level: off|error|warn|info|debug; off when unset */
	int log_set;         /* a level was chosen (environment or file), even "off" */
	int run;             /* FASTLOCAL_RUN=1 (set by "fastlocal run"): acceleration was
			      * asked for, so say once if it is impossible */
	int backtrace;       /* FASTLOCAL_BACKTRACE=1: fatal signals log a backtrace
			      * (crash.c), debug fallback lines carry one (log.h) */
	int batch;           /* FASTLOCAL_BATCH=off: every write goes to the kernel at once */
	int compat;          /* FASTLOCAL_TCP_COMPAT=off: no TCP-conformance fixes (config.h, fl_compat_on);
			      * for showing what they fix, never for production */
	int has_rules;       /* some port or address rule is set: enrollment looks */
	unsigned flush_bytes; /* FASTLOCAL_FLUSH_BYTES: buffer size, 16 KiB..4 MiB, default 256 KiB */
	unsigned flush_usec;  /* FASTLOCAL_FLUSH_USEC: longest wait of a buffered byte, default 200 */
	unsigned spin_usec;   /* FASTLOCAL_SPIN_USEC: how long epoll_wait, poll and a blocking receive
			       * look before they sleep (base/spin.h), 0 to 1000, default 20 */
	unsigned enroll_after; /* FASTLOCAL_ENROLL_AFTER: bytes a connection moves over TCP
				* before it is enrolled (0: at connect/accept), default 4096 */
	uint32_t flow_budget; /* FASTLOCAL_FLOW_BUDGET: receive budget in bytes; 0 = auto
			       * (7/8 of tcp_rmem's maximum, which also bounds a value
			       * set); an application's SO_RCVBUF wins */
	struct fl_port_list ports, skip_ports;     /* FASTLOCAL_PORTS, FASTLOCAL_SKIP_PORTS */
	struct fl_prefix_list addrs, skip_addrs;   /* FASTLOCAL_ADDRESSES, ..._SKIP_ADDRESSES */
	struct fl_cmd_list only_cmds, skip_cmds;   /* FASTLOCAL_ONLY_CMDS, FASTLOCAL_SKIP_CMDS */
	char pin_dir[256];
	char log_file[4096];  /* FASTLOCAL_LOG_FILE: append log lines here; "" = stderr */
	char unwind_lib[256]; /* FASTLOCAL_UNWIND_LIB: libunwind to dlopen, default
			       * libunwind.so.8 */
	char broker[FL_CONF_SUN_PATH]; /* FASTLOCAL_BROKER / broker_socket: the broker's
					* unix socket, default /run/fastlocal/broker.sock */
};

/* The settings, in the order "fastlocal config" shows them. */
enum fl_conf_key {
	FL_K_ENABLED, FL_K_PIN_DIR, FL_K_LOG_LEVEL, FL_K_LOG_FILE, FL_K_BATCH,
	FL_K_FLUSH_BYTES, FL_K_FLUSH_USEC, FL_K_SPIN_USEC, FL_K_ENROLL_AFTER, FL_K_TCP_COMPAT,
	FL_K_BACKTRACE, FL_K_PORTS, FL_K_SKIP_PORTS, FL_K_ADDRESSES, FL_K_SKIP_ADDRESSES,
	FL_K_ONLY_CMDS, FL_K_SKIP_CMDS, FL_K_FLOW_BUDGET, FL_K_BROKER, FL_K_UNWIND_LIB,
	FL_K__NR
};

struct fl_conf_keyinfo {
	const char *key;   /* the file's key; NULL: environment only */
	const char *env;   /* the environment variable */
	const char *def;   /* the default, as "fastlocal config" and warnings say it */
};
extern const struct fl_conf_keyinfo fl_conf_keys[FL_K__NR];

enum fl_conf_from { FL_FROM_DEFAULT, FL_FROM_FILE, FL_FROM_ENV };

/* Where each setting's value came from, and what happened to the file. */
enum fl_conf_file_state {
	FL_FILE_NONE,       /* FASTLOCAL_CONF set to "": no file on purpose */
	FL_FILE_ABSENT,     /* the default path does not exist */
	FL_FILE_READ,       /* read and parsed */
	FL_FILE_UNREADABLE, /* could not be read, or too big: ignored (warned) */
};
struct fl_conf_origin {
	enum fl_conf_from from[FL_K__NR];
	unsigned line[FL_K__NR];        /* with FL_FROM_FILE */
	bool invalid[FL_K__NR];         /* a value was refused: the default runs */
	enum fl_conf_file_state file_state;
	const char *file;               /* the path looked at (not owned) */
};

/* Environment lookup: getenv, or the fuzzer's. NULL when unset. */
typedef const char *(*fl_conf_getenv_fn)(const char *name, void *ctx);
/* One warning, without "fastlocal[pid]: warning: " and without newline. */
typedef void (*fl_conf_warn_fn)(const char *line, void *ctx);

struct fl_conf_input {
	const char *file;          /* the path, for messages; NULL: no file */
	const char *buf;           /* its contents (need not be NUL-terminated) */
	size_t len;
	enum fl_conf_file_state file_state;
	const char *file_error;    /* with FL_FILE_UNREADABLE: why (strerror text) */
	fl_conf_getenv_fn getenv;
	void *env_ctx;
	fl_conf_warn_fn warn;
	void *warn_ctx;
};

/*
 * Fills *cfg and *origin: defaults, then the file's lines, then the
 * environment. An invalid value gives one warning and its setting's default;
 * an empty value means the default on purpose (no warning). FASTLOCAL_RUN is
 * read here too; FASTLOCAL_CONF is the caller's (it chose the file).
 */
void fl_conf_eval(struct fl_config *cfg, struct fl_conf_origin *origin,
		  const struct fl_conf_input *in);

/* Whether only_cmds/skip_cmds select a program of this name
 * (program_invocation_short_name); why not in *why when they do not.
 * Both lists set: nothing is selected (the safe choice; libfaketime
 * refuses to run at all). */
bool fl_conf_selected(const struct fl_config *cfg, const char *prog, const char **why);

/* Port and address rules. ports[] and addrs[] are the two ends' (local and
 * remote); addresses are 16 bytes, IPv4 as IPv4-mapped IPv6. */
bool fl_conf_ports_excluded(const struct fl_config *cfg, const uint16_t ports[2]);
bool fl_conf_addrs_excluded(const struct fl_config *cfg, const uint8_t addrs[2][16]);

/* Settings' values as text, as "fastlocal config" shows them. */
void fl_conf_format(const struct fl_config *cfg, enum fl_conf_key k, char *buf, size_t len);

#endif
