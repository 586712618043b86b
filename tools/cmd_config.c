// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmd_config.c - "fastlocal config [--json] [--cmd NAME]": every setting, its
 * effective value and where it came from, evaluated by the shim's own code
 * (common/conf.c) in this environment.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/conf.h"
#include "cli.h"
#include "cli_conf.h"
#include "json.h"

static const char fl_config_help[] =
	"Usage: fastlocal config [--json] [--cmd NAME]\n"
	"\n"
	"Prints every setting of the shim, its effective value and its source\n"
	"(default, the configuration file and line, or the environment variable),\n"
	"evaluated exactly as a process started from this environment would: the\n"
	"file is $FASTLOCAL_CONF, else /etc/fastlocal.conf; the environment wins over\n"
	"the file, the file over the defaults. Warnings about invalid values go to\n"
	"stderr, as the shim writes them. See docs/configuration.md.\n"
	"\n"
	"  --json      one JSON object; its keys are stable (docs/configuration.md)\n"
	"  --cmd NAME  also say whether a program named NAME would be accelerated\n"
	"              (FASTLOCAL / enabled, only_cmds and skip_cmds)\n"
	"  -h, --help  show this help\n"
	"\n"
	"Exit status: 0 (even with warnings: the shim would run), 2 bad usage.\n";

/* "default", "file /etc/fastlocal.conf:12" or "env FASTLOCAL_X". */
static void fl_cfg_source(const struct fl_conf_origin *o, int k, char *buf, size_t len)
{
	switch (o->from[k]) {
	case FL_FROM_FILE: snprintf(buf, len, "file %s:%u", o->file, o->line[k]); break;
	case FL_FROM_ENV: snprintf(buf, len, "env %s", fl_conf_keys[k].env); break;
	default: snprintf(buf, len, "%s", o->invalid[k] ? "default (invalid value)" : "default"); break;
	}
}

static const char *fl_cfg_file_text(const struct fl_conf_origin *o)
{
	switch (o->file_state) {
	case FL_FILE_NONE: return "none (FASTLOCAL_CONF is empty)";
	case FL_FILE_ABSENT: return "absent";
	case FL_FILE_READ: return "read";
	default: return "unreadable (ignored)";
	}
}

static const char *fl_cfg_file_state_key(const struct fl_conf_origin *o)
{
	static const char *const k[] = { "none", "absent", "read", "unreadable" };

	return k[o->file_state];
}

/* Whether a program named cmd would be accelerated, and why not. */
static bool fl_cfg_verdict(const struct fl_config *c, const char *cmd, const char **why)
{
	if (!c->enabled) {
		*why = "FASTLOCAL / enabled is off";
		return false;
	}
	return fl_conf_selected(c, cmd, why);
}

static void fl_cfg_json(const struct fl_config *c, const struct fl_conf_origin *o, const char *cmd)
{
	struct fl_json j;
	char v[4200], src[320];
	const char *why = NULL;
	bool yes;
	int k;

	fl_json_begin(&j, stdout);
	fl_json_object(&j, "file");
	fl_json_str(&j, "path", o->file);
	fl_json_str(&j, "state", fl_cfg_file_state_key(o));
	fl_json_close(&j);
	fl_json_object(&j, "settings");
	for (k = 0; k < FL_K__NR; k++) {
		const char *name = fl_conf_keys[k].key ? fl_conf_keys[k].key : fl_conf_keys[k].env;

		fl_conf_format(c, (enum fl_conf_key)k, v, sizeof(v));
		fl_cfg_source(o, k, src, sizeof(src));
		fl_json_object(&j, name);
		fl_json_str(&j, "value", v);
		fl_json_str(&j, "source", src);
		fl_json_str(&j, "env", fl_conf_keys[k].env);
		fl_json_bool(&j, "file_key", fl_conf_keys[k].key != NULL);
		fl_json_close(&j);
	}
	fl_json_close(&j);
	if (cmd) {
		yes = fl_cfg_verdict(c, cmd, &why);
		fl_json_object(&j, "cmd");
		fl_json_str(&j, "name", cmd);
		fl_json_bool(&j, "accelerated", yes);
		fl_json_str(&j, "why_not", yes ? NULL : why);
		fl_json_close(&j);
	}
	fl_json_end(&j);
}

static void fl_cfg_text(const struct fl_config *c, const struct fl_conf_origin *o, const char *cmd)
{
	char v[4200], src[320];
	const char *why = NULL;
	int k;

	printf("configuration file: %s (%s)\n", o->file ? o->file : "-", fl_cfg_file_text(o));
	printf("%-20s %-30s %s\n", "KEY", "VALUE", "SOURCE");
	for (k = 0; k < FL_K__NR; k++) {
		const char *name = fl_conf_keys[k].key ? fl_conf_keys[k].key : fl_conf_keys[k].env;

		fl_conf_format(c, (enum fl_conf_key)k, v, sizeof(v));
		fl_cfg_source(o, k, src, sizeof(src));
		printf("%-20s %-30s %s\n", name, v, src);
	}
	if (!cmd)
		printf("program: none given (--cmd NAME says whether NAME would be accelerated)\n");
	else if (fl_cfg_verdict(c, cmd, &why))
		printf("program %s: accelerated\n", cmd);
	else
		printf("program %s: not accelerated (%s)\n", cmd, why);
}

int cmd_config(int argc, char **argv)
{
	static struct fl_config cfg; /* ~8 KiB of lists and paths: off the stack */
	struct fl_conf_origin origin;
	const char *cmd = NULL;
	bool json = false;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(fl_config_help, stdout);
			return FL_EXIT_OK;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--cmd")) {
			if (++i >= argc)
				return fl_usage_error("config", "--cmd needs a program name");
			cmd = argv[i];
		} else if (!strncmp(argv[i], "--cmd=", 6)) {
			cmd = argv[i] + 6;
		} else {
			return fl_usage_error("config", "unexpected argument '%s'", argv[i]);
		}
	}
	if (cmd && (!*cmd || strchr(cmd, '/')))
		return fl_usage_error("config", "--cmd takes a program name, not '%s'", cmd);
	fflush(stdout);
	fl_cli_conf_eval(&cfg, &origin, true);
	if (json)
		fl_cfg_json(&cfg, &origin, cmd);
	else
		fl_cfg_text(&cfg, &origin, cmd);
	return FL_EXIT_OK;
}
