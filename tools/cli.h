/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* cli.h - what the fastlocal subcommands share. */
#ifndef FL_CLI_H
#define FL_CLI_H

#include <stdbool.h>
#include <stdio.h>

#define FL_VERSION "0.1.0"

/* Exit codes: 0 ok, 1 failure, 2 bad usage, 3 "status: not loaded". */
enum { FL_EXIT_OK = 0, FL_EXIT_FAIL = 1, FL_EXIT_USAGE = 2, FL_EXIT_NOT_LOADED = 3 };

/* Every subcommand: argv[0] is the subcommand name. */
int cmd_load(int argc, char **argv);
int cmd_unload(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_conns(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* "fastlocal <cmd>: <message>" on stderr, one line. */
void fl_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Bad usage: one line, a hint to --help, and FL_EXIT_USAGE. */
int fl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
