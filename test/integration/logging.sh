#!/bin/sh
# logging.sh - the shim's log: silent by default, FASTLOCAL_LOG levels,
# FASTLOCAL_LOG_FILE, the "fastlocal[pid]: " prefix, debug lines saying why
# each connection was or was not enrolled, the one warning of "fastlocal run"
# when acceleration is impossible, and "run --debug".
# (Rate limiting: log_ratelimit.c; crash backtraces: crash_backtrace.c.)
. "$FL_TEST_TOP/test/lib/fltest.sh"

STREAM=$FL_TEST_BUILD/fl-stream
# Under ASan the runtime has to come first in LD_PRELOAD; run appends after it.
PRE=${FL_TEST_ASAN_RT:-}
export FASTLOCAL_LIB="$FL_TEST_LIB"
unset FASTLOCAL_LOG FASTLOCAL_LOG_FILE FASTLOCAL_BACKTRACE FASTLOCAL_RUN
NOTHING=/sys/fs/bpf/fastlocal-test-$$-nothing # never loaded
WARN='acceleration is impossible'

# stream [ENV=VALUE...] [-- RUN_OPTIONS...]: fl-stream (2 MiB over a few
# connections) under "fastlocal run"; stdout and stderr in $T_TMP/out, err.
stream() {
	envs=""
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs="$envs $1"; shift; done
	[ "$1" = -- ] && shift
	# shellcheck disable=SC2086
	t_expect_rc 0 env LD_PRELOAD="$PRE" $envs "$CLI" run "$@" -- "$STREAM" --bytes 2M --conns ${CONNS:-2}
}

silent_by_default() {
	stream || return 1
	grep -q '^bytes=' "$T_TMP/out" || t_fail "fl-stream did not run: $(cat "$T_TMP/out")" || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "an accelerated run wrote on stderr: $(head -c 300 "$T_TMP/err")"
}

debug_says_why_enrolled() {
	stream FASTLOCAL_LOG=debug || return 1
	n=$(grep -c 'fd [0-9]*: enrolled (slot [0-9]*, port [0-9]* -> [0-9]*, budget [0-9]*)' "$T_TMP/err")
	[ "$n" = 4 ] || t_fail "expected 4 'enrolled' lines (2 connections, 2 ends), got $n: $(head -c 300 "$T_TMP/err")" || return 1
	echo "  $(head -n 1 "$T_TMP/err")"
}

debug_says_why_not() {
	stream FASTLOCAL_LOG=debug FASTLOCAL=0 || return 1
	n=$(grep -c 'stays on TCP: FASTLOCAL=0' "$T_TMP/err")
	t_check_eq "$n" 4 "'stays on TCP: FASTLOCAL=0' lines" || return 1
	stream FASTLOCAL_LOG=debug -- --pin-dir "$NOTHING" || return 1
	n=$(grep -c 'stays on TCP: fastlocal is not loaded$' "$T_TMP/err")
	[ "$n" = 4 ] || t_fail "expected 4 'stays on TCP: fastlocal is not loaded' lines, got $n: $(head -c 300 "$T_TMP/err")" || return 1
	echo "  $(grep -m1 'stays on TCP' "$T_TMP/err")"
}

# Each level shows its own lines and the more severe ones, never the others:
# with nothing loaded under "run" there is one warning and debug lines.
each_level() {
	for lv in off error warn info debug; do
		stream FASTLOCAL_LOG=$lv -- --pin-dir "$NOTHING" || return 1
		w=$(grep -c "$WARN" "$T_TMP/err")
		d=$(grep -c 'stays on TCP' "$T_TMP/err")
		case $lv in
		off | error) [ "$w" = 0 ] && [ "$d" = 0 ] ;;
		warn | info) [ "$w" = 1 ] && [ "$d" = 0 ] ;;
		debug) [ "$w" = 1 ] && [ "$d" = 4 ] ;;
		esac || t_fail "FASTLOCAL_LOG=$lv: $w warnings and $d debug lines: $(head -c 300 "$T_TMP/err")" || return 1
	done
}

# Every line is "fastlocal[PID]: ...", PID the process that wrote it.
prefix_is_fastlocal_pid() {
	t_expect_rc 0 env LD_PRELOAD="$PRE" FASTLOCAL_LOG=debug "$CLI" run -- \
		sh -c 'echo $$; exec "$0" --bytes 1M' "$STREAM" || return 1
	pid=$(head -n 1 "$T_TMP/out")
	[ -s "$T_TMP/err" ] || t_fail "no log lines" || return 1
	bad=$(grep -vc "^fastlocal\[$pid\]: " "$T_TMP/err")
	[ "$bad" = 0 ] || t_fail "$bad lines lack 'fastlocal[$pid]: ': $(head -c 300 "$T_TMP/err")"
}

