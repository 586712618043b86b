#!/bin/sh
# bench/compare_builds.sh OLD_BUILD NEW_BUILD [REPS] - the same fl-bench runs
# under two builds of fastlocal, alternated (old, new, old, new, ...) and one
# loaded at a time, so that a change's cost shows as a ratio measured in one
# sitting on this noisy machine. Each build is a "make" tree's build/ dir
# (e.g. a clone at the old commit). As root. Prints one line per run and
# the means; used for the "cost of issue 7" table in docs/benchmarks.md.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OLD_BUILD NEW_BUILD [REPS]" >&2; exit 2; }
old=$1 new=$2 reps=${3:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
export FASTLOCAL_CONF=""
for rep in $(seq "$reps"); do
	for v in old new; do
		eval B=\$$v
		export FASTLOCAL_PIN_DIR=/sys/fs/bpf/fl-compare-$v FASTLOCAL_LIB=$B/libfastlocal.so
		"$B/fastlocal" load >/dev/null
		for run in "stream --size 64 --split --seconds 1" \
			   "stream --size 1024 --nodelay --seconds 1" \
			   "stream --size 16384 --seconds 1" \
			   "pingpong --size 64 --iters 20000"; do
			# shellcheck disable=SC2086
			r=$("$B/fastlocal" run -- "$B/fl-bench" $run | tail -n 1)
			echo "$v|$run|$r" | tee -a "$out"
		done
		"$B/fastlocal" unload >/dev/null
	done
done
echo "means over $reps runs (MB/s, or mean round trip in us):"
awk -F'|' '{ v = $3; if (match(v, /mbps=[0-9.]+/)) x = substr(v, RSTART + 5, RLENGTH - 5);
	     else { match(v, /mean_us=[0-9.]+/); x = substr(v, RSTART + 8, RLENGTH - 8) }
	     s[$2 "|" $1] += x; n[$2 "|" $1]++; k[$2] = 1 }
	   END { for (r in k) printf "  %-40s old %8.1f  new %8.1f  new/old %.2f\n", r,
		 s[r "|old"] / n[r "|old"], s[r "|new"] / n[r "|new"],
		 (s[r "|new"] / n[r "|new"]) / (s[r "|old"] / n[r "|old"]) }' "$out"
