#!/bin/sh
# bench_apps_report.sh - bench/apps/report.sh on fixed records (no server
# runs): each issue-14 target is printed next to the measured ratio as met
# or missed, and that never changes the exit status; a failed integrity
# check (a wrong byte, an nginx worker that never enrolled) does.
. "$FL_TEST_TOP/test/lib/fltest.sh"

REPORT=$FL_TEST_TOP/bench/apps/report.sh

# records DIR: two repetitions of three rows; nginx -c 50 at 1.50x (met),
# redis GET -P 16 at 1.20x (missed), one-sided rr at 0.97x (missed by a
# hair: 0.98 is the target), and no row for the other targets.
records() {
	mkdir -p "$1"
	cat >"$1/raw.txt" <<'EOF'
nginx|1 KiB, wrk -c 50, keep-alive|rps|plain|1|1000|10|0|0
nginx|1 KiB, wrk -c 50, keep-alive|rps|shim|1|1400|1|5|0
nginx|1 KiB, wrk -c 50, keep-alive|rps|shim|2|1600|1|5|0
nginx|1 KiB, wrk -c 50, keep-alive|rps|plain|2|1000|10|0|0
redis|get -c 50 -P 16|rps|plain|1|1000|10|0|0
redis|get -c 50 -P 16|rps|shim|1|1200|1|5|0
onesided|64 B GET -c 50 -P 1, redis-server under the shim, client plain|rps|plain|1|1000|10|0|0
onesided|64 B GET -c 50 -P 1, redis-server under the shim, client plain|rps|shim|1|970|10|0|7
EOF
	cat >"$1/integrity.txt" <<'EOF'
nginx|1 KiB, wrk -c 50, keep-alive|plain|ok|wrk: no socket errors
nginx|1 KiB, wrk -c 50, keep-alive|shim|ok|wrk: no socket errors
nginx|worker (as nobody) enrolled|shim|ok|the broker enrolled the worker's sockets
EOF
}

# target_line FILE APP: the targets table's line for APP.
target_line() { grep "^| $2 | .* | >= " "$1"; }

targets_are_reported_never_failed() {
	records "$T_TMP/w"
	mkdir -p "$T_TMP/o"
	t_expect_rc 0 sh "$REPORT" "$T_TMP/w" "$T_TMP/o" 2 || return 1
	md=$T_TMP/o/apps.md
	target_line "$md" nginx | grep -qF '| >= 1.35x | 1.50x | met |' ||
		t_fail "nginx row: $(target_line "$md" nginx)" || return 1
	target_line "$md" redis | grep -qF '| >= 1.50x | 1.20x | missed |' ||
		t_fail "redis row: $(target_line "$md" redis)" || return 1
	target_line "$md" onesided | grep -qF '| >= 0.98x | 0.97x | missed |' ||
		t_fail "one-sided row: $(target_line "$md" onesided)" || return 1
	# Targets whose rows were not measured (redis SET, nginx -c 400) are left out.
	n=$(grep -c '| >= ' "$md")
	[ "$n" = 3 ] || t_fail "$n target lines, expected 3" || return 1
	csv=$T_TMP/o/apps-targets.csv
	grep -qx 'nginx,"1 KiB, wrk -c 50, keep-alive",1.35,1.50,met' "$csv" ||
		t_fail "apps-targets.csv: $(head -c 400 "$csv")" || return 1
	grep -qx 'redis,get -c 50 -P 16,1.5,1.20,missed' "$csv" ||
		t_fail "apps-targets.csv: $(head -c 400 "$csv")"
}

integrity_failure_fails_the_report() {
	records "$T_TMP/f"
	mkdir -p "$T_TMP/of"
	echo "nginx|worker (as nobody) enrolled|shim|FAIL|the broker enrolled 0 of the nginx worker's sockets" >>"$T_TMP/f/integrity.txt"
	t_expect_rc 1 sh "$REPORT" "$T_TMP/f" "$T_TMP/of" 2 || return 1
	grep -qF "INTEGRITY CHECKS FAILED" "$T_TMP/err" || t_fail "stderr: $(head -c 400 "$T_TMP/err")" || return 1
	grep -qF "| nginx | worker (as nobody) enrolled | | | | | | | FAIL (fastlocal): the broker enrolled 0" "$T_TMP/of/apps.md" ||
		t_fail "apps.md lacks the failure: $(grep worker "$T_TMP/of/apps.md")"
}

t_run "bench/apps/report.sh prints each target beside its ratio, met or missed, exit 0" targets_are_reported_never_failed
t_run "bench/apps/report.sh exits 1 on a failed integrity check" integrity_failure_fails_the_report
t_done
