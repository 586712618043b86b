#!/bin/sh
# test/run.sh BUILD_DIR - runs every test against the real kernel.
#
# Runs the unit tests and every program and script in test/integration/,
# counts their PASS:/FAIL: lines, and ends with "N passed, N failed". If BPF
# cannot be loaded the suite fails. FL_TEST_ONLY=REGEX runs only the tests
# whose name matches (while working on one test; "make test" runs them all).
#
# The configuration is the default one: every FASTLOCAL_* variable of the
# caller is dropped and no configuration file is read (FASTLOCAL_CONF=""),
# so a developer's environment or /etc/fastlocal.conf cannot change what
# the tests see. A test that needs another setting declares it in its own
# source, on a line of its own, which this runner reads and applies to
# that test only:
#
#   /* fl-test-env: FASTLOCAL_ENROLL_AFTER=0 */     (C; "# ..." in a script)
#   /* fl-test-timeout: 600 */                      seconds (default 300)
#   /* fl-test-alone: why */                        nothing else runs meanwhile
#   /* fl-test-weight: 70 */                        rough seconds, to start it early
#   /* fl-test-not-under-san: why */                 normal build only
#
# (fl-test-env values are VAR=VALUE words without spaces.) The tests that
# keep FASTLOCAL_ENROLL_AFTER=0, enrollment at connect/accept, and why:
#   early_send.c  docs/kernel.md#reorder for a client enrolled at
#                 connect(): it counts exactly the bytes sent before
#                 accept() and those held back by the ordering gate, which
#                 only exist in that mode;
#   fallbacks.c   each fallback reason at the moment of enrollment, most
#                 through the explicit fastlocal_enroll_fd() on a socket
#                 the shim enrolls at once, and the before-accept reasons;
#   conformance_connect.sh  the conformance suite in that mode, an extra
#                 pass beside the default one (conformance.sh);
#   containers.c, netns.c  pairing across namespaces proved by exact
#                 counts of redirected bytes and Tcp OutSegs, which need
#                 both ends in the sockhash from the first byte (a
#                 threaded stream's start in the default configuration is
#                 stream.c's and lifecycle.c's).
# Every other test runs in the default configuration, where a connection
# enrolls once it has moved FASTLOCAL_ENROLL_AFTER (4096) bytes.
#
# fl-test-not-under-san keeps a test out of the ASan/UBSan pass (build-san),
# with a line saying so; it still runs in the normal pass. Only the two extra
# conformance passes in non-default enrollment modes declare it: the same
# scenarios and the same shim code run under ASan in the default mode
# (conformance.sh), and the extra passes under ASan took make test past
# ten minutes.
#
# Tests run in parallel, FL_TEST_JOBS (3) at a time. Each job slot loads
# fastlocal into a pin dir of its own (FL_TEST_PIN_DIR, default
# /sys/fs/bpf/fastlocal-test-PID, plus "-N"), because many tests read the
# global counters of their pin dir (status --json): two tests in one pin
# dir at once would see each other's bytes. Everything else a test uses is
# its own (namespaces, broker sockets and temporary files are named after
# its pid, tmux runs on a private socket); a test that depends on something
# host-wide declares fl-test-alone and runs after the others, by itself.
# Each test's output is kept and printed whole when it ends.
#
# No test can hang the suite: each runs under timeout(1) in a process group
# of its own; at its limit the group gets SIGTERM, then SIGKILL 10 s later,
# and the test gets a line "FAIL: NAME timed out after N s". Whatever it
# left running in its group is killed when it ends.
set -u
BUILD=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac

# The default configuration: nothing of the caller's.
for v in $(env | sed -n 's/^\(FASTLOCAL[A-Z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
export FASTLOCAL_CONF=""
# Nor the make that ran us: a test that runs make checks what a user's own
# "make ..." prints, and "make -C DIR test" would pass its -w (the
# "Entering directory" lines) down through MAKEFLAGS.
unset MAKEFLAGS MFLAGS MAKELEVEL
export FL_TEST_CLI="$BUILD/fastlocal"
export FL_TEST_LIB="$BUILD/libfastlocal.so"
export FL_TEST_BUILD="$BUILD"
export FL_TEST_TOP="$top"
PIN_BASE=${FL_TEST_PIN_DIR:-/sys/fs/bpf/fastlocal-test-$$}
JOBS=${FL_TEST_JOBS:-3}
case $JOBS in '' | *[!0-9]* | 0) JOBS=1 ;; esac
TIMEOUT_DEFAULT=300
# Under ASan a preloaded shim needs the ASan runtime ahead of it.
FL_TEST_ASAN_RT=""
case $BUILD in *-san) FL_TEST_ASAN_RT=$(${CC:-gcc} -print-file-name=libasan.so) ;; esac
export FL_TEST_ASAN_RT
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

state=$(mktemp -d)
pins=""
k=1
while [ "$k" -le "$JOBS" ]; do
	pins="$pins $PIN_BASE-$k"
	k=$((k + 1))
