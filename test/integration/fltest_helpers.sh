#!/bin/sh
# fltest_helpers.sh - the shell tests' checks (test/lib/fltest.sh) fail when
# their comparison does not hold, pass when it does, and say both values;
# a failed setup step fails the test. A check that cannot fail would prove
# nothing.
. "$FL_TEST_TOP/test/lib/fltest.sh"

# expect_why CMD... -- TEXT: CMD fails and leaves TEXT as the reason.
expect_why() {
	T_WHY=""
	if "$1" "$2" "$3" "$4"; then
		T_WHY=""
		t_fail "'$*' passed"
		return 1
	fi
	case $T_WHY in
	*"$5"*) T_WHY="" ;;
	*) w=$T_WHY; T_WHY=""; t_fail "'$1 $2 $3 $4' said '$w', not '$5'"; return 1 ;;
	esac
}

integer_checks_fail_with_both_values() {
	expect_why t_check_eq 3 4 "the count" "the count: 3 -eq 4 does not hold" || return 1
	expect_why t_check_ne 5 5 "pids" "pids: 5 -ne 5 does not hold" || return 1
	expect_why t_check_lt 9 9 "size" "size: 9 -lt 9 does not hold" || return 1
	expect_why t_check_le 2 -1 "le" "le: 2 -le -1 does not hold" || return 1
	expect_why t_check_gt -1 0 "gt" "gt: -1 -gt 0 does not hold" || return 1
	expect_why t_check_ge 1 2 "ge" "ge: 1 -ge 2 does not hold" || return 1
	expect_why t_check_eq "" 0 "empty" "empty:  -eq 0 does not hold" || return 1
	expect_why t_check_str_eq lo eth0 "name" "name: 'lo' is not 'eth0'"
}

checks_pass_when_they_hold() {
	t_check_eq 4 4 x && t_check_ne 1 2 x && t_check_lt 1 2 x && t_check_le -3 -3 x &&
		t_check_gt 1 -1 x && t_check_ge 2 2 x && t_check_str_eq a a x ||
		t_fail "a check that holds failed: $T_WHY"
}

a_failed_setup_fails_the_test() {
	before=$T_FAILED
	out=$(t_setup "a step that worked" true; echo "rc=$? failed=$T_FAILED")
	t_check_str_eq "$out" "setup: a step that worked
rc=0 failed=$before" "a setup that worked" || return 1
	out=$(t_setup "a step that did not" false; echo "rc=$? failed=$T_FAILED")
	t_check_str_eq "$out" "FAIL: setup: a step that did not
rc=1 failed=$((before + 1))" "a setup that failed"
}

t_run "integer checks fail and say both values" integer_checks_fail_with_both_values
t_run "checks that hold pass" checks_pass_when_they_hold
t_run "a failed setup step prints FAIL and counts as a failure" a_failed_setup_fails_the_test
t_done
