// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_unload.c - "fastlocal unload": remove the pins. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "pin_dir.h"
#include "pins.h"

static const char fl_unload_help[] =
	"Usage: fastlocal unload [--pin-dir DIR]\n"
	"\n"
	"Removes the pins. New connections stop being accelerated; sockets that are\n"
	"already enrolled keep working until they close, and nothing queued in them\n"
	"is lost (each shim holds the map for as long as it has enrolled sockets).\n"
	"Unloading when nothing is loaded is not an error.\n"
	"\n"
	"  --pin-dir DIR  the pin dir (default: $FASTLOCAL_PIN_DIR, else /sys/fs/bpf/fastlocal)\n"
	"  -h, --help     show this help\n";

int cmd_unload(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct fl_pin_dir pd;
	const char *pin_flag = NULL;
	char err[512];
	int c, n;

	optind = 1;
	opterr = 0; /* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': pin_flag = optarg; break;
		case 'h': fputs(fl_unload_help, stdout); return FL_EXIT_OK;
		default: return fl_usage_error("unload", "unknown option, or missing value: '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return fl_usage_error("unload", "unexpected argument '%s'", argv[optind]);
	if (fl_pin_dir_resolve(&pd, pin_flag, err, sizeof(err)))
		return fl_usage_error("unload", "%s", err);

	n = fl_pins_remove(&pd, 0, err, sizeof(err));
	if (n < 0) {
		fl_err("unload", "%s", err);
		return FL_EXIT_FAIL;
	}
	if (n == 0)
		printf("fastlocal: nothing loaded in %s\n", pd.path);
	else
		printf("fastlocal: unloaded %s\n", pd.path);
	return FL_EXIT_OK;
}
