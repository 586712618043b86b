#!/bin/sh
# test/conformance/run.sh BUILD_DIR [--no-fixes] [SCENARIO...]
#
# The differential conformance suite: runs every scenario (or the ones
# named) over IPv4 and IPv6, once on plain TCP and once with the shim
# preloaded into both ends, and compares what they print. Any difference,
# a scenario that cannot run, or (for scenarios marked "redirects") a shim
# run that redirected nothing, is a FAIL line naming the scenario and the
# difference. Needs fastlocal loaded in $FASTLOCAL_PIN_DIR (test/run.sh
# does that). --no-fixes runs the shim with FASTLOCAL_TCP_COMPAT=off, which
# disables its TCP-conformance fixes, to show what they fix.
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
TIMEOUT=${FL_CONFORMANCE_TIMEOUT:-60}
# FL_CONFORMANCE_LABEL prefixes every line (a second run in another mode);
# FL_CONFORMANCE_REDIRECT_CHECK=0 drops the "redirects" requirement, for a
# mode in which short scenarios may end before they are enrolled.
LABEL=${FL_CONFORMANCE_LABEL:-}
CHECK_REDIRECT=${FL_CONFORMANCE_REDIRECT_CHECK:-1}
# FL_CONFORMANCE_FAMILIES: "4 6" (default), or one of them.

if [ ! -x "$BIN" ]; then
	echo "FAIL: conformance: $BIN was not built"
	exit 1
fi
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
		env -u LD_PRELOAD timeout "$TIMEOUT" "$BIN" "$name" "$fam" >"$TMP/plain" 2>"$TMP/plain.err"
		pst=$?
		r0=$(redirected)
		FASTLOCAL_TCP_COMPAT=$COMPAT LD_PRELOAD="${FL_TEST_ASAN_RT:-}" \
			timeout "$TIMEOUT" "$CLI" run -- "$BIN" "$name" "$fam" >"$TMP/shim" 2>"$TMP/shim.err"
		sst=$?
		r1=$(redirected)
		if [ $pst != 0 ]; then
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
