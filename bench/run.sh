#!/bin/sh
# bench/run.sh BUILD_DIR [--quick] [--reps N] [--seconds T] [--out DIR]
#
# "make bench" and "fastlocal bench": every workload over every transport, in
# one run on one machine, every byte verified (a wrong byte fails the run).
#   transports  tcp, tcp-nodelay    plain loopback TCP (Nagle on / TCP_NODELAY)
#               unix                AF_UNIX stream
#               redirect-raw        both ends enrolled, no batching
#                                   (FASTLOCAL_BATCH=off): the series' "vanilla"
#               fastlocal           the shim's default policy
#               fastlocal-nodelay   the shim, the application sets TCP_NODELAY
#   workloads   stream     one-way throughput, writes of 64 B to 256 KiB
#               rtt        ping-pong round trip, 64 B to 64 KiB, pinned to
#                          one CPU and unpinned: mean, p50, p99, p999
#               rr         64 B request/response rate, 1, 8 and 64 connections
#               churn      connect, 64 B request/response, close: conns/s
# Each repetition (default 3) runs every transport for each point in turn,
# starting with a different transport each time, so that this noisy machine's
# noise falls on all of them alike. --quick: 1 repetition, short runs, fewer
# sizes (under a minute). Progress and an ETA go to stderr (bench/progress.sh:
# a bar on a terminal, a plain line per step otherwise).
# Writes into --out (default BUILD_DIR/bench): stream.csv, rtt.csv, rr.csv,
# churn.csv (one line per run), meta.txt, then bench/report.sh's results.md,
# results.json and summary.csv, and bench/plot.sh's PNG charts.
# FASTLOCAL_CLI, FL_BENCH and FASTLOCAL_LIB override BUILD_DIR's fastlocal,
# fl-bench and libfastlocal.so (fastlocal bench sets them when installed).
set -eu
USAGE="usage: bench/run.sh BUILD_DIR [--quick] [--reps N] [--seconds T] [--out DIR]"
BUILD=${1:?$USAGE}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
REPS=3 SECS=1 OUT=$BUILD/bench QUICK=0
STREAM_SIZES="64 128 256 512 1024 4096 16384 32768 65536 131072 262144"
RTT_SIZES="64 128 256 512 1024 4096 16384 32768 65536"
CONNS="1 8 64"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--reps) REPS=${2:?--reps N}; shift ;;
	--seconds) SECS=${2:?--seconds T}; shift ;;
	--out) OUT=${2:?--out DIR}; shift ;;
	-h|--help) sed -n '2,29p' "$0"; exit 0 ;;
	*) echo "bench/run.sh: unknown option '$1'" >&2; echo "$USAGE" >&2; exit 2 ;;
	esac
	shift
done
if [ $QUICK = 1 ]; then
	REPS=1 SECS=0.2
	STREAM_SIZES="64 256 1024 4096 16384 65536 262144"
	RTT_SIZES="64 1024 16384 65536"
fi
case $REPS in ''|*[!0-9]*|0) echo "bench/run.sh: --reps wants a positive integer" >&2; exit 2 ;; esac
if [ "$(id -u)" != 0 ]; then
	echo "bench/run.sh: loading BPF needs root" >&2
	exit 1
fi
CLI=${FASTLOCAL_CLI:-$BUILD/fastlocal}
B=${FL_BENCH:-$BUILD/fl-bench}
export FASTLOCAL_LIB="${FASTLOCAL_LIB:-$BUILD/libfastlocal.so}"
for f in "$CLI" "$B" "$FASTLOCAL_LIB"; do
	[ -e "$f" ] || { echo "bench/run.sh: $f is missing (run make first)" >&2; exit 1; }
done
# A private pin dir: never the user's /sys/fs/bpf/fastlocal.
export FASTLOCAL_PIN_DIR="/sys/fs/bpf/fastlocal-bench-$$"
unset FASTLOCAL FASTLOCAL_BATCH FASTLOCAL_FLUSH_BYTES FASTLOCAL_FLUSH_USEC
TRANSPORTS="tcp tcp-nodelay unix redirect-raw fastlocal fastlocal-nodelay"
# Ping-pong runs half as long: 0.5 s is 20000+ pinned round trips, enough
# for a p999, and it has 18 points per transport where stream has 11.
PP_SECS=$(awk -v s="$SECS" 'BEGIN { print s / 2 }')
mkdir -p "$OUT"
trap '"$CLI" unload >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM
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

