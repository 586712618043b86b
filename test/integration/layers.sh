#!/bin/sh
# layers.sh - the shim's layers (preload/check_layers.sh, docs/architecture.md):
# a file uses only its own layer and those below it, and no files call or
# include each other in a circle. The check runs in the Makefile's shim
# rule, before the link; here it is shown to pass on the real objects and
# to fail, naming the files, on each kind of violation.
# fl-test-weight: 20
. "$FL_TEST_TOP/test/lib/fltest.sh"

CHECK=$FL_TEST_TOP/preload/check_layers.sh
OBJ=$FL_TEST_BUILD/obj
W=$(mktemp -d /tmp/fl-layers-XXXXXX)
trap 'rm -rf "$T_TMP" "$W"' EXIT

# src PATH CODE: a source file of a scratch tree in $W/t, compiled to its
# object under $W/t/obj (the layout the Makefile uses).
src() {
	mkdir -p "$W/t/$(dirname "$1")" "$W/t/obj/$(dirname "$1")" &&
		printf '%s\n' "$2" >"$W/t/$1" &&
		cc -I"$W/t" -I"$W/t/preload" -c -o "$W/t/obj/${1%.c}.o" "$W/t/$1" ||
		t_fail "cannot compile $1"
}

# check_scratch: the check on every object of the scratch tree, from its top.
check_scratch() {
	(cd "$W/t" && "$CHECK" obj $(find obj -name '*.o' | sort))
}

fresh() { rm -rf "$W/t"; mkdir -p "$W/t"; }

real_objects_pass() {
	set -- "$OBJ"/preload/*/*.o "$OBJ"/common/*.o
	[ "$#" -gt 20 ] || t_fail "only $# objects in $OBJ (built with make test-build?)" || return 1
	t_expect_rc 0 sh -c 'cd "$1" && shift && "$@"' sh "$FL_TEST_TOP" "$CHECK" "$OBJ" "$@" || return 1
	echo "  $# objects checked"
}

downward_call_passes() {
	fresh
	src preload/base/low.c 'int fl_low(void) { return 1; }' || return 1
	src preload/tx/high.c 'int fl_low(void); int fl_high(void) { return fl_low(); }' || return 1
	t_expect_rc 0 check_scratch
}

upward_call_fails() {
	fresh
	src preload/tx/high.c 'int fl_high(void) { return 1; }' || return 1
	src preload/base/low.c 'int fl_high(void); int fl_low(void) { return fl_high(); }' || return 1
	t_expect_rc 1 check_scratch || return 1
	t_err_has "preload/base/low.c (base) calls preload/tx/high.c (tx) via fl_high: a lower layer may not use a higher one" ||
		return 1
	t_err_one_line
}

upward_include_fails() {
	fresh
	mkdir -p "$W/t/preload/rx" && echo '#define FL_RX_THING 1' >"$W/t/preload/rx/thing.h"
	src preload/kernel/k.c '#include "rx/thing.h"
int fl_k(void) { return FL_RX_THING; }' || return 1
	t_expect_rc 1 check_scratch || return 1
	t_err_has "preload/kernel/k.c (kernel) includes preload/rx/thing.h (rx): a lower layer may not use a higher one"
}

call_loop_in_one_layer_fails() {
	fresh
	src preload/rx/a.c 'int fl_b(void); int fl_a(int n) { return n ? fl_b() : 0; }' || return 1
	src preload/rx/b.c 'int fl_a(int); int fl_b(void) { return fl_a(0); }' || return 1
	t_expect_rc 1 check_scratch || return 1
	t_err_has "check_layers: loop: preload/rx/" || return 1
	grep -q "preload/rx/a -> preload/rx/b -> preload/rx/a\|preload/rx/b -> preload/rx/a -> preload/rx/b" "$T_TMP/err" ||
		t_fail "the loop is not named file by file: $(cat "$T_TMP/err")"
}

file_outside_the_layers_fails() {
	fresh
	src preload/flat.c 'int fl_flat(void) { return 1; }' || return 1
	src preload/entry/e.c 'int fl_flat(void); int fl_e(void) { return fl_flat(); }' || return 1
	t_expect_rc 1 check_scratch || return 1
	t_err_has "check_layers: preload/flat.c is in no layer folder"
}

common_may_not_call_the_shim() {
	fresh
	src preload/base/libc.c 'int libc_close(int fd) { return fd; }' || return 1
	src common/shared.c 'int libc_close(int); int fl_shared(int fd) { return libc_close(fd); }' || return 1
	t_expect_rc 1 check_scratch || return 1
	t_err_has "common/shared.c (common) calls preload/base/libc.c (base) via libc_close: a lower layer may not use a higher one"
}

# The Makefile's shim rule, on a copy of the tree whose objects are those
# already built (cp -p keeps them newer than their sources), with one file
# added that calls up: the link must not happen.
shim_rule_runs_the_check() {
	san=0
	[ "$(basename "$FL_TEST_BUILD")" = build-san ] && san=1
	mkdir -p "$W/src/out" &&
		cp -rp "$FL_TEST_TOP/Makefile" "$FL_TEST_TOP/bpf" "$FL_TEST_TOP/preload" "$FL_TEST_TOP/common" "$W/src/" &&
		cp -rp "$FL_TEST_BUILD/obj" "$W/src/out/" || t_fail "cannot copy the tree to $W/src" || return 1
	printf '#include "tx/tx.h"\nvoid fl_zz_up(void)\n{\n\tfl_tx_flush_all();\n}\n' >"$W/src/preload/base/zz_up.c"
	cat "$FL_TEST_TOP"/preload/tx/*.h | grep -q "void fl_tx_flush_all(void);" ||
		t_fail "tx/ no longer declares fl_tx_flush_all: pick another tx function for this test" || return 1
	t_expect_rc 2 make -s -C "$W/src" SAN=$san BUILD=out out/libfastlocal.so || return 1
	t_err_has "check_layers: preload/base/zz_up.c (base) calls preload/tx/" || return 1
	t_err_has "(tx) via fl_tx_flush_all: a lower layer may not use a higher one" || return 1
	[ ! -e "$W/src/out/libfastlocal.so" ] || t_fail "the shim was linked despite the failed check"
}

t_run "the shim's real objects and includes pass the layer check" real_objects_pass
t_run "a call down to a lower layer passes" downward_call_passes
t_run "a call up to a higher layer fails, naming both files and the function" upward_call_fails
t_run "an include of a higher layer's header fails" upward_include_fails
t_run "two files of one layer calling each other fail as a loop" call_loop_in_one_layer_fails
t_run "a file outside the layer folders fails" file_outside_the_layers_fails
t_run "common/, shared with the CLI, may not call the shim, not even its libc_ trampolines" common_may_not_call_the_shim
t_run "the Makefile's shim rule fails on a file that calls up" shim_rule_runs_the_check
t_done
