#!/bin/sh
# config.sh - the configuration: every key from the file and every variable
# from the environment ("fastlocal config" shows value and source), the
# environment over the file, invalid values and files (one warning line per
# bad setting, the default used, the host program's bytes intact), warnings
# silenced by log_level=off or sent to the log file, log_level/log_file and
# flow_budget from the file taking effect in the shim. Which connections the
# rules accelerate: config_select.c. The parser under libFuzzer: conf_fuzz.sh.
. "$FL_TEST_TOP/test/lib/fltest.sh"

STREAM=$FL_TEST_BUILD/fl-stream
PRE=${FL_TEST_ASAN_RT:-}
export FASTLOCAL_LIB="$FL_TEST_LIB"
# Only what each subtest sets; "" = no configuration file, whatever /etc holds.
unset FASTLOCAL FASTLOCAL_LOG FASTLOCAL_LOG_FILE FASTLOCAL_BATCH FASTLOCAL_FLUSH_BYTES \
	FASTLOCAL_FLUSH_USEC FASTLOCAL_SPIN_USEC FASTLOCAL_TCP_COMPAT FASTLOCAL_BACKTRACE FASTLOCAL_UNWIND_LIB \
	FASTLOCAL_PORTS FASTLOCAL_SKIP_PORTS FASTLOCAL_ADDRESSES FASTLOCAL_SKIP_ADDRESSES \
	FASTLOCAL_ONLY_CMDS FASTLOCAL_SKIP_CMDS FASTLOCAL_FLOW_BUDGET FASTLOCAL_BROKER FASTLOCAL_RUN
export FASTLOCAL_CONF=""
KEYS=20 # settings "fastlocal config" lists

# settings [ENV=VALUE...]: "key|value|source" lines of "fastlocal config --json"
# in $T_TMP/settings, its stderr in $T_TMP/err.
settings() {
	t_expect_rc 0 env "$@" "$CLI" config --json || return 1
	jq -r '.settings | to_entries[] | "\(.key)|\(.value.value)|\(.value.source)"' \
		"$T_TMP/out" >"$T_TMP/settings" || t_fail "config --json is not JSON" || return 1
	n=$(wc -l <"$T_TMP/settings")
	t_check_eq "$n" "$KEYS" "settings config --json listed"
}

# has KEY VALUE SOURCE: the last settings call showed exactly this line.
has() {
	grep -qxF -- "$1|$2|$3" "$T_TMP/settings" ||
		t_fail "expected '$1|$2|$3', got '$(grep "^$1|" "$T_TMP/settings")'"
}

# stream [ENV=VALUE...]: fl-stream, 1 MiB both ways on two connections, every
# byte checked, under "fastlocal run"; stdout, stderr in $T_TMP/out, err.
stream() {
	t_expect_rc 0 env LD_PRELOAD="$PRE" "$@" "$CLI" run -- "$STREAM" --bytes 1M --conns 2 --both || return 1
	grep -q '^bytes=' "$T_TMP/out" || t_fail "fl-stream printed no result: $(head -c 300 "$T_TMP/out")"
}

# warnings N: the last command wrote exactly N lines on stderr, each a
# "fastlocal[PID]: warning: " line.
warnings() {
	n=$(wc -l <"$T_TMP/err")
	w=$(grep -c '^fastlocal\[[0-9]*\]: warning: ' "$T_TMP/err")
	[ "$n" = "$1" ] && [ "$w" = "$1" ] ||
		t_fail "expected $1 warning lines, got $w of $n lines: $(head -c 600 "$T_TMP/err")"
}

defaults_and_their_source() {
	settings -u FASTLOCAL_PIN_DIR -u FASTLOCAL_ENROLL_AFTER || return 1
	for kv in "enabled|on" "pin_dir|/sys/fs/bpf/fastlocal" "log_level|off" "log_file|stderr" \
		"batch|on" "flush_bytes|262144" "flush_usec|200" "spin_usec|20" "enroll_after|4096" "tcp_compat|on" \
		"backtrace|off" "ports|every port" "skip_ports|none" "addresses|every address" \
		"skip_addresses|none" "only_cmds|every program" "skip_cmds|none" "flow_budget|auto" \
		"broker_socket|/run/fastlocal/broker.sock" "FASTLOCAL_UNWIND_LIB|libunwind.so.8"; do
		has "${kv%%|*}" "${kv#*|}" default || return 1
	done
	[ "$(jq -r .file.state "$T_TMP/out")" = none ] || t_fail "file state is not 'none'" || return 1
	t_expect_rc 0 "$CLI" config || return 1
	grep -q '^program: none given' "$T_TMP/out" || t_fail "text output lacks 'program: none given'"
}

