#!/bin/sh
# test/run.sh BUILD_DIR - runs every test against the real kernel.
#
# Loads fastlocal into a private pin dir (a developer's own load is never
# touched), runs the unit tests and every program and script in
# test/integration/, counts PASS:/FAIL: lines, unloads even on failure, and
# ends with "N passed, N failed". If BPF cannot be loaded the suite fails.
# FL_TEST_ONLY=REGEX runs only the tests whose name matches (while working
# on one test; "make test" always runs them all).
set -u
BUILD=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac

export FL_TEST_CLI="$BUILD/fastlocal"
export FL_TEST_LIB="$BUILD/libfastlocal.so"
export FL_TEST_BUILD="$BUILD"
export FL_TEST_TOP="$top"
export FASTLOCAL_PIN_DIR="${FL_TEST_PIN_DIR:-/sys/fs/bpf/fastlocal-test-$$}"
# The tests check the redirect path from a connection's first byte, so they
# enroll at connect/accept. Deferred enrollment, the default, has tests of
# its own (lazy_enroll.c, conformance_lazy.sh), which set this themselves.
export FASTLOCAL_ENROLL_AFTER=0
# No configuration file: a developer's /etc/fastlocal.conf must not change
# what the tests see (config.sh and config_select.c write their own).
export FASTLOCAL_CONF=""
# Under ASan a preloaded shim needs the ASan runtime ahead of it.
FL_TEST_ASAN_RT=""
case $BUILD in *-san) FL_TEST_ASAN_RT=$(${CC:-gcc} -print-file-name=libasan.so) ;; esac
export FL_TEST_ASAN_RT
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

passed=0
failed=0
log=$(mktemp)

cleanup() {
	"$FL_TEST_CLI" unload >/dev/null 2>&1
	rm -f "$log"
}
trap cleanup EXIT INT TERM HUP PIPE

echo "== fastlocal tests ($BUILD, pin dir $FASTLOCAL_PIN_DIR)"
if [ "$(id -u)" != 0 ]; then
	echo "FATAL: the tests load BPF programs and must run as root" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
if ! "$FL_TEST_CLI" load >"$log" 2>&1; then
	echo "FATAL: cannot load the BPF program; the suite cannot run:" >&2
	cat "$log" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

# selected NAME: true unless FL_TEST_ONLY is set and NAME does not match it.
selected() {
	[ -z "${FL_TEST_ONLY:-}" ] || printf '%s\n' "$1" | grep -Eq -- "$FL_TEST_ONLY"
}

# count OUTPUT_FILE EXIT_STATUS NAME: adds its PASS/FAIL lines to the totals.
count() {
	p=$(grep -c '^PASS: ' "$1")
	f=$(grep -c '^FAIL: ' "$1")
	if [ "$2" != 0 ] && [ "$f" = 0 ]; then
		echo "FAIL: $3 exited with status $2"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

# Tests are found from their sources, so a stale binary of a deleted test
# never runs and a test that failed to build is reported.
for src in test/unit/*.c; do
	name=unit_$(basename "$src" .c)
	t=$BUILD/test/$name
	selected "$name" || continue
	if [ ! -x "$t" ]; then
		echo "FAIL: $name was not built"
		failed=$((failed + 1))
		continue
	fi
	echo "-- $name"
	CMOCKA_MESSAGE_OUTPUT=stdout "$t" >"$log" 2>&1
	st=$?
	cat "$log"
	# cmocka: "[       OK ] name" / "[  FAILED  ] name"
	sed -n 's/^\[       OK \] \(.*\)/PASS: \1/p; s/^\[  FAILED  \] \([^0-9].*\)/FAIL: \1/p' "$log" >"$log.c"
	count "$log.c" "$st" "$name"
	rm -f "$log.c"
done

# C integration tests are ordinary socket programs: they run with the shim
# preloaded, exactly as a user's program would ("fastlocal run").
for src in test/integration/*.c test/integration/*.sh; do
	case $src in
	*.c) name=$(basename "$src" .c); t=$BUILD/test/$name ;;
	*) name=$(basename "$src"); t=$top/$src ;;
	esac
	selected "$name" || continue
	if [ ! -x "$t" ]; then
		echo "FAIL: $name was not built"
		failed=$((failed + 1))
		continue
	fi
	echo "-- $name"
	case $t in
	*.sh) "$t" >"$log" 2>&1 ;;
	*) LD_PRELOAD="$FL_TEST_ASAN_RT" FASTLOCAL_LIB="$FL_TEST_LIB" "$FL_TEST_CLI" run -- "$t" >"$log" 2>&1 ;;
	esac
	st=$?
	cat "$log"
	count "$log" "$st" "$name"
	# A test that unloaded must leave fastlocal loaded for the next one.
	"$FL_TEST_CLI" load >/dev/null 2>&1
done

if [ $((passed + failed)) = 0 ]; then
	echo "FAIL: no tests were found in $BUILD/test (build them with 'make test-build')"
	failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
