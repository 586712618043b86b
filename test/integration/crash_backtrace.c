// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * crash_backtrace - with FASTLOCAL_BACKTRACE=1 a fatal signal writes a
 * symbolized backtrace to the log (FASTLOCAL_LOG_FILE here), then the
 * signal goes on exactly as without the shim: to the application's handler,
 * to the handler installed before the shim (ASan's, in the SAN build), or
 * to the default action.
 *
 * Runs with the shim preloaded, without FASTLOCAL_BACKTRACE. Each case
 * re-executes this program as a child (mode in argv[1]) with
 * FASTLOCAL_BACKTRACE=1, so that the shim's constructor installs the
 * handler; the child crashes on purpose and the parent checks how it died
 * and what the log says. The crashes stay in the child: nothing here makes
 * test/run.sh count a failure unless a check fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fltest.h"

/* The crash sites: distinctive names the backtrace must show. Not inlined,
 * and no UBSan null check (the SAN build would abort before the fault). */
static int *volatile fl_null_ptr;

__attribute__((noinline, no_sanitize_undefined)) void fl_crashtest_deref_null(void)
{
	*fl_null_ptr = 42;
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep the frame */
}

__attribute__((noinline)) void fl_crashtest_abort_here(void)
{
	abort();
}

__attribute__((noinline, no_sanitize_undefined)) static void fl_crashtest_in_handler(int sig)
{
	(void)sig;
	fl_crashtest_deref_null();
	__asm__ volatile("" ::: "memory");
}

/* The application's own SIGSEGV handler, installed after the shim's: it
 * must still run, after the backtrace. It appends a marker to the log. */
static void fl_app_segv_handler(int sig)
{
	static const char m[] = "APP-HANDLER-RAN\n";
	const char *path = getenv("FASTLOCAL_LOG_FILE");
	int fd = path ? open(path, O_WRONLY | O_APPEND) : -1;

	(void)sig;
	if (fd >= 0)
		(void)!write(fd, m, sizeof(m) - 1);
	_exit(42);
}

static bool fl_asan(void)
{
	const char *rt = getenv("FL_TEST_ASAN_RT");

	return rt && rt[0];
}

static int fl_child(const char *mode)
{
	struct sigaction sa, old;

	if (!strcmp(mode, "segv")) {
		fl_crashtest_deref_null();
	} else if (!strcmp(mode, "abort")) {
		fl_crashtest_abort_here();
	} else if (!strcmp(mode, "app-handler")) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = fl_app_segv_handler;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSEGV, &sa, &old))
			return 3;
		/* The application sees what it would see without the shim: no
		 * handler of ours (SIG_DFL, or ASan's in the SAN build). */
		if (!fl_asan() && old.sa_handler != SIG_DFL)
			return 4;
		fl_crashtest_deref_null();
	} else if (!strcmp(mode, "in-shim")) {
		/* The handler runs from the shim's signal trampoline, so the
		 * crash has libfastlocal frames under it. */
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = fl_crashtest_in_handler;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGUSR1, &sa, NULL))
			return 3;
		raise(SIGUSR1);
	}
	return 5; /* not reached */
}

struct fl_crash_run {
	const char *mode;
	const char *extra_env; /* "NAME=value" or NULL */
	pid_t pid;
	int status;
	char log[16384], err[16384];
};

static void fl_slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
}

/* Runs this program in mode with FASTLOCAL_BACKTRACE=1; fills r. */
static int fl_crash_spawn(struct fl_crash_run *r)
{
	char logp[] = "/tmp/fl-crash-log-XXXXXX", errp[] = "/tmp/fl-crash-err-XXXXXX";
	int lfd = mkstemp(logp), efd = mkstemp(errp);
	struct rlimit none = { 0, 0 };

	if (lfd < 0 || efd < 0)
		return -1;
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (r->pid == 0) {
		setrlimit(RLIMIT_CORE, &none); /* no core files from the tests */
		setenv("FASTLOCAL_BACKTRACE", "1", 1);
		setenv("FASTLOCAL_LOG_FILE", logp, 1);
		unsetenv("FASTLOCAL_LOG"); /* crash lines need no log level */
		if (r->extra_env)
			putenv((char *)r->extra_env);
		dup2(efd, 1);
		dup2(efd, 2);
		execl("/proc/self/exe", "crash_backtrace", r->mode, (char *)NULL);
		_exit(126);
	}
	while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
		;
	fl_slurp(logp, r->log, sizeof(r->log));
	fl_slurp(errp, r->err, sizeof(r->err));
	close(lfd);
	close(efd);
	unlink(logp);
	unlink(errp);
	return 0;
}

