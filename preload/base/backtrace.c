// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* backtrace.c - symbolized backtraces through libunwind, loaded at run time. */
#include "backtrace.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>


/* Only the local unwinder: its functions are _ULx86_64_* (UNW_LOCAL_ONLY
 * makes the header's macros name them). The header gives types and names;
 * nothing here links against libunwind. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

/* The real, architecture-specific name of a libunwind function, as a
 * string: FL_STR(unw_step) is "_ULx86_64_step". */
#define FL_STR2(x) #x
#define FL_STR(x) FL_STR2(x)

#define FL_BT_MAX_FRAMES 64
#define FL_BT_CALLER_FRAMES 8

struct fl_unw {
	int (*init_local)(unw_cursor_t *, unw_context_t *);
	int (*init_local2)(unw_cursor_t *, unw_context_t *, int); /* NULL before libunwind 1.6 */
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*get_proc_name)(unw_cursor_t *, char *, size_t, unw_word_t *);
	int (*getcontext)(unw_context_t *);
};

/*
 * Owned by this file. Everything below is written once, by fl_bt_load under
 * fl_bt_once, and read-only afterwards; fl_bt_ready (release store, acquire
 * loads) publishes fl_unw to signal handlers, which cannot wait on the once.
 * fl_self_lo/hi (libfastlocal's executable segments) are set by the same
 * once, before fl_bt_ready.
 */
static struct fl_unw fl_unw;
static int fl_bt_ready;
static char fl_bt_err[320];
static uintptr_t fl_self_lo, fl_self_hi;
static pthread_once_t fl_bt_once = PTHREAD_ONCE_INIT;
/* The library fl_bt_load opens: the first fl_bt_init's argument, stored
 * before the once (every caller passes the settings' unwind_lib, which
 * never changes). */
static const char *fl_bt_lib;

/* dl_iterate_phdr callback: if this object holds fl_bt_init, record its
 * executable segments. */
static int fl_bt_find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t me = (uintptr_t)arg, lo = UINTPTR_MAX, hi = 0, s, e;
	bool mine = false;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		s = info->dlpi_addr + ph->p_vaddr;
		e = s + ph->p_memsz;
		if (me >= s && me < e)
			mine = true;
		if (ph->p_flags & PF_X) {
			lo = s < lo ? s : lo;
			hi = e > hi ? e : hi;
		}
	}
	if (!mine)
		return 0;
	fl_self_lo = lo;
	fl_self_hi = hi;
	return 1;
}

static void *fl_bt_sym(void *h, const char *name, bool required)
{
	void *p = dlsym(h, name);

	if (!p && required && !fl_bt_err[0])
		snprintf(fl_bt_err, sizeof(fl_bt_err), "%s has no %s", fl_bt_lib, name);
	return p;
}

static void fl_bt_load(void)
{
	const char *lib = __atomic_load_n(&fl_bt_lib, __ATOMIC_ACQUIRE);
	struct fl_unw u;
	void *h;

	dl_iterate_phdr(fl_bt_find_self, (void *)(uintptr_t)fl_bt_init);
	/* RTLD_LOCAL: the application never sees our copy; if it uses
	 * libunwind itself it gets its own lookup, and we share the library. */
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(fl_bt_err, sizeof(fl_bt_err), "cannot load %s (%s)", lib, dlerror());
		return;
	}
	u.init_local = fl_bt_sym(h, FL_STR(unw_init_local), true);
	u.init_local2 = fl_bt_sym(h, FL_STR(unw_init_local2), false);
	u.step = fl_bt_sym(h, FL_STR(unw_step), true);
	u.get_reg = fl_bt_sym(h, FL_STR(unw_get_reg), true);
	u.get_proc_name = fl_bt_sym(h, FL_STR(unw_get_proc_name), true);
	u.getcontext = fl_bt_sym(h, FL_STR(unw_tdep_getcontext), true);
	if (fl_bt_err[0])
		return; /* the handle stays: unloading code is never worth the risk */
	fl_unw = u;
	__atomic_store_n(&fl_bt_ready, 1, __ATOMIC_RELEASE);
}

int fl_bt_init(const char *unwind_lib)
{
	if (!__atomic_load_n(&fl_bt_lib, __ATOMIC_ACQUIRE))
		__atomic_store_n(&fl_bt_lib, unwind_lib, __ATOMIC_RELEASE);
	pthread_once(&fl_bt_once, fl_bt_load);
	return __atomic_load_n(&fl_bt_ready, __ATOMIC_ACQUIRE) ? 0 : -1;
}

bool fl_bt_loaded(void)
{
	return __atomic_load_n(&fl_bt_ready, __ATOMIC_ACQUIRE);
}

const char *fl_bt_error(void)
{
	return fl_bt_err;
}

bool fl_bt_ours(uintptr_t ip)
{
	return ip >= fl_self_lo && ip < fl_self_hi;
}

