#!/bin/sh
# cli.sh - the fastlocal command: help, usage errors, load/unload/status
# lifecycle, every error path of load, and "run".
. "$FL_TEST_TOP/test/lib/fltest.sh"

P_LIFE=$(t_pin_dir life)
P_CHANGED=$(t_pin_dir changed)
P_OTHER=$(t_pin_dir other)
cleanup_pins() {
	for p in "$P_LIFE" "$P_CHANGED" "$P_OTHER"; do "$CLI" unload --pin-dir "$p" >/dev/null 2>&1; done
}
trap 'cleanup_pins; rm -rf "$T_TMP"' EXIT

every_command_has_help() {
	for c in load unload status run daemon version; do
		t_expect_rc 0 "$CLI" "$c" --help || return 1
		grep -q "^Usage: fastlocal $c" "$T_TMP/out" || t_fail "$c --help: no usage line" || return 1
		t_expect_rc 0 "$CLI" help "$c" || return 1
		grep -q "^Usage: fastlocal $c" "$T_TMP/out" || t_fail "help $c: no usage line" || return 1
	done
	t_expect_rc 0 "$CLI" --help && grep -q '^Usage: fastlocal COMMAND' "$T_TMP/out" ||
		t_fail "fastlocal --help: no usage line"
}

version_prints_version() {
	t_expect_rc 0 "$CLI" version || return 1
	grep -Eq '^fastlocal [0-9]+\.[0-9]+\.[0-9]+ \(bpf abi [0-9]+\)$' "$T_TMP/out" ||
		t_fail "unexpected version line: $(cat "$T_TMP/out")"
}

bad_usage_is_one_line_and_exit_2() {
	for args in "" "nosuch" "load --bogus" "load extra" "status extra" "unload --bogus" \
		"run" "run --bogus" "help nosuch" "version extra" "daemon --bogus" "daemon extra"; do
		# shellcheck disable=SC2086
		t_expect_rc 2 "$CLI" $args || return 1
		t_err_one_line || return 1
	done
	t_expect_rc 2 "$CLI" nosuch && t_err_has "unknown command 'nosuch'"
}

daemon_refuses_clearly() {
	t_expect_rc 1 "$CLI" daemon --pin-dir "/sys/fs/bpf/fastlocal-nothing-$$" \
		--socket "$T_TMP/broker.sock" || return 1
	t_err_one_line && t_err_has "is not loaded in" || return 1
	[ ! -e "$T_TMP/broker.sock" ] || t_fail "a daemon that failed left its socket"
	# A copy nobody can execute, wherever the build tree is.
	d=$(mktemp -d /tmp/fl-cli-XXXXXX) && chmod 0755 "$d" && cp "$CLI" "$d/fastlocal" || return 1
	t_expect_rc 1 setpriv --reuid=65534 --regid=65534 --clear-groups "$d/fastlocal" daemon \
		--socket "$d/broker.sock"
	r=$?
	rm -rf "$d"
	[ $r = 0 ] && t_err_one_line && t_err_has "needs root"
}

second_load_is_a_noop() {
	t_expect_rc 0 "$CLI" load --pin-dir "$P_LIFE" || return 1
	id1=$("$CLI" status --json --pin-dir "$P_LIFE" | jq -r .prog_id)
	t_expect_rc 0 "$CLI" load --pin-dir "$P_LIFE" || return 1
	grep -q 'already loaded' "$T_TMP/out" || t_fail "second load did not say 'already loaded'" || return 1
	id2=$("$CLI" status --json --pin-dir "$P_LIFE" | jq -r .prog_id)
	[ "$id1" = "$id2" ] && [ "$id1" -gt 0 ] || t_fail "program id changed: $id1 -> $id2"
}

status_json_is_valid_with_stable_keys() {
	t_expect_rc 0 "$CLI" status --json --pin-dir "$P_LIFE" || return 1
	jq -e '(.loaded == true) and (.state == "loaded") and (.prog_id > 0)
		and (.map_ids.sockhash > 0) and (.map_ids.stats > 0) and (.map_ids.meta > 0)
		and (.pin_dir | type == "string") and (.kernel | type == "string")
		and (.redirected_bytes | type == "number") and (.redirected_msgs | type == "number")
		and (.passed_bytes | type == "number") and (.passed_msgs | type == "number")
		and (.enrolled_sockets | type == "number") and (.abi_version > 0)' \
		"$T_TMP/out" >/dev/null || t_fail "status --json lacks a key: $(cat "$T_TMP/out")" || return 1
	t_expect_rc 0 "$CLI" status --pin-dir "$P_LIFE" || return 1
	grep -q 'state: *loaded' "$T_TMP/out" || t_fail "text status does not say loaded"
}

