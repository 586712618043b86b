#!/bin/sh
# build_targets.sh - the Makefile's contract: deps as non-root, install into
# DESTDIR, and a suite that fails loudly when BPF cannot be loaded.
. "$FL_TEST_TOP/test/lib/fltest.sh"

TOP=$FL_TEST_TOP

deps_as_non_root_prints_the_apt_line() {
	# A package that cannot be installed, so that something is "missing".
	cp -r "$TOP/Makefile" "$T_TMP/" && chmod -R a+rX "$T_TMP"
	t_expect_rc 2 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		make -s -C "$T_TMP" deps DEB_PACKAGES="jq fastlocal-no-such-package" || return 1
	t_err_has "make deps: as root run: apt-get install -y fastlocal-no-such-package" || return 1
	grep -q "jq" "$T_TMP/err" && t_fail "an installed package was listed as missing" || true
}

deps_does_nothing_when_all_is_installed() {
	t_expect_rc 0 make -s -C "$TOP" deps || return 1
	[ ! -s "$T_TMP/out" ] || t_fail "deps printed something: $(cat "$T_TMP/out")"
}

install_puts_cli_and_shim_under_destdir() {
	d="$T_TMP/dest"
	t_expect_rc 0 make -s -C "$TOP" install DESTDIR="$d" PREFIX=/usr BUILD="$FL_TEST_BUILD" || return 1
	[ -x "$d/usr/bin/fastlocal" ] && [ -f "$d/usr/lib/libfastlocal.so" ] ||
		t_fail "installed files missing: $(find "$d" -type f)" || return 1
	# The installed CLI finds the installed shim (../lib beside bin/).
	pre=${FL_TEST_ASAN_RT:-}
	out=$(env -u FASTLOCAL_LIB LD_PRELOAD="$pre" "$d/usr/bin/fastlocal" run sh -c 'printf %s "$LD_PRELOAD"')
	case $out in *"$d/usr/lib/libfastlocal.so") ;; *) t_fail "run used '$out'" ;; esac
}

suite_fails_loudly_without_bpf() {
	# A pin dir outside bpffs: the runner's own load must fail, not skip.
	t_expect_rc 1 env FL_TEST_PIN_DIR="$T_TMP/not-bpffs" "$TOP/test/run.sh" "$FL_TEST_BUILD" || return 1
	grep -q '^0 passed, 1 failed$' "$T_TMP/out" || t_fail "no '0 passed, 1 failed' line" || return 1
	t_err_has "FATAL: cannot load the BPF program; the suite cannot run"
}

t_run "make deps as non-root prints the apt-get line and fails" deps_as_non_root_prints_the_apt_line
t_run "make deps does nothing when every package is installed" deps_does_nothing_when_all_is_installed
t_run "make install puts the CLI and the shim under DESTDIR" install_puts_cli_and_shim_under_destdir
t_run "the suite fails loudly when BPF cannot be loaded" suite_fails_loudly_without_bpf
t_done
