#!/bin/sh
# bench/progress.sh - sourced by bench/run.sh: its progress line and ETA.
#
# On a terminal (stderr, [ -t 2 ]) one bar redrawn in place with carriage
# returns; anywhere else (a log file, CI, a pipe) one plain line per step,
# so that a log holds no \r-overwritten lines.
# The caller sets total (work units of the whole run), work=0,
# start=$(date +%s), rep and REPS.

hms() { if [ "$1" -ge 60 ]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi; }

progress() { # SECONDS_OF_THIS_RUN LABEL
	work=$((work + $(awk -v s="$1" 'BEGIN { printf "%d", (s + 0.1) * 100 }')))
	[ $work -le $total ] || work=$total
	el=$(($(date +%s) - start))
	pct=$((work * 100 / total))
	eta=$((el * (total - work) / work))
	if [ -t 2 ]; then
		bar=$(printf '%*s' $((pct / 5)) '' | tr ' ' '#')
		printf '\rbench: [%-20s] %3d%%  %s elapsed, about %s left  rep %d/%d %-32s' \
			"$bar" "$pct" "$(hms $el)" "$(hms $eta)" "$rep" "$REPS" "$2" >&2
	else
		printf 'bench: %3d%%  %s elapsed, about %s left  rep %d/%d %s\n' \
			"$pct" "$(hms $el)" "$(hms $eta)" "$rep" "$REPS" "$2" >&2
	fi
}

# Ends the bar's line (nothing to end when each step had a line of its own).
progress_end() {
	if [ -t 2 ]; then echo >&2; fi
}