# Every file key with a value other than its default, each on its own line.
write_full_conf() {
	cat >"$1" <<'EOF'
# every key, none at its default
enabled = off
pin_dir = /sys/fs/bpf/fl-conf-test
log_level = info
log_file = /tmp/fl-conf-test.log
batch = off
flush_bytes = 65536
flush_usec = 1000
enroll_after = 0
tcp_compat = off
backtrace = on
ports = 6379, 8000-8100
skip_ports = 22
addresses = 127.0.0.0/8, ::1
skip_addresses = 10.1.2.3/16
only_cmds = redis-server, nginx
skip_cmds = curl
flow_budget = 1048576
broker_socket = /run/fl-test/broker.sock
EOF
}

FULL_VALUES="enabled|off pin_dir|/sys/fs/bpf/fl-conf-test log_level|info log_file|/tmp/fl-conf-test.log
batch|off flush_bytes|65536 flush_usec|1000 enroll_after|0 tcp_compat|off backtrace|on
ports|6379,_8000-8100 skip_ports|22 addresses|127.0.0.0/8,_::1 skip_addresses|10.1.0.0/16
only_cmds|redis-server,_nginx skip_cmds|curl flow_budget|1048576 broker_socket|/run/fl-test/broker.sock"

every_file_key() {
	f=$T_TMP/full.conf
	write_full_conf "$f"
	settings -u FASTLOCAL_PIN_DIR -u FASTLOCAL_ENROLL_AFTER FASTLOCAL_CONF="$f" || return 1
	# Valid, but only_cmds and skip_cmds both set: that one warning.
	warnings 1 || return 1
	grep -q 'only_cmds and skip_cmds are both set' "$T_TMP/err" || t_fail "no both-set warning" || return 1
	line=2
	for kv in $FULL_VALUES; do
		v=$(echo "${kv#*|}" | tr _ ' ')
		has "${kv%%|*}" "$v" "file $f:$line" || return 1
		line=$((line + 1))
	done
	[ "$(jq -r .file.state "$T_TMP/out")" = read ] || t_fail "file state is not 'read'"
}

