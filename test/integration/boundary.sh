#!/bin/sh
# boundary.sh - the shim's sealed boundary (preload/check_boundary.sh): no
# object but the forwarders' (shim.c) calls an interposed function by its
# name; every other one goes through libc_<fn>. The check runs in the
# Makefile's shim rule, before the link.
# fl-test-weight: 20
. "$FL_TEST_TOP/test/lib/fltest.sh"

CHECK=$FL_TEST_TOP/preload/check_boundary.sh
MAP=$FL_TEST_TOP/preload/exports.map
OBJ=$FL_TEST_BUILD/obj
SHIM_O=$OBJ/preload/entry/shim.o
IO_O=$OBJ/preload/entry/io.o
W=$(mktemp -d /tmp/fl-boundary-XXXXXX)
trap 'rm -rf "$T_TMP" "$W"' EXIT

# bad_object NAME CALL: an object whose one function makes CALL.
bad_object() {
	printf '#include <poll.h>\n#include <sys/socket.h>\n#include <sys/types.h>\nint fl_bad_%s(int fd)\n{\n\t%s;\n}\n' \
		"$1" "$2" >"$W/$1.c"
	cc -D_GNU_SOURCE -c -o "$W/$1.o" "$W/$1.c" || t_fail "cannot compile $W/$1.c" || return 1
}

real_objects_pass() {
	set -- "$OBJ"/preload/*/*.o "$OBJ"/common/*.o
	[ "$#" -gt 20 ] || t_fail "only $# objects in $OBJ (built with make test-build?)" || return 1
	[ -f "$SHIM_O" ] || t_fail "no $SHIM_O" || return 1
	t_expect_rc 0 "$CHECK" "$MAP" "$SHIM_O" "$@" || return 1
	echo "  $# objects checked"
}

getsockopt_call_fails() {
	bad_object getsockopt 'int v; socklen_t l = sizeof(v); return getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l)' ||
		return 1
	t_expect_rc 1 "$CHECK" "$MAP" "$SHIM_O" "$IO_O" "$W/getsockopt.o" || return 1
	t_err_has "$W/getsockopt.o calls the interposed getsockopt: call libc_getsockopt instead" || return 1
	t_err_one_line
}

poll_call_fails() {
	bad_object poll 'struct pollfd p = { .fd = fd, .events = POLLIN }; return poll(&p, 1, 0)' || return 1
	t_expect_rc 1 "$CHECK" "$MAP" "$SHIM_O" "$W/poll.o" || return 1
	t_err_has "$W/poll.o calls the interposed poll: call libc_poll instead" || return 1
	t_err_one_line
}

fortified_read_names_the_plain_trampoline() {
	bad_object read_chk 'extern ssize_t __read_chk(int, void *, size_t, size_t); char b[4]; return (int)__read_chk(fd, b, 4, sizeof(b))' || return 1
	t_expect_rc 1 "$CHECK" "$MAP" "$SHIM_O" "$W/read_chk.o" || return 1
	t_err_has "$W/read_chk.o calls the interposed __read_chk: call libc_read instead"
}

forwarders_object_is_allowed() {
	nm -u "$SHIM_O" | grep -qw getsockopt ||
		nm --defined-only "$SHIM_O" | grep -qw getsockopt ||
		t_fail "shim.o neither defines nor calls getsockopt: is it still the forwarders' object?" ||
		return 1
	bad_object fwd 'int v; socklen_t l = sizeof(v); return getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l)' ||
		return 1
	t_expect_rc 0 "$CHECK" "$MAP" "$W/fwd.o" "$IO_O" "$W/fwd.o"
}

fastlocal_api_is_not_interposed() {
	bad_object api 'extern int fastlocal_enabled(int); return fastlocal_enabled(fd)' || return 1
	t_expect_rc 0 "$CHECK" "$MAP" "$SHIM_O" "$W/api.o"
}

# A copy of the tree whose objects are those already built (cp -p keeps
# them newer than their sources): make of the shim then only checks and
# links, or compiles the one file added.
copy_tree() {
	san=0
	[ "$(basename "$FL_TEST_BUILD")" = build-san ] && san=1
	mkdir -p "$W/src/out" &&
		cp -rp "$FL_TEST_TOP/Makefile" "$FL_TEST_TOP/bpf" "$FL_TEST_TOP/preload" "$FL_TEST_TOP/common" "$W/src/" &&
		cp -rp "$FL_TEST_BUILD/obj" "$W/src/out/" || t_fail "cannot copy the tree to $W/src"
}

shim_rule_links_clean_objects() {
	copy_tree || return 1
	t_expect_rc 0 make -s -C "$W/src" SAN=$san BUILD=out out/libfastlocal.so || return 1
	[ -s "$W/src/out/libfastlocal.so" ] || t_fail "make succeeded but made no out/libfastlocal.so"
}

shim_rule_runs_the_check() {
	rm -f "$W/src/out/libfastlocal.so"
	printf '#include <sys/socket.h>\nint fl_zz_bad(int fd)\n{\n\tint v;\n\tsocklen_t l = sizeof(v);\n\n\treturn getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l);\n}\n' \
		>"$W/src/preload/tx/zz_bad.c"
	t_expect_rc 2 make -s -C "$W/src" SAN=$san BUILD=out out/libfastlocal.so || return 1
	t_err_has "out/obj/preload/tx/zz_bad.o calls the interposed getsockopt: call libc_getsockopt instead" ||
		return 1
	[ ! -e "$W/src/out/libfastlocal.so" ] || t_fail "the shim was linked despite the failed check"
}

t_run "the shim's real objects pass the check" real_objects_pass
t_run "an object calling getsockopt fails, named with the trampoline to use" getsockopt_call_fails
t_run "an object calling poll fails, named with the trampoline to use" poll_call_fails
t_run "a fortified __read_chk call is told to use libc_read" fortified_read_names_the_plain_trampoline
t_run "the forwarders' object may call interposed names" forwarders_object_is_allowed
t_run "the shim's own fastlocal_* API is not an interposed name" fastlocal_api_is_not_interposed
t_run "the Makefile's shim rule links when every object passes" shim_rule_links_clean_objects
t_run "the Makefile's shim rule fails on an object calling getsockopt" shim_rule_runs_the_check
t_done
