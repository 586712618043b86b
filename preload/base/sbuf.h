/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sbuf.h - a bounded text buffer with append-only formatting that is safe in
 * a signal handler: no malloc, no stdio, no locale, no errno.
 *
 * IMPORTANT: the crash handler formats with these instead of snprintf,
 * because a fatal signal may arrive while the crashing thread holds a stdio
 * or malloc lock (a corrupted heap is the usual cause of the crash).
 */
#ifndef FL_SBUF_H
#define FL_SBUF_H

#include <stddef.h>
#include <stdint.h>

struct fl_sbuf {
	char *p;
	size_t len, cap; /* cap includes room for nothing else: no terminator */
};

static inline void fl_sb_init(struct fl_sbuf *b, char *p, size_t cap)
{
	b->p = p;
	b->len = 0;
	b->cap = cap;
}

static inline void fl_sb_ch(struct fl_sbuf *b, char c)
{
	if (b->len < b->cap)
		b->p[b->len++] = c;
}

static inline void fl_sb_str(struct fl_sbuf *b, const char *s)
{
	while (s && *s)
		fl_sb_ch(b, *s++);
}

static inline void fl_sb_u64(struct fl_sbuf *b, uint64_t v)
{
	char t[20];
	int n = 0;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < (int)sizeof(t));
	while (n)
		fl_sb_ch(b, t[--n]);
}

static inline void fl_sb_i64(struct fl_sbuf *b, int64_t v)
{
	if (v < 0) {
		fl_sb_ch(b, '-');
		fl_sb_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		fl_sb_u64(b, (uint64_t)v);
	}
}

/* "0x" and lower-case hex digits, at least min_digits of them. */
static inline void fl_sb_hex(struct fl_sbuf *b, uint64_t v, int min_digits)
{
	static const char d[] = "0123456789abcdef";
	char t[16];
	int n = 0;

	do
		t[n++] = d[v & 15];
	while ((v >>= 4) && n < (int)sizeof(t));
	while (n < min_digits && n < (int)sizeof(t))
		t[n++] = '0';
	fl_sb_str(b, "0x");
	while (n)
		fl_sb_ch(b, t[--n]);
}

/* The last path component of s. */
static inline const char *fl_sb_basename(const char *s)
{
	const char *b = s;

	for (; s && *s; s++)
		if (*s == '/')
			b = s + 1;
	return b;
}

#endif
