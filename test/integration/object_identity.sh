#!/bin/sh
# object_identity.sh - two builds of the same sources in different folders
# embed the same BPF object, byte for byte: the build paths are mapped out
# of its debug info (Makefile, BPF_PREFIX_MAP). So "load" of one over the
# other is a no-op without --replace, and "doctor" calls it the same build.
# fl-test-weight: 60
. "$FL_TEST_TOP/test/lib/fltest.sh"

P=$(t_pin_dir identity)
# The copy lives outside the tree, and its build dir outside the copy.
W=$(mktemp -d /tmp/fl-identity-XXXXXX)
trap '"$CLI" unload --pin-dir "$P" >/dev/null 2>&1; rm -rf "$T_TMP" "$W"' EXIT
OTHER=$W/elsewhere/out

build_elsewhere() {
	mkdir -p "$W/src" &&
		cp -r "$FL_TEST_TOP/Makefile" "$FL_TEST_TOP/bpf" "$FL_TEST_TOP/tools" "$FL_TEST_TOP/preload" "$FL_TEST_TOP/common" "$W/src/" ||
		t_fail "cannot copy the sources to $W/src" || return 1
	make -s -C "$W/src" SAN=0 BUILD="$OTHER" CFLAGS= "$OTHER/fastlocal" >"$T_TMP/make.log" 2>&1 ||
		t_fail "the build in $W/src failed: $(tail -c 600 "$T_TMP/make.log")"
}

objects_are_identical() {
	[ -s "$FL_TEST_BUILD/fastlocal.bpf.o" ] || t_fail "no $FL_TEST_BUILD/fastlocal.bpf.o" || return 1
	cmp "$FL_TEST_BUILD/fastlocal.bpf.o" "$OTHER/fastlocal.bpf.o" ||
		t_fail "the BPF objects of $FL_TEST_BUILD and $OTHER differ" || return 1
	a=$("$CLI" doctor --json --pin-dir "$P" | jq -r .object)
	b=$("$OTHER/fastlocal" doctor --json --pin-dir "$P" | jq -r .object)
	echo "  identity: $a and $b"
	[ -n "$a" ] && [ "$a" = "$b" ] || t_fail "identities differ: $a (here) and $b (elsewhere)"
}

load_over_the_other_build_is_a_noop() {
	t_expect_rc 0 "$CLI" load --pin-dir "$P" || return 1
	id1=$("$CLI" status --json --pin-dir "$P" | jq -r .prog_id)
	t_expect_rc 0 "$OTHER/fastlocal" load --pin-dir "$P" || return 1
	grep -q "already loaded in $P" "$T_TMP/out" ||
		t_fail "the other build's load did not say 'already loaded': $(cat "$T_TMP/out")" || return 1
	id2=$("$CLI" status --json --pin-dir "$P" | jq -r .prog_id)
	[ "$id1" = "$id2" ] && [ "$id1" -gt 0 ] || t_fail "program id changed: $id1 -> $id2" || return 1
	t_expect_rc 0 env FASTLOCAL_LIB="$FL_TEST_LIB" "$OTHER/fastlocal" doctor --pin-dir "$P" \
		--socket "$T_TMP/none.sock" || return 1
	grep -q "the same build as this binary" "$T_TMP/out" ||
		t_fail "doctor of the other build: $(grep loaded "$T_TMP/out")"
}

t_run "the sources build in another folder, with the build dir elsewhere" build_elsewhere
t_run "both builds embed the same BPF object and identity" objects_are_identical
t_run "load of the other build over this one is a no-op" load_over_the_other_build_is_a_noop
t_done
