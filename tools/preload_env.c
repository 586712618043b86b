// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* preload_env.c - finding the shim and composing LD_PRELOAD. */
#include "preload_env.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc splits LD_PRELOAD on colons and spaces (elf/rtld.c). */
static int fl_preload_lists(const char *list, const char *lib)
{
	size_t n = strlen(lib);
	const char *p = list;

	while (p && *p) {
		size_t len = strcspn(p, ": ");

		if (len == n && !strncmp(p, lib, n))
			return 1;
		p += len;
		p += strspn(p, ": ");
	}
	return 0;
}

int fl_preload_compose(char *out, size_t outlen, const char *existing, const char *lib)
{
	int n;

	if (!existing || !*existing || strspn(existing, ": ") == strlen(existing))
		n = snprintf(out, outlen, "%s", lib);
	else if (fl_preload_lists(existing, lib))
		n = snprintf(out, outlen, "%s", existing);
	else
		n = snprintf(out, outlen, "%s:%s", existing, lib);
	return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

int fl_shim_locate(char *out, size_t outlen, const char *libdir, char *err, size_t errlen)
{
	char exe[PATH_MAX], cand[5][PATH_MAX + 32];
	const char *env = getenv("FASTLOCAL_LIB");
	ssize_t len;
	char *slash;
	int i, n = 0;

	if (env && *env) {
		if (!realpath(env, out) || access(out, R_OK)) {
			snprintf(err, errlen, "FASTLOCAL_LIB=%s: %s", env, strerror(errno));
			return -1;
		}
		return 0;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0) {
		exe[len] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(cand[n++], sizeof(cand[0]), "%s/libfastlocal.so", exe);
			snprintf(cand[n++], sizeof(cand[0]), "%s/../lib/libfastlocal.so", exe);
			snprintf(cand[n++], sizeof(cand[0]), "%s/../lib/fastlocal/libfastlocal.so", exe);
		}
	}
	/* lib/fastlocal/: where the Debian package keeps the shim, a private
	 * directory (it has no soname and is no library to link against). */
	snprintf(cand[n++], sizeof(cand[0]), "%s/libfastlocal.so", libdir);
	snprintf(cand[n++], sizeof(cand[0]), "%s/fastlocal/libfastlocal.so", libdir);
	for (i = 0; i < n; i++) {
		if (access(cand[i], R_OK) == 0 && realpath(cand[i], exe) && strlen(exe) < outlen) {
			snprintf(out, outlen, "%s", exe);
			return 0;
		}
	}
	snprintf(err, errlen, "cannot find libfastlocal.so (tried %s%s%s; set FASTLOCAL_LIB)",
		 cand[0], n > 1 ? ", " : "", n > 1 ? cand[n - 1] : "");
	return -1;
}
