// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cmd_bench.c - "fastlocal bench": runs the benchmark harness (bench/run.sh)
 * against this very fastlocal, its shim and fl-bench.
 *
 * The harness is shell and data, not code worth embedding: this command only
 * finds it (FASTLOCAL_BENCH_DIR, then <exe dir>/../bench in a build tree,
 * then the install dir), tells it which binaries to use, and execs it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "preload_env.h"

#ifndef FL_LIBDIR
#define FL_LIBDIR "/usr/local/lib"
#endif
#define FL_BENCH_INSTALL_DIR FL_LIBDIR "/fastlocal/bench"

static const char fl_bench_help[] =
	"Usage: fastlocal bench [--quick] [--reps N] [--out DIR]\n"
	"\n"
	"Measures same-host transports in one run on this machine: plain TCP (with\n"
	"and without TCP_NODELAY), AF_UNIX, raw sockmap redirect (no batching) and\n"
	"fastlocal (default and TCP_NODELAY). Workloads: one-way stream throughput\n"
	"for writes of 64 B to 256 KiB, ping-pong round trips (p50/p99/p999) for\n"
	"64 B to 64 KiB pinned to one CPU and unpinned, 64 B request/response rate\n"
	"over 1, 8 and 64 connections, and connection churn (connect, one 64 B\n"
	"request/response, close). Every byte is verified; a wrong byte fails.\n"
	"Progress and an ETA go to stderr; a full run takes about 10 minutes.\n"
	"\n"
	"  --quick      one repetition, short runs, fewer sizes (under a minute)\n"
	"  --reps N     repetitions, reported as mean and stddev (default 3)\n"
	"  --out DIR    where results go (default ./fastlocal-bench): results.md,\n"
	"               results.json, summary.csv, the raw runs as CSV, and\n"
	"               throughput.png, rtt.png and speedup.png (needs gnuplot)\n"
	"  -h, --help   show this help\n"
	"\n"
	"Needs root: it loads its own copy of the BPF program into a private pin\n"
	"dir (/sys/fs/bpf/fastlocal-bench-PID), never the one 'load' uses, and\n"
	"unloads it at the end. The harness (run.sh) is found in\n"
	"$FASTLOCAL_BENCH_DIR, in ../bench next to this executable, or in\n"
	FL_BENCH_INSTALL_DIR ". Exit status: the harness's (1 on a failed run).\n";

/* The directory this executable is in, and the executable itself. */
static int fl_exe_dir(char *exe, size_t exelen, char *dir, size_t dirlen)
{
	ssize_t len = readlink("/proc/self/exe", exe, exelen - 1);
	char *slash;

	if (len <= 0)
		return -1;
	exe[len] = '\0';
	snprintf(dir, dirlen, "%s", exe);
	slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

static int fl_is_file(const char *dir, const char *name, int mode)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, mode) == 0;
}

/* Finds the directory holding run.sh, into out (a real path). */
static int fl_bench_dir(const char *exedir, char *out, size_t outlen)
{
	const char *env = getenv("FASTLOCAL_BENCH_DIR");
	char cand[2][PATH_MAX + 32], real[PATH_MAX];
	int i;

	if (env && *env) {
		if (!fl_is_file(env, "run.sh", R_OK)) {
			fl_err("bench", "FASTLOCAL_BENCH_DIR=%s has no readable run.sh", env);
			return -1;
		}
		snprintf(out, outlen, "%s", realpath(env, real) ? real : env);
		return 0;
	}
	snprintf(cand[0], sizeof(cand[0]), "%s/../bench", exedir);
	snprintf(cand[1], sizeof(cand[1]), "%s", FL_BENCH_INSTALL_DIR);
	for (i = 0; i < 2; i++) {
		if (fl_is_file(cand[i], "run.sh", R_OK) && realpath(cand[i], real)) {
			snprintf(out, outlen, "%s", real);
			return 0;
		}
	}
	fl_err("bench", "cannot find the benchmark harness run.sh (tried %s and %s; "
	       "set FASTLOCAL_BENCH_DIR to the bench/ directory of a fastlocal source tree)",
	       cand[0], cand[1]);
	return -1;
}