unload_removes_pins_and_is_idempotent() {
	t_expect_rc 0 "$CLI" unload --pin-dir "$P_LIFE" || return 1
	[ ! -e "$P_LIFE" ] || t_fail "pin dir still there after unload" || return 1
	t_expect_rc 3 "$CLI" status --json --pin-dir "$P_LIFE" || return 1
	jq -e '.loaded == false and .redirected_bytes == 0' "$T_TMP/out" >/dev/null ||
		t_fail "status of an unloaded pin dir: $(cat "$T_TMP/out")" || return 1
	t_expect_rc 0 "$CLI" unload --pin-dir "$P_LIFE" || return 1
	grep -q 'nothing loaded' "$T_TMP/out" || t_fail "second unload did not say 'nothing loaded'"
}

changed_object_is_replaced_only_when_asked() {
	t_expect_rc 0 "$CLI" load --pin-dir "$P_CHANGED" || return 1
	id1=$("$CLI" status --json --pin-dir "$P_CHANGED" | jq -r .prog_id)
	# Pretend another build of this version loaded these pins: change the
	# recorded object hash (the ABI stays this build's).
	abi=$("$CLI" version | sed -n 's/.*(bpf abi \([0-9]*\))$/\1/p')
	[ -n "$abi" ] && [ "$abi" -lt 256 ] || t_fail "no ABI in 'fastlocal version'" || return 1
	bpftool map update pinned "$P_CHANGED/map_meta" key 0 0 0 0 \
		value "$abi" 0 0 0 0 0 0 0 1 2 3 4 5 6 7 8 0 0 0 0 0 0 0 0 ||
		t_fail "bpftool cannot rewrite the meta map" || return 1
	t_expect_rc 1 "$CLI" load --pin-dir "$P_CHANGED" || return 1
	t_err_has "a different fastlocal object" || return 1
	t_err_has "--replace" || return 1
	id2=$("$CLI" status --json --pin-dir "$P_CHANGED" | jq -r .prog_id)
	[ "$id1" = "$id2" ] || t_fail "a refused load changed the program ($id1 -> $id2)" || return 1
	t_expect_rc 0 "$CLI" load --replace --pin-dir "$P_CHANGED" || return 1
	grep -q replaced "$T_TMP/out" || t_fail "--replace did not say 'replaced'" || return 1
	id3=$("$CLI" status --json --pin-dir "$P_CHANGED" | jq -r .prog_id)
	[ "$id3" != "$id1" ] || t_fail "--replace kept the old program" || return 1
	# An interrupted load (a pin missing) is refused the same way.
	rm -f "$P_CHANGED/map_stats"
	t_expect_rc 1 "$CLI" load --pin-dir "$P_CHANGED" && t_err_has "an incomplete load" || return 1
	# So is another version's (an upgrade: another ABI, other pins), and
	# named as such.
	bpftool map update pinned "$P_CHANGED/map_meta" key 0 0 0 0 \
		value 1 0 0 0 0 0 0 0 1 2 3 4 5 6 7 8 0 0 0 0 0 0 0 0 ||
		t_fail "bpftool cannot rewrite the meta map" || return 1
	t_expect_rc 1 "$CLI" load --pin-dir "$P_CHANGED" &&
		t_err_has "the load of another fastlocal version (abi 1" && t_err_has "--replace"
}

non_root_load_names_the_missing_privilege() {
	t_expect_rc 1 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$CLI" load --pin-dir "$P_OTHER" || return 1
	t_err_one_line || return 1
	t_err_has "loading needs CAP_BPF and CAP_NET_ADMIN (run as root" || return 1
	# status as a user who cannot open root's pins says why
	t_expect_rc 1 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$CLI" status && t_err_has "Permission denied (run as root)"
}

pin_dir_outside_bpffs_is_refused() {
	d="$T_TMP/not-bpffs"
	t_expect_rc 1 "$CLI" load --pin-dir "$d" || return 1
	t_err_has "is not on a bpf filesystem (mount one with: mount -t bpf bpf DIR)" || return 1
	t_expect_rc 2 "$CLI" load --pin-dir relative/dir && t_err_has "must be an absolute path"
}