every_env_var() {
	settings FASTLOCAL=0 FASTLOCAL_PIN_DIR=/sys/fs/bpf/fl-env FASTLOCAL_LOG=debug \
		FASTLOCAL_LOG_FILE=/tmp/x.log FASTLOCAL_BATCH=off FASTLOCAL_FLUSH_BYTES=16384 \
		FASTLOCAL_FLUSH_USEC=10 FASTLOCAL_ENROLL_AFTER=1 FASTLOCAL_TCP_COMPAT=0 \
		FASTLOCAL_BACKTRACE=1 FASTLOCAL_PORTS=1-1024 FASTLOCAL_SKIP_PORTS=80,443 \
		FASTLOCAL_ADDRESSES=::1/128 FASTLOCAL_SKIP_ADDRESSES=::ffff:10.0.0.0/104 \
		FASTLOCAL_ONLY_CMDS=a FASTLOCAL_SKIP_CMDS=b FASTLOCAL_FLOW_BUDGET=262144 \
		FASTLOCAL_BROKER=/b.sock FASTLOCAL_UNWIND_LIB=libunwind.so.7 || return 1
	for kv in "enabled|off|FASTLOCAL" "pin_dir|/sys/fs/bpf/fl-env|FASTLOCAL_PIN_DIR" \
		"log_level|debug|FASTLOCAL_LOG" "log_file|/tmp/x.log|FASTLOCAL_LOG_FILE" \
		"batch|off|FASTLOCAL_BATCH" "flush_bytes|16384|FASTLOCAL_FLUSH_BYTES" \
		"flush_usec|10|FASTLOCAL_FLUSH_USEC" "enroll_after|1|FASTLOCAL_ENROLL_AFTER" \
		"tcp_compat|off|FASTLOCAL_TCP_COMPAT" "backtrace|on|FASTLOCAL_BACKTRACE" \
		"ports|1-1024|FASTLOCAL_PORTS" "skip_ports|80, 443|FASTLOCAL_SKIP_PORTS" \
		"addresses|::1|FASTLOCAL_ADDRESSES" "skip_addresses|10.0.0.0/8|FASTLOCAL_SKIP_ADDRESSES" \
		"only_cmds|a|FASTLOCAL_ONLY_CMDS" "skip_cmds|b|FASTLOCAL_SKIP_CMDS" \
		"flow_budget|262144|FASTLOCAL_FLOW_BUDGET" "broker_socket|/b.sock|FASTLOCAL_BROKER" \
		"FASTLOCAL_UNWIND_LIB|libunwind.so.7|FASTLOCAL_UNWIND_LIB"; do
		k=${kv%%|*}
		rest=${kv#*|}
		has "$k" "${rest%|*}" "env ${rest##*|}" || return 1
	done
	# Both lists set: one warning, and the safe choice.
	warnings 1 || return 1
	grep -q 'only_cmds and skip_cmds are both set' "$T_TMP/err" || t_fail "no both-set warning"
}

env_over_file_and_empty_means_default() {
	f=$T_TMP/over.conf
	printf 'flush_usec = 500\nports = 80\nlog_level = info\n' >"$f"
	settings FASTLOCAL_CONF="$f" FASTLOCAL_FLUSH_USEC=300 FASTLOCAL_PORTS= || return 1
	has flush_usec 300 "env FASTLOCAL_FLUSH_USEC" || return 1
	has ports "every port" "env FASTLOCAL_PORTS" || return 1
	has log_level info "file $f:3"
}

# The host program is fastlocal's guest: every variable invalid at once,
# one warning line each, the defaults, every byte through.
INVALID_ENV="FASTLOCAL=maybe FASTLOCAL_LOG=loud FASTLOCAL_BATCH=sometimes FASTLOCAL_FLUSH_BYTES=1
FASTLOCAL_FLUSH_USEC=abc FASTLOCAL_ENROLL_AFTER=-1 FASTLOCAL_TCP_COMPAT=2 FASTLOCAL_BACKTRACE=please
FASTLOCAL_PORTS=70000 FASTLOCAL_SKIP_PORTS=http FASTLOCAL_ADDRESSES=localhost
FASTLOCAL_SKIP_ADDRESSES=10.0.0.0/33 FASTLOCAL_ONLY_CMDS=/usr/bin/x FASTLOCAL_SKIP_CMDS=a,,b
FASTLOCAL_FLOW_BUDGET=1 FASTLOCAL_BROKER=relative.sock"

every_invalid_env_var() {
	long=$(head -c 5000 /dev/zero | tr '\0' x)
	# shellcheck disable=SC2086
	stream $INVALID_ENV FASTLOCAL_LOG_FILE="$long" FASTLOCAL_UNWIND_LIB="$long" || return 1
	warnings 18 || return 1
	for kv in $INVALID_ENV FASTLOCAL_LOG_FILE= FASTLOCAL_UNWIND_LIB=; do
		name=${kv%%=*}
		n=$(grep -c "warning: $name=.* (environment): .*; using the default " "$T_TMP/err")
		[ "$n" = 1 ] || t_fail "$n warnings for $name: $(head -c 400 "$T_TMP/err")" || return 1
	done
	echo "  e.g. $(grep -m1 FLUSH_USEC "$T_TMP/err")"
	# shellcheck disable=SC2086
	settings $INVALID_ENV FASTLOCAL_PIN_DIR=relative || return 1
	warnings 17 || return 1
	n=$(grep -c '|default (invalid value)$' "$T_TMP/settings")
	t_check_eq "$n" 17 "settings at their default" || return 1
	has pin_dir /sys/fs/bpf/fastlocal "default (invalid value)"
}

every_invalid_file_key() {
	f=$T_TMP/bad.conf
	cat >"$f" <<'EOF'
enabled = maybe
pin_dir = relative/dir
log_level = loud
batch = 2
flush_bytes = 4194305
flush_usec = 9
enroll_after = 1073741825
tcp_compat = of
backtrace = -1
ports = 1-0
skip_ports = 65536
addresses = 1.2.3
skip_addresses = ::1/129
only_cmds = a/b
skip_cmds = ,
flow_budget = 262143
broker_socket = /this/path/is/far/too/long/for/the/sun_path/of/a/unix/socket/which/holds/only/one/hundred/and/seven/characters/at/most
EOF
	settings -u FASTLOCAL_PIN_DIR -u FASTLOCAL_ENROLL_AFTER FASTLOCAL_CONF="$f" || return 1
	warnings 9 || return 1 # 8, then "N more problems not shown"
	grep -q "warning: $f: 9 more problems not shown" "$T_TMP/err" || t_fail "no summary line" || return 1
	grep -q "warning: enabled = maybe ($f:1): not a switch" "$T_TMP/err" || t_fail "no line for enabled" || return 1
	n=$(grep -c '|default (invalid value)$' "$T_TMP/settings")
	t_check_eq "$n" 17 "settings at their default" || return 1
	# The shim, reading the same file, warns the same and moves every byte.
	stream FASTLOCAL_CONF="$f" || return 1
	warnings 9
}

missing_and_unreadable_file() {
	stream FASTLOCAL_CONF=/nonexistent/fastlocal.conf || return 1
	warnings 1 || return 1
	grep -q 'configuration file /nonexistent/fastlocal.conf: No such file or directory; going on without it' \
		"$T_TMP/err" || t_fail "unexpected warning: $(cat "$T_TMP/err")" || return 1
	stream FASTLOCAL_CONF="$T_TMP" || return 1
	warnings 1 || return 1
	f=$T_TMP/secret.conf
	echo 'flush_usec = 300' >"$f"
	chmod 600 "$f"
	chmod 755 "$T_TMP"
	t_expect_rc 0 setpriv --reuid=nobody --regid=nogroup --clear-groups env FASTLOCAL_CONF="$f" \
		"$CLI" config || return 1
	warnings 1 || return 1
	grep -q 'Permission denied; going on without it' "$T_TMP/err" || t_fail "not EACCES: $(cat "$T_TMP/err")" || return 1
	grep -q '^flush_usec  *200  *default$' "$T_TMP/out" || t_fail "flush_usec is not the default"
}

garbage_file() {
	f=$T_TMP/garbage.conf
	{
		echo "flush_usec = 400"
		head -c 20000 /dev/urandom | tr -d '=' | tr '\0' x
		printf '\nfoo = bar\n\n# fine\n'
	} >"$f"
	settings -u FASTLOCAL_PIN_DIR FASTLOCAL_CONF="$f" || return 1
	has flush_usec 400 "file $f:1" || return 1
	n=$(wc -l <"$T_TMP/err")
	[ "$n" -le 9 ] && [ "$n" -ge 2 ] || t_fail "$n warning lines for a garbage file (at most 9)" || return 1
	stream FASTLOCAL_CONF="$f" || return 1
	[ "$(wc -l <"$T_TMP/err")" = "$n" ] || t_fail "the shim wrote $(wc -l <"$T_TMP/err") lines, config $n"
}

log_off_silences_warnings_log_file_gets_them() {
	stream FASTLOCAL_FLUSH_USEC=abc FASTLOCAL_LOG=off || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "FASTLOCAL_LOG=off: $(head -c 300 "$T_TMP/err")" || return 1
	f=$T_TMP/off.conf
	printf 'log_level = off\nflush_usec = abc\n' >"$f"
	stream FASTLOCAL_CONF="$f" || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "log_level = off: $(head -c 300 "$T_TMP/err")" || return 1
	log=$T_TMP/warn.log
	stream FASTLOCAL_FLUSH_USEC=abc FASTLOCAL_LOG_FILE="$log" || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "with a log file, stderr got: $(head -c 300 "$T_TMP/err")" || return 1
	n=$(grep -c 'warning: FASTLOCAL_FLUSH_USEC=abc (environment): not a number; using the default 200' "$log")
	t_check_eq "$n" 1 "warnings in the log file"
}

file_log_level_log_file_and_flow_budget() {
	f=$T_TMP/log.conf
	log=$T_TMP/shim.log
	printf 'log_level = debug\nlog_file = %s\nflow_budget = 524288\n' "$log" >"$f"
	stream FASTLOCAL_CONF="$f" || return 1
	[ ! -s "$T_TMP/err" ] || t_fail "stderr: $(head -c 300 "$T_TMP/err")" || return 1
	n=$(grep -c ': enrolled (slot [0-9]*, port [0-9]* -> [0-9]*, budget 524288)' "$log")
	[ "$n" = 4 ] || t_fail "expected 4 enrolled lines with budget 524288 in the file's log, got $n" || return 1
	stream FASTLOCAL_LOG=debug FASTLOCAL_FLOW_BUDGET=1048576 || return 1
	n=$(grep -c ': enrolled (slot.*, budget 1048576)' "$T_TMP/err")
	[ "$n" = 4 ] || t_fail "expected 4 enrolled lines with budget 1048576, got $n" || return 1
	stream FASTLOCAL_LOG=debug FASTLOCAL_FLOW_BUDGET=auto || return 1
	# auto: 7/8 of tcp_rmem's maximum (docs/kernel.md#rmem-shared)
	max=$(awk '{ m = $3 - int($3 / 8); if (m < 262144) m = 262144; if (m > 67108864) m = 67108864; print m }' /proc/sys/net/ipv4/tcp_rmem)
	n=$(grep -c ": enrolled (slot.*, budget $max)" "$T_TMP/err")
	[ "$n" = 4 ] || t_fail "auto: expected 4 enrolled lines with budget $max (7/8 of tcp_rmem), got $n" || return 1
	# A larger flow_budget is held to the same bound.
	stream FASTLOCAL_LOG=debug FASTLOCAL_FLOW_BUDGET=67108864 || return 1
	n=$(grep -c ": enrolled (slot.*, budget $max)" "$T_TMP/err")
	[ "$n" = 4 ] || t_fail "flow_budget 67108864: expected 4 enrolled lines with budget $max (7/8 of tcp_rmem), got $n"
}

cmd_verdict_and_usage() {
	t_expect_rc 0 env FASTLOCAL_ONLY_CMDS=redis-server "$CLI" config --cmd redis-server || return 1
	grep -qx 'program redis-server: accelerated' "$T_TMP/out" || t_fail "redis-server: $(tail -n1 "$T_TMP/out")" || return 1
	t_expect_rc 0 env FASTLOCAL_ONLY_CMDS=redis-server "$CLI" config --json --cmd=curl || return 1
	[ "$(jq -c .cmd "$T_TMP/out")" = '{"name":"curl","accelerated":false,"why_not":"not named in only_cmds"}' ] ||
		t_fail "curl: $(jq -c .cmd "$T_TMP/out")" || return 1
	t_expect_rc 0 env FASTLOCAL=off "$CLI" config --cmd x || return 1
	grep -qx 'program x: not accelerated (FASTLOCAL / enabled is off)' "$T_TMP/out" || t_fail "FASTLOCAL=off: $(tail -n1 "$T_TMP/out")" || return 1
	t_expect_rc 2 "$CLI" config --cmd || return 1
	t_err_one_line || return 1
	t_expect_rc 2 "$CLI" config --bogus || return 1
	t_err_one_line || return 1
	t_expect_rc 0 "$CLI" config --help || return 1
	grep -q '^Usage: fastlocal config' "$T_TMP/out" || t_fail "no usage line"
}

# The CLI reads the file's pin_dir as the shim does: "load" pins where the
# shims look, and "status" finds it, saying where the dir came from.
cli_follows_file_pin_dir() {
	dir=/sys/fs/bpf/fl-conf-test-$$
	printf 'pin_dir = %s\n' "$dir" >"$T_TMP/pin.conf"
	t_expect_rc 0 env -u FASTLOCAL_PIN_DIR FASTLOCAL_CONF="$T_TMP/pin.conf" "$CLI" load || return 1
	t_expect_rc 0 env -u FASTLOCAL_PIN_DIR FASTLOCAL_CONF="$T_TMP/pin.conf" "$CLI" status --json
	st=$?
	env -u FASTLOCAL_PIN_DIR FASTLOCAL_CONF="$T_TMP/pin.conf" "$CLI" unload >/dev/null 2>&1
	[ "$st" = 0 ] || return 1
	[ -e "$dir" ] && t_fail "unload left $dir behind" && return 1
	got=$(jq -r '"\(.pin_dir)|\(.pin_dir_source)"' "$T_TMP/out")
	[ "$got" = "$dir|file $T_TMP/pin.conf:1" ] || t_fail "status --json said '$got'"
}

t_run "the defaults, each shown with its source" defaults_and_their_source
t_run "every file key is read, shown with its file and line" every_file_key
t_run "every environment variable is read, shown as its source" every_env_var
t_run "the environment wins over the file; an empty variable means the default" env_over_file_and_empty_means_default
t_run "every invalid variable: one warning each, the default, the program's bytes intact" every_invalid_env_var
t_run "every invalid file key: warnings (capped), the defaults, the shim unharmed" every_invalid_file_key
t_run "a missing or unreadable FASTLOCAL_CONF: one warning, then no file" missing_and_unreadable_file
t_run "a garbage file: a few warnings, its valid line used, the program unharmed" garbage_file
t_run "log_level=off silences the warnings; a log file gets them instead of stderr" log_off_silences_warnings_log_file_gets_them
t_run "log_level, log_file and flow_budget from the file act in the shim" file_log_level_log_file_and_flow_budget
t_run "load, status and unload use the file's pin_dir, and say so" cli_follows_file_pin_dir
t_run "config --cmd says whether a program would be accelerated; bad usage exits 2" cmd_verdict_and_usage
t_done
