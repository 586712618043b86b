#!/bin/sh
# deb.sh - "make deb": the package holds what make install installs, in
# Debian's places; its maintainer scripts are valid sh; lintian finds no
# error and no warning; its fastlocal runs and finds its shim; and a real
# dpkg -i then dpkg --purge on this machine leaves nothing behind.
#
# Runs in the normal build only: it builds the package from scratch
# (about 40 s with lintian), and the package is never built with the
# sanitizers, so under build-san it would check the same thing twice.
# The package is on this machine for a few seconds, which no other test
# notices: none reads /etc/fastlocal.conf (test/run.sh sets FASTLOCAL_CONF
# empty) or runs the fastlocal on PATH, and prerm unloads only this test's
# pin dir (FASTLOCAL_PIN_DIR reaches it through dpkg).
# fl-test-weight: 60
# fl-test-timeout: 400
. "$FL_TEST_TOP/test/lib/fltest.sh"

TOP=$FL_TEST_TOP
case $FL_TEST_BUILD in
*-san)
	echo "  (deb.sh: the package is built and checked in the normal build only)"
	exit 0
	;;
esac
PIN=$(t_pin_dir deb)
trap '"$CLI" unload --pin-dir "$PIN" >/dev/null 2>&1; rm -rf "$T_TMP"' EXIT
B=$T_TMP/b
DEB=""

# What the package may leave on this machine: its files and the state
# deb-systemd-helper keeps.
host_state() {
	ls -d /usr/bin/fastlocal /usr/lib/fastlocal /etc/fastlocal.conf /etc/default/fastlocal \
		/lib/systemd/system/fastlocal.service /usr/share/doc/fastlocal \
		/usr/share/man/man1/fastlocal.1.gz /etc/systemd/system/*/fastlocal.service \
		/var/lib/systemd/deb-systemd-helper-enabled/fastlocal.service* \
		/var/lib/systemd/deb-systemd-helper-enabled/*/fastlocal.service \
		/var/lib/systemd/deb-systemd-helper-masked/fastlocal.service 2>/dev/null
}

make_deb_builds_the_package() {
	t_expect_rc 0 make -s -C "$TOP" deb BUILD="$B" || return 1
	DEB=$(ls "$B"/fastlocal_*_amd64.deb 2>/dev/null)
	[ -f "$DEB" ] || t_fail "no fastlocal_*_amd64.deb in $B: $(ls "$B")" || return 1
	echo "  built $(basename "$DEB")"
}

package_holds_the_files_in_debian_places() {
	[ -f "$DEB" ] || t_fail "no package" || return 1
	dpkg-deb -c "$DEB" | awk '{print $6}' >"$T_TMP/list"
	for f in ./usr/bin/fastlocal ./usr/lib/fastlocal/libfastlocal.so ./lib/systemd/system/fastlocal.service \
		./etc/fastlocal.conf ./etc/default/fastlocal ./usr/share/man/man1/fastlocal.1.gz \
		./usr/lib/fastlocal/bench/run.sh ./usr/lib/fastlocal/bench/fl-bench; do
		grep -qx "$f" "$T_TMP/list" || t_fail "the package lacks $f" || return 1
	done
	grep -q '^\./usr/lib/libfastlocal' "$T_TMP/list" && t_fail "the shim is in /usr/lib itself" && return 1
	dpkg-deb -e "$DEB" "$T_TMP/ctl" || return 1
	[ "$(sort "$T_TMP/ctl/conffiles" | tr '\n' ' ')" = "/etc/default/fastlocal /etc/fastlocal.conf " ] ||
		t_fail "conffiles: $(cat "$T_TMP/ctl/conffiles")" || return 1
	dpkg-deb -x "$DEB" "$T_TMP/x" || return 1
	grep -qx 'ExecStart=/usr/bin/fastlocal daemon' "$T_TMP/x/lib/systemd/system/fastlocal.service" ||
		t_fail "the unit does not run /usr/bin/fastlocal daemon"
}

maintainer_scripts_are_valid_sh() {
	[ -f "$DEB" ] || t_fail "no package" || return 1
	for s in postinst prerm postrm; do
		[ -f "$T_TMP/ctl/$s" ] || t_fail "no $s (dh_installsystemd adds the service's)" || return 1
		sh -n "$T_TMP/ctl/$s" 2>"$T_TMP/err" || t_fail "$s: $(cat "$T_TMP/err")" || return 1
	done
	grep -q 'deb-systemd-helper' "$T_TMP/ctl/postinst" || t_fail "postinst does not enable the service" || return 1
	# An upgrade restarts the service (its ExecStartPre replaces the pins).
	grep -q 'restart' "$T_TMP/ctl/postinst" || t_fail "postinst does not restart on upgrade"
}

