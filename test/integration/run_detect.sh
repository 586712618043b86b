#!/bin/sh
# run_detect.sh - "fastlocal run" tells apart the programs LD_PRELOAD cannot
# reach (secure-mode setuid/setgid/file capabilities, static, Go), says so in
# one line, and runs them unaccelerated with LD_PRELOAD untouched; every
# other program (dynamic, scripts with a dynamic interpreter, non-ELF files)
# gets the shim and no such line.
. "$FL_TEST_TOP/test/lib/fltest.sh"

STREAM=$FL_TEST_BUILD/fl-stream
# Under ASan the runtime has to come first in LD_PRELOAD; run appends after it.
PRE=${FL_TEST_ASAN_RT:-}
LIB=$(readlink -f "$FL_TEST_LIB")
export FASTLOCAL_LIB="$LIB"
unset FASTLOCAL_LOG FASTLOCAL_LOG_FILE
TAIL='so it runs unaccelerated'
B=$T_TMP/bin
mkdir -p "$B"

# The fixture: says what LD_PRELOAD it got and exits 3, so that a test sees
# both its output and that its exit status came back through "run".
cat >"$T_TMP/show.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
	const char *p = getenv("LD_PRELOAD");
	printf("ran LD_PRELOAD=%s\n", p ? p : "(unset)");
	return 3;
}
EOF
# Built without the test's sanitizer flags and without any preload: these
# are the user's programs, not ours.
build_fixtures() {
	env -u LD_PRELOAD gcc -O1 -o "$B/dynamic" "$T_TMP/show.c" &&
		env -u LD_PRELOAD gcc -O1 -static -o "$B/static" "$T_TMP/show.c" &&
		cp "$B/dynamic" "$B/fakego" &&
		objcopy --add-section .go.buildinfo="$T_TMP/show.c" "$B/fakego"
}
t_setup "the test programs built (gcc -static, objcopy)" build_fixtures || exit 1

# ran_with_preload WANT: the fixture's output line says LD_PRELOAD was WANT.
ran_with_preload() {
	got=$(cat "$T_TMP/out")
	[ "$got" = "ran LD_PRELOAD=$1" ] || t_fail "the program printed '$got', expected 'ran LD_PRELOAD=$1'"
}

# said_once FILE WHY: stderr is exactly the one line "fastlocal run: FILE WHY, so ...".
said_once() {
	want="fastlocal run: $1 $2, $TAIL"
	got=$(cat "$T_TMP/err")
	[ "$got" = "$want" ] || t_fail "stderr was '$got', expected '$want'" || return 1
	echo "  message: $got"
}

said_nothing() {
	! grep -q "$TAIL" "$T_TMP/err" || t_fail "unexpected diagnosis: $(head -c 300 "$T_TMP/err")"
}

static_binary_is_reported_and_runs() {
	t_expect_rc 3 env LD_PRELOAD="$PRE" "$CLI" run -- "$B/static" || return 1
	said_once "$B/static" "is statically linked: LD_PRELOAD cannot apply" || return 1
	# A static program never sees LD_PRELOAD applied, but the variable
	# itself must be the user's, not one with the shim added.
	ran_with_preload "$PRE"
}

static_binary_found_through_path() {
	# An earlier PATH entry with a non-executable "prog" is skipped, as
	# execvp skips it; the message names the file that really runs.
	mkdir -p "$T_TMP/p1" "$T_TMP/p2"
	printf 'not a program\n' >"$T_TMP/p1/prog"
	cp "$B/static" "$T_TMP/p2/prog"
	t_expect_rc 3 env LD_PRELOAD="$PRE" PATH="$T_TMP/p1:$T_TMP/p2:$PATH" "$CLI" run prog || return 1
	said_once "$T_TMP/p2/prog" "is statically linked: LD_PRELOAD cannot apply"
}

go_binary_is_reported_and_preload_left_alone() {
	# A user's own preload must reach the program exactly as it was.
	user=${PRE:+$PRE:}/lib/x86_64-linux-gnu/libc.so.6
	t_expect_rc 3 env LD_PRELOAD="$user" "$CLI" run -- "$B/fakego" || return 1
	said_once "$B/fakego" "is a Go program: Go makes its socket system calls without libc" || return 1
	ran_with_preload "$user"
}

# The set-id cases run in a private mount namespace on a fresh tmpfs, so
# they do not depend on whether the test's /tmp is mounted nosuid.
setid_run() {
	t_expect_rc "$1" unshare -m sh -c '
		d=$1; shift
		mount -t tmpfs -o "$1" fltest "$d" || exit 9
		shift
		cp "$0" "$d/prog" && chown nobody:nogroup "$d/prog" && chmod "$1" "$d/prog" || exit 8
		shift
		exec "$@" "$d/prog"' "$B/dynamic" "$T_TMP/m" "$2" "$3" env LD_PRELOAD="$PRE" "$CLI" run --
}

setuid_to_another_user_is_reported() {
	mkdir -p "$T_TMP/m"
	setid_run 3 suid 4755 || return 1
	said_once "$T_TMP/m/prog" "is setuid to uid $(id -u nobody): glibc ignores LD_PRELOAD in secure mode" || return 1
	# glibc removes LD_PRELOAD from a secure-mode program's environment:
	# proof that the exec really was secure-mode, as diagnosed.
	ran_with_preload "(unset)"
}