/* Prints the log, indented, for the record (and for the docs). */
static void fl_show(const struct fl_crash_run *r)
{
	const char *p = r->log, *nl;

	while (*p) {
		nl = strchr(p, '\n');
		printf("  | %.*s\n", (int)(nl ? nl - p : (long)strlen(p)), p);
		if (!nl)
			break;
		p = nl + 1;
	}
}

/* Every line of the log has the prefix of the child's pid (or is the
 * application's marker). */
static int fl_check_prefix(const struct fl_crash_run *r)
{
	char prefix[32];
	const char *p = r->log;
	int lines = 0;

	snprintf(prefix, sizeof(prefix), "fastlocal[%d]: ", (int)r->pid);
	while (*p) {
		FL_T_CHECK(!strncmp(p, prefix, strlen(prefix)) || !strncmp(p, "APP-HANDLER-RAN", 15),
			   "a log line lacks '%s': %.80s", prefix, p);
		lines++;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	FL_T_CHECK(lines > 0, "the log is empty; child stderr: %.300s", r->err);
	return 0;
}

/* A frame line ("  #N  0x... name+0x.. (module)") naming fn. */
static const char *fl_frame_naming(const char *log, const char *fn)
{
	const char *p = log;

	while ((p = strstr(p, fn))) {
		const char *bol = p;

		while (bol > log && bol[-1] != '\n')
			bol--;
		if (strstr(bol, "  #") && strstr(bol, "  #") < p)
			return bol;
		p++;
	}
	return NULL;
}

/* How the child must have ended when its default action is sig: killed by
 * it, or, in the SAN build for faults, by ASan's chained handler. */
static int fl_check_fatal(const struct fl_crash_run *r, int sig, bool asan_handles)
{
	if (asan_handles && fl_asan()) {
		FL_T_CHECK(WIFEXITED(r->status) && WEXITSTATUS(r->status) != 0,
			   "status 0x%x: ASan's handler did not end the child", r->status);
		FL_T_CHECK(strstr(r->err, "AddressSanitizer") && strstr(r->err, "SEGV"),
			   "ASan's handler did not run after ours: %.300s", r->err);
		FL_T_CHECK(strstr(r->log, "next: the handler installed before fastlocal"),
			   "the log does not say it chains to the earlier handler");
		return 0;
	}
	FL_T_CHECK(WIFSIGNALED(r->status) && WTERMSIG(r->status) == sig,
		   "status 0x%x, expected death by signal %d; stderr: %.300s", r->status, sig,
		   r->err);
	return 0;
}

static int test_segv(void)
{
	struct fl_crash_run r = { .mode = "segv" };
	const char *f;

	FL_T_CHECK(fl_crash_spawn(&r) == 0, "cannot run the child");
	fl_show(&r);
	if (fl_check_fatal(&r, SIGSEGV, true) || fl_check_prefix(&r))
		return -1;
	FL_T_CHECK(strstr(r.log, "fatal signal SIGSEGV (code 1, address 0x0)"),
		   "no 'fatal signal SIGSEGV' line with the address");
	f = fl_frame_naming(r.log, "fl_crashtest_deref_null");
	FL_T_CHECK(f, "no frame names the crashing function fl_crashtest_deref_null");
	FL_T_CHECK(!strncmp(strstr(f, "#"), "#0 ", 3),
		   "the crashing function is not frame #0: %.80s", f);
	FL_T_CHECK(fl_frame_naming(r.log, " main+"), "no frame names main");
	FL_T_CHECK(!strstr(r.log, ") [libfastlocal]"),
		   "a frame is marked as libfastlocal's, but the crash is outside it");
	if (!fl_asan())
		FL_T_CHECK(strstr(r.log, "next: the default action of SIGSEGV"),
			   "the log does not say the default action follows");
	return 0;
}

static int test_in_shim_frames_marked(void)
{
	struct fl_crash_run r = { .mode = "in-shim" };
	const char *f;

	FL_T_CHECK(fl_crash_spawn(&r) == 0, "cannot run the child");
	fl_show(&r);
	if (fl_check_fatal(&r, SIGSEGV, true) || fl_check_prefix(&r))
		return -1;
	FL_T_CHECK(fl_frame_naming(r.log, "fl_crashtest_deref_null"), "no crashing frame");
	FL_T_CHECK(fl_frame_naming(r.log, "fl_crashtest_in_handler"), "no handler frame");
	f = fl_frame_naming(r.log, "fl_trampoline");
	FL_T_CHECK(f, "the shim's signal trampoline is not in the backtrace");
	FL_T_CHECK(strstr(f, "(libfastlocal.so) [libfastlocal]") &&
		   strstr(f, "[libfastlocal]") < strchr(f, '\n'),
		   "the trampoline frame is not marked [libfastlocal]: %.120s", f);
	FL_T_CHECK(fl_frame_naming(r.log, " main+"), "the trace does not reach main through the "
		   "signal frame");
	return 0;
}

static int test_app_handler_chained(void)
{
	struct fl_crash_run r = { .mode = "app-handler" };
	const char *end, *marker;

	FL_T_CHECK(fl_crash_spawn(&r) == 0, "cannot run the child");
	fl_show(&r);
	FL_T_CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 42,
		   "status 0x%x: the application's SIGSEGV handler did not end the child "
		   "(exit 4: sigaction reported a handler of the shim's as the old one); "
		   "stderr: %.300s", r.status, r.err);
	if (fl_check_prefix(&r))
		return -1;
	FL_T_CHECK(fl_frame_naming(r.log, "fl_crashtest_deref_null"), "no crashing frame");
	end = strstr(r.log, "end of backtrace; next: the application's handler");
	marker = strstr(r.log, "APP-HANDLER-RAN");
	FL_T_CHECK(end, "the log does not say the application's handler is next");
	FL_T_CHECK(marker && marker > end, "the application's handler did not run after the "
		   "backtrace");
	return 0;
}