/* fl-bench: $FL_BENCH, else next to run.sh (installed), else next to us (build tree). */
static int fl_bench_bin(const char *benchdir, const char *exedir, char *out, size_t outlen)
{
	const char *env = getenv("FL_BENCH");

	if (env && *env) {
		snprintf(out, outlen, "%s", env);
		return access(out, X_OK) ? (fl_err("bench", "FL_BENCH=%s: %s", env, strerror(errno)), -1) : 0;
	}
	if (fl_is_file(benchdir, "fl-bench", X_OK)) {
		snprintf(out, outlen, "%s/fl-bench", benchdir);
		return 0;
	}
	if (fl_is_file(exedir, "fl-bench", X_OK)) {
		snprintf(out, outlen, "%s/fl-bench", exedir);
		return 0;
	}
	fl_err("bench", "cannot find fl-bench (tried %s and %s; run 'make' or set FL_BENCH)",
	       benchdir, exedir);
	return -1;
}

int cmd_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "reps", required_argument, NULL, 'r' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char exe[PATH_MAX], exedir[PATH_MAX], dir[PATH_MAX], bin[PATH_MAX + 16];
	char runsh[PATH_MAX + 16], lib[PATH_MAX], err[PATH_MAX * 4];
	const char *out = "fastlocal-bench", *reps = NULL;
	char *args[12], *end;
	int c, quick = 0, n = 0;
	long r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'q': quick = 1; break;
		case 'o': out = optarg; break;
		case 'r':
			r = strtol(optarg, &end, 10);
			if (*end || r < 1 || r > 100)
				return fl_usage_error("bench", "--reps wants 1 to 100, not '%s'", optarg);
			reps = optarg;
			break;
		case 'h': fputs(fl_bench_help, stdout); return FL_EXIT_OK;
		default:
			return fl_usage_error("bench", "unknown option, or missing value: '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind < argc)
		return fl_usage_error("bench", "unexpected argument '%s'", argv[optind]);
	if (quick && reps)
		return fl_usage_error("bench", "--quick runs once; it does not take --reps");
	if (geteuid() != 0) {
		fl_err("bench", "needs root: it loads the BPF program into a private pin dir");
		return FL_EXIT_FAIL;
	}
	if (fl_exe_dir(exe, sizeof(exe), exedir, sizeof(exedir))) {
		fl_err("bench", "cannot find this executable: %s", strerror(errno));
		return FL_EXIT_FAIL;
	}
	if (fl_bench_dir(exedir, dir, sizeof(dir)) || fl_bench_bin(dir, exedir, bin, sizeof(bin)))
		return FL_EXIT_FAIL;
	if (fl_shim_locate(lib, sizeof(lib), FL_LIBDIR, err, sizeof(err))) {
		fl_err("bench", "%s", err);
		return FL_EXIT_FAIL;
	}
	/* The harness uses exactly this fastlocal, its shim and fl-bench. */
	setenv("FASTLOCAL_CLI", exe, 1);
	setenv("FASTLOCAL_LIB", lib, 1);
	setenv("FL_BENCH", bin, 1);
	snprintf(runsh, sizeof(runsh), "%s/run.sh", dir);
	args[n++] = "sh";
	args[n++] = runsh;
	args[n++] = exedir;
	args[n++] = "--out";
	args[n++] = (char *)out;
	if (quick)
		args[n++] = "--quick";
	if (reps) {
		args[n++] = "--reps";
		args[n++] = (char *)reps;
	}
	args[n] = NULL;
	execv("/bin/sh", args);
	fl_err("bench", "cannot run /bin/sh %s: %s", runsh, strerror(errno));
	return FL_EXIT_FAIL;
}
