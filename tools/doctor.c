// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * doctor.c - the checks of "fastlocal doctor", each done the way the code
 * that needs it does it: the probes of "load" (probe.c), the pins as the
 * shim opens them, the broker's PING (broker_ping.c), and the LD_PRELOAD
 * diagnosis of "fastlocal run" (exe_check.c).
 */
#include "doctor.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "broker_ping.h"
#include "../common/broker_proto.h"
#include "cli_conf.h"
#include "exe_check.h"
#include "object_id.h"
#include "pins.h"
#include "preload_env.h"
#include "probe.h"

const char *fl_verdict_text(enum fl_verdict v)
{
	return v == FL_V_OK ? "ok" : v == FL_V_WARN ? "warn" : "FAIL";
}

static void fl_set(struct fl_check *c, enum fl_verdict v, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void fl_set(struct fl_check *c, enum fl_verdict v, const char *fix, const char *fmt, ...)
{
	va_list ap;

	c->v = v;
	snprintf(c->fix, sizeof(c->fix), "%s", fix ? fix : "");
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
}

/* " --pin-dir DIR" when sudo would not find the same pin dir by itself
 * (sudo drops FASTLOCAL_PIN_DIR; the default and the file it reads too). */
static const char *fl_pin_arg(const struct fl_pin_dir *pd, char *buf, size_t len)
{
	buf[0] = '\0';
	if (!strcmp(pd->source, "--pin-dir") || !strcmp(pd->source, "FASTLOCAL_PIN_DIR"))
		snprintf(buf, len, " --pin-dir %s", pd->path);
	return buf;
}

static void fl_check_kernel(struct fl_doctor *d)
{
	struct fl_check *btf = &d->ck[FL_CK_BTF], *sm = &d->ck[FL_CK_SOCKMAP];
	char err[512];

	if (fl_probe_btf(NULL, err, sizeof(err)))
		fl_set(btf, FL_V_FAIL, "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y", "%s", err);
	else
		fl_set(btf, FL_V_OK, NULL, "%s is readable", FL_SYSFS_BTF);
	/* Probing creates a map and loads a program: only a privileged
	 * process can tell, anyone else is told it could not. */
	if (fl_probe_load_privileges(err, sizeof(err)))
		fl_set(sm, FL_V_WARN, "run 'sudo fastlocal doctor' to probe it",
		       "cannot be probed as uid %d (creating a sockhash needs CAP_BPF)", (int)getuid());
	else if (fl_probe_sockmap(err, sizeof(err)))
		fl_set(sm, FL_V_FAIL, "boot a kernel with CONFIG_BPF_STREAM_PARSER=y", "%s", err);
	else
		fl_set(sm, FL_V_OK, NULL, "SOCKHASH maps and SK_MSG programs are supported");
}

static void fl_check_bpffs(struct fl_doctor *d)
{
	struct fl_check *c = &d->ck[FL_CK_BPFFS];
	char parent[sizeof(d->pd->path)], *p;
	int is;

	snprintf(parent, sizeof(parent), "%s", d->pd->path);
	p = dirname(parent);
	is = fl_is_bpffs(p);
	if (is == 1)
		fl_set(c, FL_V_OK, NULL, "%s is a bpf filesystem", p);
	else if (is == 0 && !strcmp(p, "/sys/fs/bpf"))
		fl_set(c, FL_V_FAIL, "sudo fastlocal load (it mounts bpffs on /sys/fs/bpf)",
		       "%s is not a bpf filesystem", p);
	else if (is == 0)
		fl_set(c, FL_V_FAIL, "sudo mount -t bpf bpf DIR, or choose a pin dir under /sys/fs/bpf",
		       "%s is not a bpf filesystem", p);
	else
		fl_set(c, FL_V_WARN, NULL, "cannot inspect %s as uid %d: %s", p, (int)getuid(),
		       strerror(errno));
}

/* What is pinned, against this binary's object. Returns whether this user
 * opened the pins itself (direct map access, as a root shim does). */
static bool fl_check_loaded(struct fl_doctor *d)
{
	struct fl_check *c = &d->ck[FL_CK_LOADED];
	char err[512], pin[300], fix[512];
	struct fl_pins pins;
	bool direct = false;

	fl_pin_arg(d->pd, pin, sizeof(pin));
	d->object = fl_object_hash();
	if (fl_pins_open(&pins, d->pd, err, sizeof(err))) {
		/* Not root: the pins (or /sys/fs/bpf itself) are root's. The
		 * broker check says whether that matters for this user. */
		if (geteuid() != 0)
			fl_set(c, FL_V_WARN, "run 'sudo fastlocal doctor' to see it",
			       "cannot be told as uid %d: the pins in %s are not readable",
			       (int)getuid(), d->pd->path);
		else
			fl_set(c, FL_V_FAIL, "sudo fastlocal unload, then sudo fastlocal load", "%s", err);
		return false;
	}
	switch (pins.state) {
	case FL_PINS_NONE:
		snprintf(fix, sizeof(fix), "sudo fastlocal load%s", pin);
		fl_set(c, FL_V_FAIL, fix, "nothing is loaded in %s", d->pd->path);
		break;
	case FL_PINS_PARTIAL:
		snprintf(fix, sizeof(fix), "sudo fastlocal load --replace%s", pin);
		fl_set(c, FL_V_FAIL, fix, "%s holds an incomplete load (a pin is missing)",
		       d->pd->path);
		break;
	case FL_PINS_PRESENT:
		d->loaded_object = pins.meta.object_hash;
		direct = true;
		snprintf(fix, sizeof(fix), "sudo fastlocal load --replace%s", pin);
		if (pins.meta.abi_version != FL_ABI_VERSION)
			fl_set(c, FL_V_FAIL, fix, "%s holds another fastlocal version (bpf abi %u, "
			       "this binary's %d)", d->pd->path, pins.meta.abi_version, FL_ABI_VERSION);
		else if (pins.meta.object_hash != d->object)
			fl_set(c, FL_V_WARN, fix, "loaded in %s (program id %u) by a different build: "
			       "object %016llx, this binary's %016llx", d->pd->path,
			       fl_prog_id(pins.fd[FL_PIN_VERDICT], NULL),
			       (unsigned long long)pins.meta.object_hash,
			       (unsigned long long)d->object);
		else
			fl_set(c, FL_V_OK, NULL, "loaded in %s (program id %u), the same build as this "
			       "binary (object %016llx)", d->pd->path,
			       fl_prog_id(pins.fd[FL_PIN_VERDICT], NULL), (unsigned long long)d->object);
		break;
	}
	fl_pins_close(&pins);
	return direct;
}

static void fl_check_broker_and_user(struct fl_doctor *d, bool direct)
{
	struct fl_check *b = &d->ck[FL_CK_BROKER], *u = &d->ck[FL_CK_USER];
	bool loaded_ok = d->ck[FL_CK_LOADED].v != FL_V_FAIL;
	char fix[1024], pin[300];
	__u32 domains;

	fl_pin_arg(d->pd, pin, sizeof(pin));
	/* The service (docs/service.md) runs the broker with the defaults. */
	if (pin[0] || strcmp(d->broker, FL_BROKER_DEFAULT_SOCKET))
		snprintf(fix, sizeof(fix), "sudo fastlocal daemon%s --socket %s", pin, d->broker);
	else
		snprintf(fix, sizeof(fix), "sudo systemctl enable --now fastlocal (or: sudo "
			 "fastlocal daemon)");
	d->broker_answers = fl_broker_ping(d->broker, &domains);
	if (d->broker_answers)
		fl_set(b, FL_V_OK, NULL, "%s answers (%u slot domains)", d->broker, domains);
	else
		/* Whoever can open the pins needs no broker; everyone else does. */
		fl_set(b, direct || geteuid() == 0 ? FL_V_WARN : FL_V_FAIL, fix, "%s does not answer: processes that "
		       "cannot open the pins (users other than root) stay on TCP", d->broker);

	if (direct && loaded_ok)
		fl_set(u, FL_V_OK, NULL, "uid %d opens the pins in %s itself", (int)getuid(),
		       d->pd->path);
	else if (direct || (geteuid() == 0 && !loaded_ok))
		fl_set(u, FL_V_FAIL, d->ck[FL_CK_LOADED].fix, "uid %d would stay on TCP: see 'loaded'",
		       (int)getuid());
	else if (d->broker_answers)
		fl_set(u, FL_V_OK, NULL, "uid %d enrolls through the broker %s", (int)getuid(),
		       d->broker);
	else
		fl_set(u, FL_V_FAIL, fix, "uid %d would stay on TCP: it cannot open the pins in %s and "
		       "the broker %s does not answer", (int)getuid(), d->pd->path, d->broker);
}

static void fl_check_shim(struct fl_doctor *d)
{
	struct fl_check *c = &d->ck[FL_CK_SHIM];
	char lib[4096], err[8192];

	if (fl_shim_locate(lib, sizeof(lib), d->libdir, err, sizeof(err)))
		fl_set(c, FL_V_FAIL, "sudo make install, or set FASTLOCAL_LIB to libfastlocal.so",
		       "%s", err);
	else if (access(lib, R_OK))
		fl_set(c, FL_V_FAIL, "make it readable by every user (chmod 0755)",
		       "%s is not readable by uid %d", lib, (int)getuid());
	else
		fl_set(c, FL_V_OK, NULL, "%s", lib);
}

/* Would "fastlocal run -- CMD" reach CMD: the same diagnosis as run, then
 * the settings' own selection (FASTLOCAL, only_cmds, skip_cmds). */
static void fl_check_cmd(struct fl_doctor *d)
{
	static struct fl_config cfg; /* ~8 KiB: off the stack */
	struct fl_check *c = &d->ck[FL_CK_CMD];
	struct fl_exe_diag diag;
	struct fl_conf_origin origin;
	char path[4096], msg[16384], name[4096];
	const char *why = NULL;

	if (fl_exe_resolve(d->cmd, getenv("PATH"), path, sizeof(path))) {
		fl_set(c, FL_V_FAIL, "give a path, or a program in PATH", "%s: not found", d->cmd);
		return;
	}
	if (fl_exe_diagnose(d->cmd, getenv("PATH"), &diag) != FL_EXE_PRELOADABLE) {
		fl_exe_describe(&diag, msg, sizeof(msg));
		fl_set(c, FL_V_FAIL, diag.verdict == FL_EXE_STATIC ? "use a dynamically linked build" :
		       diag.verdict == FL_EXE_GO ? "none through LD_PRELOAD" :
		       "run it as the user it switches to, or without the set-id bit or capabilities",
		       "unreachable: %s", msg);
		return;
	}
	snprintf(name, sizeof(name), "%s", path);
	fl_cli_conf_eval(&cfg, &origin, false);
	if (!cfg.enabled)
		fl_set(c, FL_V_FAIL, "unset FASTLOCAL (or enabled = 0 in the file)",
		       "%s is reachable, but FASTLOCAL / enabled switches the shim off", path);
	else if (!fl_conf_selected(&cfg, basename(name), &why))
		fl_set(c, FL_V_FAIL, "see 'fastlocal config'", "%s is reachable, but not selected: %s",
		       path, why);
	else
		fl_set(c, FL_V_OK, NULL, "%s is reachable by LD_PRELOAD", path);
}

void fl_doctor_run(struct fl_doctor *d)
{
	static const char *const names[FL_CK__NR] = {
		"btf", "sockmap", "bpffs", "loaded", "broker", "user", "shim", "cmd",
	};
	bool direct;
	int i;

	for (i = 0; i < FL_CK__NR; i++)
		d->ck[i].name = names[i];
	fl_check_kernel(d);
	fl_check_bpffs(d);
	direct = fl_check_loaded(d);
	fl_check_broker_and_user(d, direct);
	fl_check_shim(d);
	d->n = FL_CK_SHIM + 1;
	if (d->cmd) {
		fl_check_cmd(d);
		d->n = FL_CK__NR;
	}
	d->ok = true;
	for (i = 0; i < d->n; i++)
		if (d->ck[i].v == FL_V_FAIL)
			d->ok = false;
}
