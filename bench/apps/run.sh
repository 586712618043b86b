#!/bin/sh
# bench/apps/run.sh BUILD_DIR [--quick] [--out DIR] [--apps "LIST"] [--help]
#
# Real applications, each run plain and with "fastlocal run" (server AND
# client under the shim), with their integrity checked, as users run them:
# with the broker ("fastlocal daemon") of this run serving the shims.
#   redis    redis-server + redis-benchmark, SET and GET, -c 50, -P 1 and 16;
#            then SET/GET of known random values through redis-cli
#   nginx    master as root, worker as nobody (enrolled through the broker;
#            the run fails if it is not); a 1 KiB file to wrk -c 50 and
#            -c 400 keep-alive, and a 64 MiB one; sha256 and cmp via curl
#   onesided the peer never enrolls: redis-server under the shim with a
#            plain redis-benchmark (64 B GET) and the reverse, an iperf3
#            client under the shim to a plain server and the reverse
#   iperf3   one stream, with and without -Z (sendfile)
#   haproxy  in splice mode in front of nginx: 64 MiB via curl (sha256),
#            1 KiB via wrk
# Each measurement alternates plain and fastlocal, 3 repetitions (1 with
# --quick); reports mean +- stddev, the ratio (and the issue-14 target
# next to it, met or missed: never a failure), Tcp OutSegs per run (the
# run has a private network namespace, so only its own segments count) and
# fastlocal's redirected bytes. Servers listen on free loopback ports with
# configs in a temp dir and are stopped by PID. Writes apps.md (also on
# stdout), apps.csv, apps.json, apps-targets.csv and apps-runs.csv into
# --out (default BUILD/bench). --apps runs a subset, e.g. --apps "redis
# iperf3". Needs root. Exit 1 if any integrity check fails (a wrong byte,
# an nginx worker not enrolled; the failures are on stderr).
set -u
usage() { echo "usage: bench/apps/run.sh BUILD_DIR [--quick] [--out DIR] [--apps \"redis nginx onesided iperf3 haproxy\"]" >&2; exit 2; }
case ${1:-} in -h|--help) sed -n '2,27p' "$0"; exit 0 ;; "") usage ;; esac
BUILD=$(cd "$1" 2>/dev/null && pwd) || { echo "bench/apps/run.sh: no build dir '$1'" >&2; exit 2; }
shift
QUICK=0 REPS=3 OUT=$BUILD/bench APPS="redis nginx onesided iperf3 haproxy"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 REPS=1 ;;
	--out) [ $# -ge 2 ] || usage; OUT=$2; shift ;;
	--apps) [ $# -ge 2 ] || usage; APPS=$2; shift ;;
	-h|--help) sed -n '2,27p' "$0"; exit 0 ;;
	*) echo "bench/apps/run.sh: unknown option '$1'" >&2; usage ;;
	esac
	shift
done
APPS_DIR=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" != 0 ]; then
	echo "bench/apps/run.sh: loading BPF needs root" >&2
	exit 1
fi
for t in redis-server redis-benchmark redis-cli nginx wrk iperf3 haproxy curl jq unshare ss; do
	command -v $t >/dev/null || { echo "bench/apps/run.sh: $t is missing (make deps)" >&2; exit 1; }
done
for f in fastlocal libfastlocal.so; do
	[ -e "$BUILD/$f" ] || { echo "bench/apps/run.sh: $BUILD/$f is missing (make)" >&2; exit 1; }
done

# A private network namespace: Tcp OutSegs then counts this run's segments
# only, not those of everything else on the host; ports are all free too.
if [ -z "${FL_APPS_NETNS:-}" ]; then
	q=""
	[ $QUICK = 1 ] && q=--quick
	FL_APPS_NETNS=1 exec unshare -n sh "$0" "$BUILD" $q --out "$OUT" --apps "$APPS"
fi
ip link set lo up

CLI=$BUILD/fastlocal
export FASTLOCAL_LIB="$BUILD/libfastlocal.so"
export FASTLOCAL_PIN_DIR="/sys/fs/bpf/fastlocal-apps-$$"
WORK=$(mktemp -d /tmp/fastlocal-apps.XXXXXX)
# nginx's worker runs as nobody, as deployments run it: it must reach the
# served files and the broker's socket in here.
chmod 0755 "$WORK"
# The broker of this run: its own socket, serving this run's pin dir. The
# shims find it through FASTLOCAL_BROKER; processes that are not root (the
# nginx worker) enroll through it.
export FASTLOCAL_BROKER="$WORK/broker.sock"
STEP=0 START=$(date +%s)
. "$APPS_DIR/common.sh"
. "$APPS_DIR/redis.sh"
. "$APPS_DIR/nginx.sh"
. "$APPS_DIR/iperf3.sh"
. "$APPS_DIR/haproxy.sh"
. "$APPS_DIR/onesided.sh"

cleanup() {
	stop_servers
	stop_broker
	"$CLI" unload >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'log interrupted; exit 130' INT TERM
"$CLI" load >/dev/null || exit 1
start_broker || exit 1
mkdir -p "$OUT"
: >"$WORK/raw.txt"
: >"$WORK/integrity.txt"

# Progress: measurements per repetition and mode, per app.
STEPS=0
for a in $APPS; do
	case $a in
	redis) STEPS=$((STEPS + 4)) ;;
	nginx) STEPS=$((STEPS + 6)) ;;
	onesided) STEPS=$((STEPS + 5)) ;;
	iperf3 | haproxy) STEPS=$((STEPS + 2)) ;;
	*) echo "bench/apps/run.sh: unknown app '$a'" >&2; exit 2 ;;
	esac
done
STEPS=$((STEPS * REPS * 2))
log "$APPS; $REPS repetition(s); $(nproc) CPUs, Linux $(uname -r); pin dir $FASTLOCAL_PIN_DIR"

for a in $APPS; do
	log "--- $a"
	if ! "${a}_main"; then
		ifail "$a" "setup" shim "$a could not be set up (see the messages above)"
		stop_servers
	fi
done
log "done in $(($(date +%s) - START)) s"
sh "$APPS_DIR/report.sh" "$WORK" "$OUT" "$REPS"