/* The object holding ip, and the nearest dynamic symbol (dladdr). */
static void fl_bt_dladdr(uintptr_t ip, struct fl_bt_frame *f)
{
	Dl_info di;

	f->module = "";
	if (!dladdr((void *)ip, &di))
		return;
	f->module = fl_sb_basename(di.dli_fname ? di.dli_fname : "");
	if (!f->name[0] && di.dli_sname && di.dli_saddr) {
		f->name = di.dli_sname;
		f->off = ip - (uintptr_t)di.dli_saddr;
	}
}

void fl_bt_format(struct fl_sbuf *b, const struct fl_bt_frame *f, bool with_ip)
{
	if (with_ip || !f->name[0]) {
		fl_sb_hex(b, f->ip, 12);
		if (f->name[0])
			fl_sb_ch(b, ' ');
	}
	if (f->name[0]) {
		fl_sb_str(b, f->name);
		fl_sb_ch(b, '+');
		fl_sb_hex(b, f->off, 1);
	}
	if (f->module[0]) {
		fl_sb_str(b, " (");
		fl_sb_str(b, f->module);
		fl_sb_ch(b, ')');
	}
}

void fl_bt_describe_ip(struct fl_sbuf *b, uintptr_t ip)
{
	struct fl_bt_frame f = { .ip = ip, .name = "" };

	fl_bt_dladdr(ip, &f);
	fl_bt_format(b, &f, true);
}

int fl_bt_walk(void *uc, fl_bt_frame_fn fn, void *arg)
{
	const struct fl_unw *u = &fl_unw;
	unw_context_t ctx;
	unw_cursor_t cur;
	unw_word_t ip, off;
	char name[256];
	int n, r;

	if (!__atomic_load_n(&fl_bt_ready, __ATOMIC_ACQUIRE))
		return -1;
	if (uc && u->init_local2) {
		/* IMPORTANT: from the signal's own context, flagged as a signal
		 * frame, so that frame 0 is the faulting instruction itself (not
		 * the handler, and not the instruction before it). */
		r = u->init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME);
	} else if (uc) {
		r = u->init_local(&cur, (unw_context_t *)uc);
	} else {
		u->getcontext(&ctx);
		r = u->init_local(&cur, &ctx);
	}
	if (r < 0)
		return 0;
	for (n = 0; n < FL_BT_MAX_FRAMES; n++) {
		struct fl_bt_frame f = { .name = "" };

		if (u->get_reg(&cur, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		f.ip = (uintptr_t)ip;
		/* 0, or -UNW_ENOMEM with the name cut to fit: either is a name. */
		r = u->get_proc_name(&cur, name, sizeof(name), &off);
		if (r == 0 || r == -UNW_ENOMEM) {
			name[sizeof(name) - 1] = 0;
			f.name = name;
			f.off = (uintptr_t)off;
		}
		fl_bt_dladdr(f.ip, &f);
		f.ours = fl_bt_ours(f.ip);
		fn(arg, n, &f);
		if (u->step(&cur) <= 0)
			break;
	}
	return n;
}

/* fl_bt_caller's walk: skips the shim's frames, remembering the last one
 * (the interposed call the application made), then lists the application's. */
struct fl_bt_caller_state {
	struct fl_sbuf out;
	char entry[128]; /* name of the last shim frame seen so far */
	int app_frames;
};

static void fl_bt_caller_frame(void *arg, int n, const struct fl_bt_frame *f)
{
	struct fl_bt_caller_state *st = arg;
	struct fl_sbuf e;

	(void)n;
	if (f->ours && !st->app_frames) {
		/* IMPORTANT: the exported connect() is a one-line forwarder that
		 * tail-calls fl_connect (calls.h), so its own frame is gone: the
		 * prefix comes off to name the call the application made. */
		fl_sb_init(&e, st->entry, sizeof(st->entry) - 1);
		fl_sb_str(&e, strncmp(f->name, "fl_", 3) ? f->name : f->name + 3);
		st->entry[e.len] = 0;
		return;
	}
	if (st->app_frames == 0 && st->entry[0]) {
		fl_sb_str(&st->out, st->entry);
		fl_sb_str(&st->out, "()");
	}
	if (st->app_frames == FL_BT_CALLER_FRAMES) {
		fl_sb_str(&st->out, " <- ...");
	} else if (st->app_frames < FL_BT_CALLER_FRAMES) {
		if (st->out.len)
			fl_sb_str(&st->out, " <- ");
		fl_bt_format(&st->out, f, false);
	}
	st->app_frames++;
}

size_t fl_bt_caller(char *buf, size_t cap, const char *unwind_lib)
{
	struct fl_bt_caller_state st = { .entry = "" };

	if (cap < 2 || fl_bt_init(unwind_lib))
		return 0;
	fl_sb_init(&st.out, buf, cap - 1);
	if (fl_bt_walk(NULL, fl_bt_caller_frame, &st) <= 0 || !st.out.len)
		return 0;
	buf[st.out.len] = 0;
	return st.out.len;
}
