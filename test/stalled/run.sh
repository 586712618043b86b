#!/bin/sh
# test/stalled/run.sh BUILD_DIR [BURST_MS [GAP_MS]] - the suite on a machine
# whose CPUs stall, as a busy CI host's do.
#
# A busy host takes its guests' virtual CPUs away for tens to hundreds of
# milliseconds (steal); ordinary load (more runnable threads) does not
# look like that. Here one real-time (SCHED_FIFO) busy loop per CPU runs
# BURST_MS (default 120) every GAP_MS (default 500; the second CPU's gap is
# 100 ms longer, so the stalls drift apart) while test/run.sh BUILD_DIR
# runs; FL_TEST_ONLY and the other run.sh variables apply. The kernel's
# real-time throttling (sched_rt_runtime_us) keeps the machine usable.
# A check that fails here and passes on a quiet machine depends on timing:
# a stall of the process under test must never turn a right answer into a
# FAIL. Needs root and python3. Not part of "make test" (it is a tool for
# finding such checks, and it makes the suite take longer).
set -u
usage() { echo "usage: test/stalled/run.sh BUILD_DIR [BURST_MS [GAP_MS]]" >&2; exit 2; }
case ${1:-} in -h|--help) sed -n '2,16p' "$0"; exit 0 ;; "") usage ;; esac
BUILD=$1 BURST=${2:-120} GAP=${3:-500}
case $BURST$GAP in *[!0-9]*) usage ;; esac
[ "$(id -u)" = 0 ] || { echo "test/stalled/run.sh: real-time stalls need root" >&2; exit 1; }
command -v python3 >/dev/null || { echo "test/stalled/run.sh: python3 is missing (make deps)" >&2; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)

staller() {
	# (its output away: $(staller) would wait for it otherwise)
	python3 - "$1" "$BURST" "$2" >/dev/null 2>&1 <<'PY' &
import os, sys, time
cpu, burst, gap = int(sys.argv[1]), int(sys.argv[2]) / 1000, int(sys.argv[3]) / 1000
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
while True:
    t = time.monotonic() + burst
    while time.monotonic() < t:
        pass
    time.sleep(gap)
PY
	echo $!
}

pids=""
n=$(nproc)
c=0
while [ $c -lt "$n" ]; do
	pids="$pids $(staller $c $((GAP + 100 * c)))"
	c=$((c + 1))
done
# shellcheck disable=SC2086 # pids: a list
trap 'kill $pids 2>/dev/null' EXIT INT TERM
echo "test/stalled/run.sh: ${BURST} ms stalls every ${GAP} ms on each of $n CPUs"
"$HERE/../run.sh" "$BUILD"