setgid_to_another_group_is_reported() {
	mkdir -p "$T_TMP/m"
	setid_run 3 suid 2755 || return 1
	said_once "$T_TMP/m/prog" "is setgid to gid $(getent group nogroup | cut -d: -f3): glibc ignores LD_PRELOAD in secure mode"
}

setuid_on_a_nosuid_mount_is_not_reported() {
	# The kernel ignores the bit there, so the preload does apply.
	mkdir -p "$T_TMP/m"
	setid_run 3 nosuid 4755 || return 1
	said_nothing || return 1
	ran_with_preload "${PRE:+$PRE:}$LIB"
}

setuid_root_run_by_root_is_not_reported() {
	cp "$B/dynamic" "$B/suidroot" && chown root:root "$B/suidroot" && chmod 4755 "$B/suidroot"
	t_expect_rc 3 env LD_PRELOAD="$PRE" "$CLI" run -- "$B/suidroot" || return 1
	said_nothing || return 1
	ran_with_preload "${PRE:+$PRE:}$LIB"
}

file_capabilities_for_a_non_root_user_are_reported() {
	cp "$B/dynamic" "$B/capprog" && setcap cap_net_bind_service+ep "$B/capprog" ||
		t_fail "setcap failed" || return 1
	chmod 755 "$T_TMP" "$B"
	t_expect_rc 3 setpriv --reuid=65534 --regid=65534 --clear-groups \
		env LD_PRELOAD="$PRE" "$CLI" run -- "$B/capprog" || return 1
	said_once "$B/capprog" "has file capabilities: glibc ignores LD_PRELOAD in secure mode" || return 1
	# root gets every capability anyway: not secure-mode, no line.
	t_expect_rc 3 env LD_PRELOAD="$PRE" "$CLI" run -- "$B/capprog" || return 1
	said_nothing
}

dynamic_binary_is_accelerated_silently() {
	t_expect_rc 0 env LD_PRELOAD="$PRE" FASTLOCAL_LOG=debug "$CLI" run -- "$STREAM" --bytes 1M || return 1
	said_nothing || return 1
	grep -q '^bytes=1048576 ' "$T_TMP/out" || t_fail "fl-stream did not run: $(cat "$T_TMP/out")" || return 1
	n=$(grep -c ': enrolled (slot' "$T_TMP/err")
	[ "$n" = 2 ] || t_fail "expected both ends enrolled, got $n 'enrolled' lines: $(head -c 300 "$T_TMP/err")"
}

script_with_dynamic_interpreter_gets_the_shim() {
	printf '#!/bin/sh\nexec "$@"\n' >"$B/wrap"
	chmod 755 "$B/wrap"
	t_expect_rc 0 env LD_PRELOAD="$PRE" FASTLOCAL_LOG=debug "$CLI" run -- "$B/wrap" "$STREAM" --bytes 1M || return 1
	said_nothing || return 1
	n=$(grep -c ': enrolled (slot' "$T_TMP/err")
	[ "$n" = 2 ] || t_fail "the script's program was not accelerated: $n 'enrolled' lines"
}

script_with_static_interpreter_names_both() {
	printf '#! %s -x\n' "$B/static" >"$B/stscript"
	chmod 755 "$B/stscript"
	t_expect_rc 3 env LD_PRELOAD="$PRE" "$CLI" run -- "$B/stscript" || return 1
	said_once "$B/static (the interpreter of $B/stscript)" "is statically linked: LD_PRELOAD cannot apply"
}

non_elf_file_runs_as_before() {
	# No "#!": execvp hands it to /bin/sh, which gets the shim as always.
	printf 'printf "%%s" "$LD_PRELOAD"\n' >"$B/plain"
	chmod 755 "$B/plain"
	t_expect_rc 0 env LD_PRELOAD="$PRE" "$CLI" run -- "$B/plain" || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "stderr: $(head -c 300 "$T_TMP/err")" || return 1
	[ "$(cat "$T_TMP/out")" = "${PRE:+$PRE:}$LIB" ] || t_fail "LD_PRELOAD was '$(cat "$T_TMP/out")'"
}

t_run "a static binary is reported in one line, runs, and keeps its exit status" static_binary_is_reported_and_runs
t_run "a command is found through PATH as execvp finds it" static_binary_found_through_path
t_run "a Go binary is reported and the user's LD_PRELOAD reaches it unchanged" go_binary_is_reported_and_preload_left_alone
t_run "a setuid program of another user is reported (secure mode)" setuid_to_another_user_is_reported
t_run "a setgid program of another group is reported (secure mode)" setgid_to_another_group_is_reported
t_run "a setuid bit on a nosuid mount is not reported and the shim is added" setuid_on_a_nosuid_mount_is_not_reported
t_run "root running a setuid-root program is not reported and the shim is added" setuid_root_run_by_root_is_not_reported
t_run "file capabilities are reported for a non-root user only" file_capabilities_for_a_non_root_user_are_reported
t_run "a dynamic program gets no line and is accelerated" dynamic_binary_is_accelerated_silently
t_run "a script with a dynamic interpreter gets no line and is accelerated" script_with_dynamic_interpreter_gets_the_shim
t_run "a script with a static interpreter names the interpreter and the script" script_with_static_interpreter_names_both
t_run "a non-ELF file runs as before with the shim" non_elf_file_runs_as_before
t_done
