# fltest.sh - sourced by the shell tests in test/integration/.
# Subtests are shell functions run by t_run "plain English name" fn; a
# function fails by calling t_fail "why" (or a t_check_* that says both
# values) and returning 1. Setup steps run through t_setup: not counted as
# passed, a FAIL when they fail.

: "${FL_TEST_CLI:?run the tests through test/run.sh}"
: "${FASTLOCAL_PIN_DIR:?run the tests through test/run.sh}"
CLI=$FL_TEST_CLI
T_FAILED=0
T_WHY=""
T_TMP=$(mktemp -d)
trap 'rm -rf "$T_TMP"' EXIT

t_fail() {
	[ -n "$T_WHY" ] || T_WHY="$*"
	return 1
}

t_run() {
	T_WHY=""
	if "$2" && [ -z "$T_WHY" ]; then
		echo "PASS: $1"
	else
		echo "FAIL: $1: ${T_WHY:-returned non-zero}"
		T_FAILED=$((T_FAILED + 1))
	fi
}

# t_check_eq GOT WANT WHAT (and _ne, _lt, _le, _gt, _ge, integers): fails
# the subtest with both values unless GOT op WANT holds, e.g.
#   t_check_eq "$n" 3 "lines of output" || return 1
# says "lines of output: 2 -eq 3 does not hold".
t_check_int() {
	if ! [ "$2" "$1" "$3" ] 2>/dev/null; then
		t_fail "$4: $2 $1 $3 does not hold"
		return 1
	fi
}
t_check_eq() { t_check_int -eq "$@"; }
t_check_ne() { t_check_int -ne "$@"; }
t_check_lt() { t_check_int -lt "$@"; }
t_check_le() { t_check_int -le "$@"; }
t_check_gt() { t_check_int -gt "$@"; }
t_check_ge() { t_check_int -ge "$@"; }

# t_check_str_eq GOT WANT WHAT: the two strings are equal; prints both.
t_check_str_eq() {
	if [ "$1" != "$2" ]; then
		t_fail "$3: '$1' is not '$2'"
		return 1
	fi
}

# t_setup "what" CMD...: a setup step, not a subtest (not counted as
# passed): prints "setup: what" when CMD succeeds, else "FAIL: setup: what"
# (with t_fail's reason) and fails the test; returns CMD's failure, so that
# the caller skips what depends on it.
t_setup() {
	what=$1
	shift
	T_WHY=""
	if "$@" && [ -z "$T_WHY" ]; then
		echo "setup: $what"
		return 0
	fi
	echo "FAIL: setup: $what${T_WHY:+: $T_WHY}"
	T_FAILED=$((T_FAILED + 1))
	T_WHY=""
	return 1
}

t_done() {
	[ "$T_FAILED" = 0 ]
}

# t_expect_rc RC CMD...: runs CMD, keeps stdout/stderr in $T_TMP/out and
# $T_TMP/err, and fails unless it exits with RC.
t_expect_rc() {
	want=$1
	shift
	"$@" >"$T_TMP/out" 2>"$T_TMP/err"
	got=$?
	if [ "$got" != "$want" ]; then
		t_fail "'$*' exited $got, expected $want; stderr: $(head -c 400 "$T_TMP/err")"
		return 1
	fi
	return 0
}

# t_err_has TEXT: the last command's stderr contains TEXT; logs the line.
t_err_has() {
	if ! grep -qF -- "$1" "$T_TMP/err"; then
		t_fail "stderr lacks '$1': $(head -c 400 "$T_TMP/err")"
		return 1
	fi
	echo "  message: $(head -n 1 "$T_TMP/err")"
}

# t_err_one_line: the last command wrote exactly one line on stderr.
t_err_one_line() {
	n=$(wc -l <"$T_TMP/err")
	[ "$n" = 1 ] || t_fail "expected one line on stderr, got $n: $(head -c 400 "$T_TMP/err")"
}

# A private pin dir for a subtest, removed by t_cleanup_pins.
t_pin_dir() {
	echo "/sys/fs/bpf/fastlocal-test-$$-$1"
}