# Progress is weighted by each run's length (plus ~0.1 s to start it), so
# the ETA holds across workloads of different lengths.
nt=$(echo $TRANSPORTS | wc -w)
nss=$(echo $STREAM_SIZES | wc -w)
nrs=$(echo $RTT_SIZES | wc -w)
ncs=$(echo $CONNS | wc -w)
total=$(awk -v r="$REPS" -v t="$nt" -v s="$SECS" -v p="$PP_SECS" -v a="$nss" -v b="$nrs" -v c="$ncs" \
	'BEGIN { printf "%d", r * t * ((a + c + 1) * (s + 0.1) + 2 * b * (p + 0.1)) * 100 }')
work=0
start=$(date +%s)
. "$HERE/progress.sh"
fail() {
	progress_end
	echo "bench/run.sh: FAILED: $1 (a wrong or lost byte, or a broken run; see above)" >&2
	exit 1
}

# The transports in this repetition's order: rotated by one each time.
order() {
	set -- $TRANSPORTS
	i=1
	while [ $i -lt $(((rep - 1) % nt + 1)) ]; do
		x=$1; shift; set -- "$@" "$x"; i=$((i + 1))
	done
	echo "$@"
}

echo "transport,size,rep,mbps" >"$OUT/stream.csv"
echo "transport,size,pinned,rep,iters,mean_us,p50_us,p99_us,p999_us" >"$OUT/rtt.csv"
echo "transport,conns,size,rep,tps" >"$OUT/rr.csv"
echo "transport,size,rep,cps" >"$OUT/churn.csv"
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "kernel=$(uname -r)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "cpus=$(nproc)"
	echo "os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
	echo "commit=$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "reps=$REPS"
	echo "seconds=$SECS"
	echo "pingpong_seconds=$PP_SECS"
	echo "quick=$QUICK"
} >"$OUT/meta.txt"

rep=1
while [ $rep -le "$REPS" ]; do
	ts=$(order)
	for size in $STREAM_SIZES; do
		for t in $ts; do
			r=$(run "$t" "$B" stream --split --size "$size" --seconds "$SECS") ||
				fail "stream $t $size B"
			echo "$t,$size,$rep,$(field "$r" mbps)" >>"$OUT/stream.csv"
			progress "$SECS" "stream $t $size B"
		done
	done
	for pin in 1 0; do
		for size in $RTT_SIZES; do
			for t in $ts; do
				if [ $pin = 1 ]; then
					r=$(run "$t" taskset -c 0 "$B" pingpong --size "$size" --seconds "$PP_SECS" --iters 1000000) ||
						fail "pingpong pinned $t $size B"
				else
					r=$(run "$t" "$B" pingpong --size "$size" --seconds "$PP_SECS" --iters 1000000) ||
						fail "pingpong $t $size B"
				fi
				echo "$t,$size,$pin,$rep,$(field "$r" iters),$(field "$r" mean_us),$(field "$r" p50_us),$(field "$r" p99_us),$(field "$r" p999_us)" >>"$OUT/rtt.csv"
				progress "$PP_SECS" "rtt $t $size B"
			done
		done
	done
	for n in $CONNS; do
		for t in $ts; do
			r=$(run "$t" "$B" rr --conns "$n" --size 64 --seconds "$SECS") ||
				fail "rr $t $n connections"
			echo "$t,$n,64,$rep,$(field "$r" tps)" >>"$OUT/rr.csv"
			progress "$SECS" "rr $t $n conns"
		done
	done
	for t in $ts; do
		r=$(run "$t" "$B" churn --size 64 --seconds "$SECS") || fail "churn $t"
		echo "$t,64,$rep,$(field "$r" cps)" >>"$OUT/churn.csv"
		progress "$SECS" "churn $t"
	done
	rep=$((rep + 1))
done
rep=$REPS
progress_end
echo "bench: measured in $(hms $(($(date +%s) - start))); writing the report" >&2

sh "$HERE/report.sh" "$OUT"
if command -v gnuplot >/dev/null 2>&1; then
	sh "$HERE/plot.sh" "$OUT"
else
	echo "bench/run.sh: gnuplot is missing (make deps installs gnuplot-nox): no charts" >&2
fi
cat "$OUT/results.md"
echo
echo "(in $OUT: results.md, results.json, summary.csv; raw runs in stream.csv, rtt.csv, rr.csv, churn.csv; charts *.png)"