log_file_gets_the_lines() {
	f=$T_TMP/shim.log
	stream FASTLOCAL_LOG=debug FASTLOCAL_LOG_FILE="$f" || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "stderr is not empty: $(head -c 300 "$T_TMP/err")" || return 1
	n1=$(grep -c ': enrolled (slot' "$f")
	[ "$n1" = 4 ] || t_fail "expected 4 'enrolled' lines in the file, got $n1" || return 1
	# Appended to, never truncated: a second process adds its lines.
	stream FASTLOCAL_LOG=debug FASTLOCAL_LOG_FILE="$f" || return 1
	n2=$(grep -c ': enrolled (slot' "$f")
	pids=$(sed 's/^fastlocal\[\([0-9]*\)\].*/\1/' "$f" | sort -u | wc -l)
	[ "$n2" = 8 ] && [ "$pids" = 2 ] || t_fail "after a second run: $n2 lines from $pids processes"
}

# An application that closes every descriptor (a daemon) or dup2()s onto
# ours does not lose the log: the shim's fd is its own.
log_file_survives_close_range() {
	f=$T_TMP/daemon.log
	t_expect_rc 0 env LD_PRELOAD="$PRE" FASTLOCAL_LOG=debug FASTLOCAL_LOG_FILE="$f" \
		"$CLI" run -- "$FL_TEST_BUILD/test/log_ratelimit" closeall || return 1
	n=$(grep -c ': enrolled (slot' "$f")
	[ "$n" = 4 ] || t_fail "expected 4 'enrolled' lines (2 before, 2 after closing every fd), got $n: $(cat "$T_TMP/err" "$f" | head -c 300)"
}

warns_once_under_run() {
	CONNS=50 stream -- --pin-dir "$NOTHING" || return 1
	n=$(grep -c "$WARN" "$T_TMP/err")
	all=$(wc -l <"$T_TMP/err")
	[ "$n" = 1 ] && [ "$all" = 1 ] || t_fail "50 connections gave $n warnings in $all lines: $(head -c 400 "$T_TMP/err")" || return 1
	echo "  $(cat "$T_TMP/err")"
}

no_warning_without_run() {
	# The shim preloaded by hand: acceleration was not asked for explicitly.
	t_expect_rc 0 env LD_PRELOAD="${PRE:+$PRE:}$FL_TEST_LIB" FASTLOCAL_PIN_DIR="$NOTHING" \
		"$STREAM" --bytes 1M --conns 5 || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "stderr without fastlocal run: $(head -c 300 "$T_TMP/err")"
}

run_debug_sets_the_environment() {
	t_expect_rc 0 env LD_PRELOAD="$PRE" "$CLI" run -- sh -c \
		'echo "$FASTLOCAL_RUN/${FASTLOCAL_LOG-unset}/${FASTLOCAL_BACKTRACE-unset}"' || return 1
	[ "$(cat "$T_TMP/out")" = "1/unset/unset" ] || t_fail "run exported: $(cat "$T_TMP/out")" || return 1
	t_expect_rc 0 env LD_PRELOAD="$PRE" "$CLI" run --debug -- sh -c \
		'echo "$FASTLOCAL_RUN/$FASTLOCAL_LOG/$FASTLOCAL_BACKTRACE"' || return 1
	[ "$(cat "$T_TMP/out")" = "1/debug/1" ] || t_fail "run --debug exported: $(cat "$T_TMP/out")" || return 1
	t_expect_rc 0 env LD_PRELOAD="$PRE" FASTLOCAL_LOG=warn "$CLI" run --debug -- sh -c \
		'echo "$FASTLOCAL_LOG"' || return 1
	[ "$(cat "$T_TMP/out")" = warn ] || t_fail "run --debug overrode FASTLOCAL_LOG=warn" || return 1
	t_expect_rc 0 "$CLI" run --help && grep -q -- '--debug' "$T_TMP/out" ||
		t_fail "run --help does not describe --debug"
}

# With run --debug a fallback's debug line names the application's call:
# connect() and accept4() when connections enroll there (by default it is
# the first read or write past the threshold).
debug_fallback_carries_the_caller() {
	stream FASTLOCAL_ENROLL_AFTER=0 -- --debug --pin-dir "$NOTHING" || return 1
	grep -q 'stays on TCP: fastlocal is not loaded; called from connect() <- .*fl_t_tcp_pairs+0x[0-9a-f]* (fl-stream) <- .*main+0x[0-9a-f]* (fl-stream)' "$T_TMP/err" ||
		t_fail "no fallback line with the caller: $(head -c 600 "$T_TMP/err")" || return 1
	grep -q 'called from accept4() <- ' "$T_TMP/err" || t_fail "the accept side has no caller"
	echo "  $(grep -m1 'called from connect' "$T_TMP/err")"
}

t_run "the shim is silent by default" silent_by_default
t_run "debug lines say why a connection was enrolled" debug_says_why_enrolled
t_run "debug lines say why a connection was not enrolled" debug_says_why_not
t_run "each FASTLOCAL_LOG level shows its lines and no others" each_level
t_run "every line is prefixed fastlocal[pid]" prefix_is_fastlocal_pid
t_run "FASTLOCAL_LOG_FILE gets the lines, appended" log_file_gets_the_lines
t_run "the log file survives an application closing every fd" log_file_survives_close_range
t_run "fastlocal run warns exactly once when nothing is loaded" warns_once_under_run
t_run "no warning when the shim was not asked for through run" no_warning_without_run
t_run "run exports FASTLOCAL_RUN, and --debug the log level and backtraces" run_debug_sets_the_environment
t_run "with run --debug a fallback line names the application's call" debug_fallback_carries_the_caller
t_done
