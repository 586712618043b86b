/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* preload_env.h - finding the shim and composing LD_PRELOAD. */
#ifndef FL_PRELOAD_ENV_H
#define FL_PRELOAD_ENV_H

#include <stddef.h>

/* The LD_PRELOAD value that adds lib after whatever existing holds (NULL or
 * empty: nothing). lib is not added twice. Returns 0, or -1 if out does not
 * fit. */
int fl_preload_compose(char *out, size_t outlen, const char *existing, const char *lib);

/* Absolute path of libfastlocal.so: $FASTLOCAL_LIB, else next to this
 * executable (build tree), else ../lib beside it, else the install libdir.
 * Returns 0, or -1 with the places tried in err. */
int fl_shim_locate(char *out, size_t outlen, const char *libdir, char *err, size_t errlen);

#endif