static int test_abort(void)
{
	struct fl_crash_run r = { .mode = "abort" };
	char sent[64];

	FL_T_CHECK(fl_crash_spawn(&r) == 0, "cannot run the child");
	fl_show(&r);
	/* ASan leaves SIGABRT alone (handle_abort=0): both builds die of it. */
	if (fl_check_fatal(&r, SIGABRT, false) || fl_check_prefix(&r))
		return -1;
	snprintf(sent, sizeof(sent), "fatal signal SIGABRT (sent by pid %d)", (int)r.pid);
	FL_T_CHECK(strstr(r.log, sent), "no '%s' line", sent);
	FL_T_CHECK(fl_frame_naming(r.log, "fl_crashtest_abort_here"),
		   "no frame names fl_crashtest_abort_here");
	FL_T_CHECK(fl_frame_naming(r.log, " abort+"), "no frame names abort");
	return 0;
}

static int test_without_libunwind(void)
{
	struct fl_crash_run r = { .mode = "segv",
				  .extra_env = "FASTLOCAL_UNWIND_LIB=/nonexistent/libunwind.so.8" };

	FL_T_CHECK(fl_crash_spawn(&r) == 0, "cannot run the child");
	fl_show(&r);
	if (fl_check_fatal(&r, SIGSEGV, true) || fl_check_prefix(&r))
		return -1;
	FL_T_CHECK(strstr(r.log, "fatal signal SIGSEGV") &&
		   strstr(r.log, "no backtrace: cannot load /nonexistent/libunwind.so.8"),
		   "no clear line saying libunwind could not be loaded");
	FL_T_CHECK(strstr(r.log, "faulting instruction at 0x") && strstr(r.log, "(crash_backtrace)"),
		   "the line does not say where the fault was");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		int r = fl_child(argv[1]);

		__asm__ volatile("" ::: "memory"); /* keep main's frame: no tail call */
		return r;
	}
	FL_T_RUN("a SIGSEGV logs a backtrace naming the crashing function, then kills "
		 "(or goes to ASan's earlier handler)", test_segv);
	FL_T_RUN("frames inside libfastlocal are marked", test_in_shim_frames_marked);
	FL_T_RUN("an application SIGSEGV handler installed later still runs, after the backtrace",
		 test_app_handler_chained);
	FL_T_RUN("abort() logs a SIGABRT backtrace, then dies of SIGABRT", test_abort);
	FL_T_RUN("without libunwind: one clear line with the faulting address, then the chain",
		 test_without_libunwind);
	return fl_t_exit_status();
}
