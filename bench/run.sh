#!/bin/sh
# bench/run.sh BUILD_DIR [--quick] [--reps N] [--seconds T] [--out DIR]
#
# "make bench": one-way stream throughput for writes of 64 B to 256 KiB and
# 64-byte ping-pong round trips (pinned to one CPU, and unpinned), over
#   tcp, tcp-nodelay   plain loopback TCP (Nagle on / TCP_NODELAY)
#   unix               AF_UNIX stream
#   redirect-raw       both ends enrolled, no batching (FASTLOCAL_BATCH=off):
#                      the kernel series' "vanilla"
#   fastlocal          the shim's default policy
#   fastlocal-nodelay  the shim with TCP_NODELAY set by the application
# Each repetition runs every transport and size in turn, so that the noise of
# this 2-core machine falls on all of them alike. Every byte is verified.
# Writes stream.csv, rtt.csv and results.md into --out (default BUILD/bench).
set -eu
BUILD=${1:?usage: bench/run.sh BUILD_DIR [--quick] [--reps N] [--seconds T] [--out DIR]}
shift
REPS=3 SECS=1 ITERS=20000 OUT=$BUILD/bench
SIZES="64 256 1024 4096 16384 65536 262144"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) REPS=1 SECS=0.25 ITERS=5000 ;;
	--reps) REPS=$2; shift ;;
	--seconds) SECS=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "bench/run.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
if [ "$(id -u)" != 0 ]; then
	echo "bench/run.sh: loading BPF needs root" >&2
	exit 1
fi
CLI=$BUILD/fastlocal
B=$BUILD/fl-bench
export FASTLOCAL_LIB="$BUILD/libfastlocal.so"
export FASTLOCAL_PIN_DIR="/sys/fs/bpf/fastlocal-bench-$$"
TRANSPORTS="tcp tcp-nodelay unix redirect-raw fastlocal fastlocal-nodelay"
mkdir -p "$OUT"
trap '"$CLI" unload >/dev/null 2>&1' EXIT INT TERM
"$CLI" load >/dev/null

# run TRANSPORT PREFIX ARGS...: one fl-bench run over TRANSPORT.
run() {
	t=$1
	shift
	case $t in
	tcp) "$@" ;;
	tcp-nodelay) "$@" --nodelay ;;
	unix) "$@" --unix ;;
	redirect-raw) FASTLOCAL_BATCH=off "$CLI" run -- "$@" ;;
	fastlocal) "$CLI" run -- "$@" ;;
	fastlocal-nodelay) "$CLI" run -- "$@" --nodelay ;;
	esac
}

field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

nt=$(echo $TRANSPORTS | wc -w)
ns=$(echo $SIZES | wc -w)
total=$((REPS * nt * (ns + 2)))
done=0
start=$(date +%s)
progress() {
	done=$((done + 1))
	el=$(($(date +%s) - start))
	eta=$((el * (total - done) / done))
	printf '\rbench: %d/%d runs, %ds elapsed, about %ds left   ' "$done" "$total" "$el" "$eta" >&2
}

echo "transport,size,rep,mbps" >"$OUT/stream.csv"
echo "transport,pinned,rep,mean_us,p50_us,p99_us,p999_us" >"$OUT/rtt.csv"
rep=1
while [ $rep -le "$REPS" ]; do
	for size in $SIZES; do
		for t in $TRANSPORTS; do
			r=$(run "$t" "$B" stream --split --size "$size" --seconds "$SECS")
			echo "$t,$size,$rep,$(field "$r" mbps)" >>"$OUT/stream.csv"
			progress
		done
	done
	for pin in 1 0; do
		for t in $TRANSPORTS; do
			if [ $pin = 1 ]; then
				r=$(run "$t" taskset -c 0 "$B" pingpong --size 64 --iters "$ITERS")
			else
				r=$(run "$t" "$B" pingpong --size 64 --iters "$ITERS")
			fi
			echo "$t,$pin,$rep,$(field "$r" mean_us),$(field "$r" p50_us),$(field "$r" p99_us),$(field "$r" p999_us)" >>"$OUT/rtt.csv"
			progress
		done
	done
	rep=$((rep + 1))
done
echo >&2

# Markdown: mean +- stddev per transport and size, then the ratios.
awk -F, -v reps="$REPS" -v secs="$SECS" '
FNR == 1 { next }
FILENAME ~ /stream/ {
	k = $1 SUBSEP $2; n[k]++; s[k] += $4; q[k] += $4 * $4
	if (!($2 in seen)) { seen[$2] = 1; sizes[++ns] = $2 }
	if (!($1 in tseen)) { tseen[$1] = 1; ts[++nt] = $1 }
	next
}
{
	k = $1 SUBSEP $2; rn[k]++; rs[k] += $4; rq[k] += $4 * $4; p99[k] += $6
}
function mean(k) { return s[k] / n[k] }
function sd(k,   m) { m = mean(k); v = q[k] / n[k] - m * m; return v > 0 ? sqrt(v) : 0 }
function label(b) { return b >= 1024 ? (b / 1024) " KiB" : b " B" }
END {
	printf "Throughput, MB/s, mean ± stddev of %d runs of %s s (one-way stream, writer and reader on different CPUs, 64 KiB reads):\n\n", reps, secs
	printf "| transport |"; for (i = 1; i <= ns; i++) printf " %s |", label(sizes[i]); printf "\n|---|"
	for (i = 1; i <= ns; i++) printf "---|"; printf "\n"
	for (j = 1; j <= nt; j++) {
		printf "| %s |", ts[j]
		for (i = 1; i <= ns; i++) { k = ts[j] SUBSEP sizes[i]; printf " %.0f ± %.0f |", mean(k), sd(k) }
		printf "\n"
	}
	printf "\nRatios of the means:\n\n| ratio |"; for (i = 1; i <= ns; i++) printf " %s |", label(sizes[i])
	printf "\n|---|"; for (i = 1; i <= ns; i++) printf "---|"; printf "\n"
	split("fastlocal/tcp fastlocal/unix fastlocal/redirect-raw fastlocal-nodelay/tcp-nodelay redirect-raw/tcp", rs_, " ")
	for (r = 1; r <= 5; r++) {
		split(rs_[r], ab, "/"); printf "| %s |", rs_[r]
		for (i = 1; i <= ns; i++) printf " %.2fx |", mean(ab[1] SUBSEP sizes[i]) / mean(ab[2] SUBSEP sizes[i])
		printf "\n"
	}
	printf "\n64-byte ping-pong round trip, µs, mean of %d runs (p99 in brackets):\n\n| transport | pinned to one CPU | unpinned |\n|---|---|---|\n", reps
	for (j = 1; j <= nt; j++) {
		a = ts[j] SUBSEP 1; b = ts[j] SUBSEP 0
		printf "| %s | %.1f (%.1f) | %.1f (%.1f) |\n", ts[j], rs[a] / rn[a], p99[a] / rn[a], rs[b] / rn[b], p99[b] / rn[b]
	}
	a = "fastlocal" SUBSEP 1; b = "tcp" SUBSEP 1
	printf "\nPinned round trip, fastlocal / tcp: %.2fx\n", (rs[a] / rn[a]) / (rs[b] / rn[b])
}' "$OUT/stream.csv" "$OUT/rtt.csv" >"$OUT/results.md"
cat "$OUT/results.md"
echo
echo "(raw data: $OUT/stream.csv, $OUT/rtt.csv)"
