/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* cli_opts.h - the options every subcommand parses the same way. */
#ifndef FL_CLI_OPTS_H
#define FL_CLI_OPTS_H

#include <stdbool.h>

#include "pin_dir.h"

/* Options a subcommand accepts besides --pin-dir and --help. */
enum {
	FL_OPT_JSON = 1 << 0,    /* --json */
	FL_OPT_REPLACE = 1 << 1, /* --replace */
	FL_OPT_BTF = 1 << 2,     /* --btf FILE */
	FL_OPT_ARGS = 1 << 3,    /* positional arguments follow (run: COMMAND...) */
	FL_OPT_ONCE = 1 << 4,    /* --once (top) */
	FL_OPT_INTERVAL = 1 << 5, /* --interval SECONDS (top) */
	FL_OPT_DEBUG = 1 << 6,   /* --debug (run) */
	FL_OPT_SOCKET = 1 << 7,  /* --socket PATH (daemon, status, doctor): the broker's socket */
	FL_OPT_CMD = 1 << 8,     /* --cmd PROGRAM (doctor) */
};

struct fl_cli_opts {
	struct fl_pin_dir pd; /* resolved: flag, then FASTLOCAL_PIN_DIR, then default */
	bool json, replace, once;
	bool debug;           /* with FL_OPT_DEBUG: --debug */
	double interval;      /* with FL_OPT_INTERVAL: seconds, default 1 */
	const char *btf;
	const char *socket;   /* with FL_OPT_SOCKET: --socket, else $FASTLOCAL_BROKER, else
			       * FL_BROKER_DEFAULT_SOCKET */
	bool socket_given;    /* --socket was on the command line */
	const char *cmd;      /* with FL_OPT_CMD: --cmd, else NULL */
	int first_arg;        /* with FL_OPT_ARGS: argv index of the first argument */
};

/*
 * Parses a subcommand's argv (argv[0] is its name). Returns -1 when the
 * command should go on; otherwise the exit status to return at once: 0 after
 * printing help, 2 after one line about bad usage.
 */
int fl_cli_parse(int argc, char **argv, const char *help, unsigned accept,
		 struct fl_cli_opts *o);

#endif
