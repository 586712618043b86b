#!/bin/sh
# top_tmux.sh - "fastlocal top" is a live view that works inside tmux: it
# draws within the window, refreshes, follows a resize and quits on q,
# giving the terminal back.
. "$FL_TEST_TOP/test/lib/fltest.sh"

STREAM=$FL_TEST_BUILD/fl-stream
PRE=${FL_TEST_ASAN_RT:-}
export FASTLOCAL_LIB="$FL_TEST_LIB"
SOCK=$T_TMP/tmux.sock
T="tmux -S $SOCK"

# pane: the visible screen of the session, one line per row.
pane() {
	$T capture-pane -p -t fltop
}

# wait_for TEXT: up to 5 s for the pane to show TEXT.
wait_for() {
	i=0
	while [ $i -lt 50 ]; do
		pane | grep -qF -- "$1" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	t_fail "the pane never showed '$1'; it shows: $(pane | head -c 600)"
}

top_runs_refreshes_and_quits_in_tmux() {
	# A connection that moves bytes while top watches.
	LD_PRELOAD="$PRE" "$CLI" run -- "$STREAM" --bytes 8G --size 4096 >/dev/null 2>&1 &
	stream=$!
	$T -f /dev/null new-session -d -s fltop -x 150 -y 30 \
		"env FASTLOCAL_PIN_DIR=$FASTLOCAL_PIN_DIR LD_PRELOAD= $CLI top --interval 0.2; echo top-exited-\$?; sleep 30" ||
		{ kill $stream; t_fail "tmux cannot start"; return 1; }
	wait_for "fastlocal top - $FASTLOCAL_PIN_DIR" || { kill $stream; return 1; }
	wait_for " redir/" || { kill $stream; return 1; }
	first=$(pane | head -n 1)
	sleep 1.2
	second=$(pane | head -n 1)
	[ "$first" != "$second" ] || t_fail "the clock in the title did not move: '$first'" || { kill $stream; return 1; }
	long=$(pane | awk 'length > 150' | wc -l)
	[ "$long" = 0 ] || t_fail "$long lines are wider than the 150-column window" || { kill $stream; return 1; }
	# A narrower window: lines are cut, never wrapped.
	$T resize-window -t fltop -x 70 -y 20
	sleep 0.6
	long=$(pane | awk 'length > 70' | wc -l)
	rows=$(pane | grep -c .)
	echo "  after resize to 70x20: $rows non-empty rows, $long wider than 70"
	[ "$long" = 0 ] || t_fail "after a resize to 70 columns, $long lines are wider" || { kill $stream; return 1; }
	[ "$rows" -le 20 ] || t_fail "after a resize to 20 rows, $rows rows are used" || { kill $stream; return 1; }
	$T send-keys -t fltop q
	wait_for "top-exited-0" || { kill $stream; return 1; }
	# q left the alternate screen: top's frame is gone from the pane.
	pane | grep -qF "fastlocal top - " && t_fail "the frame is still on the screen after q" && { kill $stream; return 1; }
	kill $stream
	wait $stream 2>/dev/null
	$T kill-server 2>/dev/null
	return 0
}

top_once_needs_no_terminal() {
	t_expect_rc 0 "$CLI" top --once --interval 0.2 </dev/null || return 1
	grep -q '^fastlocal top - ' "$T_TMP/out" || t_fail "no title: $(head -c 300 "$T_TMP/out")"
}

t_run "top runs, refreshes, follows a resize and quits on q inside tmux" top_runs_refreshes_and_quits_in_tmux
t_run "top --once prints one frame without a terminal" top_once_needs_no_terminal
t_done
