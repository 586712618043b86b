/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* cli_conf.h - the shim's settings as the CLI sees them. */
#ifndef FL_CLI_CONF_H
#define FL_CLI_CONF_H

#include <stdbool.h>

#include "../common/conf.h"

/* Evaluates the settings exactly as a process started from this environment
 * would: $FASTLOCAL_CONF or /etc/fastlocal.conf, then the environment.
 * Warnings go to stderr when warn is set ("fastlocal config"); the other
 * commands only need a value and stay quiet (the shim warns for itself). */
void fl_cli_conf_eval(struct fl_config *cfg, struct fl_conf_origin *origin, bool warn);

#endif
