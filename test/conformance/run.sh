#!/bin/sh
# test/conformance/run.sh BUILD_DIR [--no-fixes] [SCENARIO...]
#
# The differential conformance suite: runs every scenario (or the ones
# named) over IPv4 and IPv6, once on plain TCP and once with the shim
# preloaded into both ends, and compares what they print. A difference
# (seen twice: a pair that differs runs again, see one()), a scenario that
# cannot run, or (for scenarios marked "redirects") a shim run that
# redirected nothing, is a FAIL line naming the scenario and the
# difference. Needs fastlocal loaded in $FASTLOCAL_PIN_DIR (test/run.sh
# does that), and no other scenario run in that pin dir at the same time:
# the "redirects" check reads its global redirected_bytes counter.
# --no-fixes runs the shim with FASTLOCAL_TCP_COMPAT=off, which disables
# its TCP-conformance fixes, to show what they fix.
set -u
BUILD=${1:?usage: test/conformance/run.sh BUILD_DIR [--no-fixes] [SCENARIO...]}
shift
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
BIN=$BUILD/conformance
CLI=$BUILD/fastlocal
COMPAT=on
if [ "${1:-}" = --no-fixes ]; then
	COMPAT=off
	shift
fi
export FASTLOCAL_LIB="${FASTLOCAL_LIB:-$BUILD/libfastlocal.so}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Each run of a scenario is ended after TIMEOUT s (then killed 5 s later,
# with every process it forked: timeout puts it in a process group of its
# own and signals the group), and reported as timed out.
TIMEOUT=${FL_CONFORMANCE_TIMEOUT:-60}
# FL_CONFORMANCE_LABEL prefixes every line (a pass in another mode).
# FL_CONFORMANCE_REDIRECT_CHECK=0 drops the "redirects" requirement: for
# looking into a failure by hand only; no pass of make test sets it.
LABEL=${FL_CONFORMANCE_LABEL:-}
CHECK_REDIRECT=${FL_CONFORMANCE_REDIRECT_CHECK:-1}
# FL_CONFORMANCE_FAMILIES: "4 6" (default), or one of them.

if [ ! -x "$BIN" ]; then
	echo "FAIL: conformance: $BIN was not built"
	exit 1
fi
# IMPORTANT: the warm-up (conformance.h): with deferred enrollment each
# connection first moves the threshold's worth of bytes each way, so that
# the scenario runs on an enrolled, redirecting pair; without it most
# scenarios would run on plain TCP from start to end and prove nothing.
# The threshold as the shim will see it (environment, else the file, else
# the default); both runs of a scenario get the same warm-up.
if [ -z "${FL_SC_WARMUP:-}" ]; then
	FL_SC_WARMUP=$("$CLI" config --json 2>/dev/null | jq -r .settings.enroll_after.value)
	case $FL_SC_WARMUP in
	'' | *[!0-9]*)
		echo "FAIL: conformance: cannot read enroll_after from '$CLI config --json'"
		exit 1
		;;
	esac
