// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cmd_doctor.c - "fastlocal doctor [--json] [--pin-dir DIR] [--cmd PROGRAM]":
 * whether acceleration works for the calling user, and what to do if not. */
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "cli_conf.h"
#include "cli_opts.h"
#include "doctor.h"
#include "json.h"

#ifndef FL_LIBDIR
#define FL_LIBDIR "/usr/local/lib"
#endif

static const char fl_doctor_help[] =
	"Usage: fastlocal doctor [--json] [--pin-dir DIR] [--socket PATH] [--cmd PROGRAM]\n"
	"\n"
	"Checks, as the user who runs it, everything acceleration needs, one line\n"
	"each (ok, warn or FAIL), with what to do for each missing piece:\n"
	"  btf      the kernel's BTF (/sys/kernel/btf/vmlinux)\n"
	"  sockmap  SOCKHASH maps and SK_MSG programs (probed as root only)\n"
	"  bpffs    a bpf filesystem at the pin dir's parent\n"
	"  loaded   whether fastlocal is loaded in the pin dir, and by this build\n"
	"           (a different build: 'sudo fastlocal load --replace')\n"
	"  broker   whether 'fastlocal daemon' answers on the shim's broker socket\n"
	"  user     whether this user's processes would be accelerated: root opens\n"
	"           the pins itself, other users need the broker\n"
	"  shim     where 'fastlocal run' finds libfastlocal.so\n"
	"  cmd      with --cmd: whether LD_PRELOAD reaches PROGRAM (the check\n"
	"           'fastlocal run' makes) and the settings select it\n"
	"\n"
	"  --json           one JSON object: \"ok\", and \"checks\" with one object\n"
	"                   per check above (\"verdict\": ok|warn|fail, \"detail\", \"fix\")\n"
	"  --pin-dir DIR    the pin dir (default: as the shim finds it)\n"
	"  --socket PATH    the broker's socket (default: as the shim finds it,\n"
	"                   $FASTLOCAL_BROKER or broker_socket, else\n"
	"                   /run/fastlocal/broker.sock)\n"
	"  --cmd PROGRAM    also check PROGRAM (a path, or a name looked up in PATH)\n"
	"  -h, --help       show this help\n"
	"\n"
	"Exit status: 0 when acceleration works for this user (no FAIL), 1 otherwise,\n"
	"2 bad usage.\n";

static void fl_doctor_json(const struct fl_doctor *d)
{
	static const char *const v[] = { "ok", "warn", "fail" };
	struct fl_json j;
	char hex[32];
	int i;

	fl_json_begin(&j, stdout);
	fl_json_str(&j, "version", FL_VERSION);
	fl_json_bool(&j, "ok", d->ok);
	fl_json_u64(&j, "uid", (unsigned long long)getuid());
	fl_json_str(&j, "pin_dir", d->pd->path);
	fl_json_str(&j, "pin_dir_source", d->pd->source);
	fl_json_str(&j, "broker_socket", d->broker);
	fl_json_bool(&j, "broker_answers", d->broker_answers);
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)d->object);
	fl_json_str(&j, "object", hex);
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)d->loaded_object);
	fl_json_str(&j, "loaded_object", d->loaded_object ? hex : NULL);
	fl_json_object(&j, "checks");
	for (i = 0; i < d->n; i++) {
		fl_json_object(&j, d->ck[i].name);
		fl_json_str(&j, "verdict", v[d->ck[i].v]);
		fl_json_str(&j, "detail", d->ck[i].detail);
		fl_json_str(&j, "fix", d->ck[i].fix[0] ? d->ck[i].fix : NULL);
		fl_json_close(&j);
	}
	fl_json_close(&j);
	fl_json_end(&j);
}

static void fl_doctor_text(const struct fl_doctor *d)
{
	int i;

	for (i = 0; i < d->n; i++) {
		printf("%-4s  %-8s %s", fl_verdict_text(d->ck[i].v), d->ck[i].name, d->ck[i].detail);
		if (d->ck[i].fix[0])
			printf(" -> fix: %s", d->ck[i].fix);
		putchar('\n');
	}
	printf("acceleration %s for uid %d%s\n", d->ok ? "works" : "does NOT work", (int)getuid(),
	       d->ok ? "" : " (see FAIL above)");
}

int cmd_doctor(int argc, char **argv)
{
	static struct fl_config cfg; /* ~8 KiB: off the stack */
	struct fl_conf_origin origin;
	struct fl_doctor d = { 0 };
	struct fl_cli_opts o;
	int ret = fl_cli_parse(argc, argv, fl_doctor_help, FL_OPT_JSON | FL_OPT_SOCKET | FL_OPT_CMD,
			       &o);

	if (ret >= 0)
		return ret;
	if (o.cmd && !*o.cmd)
		return fl_usage_error("doctor", "--cmd needs a program");
	/* IMPORTANT: the broker socket the shim would use (the environment,
	 * then the configuration file), unless --socket names one. */
	fl_cli_conf_eval(&cfg, &origin, false);
	d.pd = &o.pd;
	d.broker = o.socket_given ? o.socket : cfg.broker;
	d.cmd = o.cmd;
	d.libdir = FL_LIBDIR;
	fl_doctor_run(&d);
	if (o.json)
		fl_doctor_json(&d);
	else
		fl_doctor_text(&d);
	return d.ok ? FL_EXIT_OK : FL_EXIT_FAIL;
}
