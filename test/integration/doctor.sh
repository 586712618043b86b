#!/bin/sh
# doctor.sh - "fastlocal doctor" says whether acceleration works for the
# user who runs it, check by check, and exits 0 only when it does; and the
# shim's one-line warning under "fastlocal run" names the real cause (as a
# user who may not see root's pins, the missing piece is the broker).
. "$FL_TEST_TOP/test/lib/fltest.sh"

P_EMPTY=$(t_pin_dir doc-empty)
P_LOADED=$(t_pin_dir doc-loaded)
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all"
# A copy of the CLI and the shim that nobody can execute and read, wherever
# the build tree is; the broker's socket lives there too.
D=$(mktemp -d /tmp/fl-doctor-XXXXXX)
chmod 0755 "$D"
t_setup "the CLI, the shim and fl-stream copied to $D" cp "$CLI" "$FL_TEST_LIB" "$FL_TEST_BUILD/fl-stream" "$D/" || exit 1
UCLI=$D/fastlocal
SOCK=$D/broker.sock
BROKER_PID=""
stop_broker() {
	[ -n "$BROKER_PID" ] && kill "$BROKER_PID" 2>/dev/null && wait "$BROKER_PID" 2>/dev/null
	BROKER_PID=""
}
trap 'stop_broker; "$CLI" unload --pin-dir "$P_LOADED" >/dev/null 2>&1; rm -rf "$T_TMP" "$D"' EXIT

# verdict CHECK WANT: the text output's line for CHECK starts with WANT.
verdict() {
	line=$(grep -E "^[a-zA-Z]+ +$1 " "$T_TMP/out")
	case $line in
	"$2 "*) echo "  $line" ;;
	*) t_fail "check '$1' is not '$2': '$line'" ;;
	esac
}

# json_verdict CHECK WANT: the same in --json (ok, warn, fail).
json_verdict() {
	got=$(jq -r ".checks.$1.verdict" "$T_TMP/out") || t_fail "--json does not parse: $(cat "$T_TMP/out")" || return 1
	t_check_str_eq "$got" "$2" "--json check $1"
}

nothing_loaded_fails_with_the_fix() {
	t_expect_rc 1 "$CLI" doctor --pin-dir "$P_EMPTY" --socket "$SOCK" || return 1
	verdict btf ok && verdict sockmap ok && verdict bpffs ok || return 1
	verdict loaded FAIL && verdict user FAIL || return 1
	grep -qF "nothing is loaded in $P_EMPTY -> fix: sudo fastlocal load --pin-dir $P_EMPTY" "$T_TMP/out" ||
		t_fail "no fix for the load: $(cat "$T_TMP/out")" || return 1
	# Root needs no broker: a warning, not a failure.
	verdict broker warn || return 1
	tail -n 1 "$T_TMP/out" | grep -q "acceleration does NOT work for uid 0" ||
		t_fail "last line: $(tail -n 1 "$T_TMP/out")" || return 1
	t_expect_rc 1 "$CLI" doctor --json --pin-dir "$P_EMPTY" --socket "$SOCK" || return 1
	jq -e '.ok == false and .uid == 0 and .loaded_object == null' "$T_TMP/out" >/dev/null ||
		t_fail "--json: $(cat "$T_TMP/out")" || return 1
	json_verdict loaded fail && json_verdict user fail && json_verdict broker warn || return 1
	fix=$(jq -r .checks.loaded.fix "$T_TMP/out")
	[ "$fix" = "sudo fastlocal load --pin-dir $P_EMPTY" ] || t_fail "--json loaded fix: '$fix'"
}

loaded_is_ok_for_root() {
	"$CLI" load --pin-dir "$P_LOADED" >/dev/null || { t_fail "load failed"; return 1; }
	t_expect_rc 0 "$CLI" doctor --pin-dir "$P_LOADED" --socket "$SOCK" || return 1
	verdict loaded ok && verdict user ok && verdict shim ok || return 1
	grep -q "the same build as this binary" "$T_TMP/out" || t_fail "not told the same build" || return 1
	t_expect_rc 0 "$CLI" doctor --json --pin-dir "$P_LOADED" --socket "$SOCK" || return 1
	jq -e '.ok == true and .loaded_object == .object and (.object | length == 16)
		and ([.checks[] | .verdict] | index("fail") == null)' "$T_TMP/out" >/dev/null ||
		t_fail "--json: $(cat "$T_TMP/out")" || return 1
	json_verdict loaded ok && json_verdict user ok
}

