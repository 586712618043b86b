// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_unload.c - "fastlocal unload": remove the pins. */
#include <stdio.h>

#include "cli.h"
#include "cli_opts.h"
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
	struct fl_cli_opts o;
	char err[512];
	int n = fl_cli_parse(argc, argv, fl_unload_help, 0, &o);

	if (n >= 0)
		return n;
	n = fl_pins_remove(&o.pd, 0, err, sizeof(err));
	if (n < 0) {
		fl_err("unload", "%s", err);
		return FL_EXIT_FAIL;
	}
	if (n == 0)
		printf("fastlocal: nothing loaded in %s\n", o.pd.path);
	else
		printf("fastlocal: unloaded %s\n", o.pd.path);
	return FL_EXIT_OK;
}
