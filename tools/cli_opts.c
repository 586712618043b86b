// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cli_opts.c - the options every subcommand parses the same way. */
#include "cli_opts.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../common/broker_proto.h"

int fl_cli_parse(int argc, char **argv, const char *help, unsigned accept,
		 struct fl_cli_opts *o)
{
	static const struct option opts[] = {
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "replace", no_argument, NULL, 'r' },
		{ "btf", required_argument, NULL, 'b' },
		{ "once", no_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ "debug", no_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "cmd", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *cmd = argv[0], *pin_flag = NULL;
	char err[512], *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->interval = 1.0;
	optind = 1;
	opterr = 0; /* one line of our own instead of getopt's */
	/* '+': stop at the first non-option, so run's COMMAND keeps its flags. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': pin_flag = optarg; continue;
		case 'h': fputs(help, stdout); return FL_EXIT_OK;
		case 'j': o->json = true; if (accept & FL_OPT_JSON) continue; break;
		case 'r': o->replace = true; if (accept & FL_OPT_REPLACE) continue; break;
		case 'b': o->btf = optarg; if (accept & FL_OPT_BTF) continue; break;
		case 'o': o->once = true; if (accept & FL_OPT_ONCE) continue; break;
		case 'd': o->debug = true; if (accept & FL_OPT_DEBUG) continue; break;
		case 's':
			o->socket = optarg;
			o->socket_given = true;
			if (accept & FL_OPT_SOCKET)
				continue;
			break;
		case 'c': o->cmd = optarg; if (accept & FL_OPT_CMD) continue; break;
		case 'i':
			if (!(accept & FL_OPT_INTERVAL))
				break;
			o->interval = strtod(optarg, &end);
			if (*end || !(o->interval >= 0.1 && o->interval <= 3600))
				return fl_usage_error(cmd, "--interval wants seconds from 0.1 to 3600, not '%s'",
						      optarg);
			continue;
		default: break;
		}
		return fl_usage_error(cmd, "unknown option, or missing value: '%s'", argv[optind - 1]);
	}
	if (!o->socket)
		o->socket = getenv("FASTLOCAL_BROKER") && *getenv("FASTLOCAL_BROKER") ?
			    getenv("FASTLOCAL_BROKER") : FL_BROKER_DEFAULT_SOCKET;
	o->first_arg = optind;
	if (!(accept & FL_OPT_ARGS) && optind < argc)
		return fl_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (fl_pin_dir_resolve(&o->pd, pin_flag, err, sizeof(err)))
		return fl_usage_error(cmd, "%s", err);
	return -1;
}
