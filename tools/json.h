/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* json.h - a minimal streaming JSON writer for --json output. */
#ifndef FL_JSON_H
#define FL_JSON_H

#include <stdbool.h>
#include <stdio.h>

struct fl_json {
	FILE *f;
	int depth;
	bool need_comma[16];
	bool is_array[16];
};

void fl_json_begin(struct fl_json *j, FILE *f);            /* opens the top object */
void fl_json_end(struct fl_json *j);                        /* closes it, newline */
/* In an array, pass NULL as every key. */
void fl_json_object(struct fl_json *j, const char *key);   /* nested object */
void fl_json_array(struct fl_json *j, const char *key);    /* nested array */
void fl_json_close(struct fl_json *j);                     /* the innermost one */
void fl_json_str(struct fl_json *j, const char *key, const char *v); /* NULL -> null */
void fl_json_u64(struct fl_json *j, const char *key, unsigned long long v);
void fl_json_bool(struct fl_json *j, const char *key, bool v);
void fl_json_double(struct fl_json *j, const char *key, double v); /* 3 decimals */

/* Writes s as a JSON string literal, escaped. */
void fl_json_write_string(FILE *f, const char *s);

#endif