extracted_fastlocal_runs_and_finds_its_shim() {
	[ -f "$DEB" ] || t_fail "no package" || return 1
	x=$T_TMP/x
	t_expect_rc 0 "$x/usr/bin/fastlocal" version || return 1
	grep -Eq '^fastlocal [0-9]+\.[0-9]+\.[0-9]+ ' "$T_TMP/out" || t_fail "version: $(cat "$T_TMP/out")" || return 1
	v=$(dpkg-deb -f "$DEB" Version)
	grep -q "^fastlocal $v " "$T_TMP/out" || t_fail "package $v, fastlocal says $(cat "$T_TMP/out")" || return 1
	out=$(env -u FASTLOCAL_LIB "$x/usr/bin/fastlocal" run sh -c 'printf %s "$LD_PRELOAD"')
	[ "$out" = "$x/usr/lib/fastlocal/libfastlocal.so" ] || t_fail "run preloaded '$out'"
}

lintian_finds_no_error_or_warning() {
	command -v lintian >/dev/null || t_fail "lintian is missing (make deps)" || return 1
	[ -f "$DEB" ] || t_fail "no package" || return 1
	lintian "$DEB" >"$T_TMP/lintian" 2>&1
	st=$?
	sed 's/^/  lintian: /' "$T_TMP/lintian"
	[ $st = 0 ] || t_fail "lintian exited $st" || return 1
	! grep -Eq '^[EW]: ' "$T_TMP/lintian" || t_fail "lintian: $(grep -E '^[EW]: ' "$T_TMP/lintian" | head -3)"
}

# The real thing, undone: only when no fastlocal package is installed.
# FASTLOCAL_PIN_DIR reaches prerm's unload (dpkg keeps the environment), so
# a load in the default pin dir is never touched.
dpkg_install_then_purge_leaves_nothing() {
	[ -f "$DEB" ] || t_fail "no package" || return 1
	if dpkg-query -W -f='${db:Status-Status}' fastlocal 2>/dev/null | grep -qv '^not-installed$'; then
		t_fail "a fastlocal package is installed on this machine; this test will not replace it"
		return 1
	fi
	before=$(host_state)
	[ -z "$before" ] || t_fail "fastlocal files are on this machine already: $before" || return 1
	"$CLI" load --pin-dir "$PIN" >/dev/null || t_fail "cannot load in $PIN" || return 1
	t_expect_rc 0 env FASTLOCAL_PIN_DIR="$PIN" dpkg -i "$DEB" || return 1
	t_expect_rc 0 /usr/bin/fastlocal version || { dpkg --purge fastlocal >/dev/null 2>&1; return 1; }
	[ -e /etc/systemd/system/multi-user.target.wants/fastlocal.service ] ||
		t_fail "dpkg -i did not enable fastlocal.service" || { dpkg --purge fastlocal >/dev/null 2>&1; return 1; }
	# Installing again is an upgrade: prerm "upgrade" must not unload.
	t_expect_rc 0 env FASTLOCAL_PIN_DIR="$PIN" dpkg -i "$DEB" || { dpkg --purge fastlocal >/dev/null 2>&1; return 1; }
	[ -e "$PIN" ] || t_fail "an upgrade unloaded $PIN" || { dpkg --purge fastlocal >/dev/null 2>&1; return 1; }
	t_expect_rc 0 env FASTLOCAL_PIN_DIR="$PIN" dpkg --purge fastlocal || return 1
	after=$(host_state)
	[ -z "$after" ] || t_fail "left after dpkg --purge: $after" || return 1
	! dpkg-query -W fastlocal >/dev/null 2>&1 || t_fail "dpkg still knows fastlocal" || return 1
	[ ! -e "$PIN" ] || t_fail "prerm did not unload $PIN on removal"
}

t_run "make deb builds the package" make_deb_builds_the_package
t_run "the package holds the CLI, the shim in /usr/lib/fastlocal, the unit and conffiles" package_holds_the_files_in_debian_places
t_run "the maintainer scripts are valid sh and handle the service" maintainer_scripts_are_valid_sh
t_run "the package's fastlocal runs and finds its shim" extracted_fastlocal_runs_and_finds_its_shim
t_run "lintian reports no error and no warning" lintian_finds_no_error_or_warning
t_run "dpkg -i then dpkg --purge leaves nothing on this machine" dpkg_install_then_purge_leaves_nothing
t_done
