/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * conf_value.h - one setting's value, from text: numbers, switches, levels,
 * port lists, address prefixes, program names. Pure and bounded; each
 * returns 0, or -1 with a short reason in why ("not a number").
 */
#ifndef FL_CONF_VALUE_H
#define FL_CONF_VALUE_H

#include <stddef.h>

#include "conf.h"

int fl_cv_bool(const char *v, int *out, char *why, size_t wlen);
int fl_cv_uint(const char *v, unsigned lo, unsigned hi, unsigned *out, char *why, size_t wlen);
int fl_cv_level(const char *v, int *out, char *why, size_t wlen);
int fl_cv_ports(const char *v, struct fl_port_list *out, char *why, size_t wlen);
int fl_cv_prefixes(const char *v, struct fl_prefix_list *out, char *why, size_t wlen);
int fl_cv_cmds(const char *v, struct fl_cmd_list *out, char *why, size_t wlen);
/* An absolute path shorter than cap (with its NUL). */
int fl_cv_abs_path(const char *v, size_t cap, char *why, size_t wlen);

#endif