another_build_is_told_to_replace() {
	# Pretend another build of this version loaded these pins: keep the
	# ABI, change the recorded object hash.
	abi=$("$CLI" version | sed -n 's/.*(bpf abi \([0-9]*\))$/\1/p')
	[ -n "$abi" ] && [ "$abi" -lt 256 ] || t_fail "cannot read the ABI from 'fastlocal version'" || return 1
	bpftool map update pinned "$P_LOADED/map_meta" key 0 0 0 0 \
		value "$abi" 0 0 0 0 0 0 0 1 2 3 4 5 6 7 8 0 0 0 0 0 0 0 0 ||
		t_fail "bpftool cannot rewrite the meta map" || return 1
	t_expect_rc 0 "$CLI" doctor --pin-dir "$P_LOADED" --socket "$SOCK" || return 1
	verdict loaded warn || return 1
	grep -qF "by a different build: object 0807060504030201" "$T_TMP/out" &&
		grep -qF -- "-> fix: sudo fastlocal load --replace --pin-dir $P_LOADED" "$T_TMP/out" ||
		t_fail "no --replace fix: $(grep loaded "$T_TMP/out")" || return 1
	"$CLI" load --replace --pin-dir "$P_LOADED" >/dev/null || t_fail "load --replace failed"
}

nobody_without_broker_fails_naming_the_broker() {
	t_expect_rc 1 $NOBODY "$UCLI" doctor --pin-dir "$P_LOADED" --socket "$SOCK" || return 1
	verdict loaded warn && verdict broker FAIL && verdict user FAIL || return 1
	grep -E '^FAIL +user ' "$T_TMP/out" | grep -qF "the broker $SOCK does not answer -> fix: sudo fastlocal daemon --pin-dir $P_LOADED --socket $SOCK" ||
		t_fail "the fix does not name the broker: $(grep user "$T_TMP/out")" || return 1
	grep -q "acceleration does NOT work for uid 65534" "$T_TMP/out" || t_fail "no verdict line"
	t_expect_rc 1 $NOBODY "$UCLI" doctor --json --pin-dir "$P_LOADED" --socket "$SOCK" || return 1
	jq -e '.ok == false and .uid == 65534 and .broker_answers == false' "$T_TMP/out" >/dev/null ||
		t_fail "--json: $(cat "$T_TMP/out")" || return 1
	json_verdict broker fail && json_verdict user fail && json_verdict loaded warn
}

run_warning_names_the_broker() {
	# Pins loaded, no broker: the shim's warning must not say "nothing is loaded".
	t_expect_rc 0 $NOBODY env FASTLOCAL_BROKER="$SOCK" FASTLOCAL_LIB="$D/libfastlocal.so" \
		LD_PRELOAD="${FL_TEST_ASAN_RT:-}" "$UCLI" run --pin-dir "$P_LOADED" -- "$D/fl-stream" --bytes 1M || return 1
	t_err_has "acceleration is impossible: uid 65534 may not open the pins in $P_LOADED (Permission denied) and the broker $SOCK does not answer (run 'sudo fastlocal daemon'" || return 1
	! grep -q "nothing is loaded" "$T_TMP/err" || t_fail "still says nothing is loaded: $(cat "$T_TMP/err")"
}

run_warning_when_nothing_is_loaded() {
	t_expect_rc 0 env FASTLOCAL_LIB="$D/libfastlocal.so" LD_PRELOAD="${FL_TEST_ASAN_RT:-}" \
		"$CLI" run --pin-dir "$P_EMPTY" -- "$D/fl-stream" --bytes 1M || return 1
	t_err_has "acceleration is impossible: nothing is loaded in $P_EMPTY (run 'sudo fastlocal load')"
}

