#!/bin/sh
# bench/demo.sh BUILD_DIR - "make demo": one loopback stream over plain TCP,
# then the same unmodified program under "fastlocal run", side by side.
# DEMO_SIZE (bytes per write, default 1024) and DEMO_SECONDS (default 2).
set -eu
BUILD=${1:-build}
CLI=$BUILD/fastlocal
BENCH=$BUILD/fl-bench
SIZE=${DEMO_SIZE:-1024}
SECS=${DEMO_SECONDS:-2}
export FASTLOCAL_PIN_DIR="/sys/fs/bpf/fastlocal-demo-$$"
export FASTLOCAL_LIB="$BUILD/libfastlocal.so"

if [ "$(id -u)" != 0 ]; then
	echo "make demo: loading BPF needs root; run 'sudo make demo'" >&2
	exit 1
fi
trap '"$CLI" unload >/dev/null 2>&1' EXIT INT TERM
"$CLI" load

field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

echo "streaming ${SECS}s of $SIZE-byte writes over 127.0.0.1, every byte verified..."
plain=$("$BENCH" stream --split --size "$SIZE" --seconds "$SECS")
r0=$("$CLI" status --json | jq .redirected_bytes)
fast=$("$CLI" run -- "$BENCH" stream --split --size "$SIZE" --seconds "$SECS")
r1=$("$CLI" status --json | jq .redirected_bytes)

printf '\n%-16s %14s %9s %9s %18s\n' transport bytes seconds MB/s "redirected bytes"
printf '%-16s %14s %9s %9s %18s\n' "plain TCP" "$(field "$plain" bytes)" \
	"$(field "$plain" seconds)" "$(field "$plain" mbps)" 0
printf '%-16s %14s %9s %9s %18s\n' "fastlocal run" "$(field "$fast" bytes)" \
	"$(field "$fast" seconds)" "$(field "$fast" mbps)" "$((r1 - r0))"
echo
if [ "$((r1 - r0))" -le 0 ]; then
	echo "make demo: nothing was redirected" >&2
	exit 1
fi
awk -v a="$(field "$fast" mbps)" -v b="$(field "$plain" mbps)" \
	'BEGIN { printf "fastlocal: %.1fx plain TCP; both streams byte-exact, the fastlocal one off the TCP stack.\n", a / b }'
echo
echo "what fastlocal saw ($CLI status):"
"$CLI" status | sed -n '/enrolled:/,$p'
