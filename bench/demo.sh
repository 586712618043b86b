#!/bin/sh
# bench/demo.sh BUILD_DIR - "make demo": one loopback stream over plain TCP,
# then the same unmodified program under "fastlocal run", side by side.
set -eu
BUILD=${1:-build}
CLI=$BUILD/fastlocal
STREAM=$BUILD/fl-stream
BYTES=${DEMO_BYTES:-512M}
SIZE=${DEMO_SIZE:-64K}
export FASTLOCAL_PIN_DIR="/sys/fs/bpf/fastlocal-demo-$$"

if [ "$(id -u)" != 0 ]; then
	echo "make demo: loading BPF needs root; run 'sudo make demo'" >&2
	exit 1
fi
trap '"$CLI" unload >/dev/null 2>&1' EXIT INT TERM
"$CLI" load

field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

echo "streaming $BYTES in $SIZE writes over 127.0.0.1, every byte verified..."
plain=$("$STREAM" --bytes "$BYTES" --size "$SIZE")
r0=$("$CLI" status --json | jq .redirected_bytes)
enr=$(FASTLOCAL_LIB="$BUILD/libfastlocal.so" "$CLI" run -- "$STREAM" --bytes "$BYTES" --size "$SIZE")
r1=$("$CLI" status --json | jq .redirected_bytes)

printf '\n%-22s %12s %9s %9s %18s\n' transport bytes seconds MB/s "redirected bytes"
printf '%-22s %12s %9s %9s %18s\n' "plain TCP" "$(field "$plain" bytes)" \
	"$(field "$plain" seconds)" "$(field "$plain" mbps)" 0
printf '%-22s %12s %9s %9s %18s\n' "fastlocal run" "$(field "$enr" bytes)" \
	"$(field "$enr" seconds)" "$(field "$enr" mbps)" "$((r1 - r0))"
echo
if [ "$((r1 - r0))" -le 0 ]; then
	echo "make demo: nothing was redirected" >&2
	exit 1
fi
echo "both streams byte-exact; under fastlocal the bytes bypassed the TCP stack."
