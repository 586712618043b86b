/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * config.h - the shim's settings (struct fl_config, conf.h), evaluated once
 * from the defaults, the configuration file and the environment.
 */
#ifndef FL_CONFIG_H
#define FL_CONFIG_H

#include <stdbool.h>

#include "common/conf.h"

/* Owned by config.c: written once by fl_config_slow() under its
 * pthread_once, then fl_config_ready is set (release) and nothing changes
 * again; readers that see fl_config_ready (acquire) need no lock. */
extern struct fl_config fl_cfg;
extern int fl_config_ready;

const struct fl_config *fl_config_slow(void);

/* The warnings about the settings (invalid values, an unreadable file),
 * NUL-terminated lines one after the other, *len bytes in all; read once
 * the settings are (fl_config), never changed afterwards. Logged by
 * fl_log_config_warnings. */
const char *fl_config_warnings(size_t *len);

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

/* FASTLOCAL_TCP_COMPAT: the shim's fixes where the redirect path behaves
 * unlike TCP (docs/kernel.md; the rx_*.c, reset.c, splice.c and close
 * fixes). All of them apply to enrolled sockets only, and all are switched
 * off by FASTLOCAL_TCP_COMPAT=off, which exists to show what each fixes. */
static inline bool fl_compat_on(void)
{
	return fl_config()->compat;
}

#endif
