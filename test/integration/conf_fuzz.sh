#!/bin/sh
# conf_fuzz.sh - a few seconds of the configuration parser's libFuzzer target
# (test/fuzz/conf_fuzz.c), so that every test run builds and exercises it;
# "make fuzz" runs it for real (FUZZ_SECONDS, default 600).
. "$FL_TEST_TOP/test/lib/fltest.sh"

FUZZ=$FL_TEST_BUILD/conf_fuzz

fuzz_briefly_without_a_crash() {
	[ -x "$FUZZ" ] || t_fail "$FUZZ was not built (make test-build)" || return 1
	mkdir -p "$T_TMP/corpus"
	cp "$FL_TEST_TOP"/test/fuzz/corpus/* "$FL_TEST_TOP/fastlocal.conf.example" "$T_TMP/corpus/"
	# The fuzzer's own sanitizers (not the test suite's options) decide.
	env -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LD_PRELOAD "$FUZZ" -max_total_time=5 \
		-dict="$FL_TEST_TOP/test/fuzz/conf.dict" -artifact_prefix="$T_TMP/" \
		"$T_TMP/corpus" >"$T_TMP/fuzz.log" 2>&1
	rc=$?
	[ "$rc" = 0 ] || t_fail "conf_fuzz exited $rc: $(grep -m3 -E 'ERROR|SUMMARY|abort' "$T_TMP/fuzz.log")" || return 1
	runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$T_TMP/fuzz.log")
	[ "${runs:-0}" -gt 1000 ] || t_fail "only ${runs:-0} inputs were tried: $(tail -n 3 "$T_TMP/fuzz.log")" || return 1
	echo "  $runs inputs in 5 s, no crash"
}

# The seeds parse without a single warning: the example file is valid.
example_is_valid() {
	t_expect_rc 0 env FASTLOCAL_CONF="$FL_TEST_TOP/fastlocal.conf.example" "$CLI" config || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "fastlocal.conf.example gives warnings: $(head -c 400 "$T_TMP/err")"
}

t_run "the configuration parser survives 5 s of libFuzzer (ASan, UBSan)" fuzz_briefly_without_a_crash
t_run "fastlocal.conf.example parses without a warning" example_is_valid
t_done
