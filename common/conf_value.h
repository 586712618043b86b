/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * conf_value.h - one setting's value, from text: numbers, switches, levels,
 * port lists, address prefixes, program names, and the list types they
 * fill (struct fl_config's, conf.h). Pure and bounded; each returns 0, or
 * -1 with a short reason in why ("not a number").
 */
#ifndef FL_CONF_VALUE_H
#define FL_CONF_VALUE_H

#include <stddef.h>
#include <stdint.h>

/* Lists are bounded so that struct fl_config has a fixed size. */
#define FL_CONF_PORT_RANGES 64
#define FL_CONF_PREFIXES 32
#define FL_CONF_CMDS 16
#define FL_CONF_CMD_LEN 64

struct fl_port_list {
	unsigned n;
	struct { uint16_t lo, hi; } r[FL_CONF_PORT_RANGES];
};

/* IPv4 prefixes are kept as IPv4-mapped IPv6 (::ffff:a.b.c.d/96+bits), so
 * one comparison serves both families and mapped addresses match as IPv4. */
struct fl_prefix_list {
	unsigned n;
	struct { uint8_t addr[16]; uint8_t bits; } p[FL_CONF_PREFIXES];
};

struct fl_cmd_list {
	unsigned n;
	char name[FL_CONF_CMDS][FL_CONF_CMD_LEN];
};

int fl_cv_bool(const char *v, int *out, char *why, size_t wlen);
int fl_cv_uint(const char *v, unsigned lo, unsigned hi, unsigned *out, char *why, size_t wlen);
int fl_cv_level(const char *v, int *out, char *why, size_t wlen);
int fl_cv_ports(const char *v, struct fl_port_list *out, char *why, size_t wlen);
int fl_cv_prefixes(const char *v, struct fl_prefix_list *out, char *why, size_t wlen);
int fl_cv_cmds(const char *v, struct fl_cmd_list *out, char *why, size_t wlen);
/* An absolute path shorter than cap (with its NUL). */
int fl_cv_abs_path(const char *v, size_t cap, char *why, size_t wlen);

#endif
