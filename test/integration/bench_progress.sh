#!/bin/sh
# bench_progress.sh - bench/run.sh's progress (bench/progress.sh) draws a
# bar with carriage returns only on a terminal; into a file or a pipe it
# writes one plain line per step, with no \r to garble a log.
. "$FL_TEST_TOP/test/lib/fltest.sh"

# steps N: N progress steps of a 4-step run, stderr to where the caller says.
steps() {
	sh -c '. "$0"; total=400; work=0; start=$(date +%s); rep=1; REPS=1; i=0
		while [ $i -lt "$1" ]; do progress 0.9 "step $i"; i=$((i + 1)); done
		progress_end' "$FL_TEST_TOP/bench/progress.sh" "$1"
}

plain_lines_when_not_a_terminal() {
	steps 4 2>"$T_TMP/err" </dev/null >/dev/null || t_fail "the progress steps failed" || return 1
	if grep -q "$(printf '\r')" "$T_TMP/err"; then
		t_fail "a carriage return in non-terminal output: $(od -c "$T_TMP/err" | head -n 3)"
		return 1
	fi
	n=$(wc -l <"$T_TMP/err")
	[ "$n" = 4 ] || t_fail "expected 4 lines, one per step, got $n: $(cat "$T_TMP/err")" || return 1
	tail -n 1 "$T_TMP/err" | grep -q '^bench: 100%.*rep 1/1 step 3$' ||
		t_fail "last line: $(tail -n 1 "$T_TMP/err")" || return 1
	echo "  last line: $(tail -n 1 "$T_TMP/err")"
}

a_bar_on_a_terminal() {
	# script(1) gives the steps a terminal for stderr.
	script -qec "sh -c '. \"$FL_TEST_TOP/bench/progress.sh\"; total=400; work=0; start=\$(date +%s); rep=1; REPS=1; progress 0.9 a; progress 0.9 b; progress_end'" \
		/dev/null >"$T_TMP/tty" 2>&1 </dev/null || t_fail "script(1) failed" || return 1
	[ "$(grep -c "$(printf '\r')bench: \[" "$T_TMP/tty")" -ge 1 ] ||
		t_fail "no carriage-return bar on a terminal: $(od -c "$T_TMP/tty" | head -n 3)"
}

t_run "bench progress: plain lines without carriage returns when stderr is not a terminal" plain_lines_when_not_a_terminal
t_run "bench progress: a redrawn bar on a terminal" a_bar_on_a_terminal
t_done
