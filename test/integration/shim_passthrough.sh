#!/bin/sh
# shim_passthrough.sh - with libfastlocal.so preloaded, unmodified programs
# behave exactly as without it, and their calls really go through the shim.
. "$FL_TEST_TOP/test/lib/fltest.sh"

STREAM=$FL_TEST_BUILD/fl-stream
# Under ASan the runtime has to come first in LD_PRELOAD; run appends after it.
PRE=${FL_TEST_ASAN_RT:-}
export FASTLOCAL_LIB="$FL_TEST_LIB"

stream_program_runs_unchanged() {
	t_expect_rc 0 env LD_PRELOAD="$PRE" "$CLI" run -- "$STREAM" --bytes 64M --size 1000 || return 1
	grep -q '^bytes=67108864 ' "$T_TMP/out" || t_fail "unexpected output: $(cat "$T_TMP/out")" || return 1
	t_expect_rc 0 env LD_PRELOAD="$PRE" "$CLI" run -- "$STREAM" --family 6 --bytes 16M --size 65536
}

calls_bind_to_the_shim() {
	LD_DEBUG=bindings LD_PRELOAD="$PRE" "$CLI" run -- "$STREAM" --bytes 1M >/dev/null 2>"$T_TMP/bind"
	for sym in connect accept4 write close; do
		grep -E "to .*libfastlocal\.so .*symbol \`$sym'" "$T_TMP/bind" >/dev/null ||
			t_fail "$sym is not bound to libfastlocal.so" || return 1
	done
}

everyday_programs_are_unharmed() {
	out=$(LD_PRELOAD="$PRE" "$CLI" run -- sh -c 'echo hello | cat; ls / >/dev/null && echo listed')
	[ "$out" = "hello
listed" ] || t_fail "sh/cat/ls under the shim printed '$out'" || return 1
	out=$(printf 'a\nb\n' | LD_PRELOAD="$PRE" "$CLI" run -- sort -r | tr '\n' ' ')
	[ "$out" = "b a " ] || t_fail "sort under the shim printed '$out'"
}

switched_off_shim_still_runs_programs() {
	t_expect_rc 0 env FASTLOCAL=0 LD_PRELOAD="$PRE" "$CLI" run -- "$STREAM" --bytes 16M
}

enrolled_stream_under_preload() {
	r0=$("$CLI" status --json | jq .redirected_bytes)
	t_expect_rc 0 env LD_PRELOAD="$PRE" "$CLI" run -- "$STREAM" --bytes 64M || return 1
	r1=$("$CLI" status --json | jq .redirected_bytes)
	# In the default configuration the stream switches once it has moved
	# 4096 bytes: its first writes, sent before the reader's end enrolled,
	# go over TCP (measured: one 64 KiB write), then the gate lets the rest
	# be redirected once the reader has read them. At most 8 MiB of 64.
	[ $((r1 - r0)) -ge $((67108864 - 8388608)) ] || t_fail "redirected_bytes grew by $((r1 - r0)) only"
}

t_run "a stream program runs unchanged under the shim" stream_program_runs_unchanged
t_run "socket calls bind to the shim's definitions" calls_bind_to_the_shim
t_run "sh, cat, ls and sort are unharmed by the shim" everyday_programs_are_unharmed
t_run "FASTLOCAL=0 keeps programs working" switched_off_shim_still_runs_programs
t_run "an unmodified stream program under fastlocal run is redirected" enrolled_stream_under_preload
t_done
