/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * doctor.h - "fastlocal doctor": each thing acceleration needs, checked
 * as the calling user, with what to do when it is missing.
 */
#ifndef FL_DOCTOR_H
#define FL_DOCTOR_H

#include <stdbool.h>
#include <linux/types.h>

#include "pin_dir.h"

enum fl_verdict { FL_V_OK, FL_V_WARN, FL_V_FAIL };

/* One check. name is its stable key (text and JSON); fix is "" when there
 * is nothing to do. */
struct fl_check {
	const char *name;
	enum fl_verdict v;
	char detail[1024];
	char fix[512];
};

enum {
	FL_CK_BTF, FL_CK_SOCKMAP, FL_CK_BPFFS, FL_CK_LOADED, FL_CK_BROKER, FL_CK_USER,
	FL_CK_SHIM, FL_CK_CMD, FL_CK__NR
};

struct fl_doctor {
	const struct fl_pin_dir *pd;
	const char *broker;      /* the broker's socket, as the shim finds it */
	const char *cmd;         /* --cmd, or NULL: no FL_CK_CMD */
	const char *libdir;      /* the install libdir, for finding the shim */
	/* results */
	struct fl_check ck[FL_CK__NR];
	int n;                   /* checks run (FL_CK_CMD only with cmd) */
	__u64 object, loaded_object; /* this binary's object; what is loaded (0: unknown) */
	bool broker_answers;
	bool ok;                 /* no check failed: acceleration works for this user */
};

/* Runs every check, as this process's user. */
void fl_doctor_run(struct fl_doctor *d);

const char *fl_verdict_text(enum fl_verdict v); /* "ok", "warn", "FAIL" */

#endif