done

# Ends the tests still running (their whole process groups, through their
# timeout), lets the job slots finish, unloads every pin dir.
stop_all() {
	: >"$state/stop"
	for f in "$state"/running.*; do
		[ -e "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null
	done
}
cleanup() {
	# The slots' pin dirs, and any a killed conformance pass left for its
	# shards (PIN_BASE-N-cK, test/conformance/run.sh).
	for p in $pins "$PIN_BASE"-*-c*; do
		[ -e "$p" ] && "$FL_TEST_CLI" unload --pin-dir "$p" >/dev/null 2>&1
	done
	rm -rf "$state"
}
trap cleanup EXIT
trap 'stop_all; wait; echo "interrupted"; exit 130' INT TERM HUP

echo "== fastlocal tests ($BUILD, $JOBS at a time, pin dirs $PIN_BASE-N)"
if [ "$(id -u)" != 0 ]; then
	echo "FATAL: the tests load BPF programs and must run as root" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
# The loads of the job slots, at once (each waits on the kernel ~1 s).
k=1
for p in $pins; do
	("$FL_TEST_CLI" load --pin-dir "$p" >"$state/load.$k" 2>&1 || : >"$state/loadfail.$k") &
	k=$((k + 1))
done
wait
for f in "$state"/loadfail.*; do
	[ -e "$f" ] || continue
	echo "FATAL: cannot load the BPF program; the suite cannot run:" >&2
	cat "$state/load.${f##*.}" >&2
	echo "0 passed, 1 failed"
	exit 1
done

# selected NAME: true unless FL_TEST_ONLY is set and NAME does not match it.
selected() {
	[ -z "${FL_TEST_ONLY:-}" ] || printf '%s\n' "$1" | grep -Eq -- "$FL_TEST_ONLY"
}

# decl FILE KEY: the values of FILE's "fl-test-KEY:" lines, on one line.
# Only a line that is nothing but the declaration counts (a comment of its
# own), so prose that mentions one does not.
decl() {
	sed -n "s@^[[:space:]]*\(/\*\|//\|#\)[[:space:]]*fl-test-$2:[[:space:]]*\(.*\)\$@\2@p" "$1" |
		sed 's@[[:space:]]*\*/[[:space:]]*$@@' | tr '\n' ' ' | sed 's/[[:space:]]*$//'
}

# The queue: "INDEX WEIGHT ALONE KIND NAME PATH" a line. Tests are found from
# their sources, so a stale binary of a deleted test never runs and a test
# that failed to build is reported.
n=0
for src in test/unit/*.c test/integration/*.c test/integration/*.sh; do
	[ -e "$src" ] || continue
	case $src in
	test/unit/*) kind=unit; name=unit_$(basename "$src" .c); t=$BUILD/test/$name ;;
	*.c) kind=c; name=$(basename "$src" .c); t=$BUILD/test/$name ;;
	*) kind=script; name=$(basename "$src"); t=$top/$src ;;
	esac
	selected "$name" || continue
	case $BUILD in *-san)
		why=$(decl "$src" not-under-san)
		if [ -n "$why" ]; then
			echo "not run under ASan/UBSan: $name ($why)"
			continue
		fi ;;
	esac
	n=$((n + 1))
	w=$(decl "$src" weight)
	case $w in '' | *[!0-9]*) w=1 ;; esac
	alone=0
	[ -n "$(decl "$src" alone)" ] && alone=1
	echo "$n $w $alone $kind $name $src $t" >>"$state/all"
done
if [ "$n" = 0 ]; then
	echo "FAIL: no tests were found (FL_TEST_ONLY='${FL_TEST_ONLY:-}')"
	echo "0 passed, 1 failed"
	exit 1
fi
# Longest first (LPT): the heavy ones do not end up last on one slot.
sort -k2,2nr -k1,1n "$state/all" | awk '$3 == 0' >"$state/queue"
sort -k1,1n "$state/all" | awk '$3 == 1' >"$state/queue.alone"

# run_test SLOT INDEX KIND NAME SRC BIN: one test; its output is kept in a
# file and printed whole at the end, its counts go to result.INDEX.
run_test() {
	# (Each slot is a process of its own: these variables are its own.)
	slot=$1 idx=$2 kind=$3 name=$4 src=$5 t=$6
	pin=$PIN_BASE-$slot out=$state/out.$idx cnt=$state/counted.$idx
	st=0 secs=0

	: >"$out"
	if [ ! -x "$t" ]; then
		echo "FAIL: $name was not built" >"$out"
	else
		tmo=$(decl "$src" timeout)
		case $tmo in '' | *[!0-9]*) tmo=$TIMEOUT_DEFAULT ;; esac
		tenv=$(decl "$src" env)
		# shellcheck disable=SC2086 # tenv: VAR=VALUE words
		case $kind in
		unit) set -- env CMOCKA_MESSAGE_OUTPUT=stdout $tenv "$t" ;;
		# C integration tests are ordinary socket programs: they run with
		# the shim preloaded, exactly as a user's program would.
		c) set -- env LD_PRELOAD="$FL_TEST_ASAN_RT" FASTLOCAL_LIB="$FL_TEST_LIB" \
			FASTLOCAL_PIN_DIR="$pin" $tenv "$FL_TEST_CLI" run -- "$t" ;;
		*) set -- env FASTLOCAL_PIN_DIR="$pin" $tenv "$t" ;;
		esac
		t0=$(date +%s)
		# IMPORTANT: timeout makes itself the leader of a new process
		# group and signals the whole group at the limit, so the servers
		# and children a test forked end with it.
		timeout -k 10 "$tmo" "$@" >"$out" 2>&1 </dev/null &
		tpid=$!
		echo "$tpid" >"$state/running.$slot"
		wait "$tpid"
		st=$?
		rm -f "$state/running.$slot"
		secs=$(($(date +%s) - t0))
		if kill -KILL "-$tpid" 2>/dev/null; then
			echo "  (processes it left running were killed)" >>"$out"
		fi
		if [ "$st" = 124 ] || { [ "$st" = 137 ] && [ "$secs" -ge "$tmo" ]; }; then
			echo "FAIL: $name timed out after $tmo s" >>"$out"
		fi
		# A test that unloaded must leave fastlocal loaded for the next one.
		"$FL_TEST_CLI" load --pin-dir "$pin" >/dev/null 2>&1
	fi
	if [ "$kind" = unit ]; then
		# cmocka: "[       OK ] name" / "[  FAILED  ] name"
		sed -n 's/^\[       OK \] \(.*\)/PASS: \1/p
			s/^\[  FAILED  \] \([^0-9].*\)/FAIL: \1/p
			/^FAIL: /p' "$out" >"$cnt"
	else
		cp "$out" "$cnt"
	fi
	p=$(grep -c '^PASS: ' "$cnt")
	f=$(grep -c '^FAIL: ' "$cnt")
	if [ "$st" != 0 ] && [ "$f" = 0 ]; then
		echo "FAIL: $name exited with status $st" >>"$out"
		f=1
	fi
	echo "$p $f" >"$state/result.$idx"
	{
		echo "-- $name ($secs s)"
		cat "$out"
	} >"$state/block.$idx"
	flock "$state/print.lock" cat "$state/block.$idx"
}

# slot K QUEUE: takes the next test nobody took yet (mkdir is atomic), until
# none is left or the suite is stopped.
slot() {
	while read -r idx w alone kind name src t; do
		[ -e "$state/stop" ] && break
		mkdir "$state/claim.$idx" 2>/dev/null || continue
		run_test "$1" "$idx" "$kind" "$name" "$src" "$t"
	done <"$2"
}

k=1
while [ "$k" -le "$JOBS" ]; do
	slot "$k" "$state/queue" &
	k=$((k + 1))
done
wait
# The tests that must be alone, one after another in the first slot's pin
# dir, the others unloaded (a load's sockops sees every connection).
if [ -s "$state/queue.alone" ] && [ ! -e "$state/stop" ]; then
	k=1
	for p in $pins; do
		[ "$k" = 1 ] || "$FL_TEST_CLI" unload --pin-dir "$p" >/dev/null 2>&1
		k=$((k + 1))
	done
	slot 1 "$state/queue.alone"
fi

passed=0
failed=0
for f in "$state"/result.*; do
	[ -e "$f" ] || continue
	read -r p fl <"$f"
	passed=$((passed + p))
	failed=$((failed + fl))
done
# IMPORTANT: CI keeps only the end of what the suite printed, so the
# failures are repeated here, each with its FAIL lines and the last lines
# of its output: the summary names what failed without the whole log.
# FL_TEST_RECAP=FILE: the recap is appended there instead (make test prints
# both suites' recaps after the second suite).
recap() {
	[ "$failed" = 0 ] && return
	echo "== what failed in test/run.sh ${BUILD##*/}"
	for f in "$state"/result.*; do
		[ -e "$f" ] || continue
		read -r p fl <"$f"
		[ "$fl" = 0 ] && continue
		idx=${f##*.}
		head -n 1 "$state/block.$idx"
		# (with the indented lines under each: conformance's diffs)
		awk '/^FAIL: /{p=1; c=0; print; next} p && /^[ \t]/ && c++ < 12 {print; next} {p=0}' \
			"$state/block.$idx" | head -n 40 |
			sed 's/^/  /'
		echo "  last lines of its output:"
		tail -n 12 "$state/out.$idx" | sed 's/^/  | /'
	done
}
if [ -n "${FL_TEST_RECAP:-}" ]; then recap >>"$FL_TEST_RECAP"; else recap; fi
if [ $((passed + failed)) = 0 ]; then
	echo "FAIL: no test printed a PASS or FAIL line (built with 'make test-build'?)"
	failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
