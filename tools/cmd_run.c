// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_run.c - "fastlocal run [--] CMD...": exec CMD with the shim preloaded. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pin_dir.h"
#include "preload_env.h"

#ifndef FL_LIBDIR
#define FL_LIBDIR "/usr/local/lib"
#endif

static const char fl_run_help[] =
	"Usage: fastlocal run [--pin-dir DIR] [--] COMMAND [ARG...]\n"
	"\n"
	"Runs COMMAND with libfastlocal.so added to LD_PRELOAD (after any entries\n"
	"already there), so that its same-host TCP connections are accelerated.\n"
	"Child processes inherit the preload.\n"
	"\n"
	"  --pin-dir DIR  use the pins in DIR (sets FASTLOCAL_PIN_DIR for COMMAND)\n"
	"  -h, --help     show this help\n"
	"\n"
	"The shim is found through $FASTLOCAL_LIB, next to this executable, or in\n"
	"the install libdir. Exit status: COMMAND's, or 127 if it cannot be run.\n";

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char lib[4096], preload[8192], err[8192];
	const char *pin_flag = NULL;
	struct fl_pin_dir pd;
	int c;

	optind = 1;
	opterr = 0; /* one line of our own instead of getopt's */
	/* '+': stop at the first non-option, so COMMAND's own flags stay its own. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': pin_flag = optarg; break;
		case 'h': fputs(fl_run_help, stdout); return FL_EXIT_OK;
		default: return fl_usage_error("run", "unknown option, or missing value: '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return fl_usage_error("run", "missing COMMAND");
	if (pin_flag) {
		if (fl_pin_dir_resolve(&pd, pin_flag, err, sizeof(err)))
			return fl_usage_error("run", "%s", err);
		setenv("FASTLOCAL_PIN_DIR", pd.path, 1);
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
	execvp(argv[optind], argv + optind);
	fl_err("run", "cannot run '%s': %s", argv[optind], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
