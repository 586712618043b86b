// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* exe_check.c - decides whether LD_PRELOAD can reach a command: finds the file
 * as execvp would, follows one "#!" level, and applies the kernel's and
 * glibc's rules (secure mode, static linking, Go). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#include "exe_check.h"
#include "exe_elf.h"

/* glibc's execvp searches this when PATH is unset (posix/execvpe.c). */
#define FL_EXECVP_DEFAULT_PATH "/bin:/usr/bin"
/* The kernel reads this many bytes for "#!" (BINPRM_BUF_SIZE). */
#define FL_BINPRM_BUF 256

enum fl_exe_verdict fl_exe_secure_mode(const struct stat *st, uid_t ruid, gid_t rgid,
				       bool privs_ignored, bool has_file_caps)
{
	if (privs_ignored)
		return FL_EXE_PRELOADABLE;
	/* AT_SECURE is set when the new euid/egid differs from the real one
	 * (security/commoncap.c): root running a setuid-root program is not
	 * secure-mode, so its preload applies. */
	if ((st->st_mode & S_ISUID) && st->st_uid != ruid)
		return FL_EXE_SETUID;
	/* Without group execute the set-gid bit is not honoured (fs/exec.c
	 * bprm_fill_uid: it marked mandatory locking). */
	if ((st->st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && st->st_gid != rgid)
		return FL_EXE_SETGID;
	/* Root gets every capability on exec anyway; for anyone else a file
	 * capability raises privilege and makes the exec secure-mode. */
	if (has_file_caps && ruid != 0)
		return FL_EXE_FILECAPS;
	return FL_EXE_PRELOADABLE;
}

int fl_shebang_interp(const char *buf, size_t len, char *out, size_t outlen)
{
	size_t i = 2, start, n;

	if (len < 2 || buf[0] != '#' || buf[1] != '!')
		return -1;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	start = i;
	while (i < len && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' && buf[i] != '\0')
		i++;
	n = i - start;
	if (!n || n >= outlen)
		return -1;
	memcpy(out, buf + start, n);
	out[n] = '\0';
	return 0;
}

/* execvp tries each candidate and moves on when execve fails with EACCES
 * (not executable, a directory) or ENOENT; the first executable file wins. */
static int fl_exe_runnable(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

int fl_exe_resolve(const char *cmd, const char *path_env, char *out, size_t outlen)
{
	const char *p, *end;

	if (!*cmd)
		return -1;
	if (strchr(cmd, '/')) {
		if ((size_t)snprintf(out, outlen, "%s", cmd) >= outlen)
			return -1;
		return fl_exe_runnable(out) ? 0 : -1;
	}
	p = path_env ? path_env : FL_EXECVP_DEFAULT_PATH;
	for (;; p = end + 1) {
		size_t dl;
		int n;

		end = strchrnul(p, ':');
		dl = (size_t)(end - p);
		/* An empty PATH entry means the current directory. */
		n = dl ? snprintf(out, outlen, "%.*s/%s", (int)dl, p, cmd)
		       : snprintf(out, outlen, "%s", cmd);
		if (n > 0 && (size_t)n < outlen && fl_exe_runnable(out))
			return 0;
		if (!*end)
			return -1;
	}
}

/* The kernel ignores set-id bits and file capabilities on a nosuid mount
 * and under no_new_privs; glibc then sees no secure mode. */
static bool fl_privs_ignored(int fd)
{
	struct statvfs sv;

	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
		return true;
	return !fstatvfs(fd, &sv) && (sv.f_flag & ST_NOSUID);
}

static enum fl_exe_verdict fl_exe_judge(int fd, struct fl_exe_diag *d)
{
	struct stat st;
	enum fl_exe_verdict v;
	bool caps;

	if (fstat(fd, &st))
		return FL_EXE_PRELOADABLE;
	caps = fgetxattr(fd, "security.capability", NULL, 0) > 0;
	v = fl_exe_secure_mode(&st, getuid(), getgid(), fl_privs_ignored(fd), caps);
	if (v == FL_EXE_SETUID || v == FL_EXE_SETGID) {
		d->id = v == FL_EXE_SETUID ? st.st_uid : st.st_gid;
		return v;
	}
	if (v != FL_EXE_PRELOADABLE)
		return v;
	switch (fl_elf_inspect(fd)) {
	case FL_ELF_STATIC: return FL_EXE_STATIC;
	case FL_ELF_GO: return FL_EXE_GO;
	default: return FL_EXE_PRELOADABLE;
	}
}

enum fl_exe_verdict fl_exe_diagnose(const char *cmd, const char *path_env, struct fl_exe_diag *d)
{
	char buf[FL_BINPRM_BUF], interp[FL_BINPRM_BUF];
	ssize_t n;
	int fd;

	memset(d, 0, sizeof(*d));
	d->verdict = FL_EXE_PRELOADABLE;
	if (fl_exe_resolve(cmd, path_env, d->exe, sizeof(d->exe)))
		return d->verdict; /* execvp will fail and "run" reports that */
	fd = open(d->exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return d->verdict; /* execute-only file: cannot tell, no diagnosis */
	n = pread(fd, buf, sizeof(buf), 0);
	if (n > 0 && !fl_shebang_interp(buf, (size_t)n, interp, sizeof(interp))) {
		/* A script: the kernel maps its interpreter, whose rules apply
		 * (set-id bits on a script are ignored). One level only, so
		 * "#!/usr/bin/env X" judges env, which is dynamic. */
		close(fd);
		memcpy(d->script, d->exe, sizeof(d->script));
		snprintf(d->exe, sizeof(d->exe), "%s", interp);
		fd = open(d->exe, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return d->verdict;
	}
	d->verdict = fl_exe_judge(fd, d);
	close(fd);
	return d->verdict;
}

void fl_exe_describe(const struct fl_exe_diag *d, char *out, size_t outlen)
{
	char who[8300];
	const char *secure = "glibc ignores LD_PRELOAD in secure mode";

	if (d->script[0])
		snprintf(who, sizeof(who), "%s (the interpreter of %s)", d->exe, d->script);
	else
		snprintf(who, sizeof(who), "%s", d->exe);
	switch (d->verdict) {
	case FL_EXE_SETUID:
		snprintf(out, outlen, "%s is setuid to uid %u: %s, so it runs unaccelerated",
			 who, d->id, secure);
		break;
	case FL_EXE_SETGID:
		snprintf(out, outlen, "%s is setgid to gid %u: %s, so it runs unaccelerated",
			 who, d->id, secure);
		break;
	case FL_EXE_FILECAPS:
		snprintf(out, outlen, "%s has file capabilities: %s, so it runs unaccelerated",
			 who, secure);
		break;
	case FL_EXE_STATIC:
		snprintf(out, outlen,
			 "%s is statically linked: LD_PRELOAD cannot apply, so it runs unaccelerated",
			 who);
		break;
	case FL_EXE_GO:
		snprintf(out, outlen,
			 "%s is a Go program: Go makes its socket system calls without libc, so it runs unaccelerated",
			 who);
		break;
	default:
		snprintf(out, outlen, "%s can be preloaded", who);
		break;
	}
}
