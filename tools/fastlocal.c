// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastlocal.c - the fastlocal command: dispatch, help and version. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include <linux/types.h>
#include "fastlocal.h"

static const char fl_main_help[] =
	"Usage: fastlocal COMMAND [OPTIONS]\n"
	"\n"
	"Moves same-host TCP onto BPF sockmap redirection, without changing programs.\n"
	"\n"
	"Commands:\n"
	"  load      load the verdict program and pin it (needs root)\n"
	"  unload    remove the pins; enrolled sockets keep working until they close\n"
	"  status    show whether fastlocal is loaded, what the kernel supports, the counters\n"
	"  conns     list the accelerated connections, each direction's path and bytes\n"
	"  top       a live view of the counters and the busiest connections\n"
	"  run       run a command with the fastlocal shim preloaded\n"
	"  bench     measure TCP, AF_UNIX, raw redirect and fastlocal on this machine\n"
	"  config    show the shim's settings, their values and where each came from\n"
	"  daemon    the broker that enrolls sockets of processes that are not root\n"
	"  doctor    check everything acceleration needs for this user, and say what to fix\n"
	"  version   print the version\n"
	"  help      show this help, or 'help COMMAND' for a command's help\n"
	"\n"
	"Every command takes --help. The pin dir is /sys/fs/bpf/fastlocal unless\n"
	"--pin-dir or FASTLOCAL_PIN_DIR says otherwise.\n"
	"Exit status: 0 ok, 1 failure (doctor: acceleration does not work), 2 bad usage,\n"
	"3 not loaded (status).\n";

static const char fl_version_help[] =
	"Usage: fastlocal version\n\nPrints the version of fastlocal and of its BPF ABI.\n";

struct fl_command {
	const char *name;
	int (*fn)(int argc, char **argv);
};

static const struct fl_command fl_commands[] = {
	{ "load", cmd_load },
	{ "unload", cmd_unload },
	{ "status", cmd_status },
	{ "run", cmd_run },
	{ "conns", cmd_conns },
	{ "top", cmd_top },
	{ "bench", cmd_bench },
	{ "config", cmd_config },
	{ "daemon", cmd_daemon },
	{ "doctor", cmd_doctor },
};

/* "fastlocal[ cmd]: message" on stderr, without the newline. */
static void fl_vmsg(const char *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "fastlocal%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	vfprintf(stderr, fmt, ap);
}

void fl_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fl_vmsg(cmd, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int fl_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fl_vmsg(cmd, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'fastlocal %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
	return FL_EXIT_USAGE;
}

static const struct fl_command *fl_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(fl_commands) / sizeof(fl_commands[0]); i++)
		if (!strcmp(fl_commands[i].name, name))
			return &fl_commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct fl_command *c;
	const char *name = argc > 1 ? argv[1] : NULL;

	if (!name)
		return fl_usage_error(NULL, "missing command");
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
		if (!strcmp(name, "help") && argc > 2) {
			char help[] = "--help";
			char *sub[] = { argv[2], help, NULL };

			c = fl_find(argv[2]);
			if (c)
				return c->fn(2, sub);
			if (!strcmp(argv[2], "version")) {
				fputs(fl_version_help, stdout);
				return FL_EXIT_OK;
			}
			if (strcmp(argv[2], "help"))
				return fl_usage_error(NULL, "unknown command '%s'", argv[2]);
		}
		fputs(fl_main_help, stdout);
		return FL_EXIT_OK;
	}
	if (!strcmp(name, "version") || !strcmp(name, "--version") || !strcmp(name, "-V")) {
		if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
			fputs(fl_version_help, stdout);
			return FL_EXIT_OK;
		}
		if (argc > 2)
			return fl_usage_error("version", "unexpected argument '%s'", argv[2]);
		printf("fastlocal %s (bpf abi %d)\n", FL_VERSION, FL_ABI_VERSION);
		return FL_EXIT_OK;
	}
	c = fl_find(name);
	if (!c)
		return fl_usage_error(NULL, "unknown command '%s'", name);
	return c->fn(argc - 1, argv + 1);
}
