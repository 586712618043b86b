/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* exe_check.h - "fastlocal run": will the preload reach COMMAND at all? */
#ifndef FL_EXE_CHECK_H
#define FL_EXE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

enum fl_exe_verdict {
	FL_EXE_PRELOADABLE,	/* dynamic, or nothing known against it: preload it */
	FL_EXE_SETUID,		/* secure-mode exec: glibc ignores LD_PRELOAD */
	FL_EXE_SETGID,
	FL_EXE_FILECAPS,
	FL_EXE_STATIC,		/* no ld.so, so no preload */
	FL_EXE_GO,		/* bypasses libc for its socket calls */
};

struct fl_exe_diag {
	enum fl_exe_verdict verdict;
	char exe[4096];		/* the file judged: COMMAND, or its #! interpreter */
	char script[4096];	/* the #! script, or "" */
	unsigned int id;	/* the uid (SETUID) or gid (SETGID) the exec switches to */
};

/* Whether exec'ing a file with this mode/owner is secure-mode (AT_SECURE)
 * for a caller with real ids ruid/rgid. privs_ignored: the mount is nosuid
 * or the caller has no_new_privs, so the kernel honours no set-id bit and no
 * file capability. has_file_caps: the file has security.capability. */
enum fl_exe_verdict fl_exe_secure_mode(const struct stat *st, uid_t ruid, gid_t rgid,
				       bool privs_ignored, bool has_file_caps);

/* The interpreter named by a "#!" line in the first len bytes of a file,
 * copied to out. Returns 0, or -1 if buf is no "#!" line or out is short. */
int fl_shebang_interp(const char *buf, size_t len, char *out, size_t outlen);

/* The file execvp(cmd) would run, searching path_env (NULL: execvp's
 * default) when cmd has no '/'. Returns 0, or -1 if none would run. */
int fl_exe_resolve(const char *cmd, const char *path_env, char *out, size_t outlen);

/* Resolves cmd as execvp would (one #! level) and judges the file that the
 * kernel actually maps. Unreadable or non-ELF files are PRELOADABLE: no
 * diagnosis, "run" behaves as before. */
enum fl_exe_verdict fl_exe_diagnose(const char *cmd, const char *path_env, struct fl_exe_diag *d);

/* One line (no "fastlocal run: " prefix, no newline) saying why d's
 * program is not preloadable. Only for a verdict other than PRELOADABLE. */
void fl_exe_describe(const struct fl_exe_diag *d, char *out, size_t outlen);

#endif