unmounted_bpffs_is_mounted() {
	# A private mount namespace in which /sys/fs/bpf has nothing mounted.
	t_expect_rc 0 unshare -m sh -c '
		umount -l /sys/fs/bpf 2>/dev/null
		[ "$(stat -f -c %T /sys/fs/bpf)" != bpf_fs ] || { echo "still bpffs" >&2; exit 9; }
		"$0" load --pin-dir /sys/fs/bpf/fl-mount-test || exit 1
		[ "$(stat -f -c %T /sys/fs/bpf)" = bpf_fs ] || { echo "not mounted" >&2; exit 8; }
		[ -e /sys/fs/bpf/fl-mount-test/prog_verdict ] || { echo "no pins" >&2; exit 7; }' "$CLI"
}

readonly_bpffs_says_so() {
	t_expect_rc 1 unshare -m sh -c '
		mount -t bpf -o ro bpf /sys/fs/bpf || exit 9
		"$0" load --pin-dir /sys/fs/bpf/fl-ro-test' "$CLI" || return 1
	t_err_has "Read-only file system"
}

missing_btf_says_so() {
	t_expect_rc 1 "$CLI" load --pin-dir "$P_OTHER" --btf /nonexistent/vmlinux || return 1
	t_err_has "cannot read BTF file /nonexistent/vmlinux" || return 1
	[ ! -e "$P_OTHER/prog_verdict" ] || t_fail "a failed load left pins"
}

run_appends_the_shim_to_ld_preload() {
	lib=$(readlink -f "$FL_TEST_LIB")
	# An entry that is already there (and, under ASan, must stay first).
	first=${FL_TEST_ASAN_RT:-/lib/x86_64-linux-gnu/libc.so.6}
	out=$(LD_PRELOAD="$first" FASTLOCAL_LIB="$lib" "$CLI" run -- sh -c 'printf %s "$LD_PRELOAD"')
	[ "$out" = "$first:$lib" ] || t_fail "LD_PRELOAD was '$out', expected '$first:$lib'" || return 1
	out=$(LD_PRELOAD="$first:$lib" FASTLOCAL_LIB="$lib" "$CLI" run sh -c 'printf %s "$LD_PRELOAD"')
	[ "$out" = "$first:$lib" ] || t_fail "the shim was added twice: '$out'" || return 1
	if [ -z "$FL_TEST_ASAN_RT" ]; then
		out=$(env -u LD_PRELOAD FASTLOCAL_LIB="$lib" "$CLI" run sh -c 'printf %s "$LD_PRELOAD"')
		[ "$out" = "$lib" ] || t_fail "LD_PRELOAD was '$out', expected '$lib'" || return 1
		# found next to the binary without FASTLOCAL_LIB
		out=$(env -u LD_PRELOAD -u FASTLOCAL_LIB "$CLI" run sh -c 'printf %s "$LD_PRELOAD"')
		[ "$out" = "$(readlink -f "$(dirname "$CLI")/libfastlocal.so")" ] ||
			t_fail "shim not found next to the CLI: '$out'" || return 1
	fi
	out=$(LD_PRELOAD="$first" "$CLI" run --pin-dir /sys/fs/bpf/elsewhere -- sh -c 'printf %s "$FASTLOCAL_PIN_DIR"')
	t_check_str_eq "$out" /sys/fs/bpf/elsewhere "the pin dir run --pin-dir gave the command"
}

run_reports_a_missing_command() {
	t_expect_rc 127 "$CLI" run -- /nonexistent/program || return 1
	t_err_has "cannot run '/nonexistent/program': No such file or directory"
}

t_run "every command answers --help" every_command_has_help
t_run "daemon: nothing loaded, or not root: one line, exit 1" daemon_refuses_clearly
t_run "version prints the version and BPF ABI" version_prints_version
t_run "bad usage gives one line and exit status 2" bad_usage_is_one_line_and_exit_2
t_run "a second load is a no-op" second_load_is_a_noop
t_run "status --json is valid and has the stable keys" status_json_is_valid_with_stable_keys
t_run "unload removes the pins and is idempotent" unload_removes_pins_and_is_idempotent
t_run "a changed object is replaced only when asked" changed_object_is_replaced_only_when_asked
t_run "load as non-root names the missing privilege" non_root_load_names_the_missing_privilege
t_run "a pin dir outside bpffs is refused" pin_dir_outside_bpffs_is_refused
t_run "load mounts bpffs when nothing is mounted" unmounted_bpffs_is_mounted
t_run "a read-only bpffs is reported" readonly_bpffs_says_so
t_run "a missing BTF file is reported" missing_btf_says_so
t_run "run appends the shim to LD_PRELOAD" run_appends_the_shim_to_ld_preload
t_run "run reports a command that does not exist" run_reports_a_missing_command
t_done
