#!/bin/sh
# test/conformance/run.sh BUILD_DIR [--no-fixes] [SCENARIO...]
#
# The differential conformance suite: runs every scenario (or the ones
# named) over IPv4 and IPv6, once on plain TCP and once with the shim
# preloaded into both ends, and compares what they print. Any difference,
# a scenario that cannot run, or (for scenarios marked "redirects") a shim
# run that redirected nothing, is a FAIL line naming the scenario and the
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

printf '%s\n' "$list" | while read -r name flags; do
	[ -n "$name" ] || continue
	for fam in ${FL_CONFORMANCE_FAMILIES:-4 6}; do
		label="$LABEL$name (IPv$fam)"
		timeout -k 5 "$TIMEOUT" env -u LD_PRELOAD "$BIN" "$name" "$fam" \
			>"$TMP/plain" 2>"$TMP/plain.err" </dev/null
		pst=$?
		r0=$(redirected)
		timeout -k 5 "$TIMEOUT" env FASTLOCAL_TCP_COMPAT="$COMPAT" LD_PRELOAD="${FL_TEST_ASAN_RT:-}" \
			"$CLI" run -- "$BIN" "$name" "$fam" >"$TMP/shim" 2>"$TMP/shim.err" </dev/null
		sst=$?
		r1=$(redirected)
		if [ $pst = 124 ] || [ $pst = 137 ]; then
			echo "FAIL: $label: timed out after $TIMEOUT s on plain TCP"
		elif [ $sst = 124 ] || [ $sst = 137 ]; then
			echo "FAIL: $label: timed out after $TIMEOUT s under the shim (plain TCP: done)"
			diff "$TMP/plain" "$TMP/shim" | head -8 | sed 's/^/    /'
		elif [ $pst != 0 ]; then
			echo "FAIL: $label: does not run on plain TCP (status $pst): $(head -c 300 "$TMP/plain.err")"
		elif [ $sst != 0 ]; then
			echo "FAIL: $label: the shim run exited with status $sst (plain: 0): $(head -c 300 "$TMP/shim.err")"
			diff "$TMP/plain" "$TMP/shim" | head -8 | sed 's/^/    /'
		elif ! cmp -s "$TMP/plain" "$TMP/shim"; then
			echo "FAIL: $label: differs from TCP (< TCP, > fastlocal):"
			diff "$TMP/plain" "$TMP/shim" | head -12 | sed 's/^/    /'
		elif case $flags in redirects*) [ "$CHECK_REDIRECT" = 1 ] && [ "$((r1 - r0))" -le 0 ] ;; *) false ;; esac; then
			echo "FAIL: $label: identical to TCP, but nothing was redirected"
		else
			echo "PASS: $label ($(wc -l <"$TMP/plain") trace lines)"
		fi
	done
done