fi
export FL_SC_WARMUP
if [ $# -gt 0 ]; then
	list=""
	for s in "$@"; do list="$list$("$BIN" list | grep "^$s ")
"; done
else
	list=$("$BIN" list)
fi

redirected() { "$CLI" status --json 2>/dev/null | jq -r .redirected_bytes; }

# pair NAME FAMILY DIR: the plain TCP run and the shim run of one scenario,
# at once: the plain one touches no counter of the pin dir, and both mostly
# wait on timers. Sets pst, sst (exit statuses) and r0, r1 (redirected
# bytes before and after).
pair() {
	r0=$(redirected)
	timeout -k 5 "$TIMEOUT" env -u LD_PRELOAD "$BIN" "$1" "$2" \
		>"$3/plain" 2>"$3/plain.err" </dev/null &
	p1=$!
	timeout -k 5 "$TIMEOUT" env FASTLOCAL_TCP_COMPAT="$COMPAT" LD_PRELOAD="${FL_TEST_ASAN_RT:-}" \
		"$CLI" run -- "$BIN" "$1" "$2" >"$3/shim" 2>"$3/shim.err" </dev/null &
	p2=$!
	# Each timeout leads a process group of its own, outside ours: an
	# interrupted pass ends them itself (see the trap below).
	echo "$p1 $p2" >"$3/running"
	wait "$p2"
	sst=$?
	wait "$p1"
	pst=$?
	: >"$3/running"
	r1=$(redirected)
}

# one NAME FLAGS FAMILY DIR: one scenario in one family, its verdict on
# stdout.
# IMPORTANT: traces that differ are run again once. Many scenarios classify
# a wait against a timer (a 200 ms SO_RCVTIMEO, TCP_CORK's 200 ms), and a
# machine that stalls one of the two runs for that long (a busy CI host)
# makes them differ by when each was stalled, not by what they do: a
# difference in what the shim does shows again. The first difference is
# printed either way, under the verdict.
one() {
	label="$LABEL$1 (IPv$3)"
	again=""
	pair "$1" "$3" "$4"
	if [ $pst = 0 ] && [ $sst = 0 ] && ! cmp -s "$4/plain" "$4/shim"; then
		again=$(diff "$4/plain" "$4/shim" | head -12 | sed 's/^/    /')
		pair "$1" "$3" "$4"
	fi
	if [ $pst = 124 ] || [ $pst = 137 ]; then
		echo "FAIL: $label: timed out after $TIMEOUT s on plain TCP"
	elif [ $sst = 124 ] || [ $sst = 137 ]; then
		echo "FAIL: $label: timed out after $TIMEOUT s under the shim (plain TCP: done)"
		diff "$4/plain" "$4/shim" | head -8 | sed 's/^/    /'
	elif [ $pst != 0 ]; then
		echo "FAIL: $label: does not run on plain TCP (status $pst): $(head -c 300 "$4/plain.err")"
	elif [ $sst != 0 ]; then
		echo "FAIL: $label: the shim run exited with status $sst (plain: 0): $(head -c 300 "$4/shim.err")"
		diff "$4/plain" "$4/shim" | head -8 | sed 's/^/    /'
	elif ! cmp -s "$4/plain" "$4/shim"; then
		echo "FAIL: $label: differs from TCP (< TCP, > fastlocal), twice:"
		diff "$4/plain" "$4/shim" | head -12 | sed 's/^/    /'
	elif case $2 in redirects*) [ "$CHECK_REDIRECT" = 1 ] && [ "$((r1 - r0))" -le 0 ] ;; *) false ;; esac; then
		echo "FAIL: $label: identical to TCP, but nothing was redirected"
	else
		echo "PASS: $label ($(wc -l <"$4/plain") trace lines)${again:+; the first run differed, the second matched}"
	fi
	[ -z "$again" ] || printf '  the first run (< TCP, > fastlocal):\n%s\n' "$again"
}

# The runs: "INDEX NAME FLAGS FAMILY" a line, in the order of the report
# (FLAGS as one word: "redirects,slow").
i=0
printf '%s\n' "$list" | while read -r name flags; do
	[ -n "$name" ] || continue
	for fam in ${FL_CONFORMANCE_FAMILIES:-4 6}; do
		i=$((i + 1))
		echo "$i $name $(echo "$flags" | tr ' ' ,) $fam"
	done
done >"$TMP/runs"

# IMPORTANT: FL_CONFORMANCE_JOBS shards (1) run at once, each in a pin dir
# of its own: the "redirects" check reads a global counter, which another
# shard's runs in the same pin dir would move. The first shard uses
# $FASTLOCAL_PIN_DIR; the others load $FASTLOCAL_PIN_DIR-cK for the pass.
JOBS=${FL_CONFORMANCE_JOBS:-1}
case $JOBS in '' | *[!0-9]* | 0) JOBS=1 ;; esac
BASE_PIN=${FASTLOCAL_PIN_DIR:-}
extra=""
shards=""
unload_extra() {
	for p in $extra; do "$CLI" unload --pin-dir "$p" >/dev/null 2>&1; done
	rm -rf "$TMP"
}
stop() {
	# shellcheck disable=SC2086 # pid lists
	[ -z "$shards" ] || kill -TERM $shards 2>/dev/null
	for f in "$TMP"/s*/running; do
		# shellcheck disable=SC2046 # two pids
		[ -s "$f" ] && kill -TERM $(cat "$f") 2>/dev/null
	done
	wait
	exit 130
}
trap unload_extra EXIT
trap stop INT TERM HUP
k=2
while [ "$k" -le "$JOBS" ]; do
	if [ -z "$BASE_PIN" ] || ! "$CLI" load --pin-dir "$BASE_PIN-c$k" >"$TMP/load" 2>&1; then
		echo "FAIL: conformance: cannot load a pin dir for shard $k: $(head -c 300 "$TMP/load")"
		exit 1
	fi
	extra="$extra $BASE_PIN-c$k"
	k=$((k + 1))
done
k=1
while [ "$k" -le "$JOBS" ]; do
	mkdir "$TMP/s$k"
	(
		[ "$k" = 1 ] || export FASTLOCAL_PIN_DIR="$BASE_PIN-c$k"
		# Round robin: run i goes to shard (i - 1) % JOBS + 1.
		while read -r idx name flags fam; do
			[ $(((idx - 1) % JOBS + 1)) = "$k" ] || continue
			one "$name" "$flags" "$fam" "$TMP/s$k" | sed "s/^/$idx	/"
		done <"$TMP/runs" >"$TMP/out.$k"
	) &
	shards="$shards $!"
	k=$((k + 1))
done
wait
# Every line in the order of the runs (sort -s keeps a run's lines in order).
cat "$TMP"/out.* | sort -s -n -k1,1 | cut -f2-
