// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_run.c - "fastlocal run [--] CMD...": exec CMD with the shim preloaded. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_opts.h"
#include "exe_check.h"
#include "preload_env.h"

#ifndef FL_LIBDIR
#define FL_LIBDIR "/usr/local/lib"
#endif

static const char fl_run_help[] =
	"Usage: fastlocal run [--pin-dir DIR] [--debug] [--] COMMAND [ARG...]\n"
	"\n"
	"Runs COMMAND with libfastlocal.so added to LD_PRELOAD (after any entries\n"
	"already there), so that its same-host TCP connections are accelerated.\n"
	"Child processes inherit the preload. Each process warns once on stderr\n"
	"(or in FASTLOCAL_LOG_FILE) if acceleration is impossible, for example\n"
	"when nothing is loaded; otherwise the shim is silent unless FASTLOCAL_LOG\n"
	"is set (error, warn, info or debug).\n"
	"\n"
	"  --pin-dir DIR  use the pins in DIR (sets FASTLOCAL_PIN_DIR for COMMAND)\n"
	"  --debug        log why each connection is or is not accelerated\n"
	"                 (FASTLOCAL_LOG=debug unless FASTLOCAL_LOG is set), and\n"
	"                 on a crash (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) log a\n"
	"                 backtrace (FASTLOCAL_BACKTRACE=1); needs libunwind.so.8\n"
	"  -h, --help     show this help\n"
	"\n"
	"COMMAND is run WITHOUT the shim, and one line on stderr says why, when\n"
	"LD_PRELOAD cannot reach it: a setuid or setgid program whose owner is not\n"
	"the caller, or one with file capabilities run by a non-root user (glibc\n"
	"ignores LD_PRELOAD in secure mode); a statically linked program; a Go\n"
	"program (it makes its socket calls without libc). For a #! script its\n"
	"interpreter is checked. LD_PRELOAD is then left exactly as it was.\n"
	"\n"
	"The shim is found through $FASTLOCAL_LIB, next to this executable, or in\n"
	"the install libdir. Exit status: COMMAND's, or 127 if it cannot be run.\n";

/* execvp, and on failure the shell's exit statuses: 127 not found, 126
 * found but not runnable. */
static int fl_run_exec(char **cmd)
{
	execvp(cmd[0], cmd);
	fl_err("run", "cannot run '%s': %s", cmd[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

int cmd_run(int argc, char **argv)
{
	struct fl_exe_diag diag;
	char lib[4096], preload[8192], err[16384];
	struct fl_cli_opts o;
	int ret = fl_cli_parse(argc, argv, fl_run_help, FL_OPT_ARGS | FL_OPT_DEBUG, &o);

	if (ret >= 0)
		return ret;
	if (o.first_arg >= argc)
		return fl_usage_error("run", "missing COMMAND");
	if (!strcmp(o.pd.source, "--pin-dir"))
		setenv("FASTLOCAL_PIN_DIR", o.pd.path, 1);
	/* Acceleration was asked for explicitly: the shim warns (once per
	 * process) when it is impossible, instead of staying silent. */
	setenv("FASTLOCAL_RUN", "1", 1);
	if (o.debug) {
		setenv("FASTLOCAL_LOG", "debug", 0); /* a level the user chose wins */
		setenv("FASTLOCAL_BACKTRACE", "1", 1);
	}
	/* A program the preload cannot reach runs as it would without "run",
	 * rather than failing or pretending: the user learns why it is not
	 * accelerated, and nothing else changes (not even LD_PRELOAD). */
	if (fl_exe_diagnose(argv[o.first_arg], getenv("PATH"), &diag) != FL_EXE_PRELOADABLE) {
		fl_exe_describe(&diag, err, sizeof(err));
		fl_err("run", "%s", err);
		return fl_run_exec(argv + o.first_arg);
	}
	if (fl_shim_locate(lib, sizeof(lib), FL_LIBDIR, err, sizeof(err))) {
		fl_err("run", "%s", err);
		return FL_EXIT_FAIL;
	}
	if (fl_preload_compose(preload, sizeof(preload), getenv("LD_PRELOAD"), lib)) {
		fl_err("run", "LD_PRELOAD would be too long");
		return FL_EXIT_FAIL;
	}
	setenv("LD_PRELOAD", preload, 1);
	return fl_run_exec(argv + o.first_arg);
}
