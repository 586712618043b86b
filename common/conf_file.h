/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * conf_file.h - reading the settings file, one way for the shim (config.c)
 * and the CLI (tools/cli_conf.c), so that both see the same file.
 */
#ifndef FL_CONF_FILE_H
#define FL_CONF_FILE_H

#include "conf.h"

/*
 * Reads $FASTLOCAL_CONF, or FL_CONF_DEFAULT_PATH when it is unset, into buf
 * and fills in's file fields (file, buf, len, file_state, file_error):
 * FASTLOCAL_CONF="" is no file on purpose; a missing default file is the
 * normal case (FL_FILE_ABSENT), a missing file named on purpose, an
 * unreadable one or one of FL_CONF_FILE_MAX bytes or more is
 * FL_FILE_UNREADABLE with the reason. buf is the caller's, static in both
 * (no allocation: the shim may read its settings in a signal handler).
 * Closes what it opened; errno is the caller's to keep (config.c does).
 */
void fl_conf_read_file(struct fl_conf_input *in, char buf[FL_CONF_FILE_MAX]);

#endif
