/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * adopt.h - enrolled sockets survive exec.
 *
 * exec replaces the shim's memory but not the fds: a socket that stays open
 * across exec is still enrolled, and if the new program's reads were not
 * counted its peer's ordering gate would shut. Before exec the shim lists
 * the enrolled fds that survive it (no FD_CLOEXEC) in FASTLOCAL_ADOPT=fd:cookie,...
 * in the new environment; the new image's shim, if preloaded, re-attaches
 * each one whose SO_COOKIE still matches. A program without the shim just
 * reads the socket: correct, the peer stays on TCP.
 */
#ifndef FL_ADOPT_H
#define FL_ADOPT_H

#include <stdbool.h>

/* The environment to exec with: envp plus FASTLOCAL_ADOPT (or envp itself
 * when there is nothing to pass). Valid until fl_adopt_env_done().
 * std_fds: also stdin, stdout and stderr where they are sockets the record
 * does not name (a child made without the fork hooks dup2()ed them there
 * behind it; the new image adopts only a socket that is enrolled). */
char *const *fl_adopt_env(char *const envp[], bool std_fds);
void fl_adopt_env_done(char *const *env, char *const envp[]);

#endif