nobody_with_broker_is_ok() {
	"$CLI" daemon --pin-dir "$P_LOADED" --socket "$SOCK" >"$T_TMP/daemon.log" 2>&1 &
	BROKER_PID=$!
	i=0
	until "$CLI" doctor --json --pin-dir "$P_LOADED" --socket "$SOCK" 2>/dev/null | jq -e .broker_answers >/dev/null; do
		i=$((i + 1))
		[ $i -lt 50 ] || { t_fail "the broker never answered: $(cat "$T_TMP/daemon.log")"; return 1; }
		sleep 0.1
	done
	t_expect_rc 0 $NOBODY "$UCLI" doctor --pin-dir "$P_LOADED" --socket "$SOCK" || return 1
	verdict broker ok && verdict user ok || return 1
	grep -q "uid 65534 enrolls through the broker $SOCK" "$T_TMP/out" || t_fail "no broker line" || return 1
	# The broker socket the shim would use: FASTLOCAL_BROKER, without --socket.
	t_expect_rc 0 $NOBODY env FASTLOCAL_BROKER="$SOCK" "$UCLI" doctor --json --pin-dir "$P_LOADED" || return 1
	jq -e --arg s "$SOCK" '.ok == true and .broker_socket == $s and .broker_answers == true' "$T_TMP/out" >/dev/null ||
		t_fail "--json: $(cat "$T_TMP/out")" || return 1
	json_verdict broker ok && json_verdict user ok
	stop_broker
}

cmd_setuid_is_unreachable() {
	# A setuid program of another user, on a fresh suid tmpfs (the test's
	# /tmp may be nosuid, where the bit means nothing).
	mkdir -p "$T_TMP/m"
	t_expect_rc 1 unshare -m sh -c '
		mount -t tmpfs -o suid fltest "$1" || exit 9
		cp /bin/true "$1/prog" && chown nobody:nogroup "$1/prog" && chmod 4755 "$1/prog" || exit 8
		exec "$0" doctor --json --pin-dir "$2" --socket "$3" --cmd "$1/prog"' \
		"$CLI" "$T_TMP/m" "$P_LOADED" "$SOCK" || return 1
	json_verdict cmd fail || return 1
	jq -r .checks.cmd.detail "$T_TMP/out" | grep -q "^unreachable: $T_TMP/m/prog is setuid to uid 65534" ||
		t_fail "cmd detail: $(jq -r .checks.cmd.detail "$T_TMP/out")" || return 1
	jq -e '.ok == false and .checks.loaded.verdict == "ok"' "$T_TMP/out" >/dev/null ||
		t_fail "--json: $(cat "$T_TMP/out")" || return 1
	# An ordinary dynamic program is reachable.
	t_expect_rc 0 "$CLI" doctor --pin-dir "$P_LOADED" --socket "$SOCK" --cmd true || return 1
	verdict cmd ok
}

doctor_help_and_usage() {
	t_expect_rc 0 "$CLI" doctor --help && grep -q '^Usage: fastlocal doctor' "$T_TMP/out" ||
		t_fail "no usage line" || return 1
	t_expect_rc 0 "$CLI" help && grep -q '^  doctor ' "$T_TMP/out" || t_fail "not in 'fastlocal help'" || return 1
	t_expect_rc 2 "$CLI" doctor --bogus && t_err_one_line
}

t_run "doctor: nothing loaded -> exit 1, 'loaded' FAILs with its fix (text and --json)" nothing_loaded_fails_with_the_fix
t_run "run: nothing loaded -> the warning says so" run_warning_when_nothing_is_loaded
t_run "doctor: loaded by this build -> exit 0, every check ok" loaded_is_ok_for_root
t_run "doctor: loaded by another build -> warn, fix is load --replace" another_build_is_told_to_replace
t_run "doctor as nobody, no broker -> FAIL naming the broker (text and --json)" nobody_without_broker_fails_naming_the_broker
t_run "run as nobody, pins loaded, no broker -> the warning names the broker" run_warning_names_the_broker
t_run "doctor as nobody with a broker -> ok (text and --json)" nobody_with_broker_is_ok
t_run "doctor --cmd: a setuid program of another user is unreachable" cmd_setuid_is_unreachable
t_run "doctor --help, help lists it, bad usage" doctor_help_and_usage
t_done
