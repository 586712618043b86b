# fltest.sh - sourced by the shell tests in test/integration/.
# Subtests are shell functions run by t_run "plain English name" fn; a
# function fails by calling t_fail "why" and returning 1.

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
