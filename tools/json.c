// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* json.c - a minimal streaming JSON writer. */
#include "json.h"

void fl_json_write_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* The key (none inside an array: key is NULL there), after a comma if needed. */
static void fl_json_key(struct fl_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (!key)
		return;
	fl_json_write_string(j->f, key);
	fputc(':', j->f);
}

static void fl_json_open(struct fl_json *j, const char *key, char c)
{
	fl_json_key(j, key);
	fputc(c, j->f);
	if (j->depth < 15)
		j->depth++;
	j->need_comma[j->depth] = false;
	j->is_array[j->depth] = c == '[';
}

void fl_json_begin(struct fl_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
	j->is_array[0] = false;
	fputc('{', f);
}

void fl_json_end(struct fl_json *j)
{
	fputs("}\n", j->f);
}

void fl_json_object(struct fl_json *j, const char *key)
{
	fl_json_open(j, key, '{');
}

void fl_json_array(struct fl_json *j, const char *key)
{
	fl_json_open(j, key, '[');
}

void fl_json_close(struct fl_json *j)
{
	fputc(j->is_array[j->depth] ? ']' : '}', j->f);
	if (j->depth > 0)
		j->depth--;
}

void fl_json_str(struct fl_json *j, const char *key, const char *v)
{
	fl_json_key(j, key);
	if (v)
		fl_json_write_string(j->f, v);
	else
		fputs("null", j->f);
}

void fl_json_u64(struct fl_json *j, const char *key, unsigned long long v)
{
	fl_json_key(j, key);
	fprintf(j->f, "%llu", v);
}

void fl_json_double(struct fl_json *j, const char *key, double v)
{
	fl_json_key(j, key);
	fprintf(j->f, "%.3f", v);
}

void fl_json_bool(struct fl_json *j, const char *key, bool v)
{
	fl_json_key(j, key);
	fputs(v ? "true" : "false", j->f);
}
