#!/bin/sh
# service.sh - the systemd unit as "make install" installs it: systemd-analyze
# verify accepts it, and its ExecStartPre/ExecStart/ExecStopPost, run as
# systemd would (the unit's EnvironmentFile and capability bounding set,
# NoNewPrivileges), load fastlocal and run a broker that enrolls the sockets
# of processes of the user nobody; stopping leaves the pins unless
# FASTLOCAL_UNLOAD_ON_STOP=yes. (There is no systemd here to start the unit
# itself: its sandboxing options are checked by verify only.)
# fl-test-weight: 15
. "$FL_TEST_TOP/test/lib/fltest.sh"

TOP=$FL_TEST_TOP
D=$T_TMP/root
UNIT=$D/usr/lib/systemd/system/fastlocal.service
ENVFILE=$D/etc/default/fastlocal
PIN=$(t_pin_dir svc)
SOCK=$T_TMP/run/fastlocal/broker.sock
PRE=${FL_TEST_ASAN_RT:-}
SAN=0
case $FL_TEST_BUILD in *-san) SAN=1 ;; esac
DAEMON=""
trap '[ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null; "$CLI" unload --pin-dir "$PIN" >/dev/null 2>&1; rm -rf "$T_TMP"' EXIT

# unit_key KEY: the values of KEY= lines in the installed unit, one a line.
unit_key() {
	sed -n "s/^$1=//p" "$UNIT"
}

# unit_cmd KEY: KEY's command line as systemd would run it here: "$$" is a
# "$", and @BINDIR@ (/usr/bin) is the DESTDIR copy. Fails unless there is
# exactly one such line and it uses no prefix (-, @, +, !) nor a systemd
# variable, which this runner does not emulate.
unit_cmd() {
	c=$(unit_key "$1")
	[ -n "$c" ] && [ "$(printf '%s\n' "$c" | wc -l)" = 1 ] ||
		t_fail "the unit has not exactly one $1= line: '$c'" || return 1
	case $c in [-@+!:]*) t_fail "$1 has a prefix this test does not emulate: $c" || return 1 ;; esac
	c=$(printf '%s\n' "$c" | sed 's/\$\$/\x01/g')
	case $c in *'$'*) t_fail "$1 uses a systemd variable: $c" || return 1 ;; esac
	printf '%s\n' "$c" | sed "s/\x01/\$/g; s|/usr/bin/fastlocal|$D/usr/bin/fastlocal|g"
}

# as_unit CMDLINE: runs it with the environment systemd gives the unit (its
# EnvironmentFile, plus this test's pin dir and broker socket, which the
# installed unit leaves to their defaults) and the unit's capabilities.
# It execs: call it in a subshell, whose pid is then the command's.
as_unit() {
	caps=$(unit_key CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
	# shellcheck disable=SC2046 # the environment file's VAR=VALUE lines
	eval "set -- $1"
	exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin FASTLOCAL_CONF= LD_PRELOAD="$PRE" NOTIFY_SOCKET="${NOTIFY_SOCKET:-}" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" FASTLOCAL_PIN_DIR="$PIN" FASTLOCAL_BROKER="$SOCK" \
		$(grep -E '^[A-Z_][A-Z0-9_]*=' "$ENVFILE") \
		setpriv --bounding-set="-all,$caps" --inh-caps=-all --no-new-privs "$@"
}

loaded() {
	[ "$("$CLI" status --json --pin-dir "$PIN" 2>/dev/null | jq -r .loaded)" = true ]
}

# start: ExecStartPre, then ExecStart in the background, ready when it
# says so: through NOTIFY_SOCKET, like systemd, for Type=notify.
start() {
	pre=$(unit_cmd ExecStartPre) && cmd=$(unit_cmd ExecStart) || return 1
	[ "$(unit_key Type)" = notify ] || t_fail "the unit is Type=$(unit_key Type), not notify" || return 1
	(as_unit "$pre") >"$T_TMP/pre.out" 2>&1 ||
		t_fail "ExecStartPre failed: $(head -c 400 "$T_TMP/pre.out")" || return 1
	mkdir -p "$(dirname "$SOCK")" # RuntimeDirectory=
	# systemd's side of sd_notify: one datagram, printed as it came.
	rm -f "$T_TMP/notify" "$T_TMP/notify.out"
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(10)
print(s.recv(4096).decode(), flush=True)' "$T_TMP/notify" >"$T_TMP/notify.out" 2>&1 &
	listener=$!
	i=0
	until [ -S "$T_TMP/notify" ]; do
		i=$((i + 1))
		[ $i -lt 200 ] || t_fail "the notify listener did not start: $(cat "$T_TMP/notify.out")" || return 1
		sleep 0.05
	done
	(NOTIFY_SOCKET=$T_TMP/notify as_unit "$cmd") >"$T_TMP/daemon.out" 2>&1 &
	DAEMON=$!
	wait $listener
	grep -qx 'READY=1' "$T_TMP/notify.out" ||
		t_fail "no READY=1 from ExecStart: notify '$(cat "$T_TMP/notify.out")', daemon '$(head -c 300 "$T_TMP/daemon.out")'" || return 1
	# Ready must mean listening: the broker answers at once.
	[ "$("$CLI" status --json --pin-dir "$PIN" --socket "$SOCK" | jq -r .broker.answers)" = true ] ||
		t_fail "READY=1, yet the broker does not answer on $SOCK"
}

# stop: SIGTERM (systemd's KillSignal), the exit status, then ExecStopPost.
stop() {
	post=$(unit_cmd ExecStopPost) || return 1
	kill -TERM "$DAEMON" && wait "$DAEMON"
	st=$?
	DAEMON=""
	[ $st = 0 ] || t_fail "the broker exited $st on SIGTERM" || return 1
	[ ! -e "$SOCK" ] || t_fail "the broker left its socket" || return 1
	(as_unit "$post") >"$T_TMP/post.out" 2>&1 ||
		t_fail "ExecStopPost failed: $(head -c 400 "$T_TMP/post.out")"
}

install_puts_the_unit_under_destdir() {
	t_expect_rc 0 make -s -C "$TOP" install DESTDIR="$D" PREFIX=/usr BUILD="$FL_TEST_BUILD" SAN=$SAN ||
		return 1
	[ -f "$UNIT" ] && [ -f "$ENVFILE" ] || t_fail "no unit or no $ENVFILE: $(find "$D" -type f)" || return 1
	grep -q '@' "$UNIT" && t_fail "unsubstituted @...@ in the unit: $(grep '@' "$UNIT")" && return 1
	[ "$(unit_key ExecStart)" = "/usr/bin/fastlocal daemon" ] ||
		t_fail "ExecStart is '$(unit_key ExecStart)'" || return 1
	[ "$(unit_key EnvironmentFile)" = "-/etc/default/fastlocal" ] ||
		t_fail "EnvironmentFile is '$(unit_key EnvironmentFile)'" || return 1
	grep -qx 'FASTLOCAL_UNLOAD_ON_STOP=no' "$ENVFILE" || t_fail "$ENVFILE does not say FASTLOCAL_UNLOAD_ON_STOP=no"
}

systemd_analyze_verify_is_silent() {
	command -v systemd-analyze >/dev/null || t_fail "systemd-analyze is missing (make deps)" || return 1
	# verify also checks that the commands exist: a copy naming DESTDIR's.
	mkdir -p "$T_TMP/verify" && sed "s|/usr/bin/fastlocal|$D/usr/bin/fastlocal|g" "$UNIT" \
		>"$T_TMP/verify/fastlocal.service" || return 1
	# Unknown keys are only warnings (exit 0): any output fails.
	t_expect_rc 0 systemd-analyze verify --man=no "$T_TMP/verify/fastlocal.service" || return 1
	[ ! -s "$T_TMP/err" ] && [ ! -s "$T_TMP/out" ] ||
		t_fail "systemd-analyze verify: $(head -c 400 "$T_TMP/err" "$T_TMP/out")"
}

the_unit_loads_and_its_broker_enrolls_nobody() {
	start || return 1
	loaded || t_fail "ExecStartPre did not load in $PIN" || return 1
	# A verified transfer between two processes of nobody, run by the
	# installed CLI (which finds the installed shim).
	chmod 0755 "$T_TMP" && cp "$FL_TEST_BUILD/fl-xfer" "$T_TMP/" || return 1
	before=$("$CLI" status --json --pin-dir "$PIN" | jq .broker.enrolled_total)
	bytes=67108864
	nobody="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all env ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD=$PRE FASTLOCAL_BROKER=$SOCK FASTLOCAL_PIN_DIR=$PIN $D/usr/bin/fastlocal run -- $T_TMP/fl-xfer"
	# A free port: the next one when the server says it is taken.
	port=$((20000 + $$ % 20000))
	tries=0
	while :; do
		$nobody serve $port $bytes >"$T_TMP/serve.out" 2>&1 &
		srv=$!
		i=0
		until grep -q listening "$T_TMP/serve.out" 2>/dev/null; do
			kill -0 $srv 2>/dev/null || break
			i=$((i + 1))
			[ $i -lt 200 ] || { kill $srv; t_fail "fl-xfer serve did not start: $(head -c 300 "$T_TMP/serve.out")"; return 1; }
			sleep 0.05
		done
		grep -q listening "$T_TMP/serve.out" && break
		tries=$((tries + 1))
		grep -q 'in use' "$T_TMP/serve.out" && [ $tries -lt 20 ] ||
			t_fail "fl-xfer serve did not start: $(head -c 300 "$T_TMP/serve.out")" || return 1
		port=$((port + 1))
	done
	# shellcheck disable=SC2086
	t_expect_rc 0 $nobody fetch $port $bytes || { kill $srv; return 1; }
	wait $srv || t_fail "fl-xfer serve failed: $(head -c 300 "$T_TMP/serve.out")" || return 1
	after=$("$CLI" status --json --pin-dir "$PIN" | jq .broker.enrolled_total)
	echo "  broker enrolled $((after - before)) sockets of nobody"
	[ $((after - before)) -ge 2 ] || t_fail "the broker enrolled $((after - before)) sockets, expected both ends" || return 1
	[ "$("$CLI" status --json --pin-dir "$PIN" | jq .redirected_bytes)" -gt 0 ] ||
		t_fail "nothing was redirected: $("$CLI" status --json --pin-dir "$PIN" |
			jq -c '{passed_bytes_by_reason, fallbacks, enrolled_total}')"
}

stopping_leaves_the_pins() {
	[ -n "$DAEMON" ] || start || return 1
	stop || return 1
	loaded || t_fail "stopping unloaded although FASTLOCAL_UNLOAD_ON_STOP=no"
}

the_broker_needs_cap_sys_admin() {
	# Without it the broker cannot reopen the slot arrays: the reason the
	# unit keeps it.
	cmd=$(unit_cmd ExecStart) || return 1
	eval "set -- $cmd"
	t_expect_rc 1 env FASTLOCAL_PIN_DIR="$PIN" FASTLOCAL_BROKER="$SOCK" LD_PRELOAD="$PRE" \
		setpriv --bounding-set=-all,+bpf,+perfmon,+net_admin --inh-caps=-all --no-new-privs "$@" || return 1
	t_err_has "cannot map slot domain 0"
}

unload_on_stop_removes_the_pins() {
	sed -i 's/^FASTLOCAL_UNLOAD_ON_STOP=.*/FASTLOCAL_UNLOAD_ON_STOP=yes/' "$ENVFILE" || return 1
	start || return 1
	grep -q 'nothing to do' "$T_TMP/pre.out" || t_fail "ExecStartPre reloaded: $(cat "$T_TMP/pre.out")" || return 1
	stop || return 1
	! loaded || t_fail "FASTLOCAL_UNLOAD_ON_STOP=yes, yet the pins stayed" || return 1
	grep -q unloaded "$T_TMP/post.out" || t_fail "ExecStopPost said: $(cat "$T_TMP/post.out")"
}

uninstall_removes_the_unit_and_keeps_a_changed_default() {
	t_expect_rc 0 make -s -C "$TOP" uninstall DESTDIR="$D" PREFIX=/usr BUILD="$FL_TEST_BUILD" SAN=$SAN ||
		return 1
	left=$(cd "$D" && find . -type f | sort | tr '\n' ' ')
	[ "$left" = "./etc/default/fastlocal " ] || t_fail "left after uninstall: '$left'" || return 1
	cp "$TOP/dist/fastlocal.default" "$ENVFILE" &&
		t_expect_rc 0 make -s -C "$TOP" uninstall DESTDIR="$D" PREFIX=/usr BUILD="$FL_TEST_BUILD" SAN=$SAN ||
		return 1
	[ ! -e "$ENVFILE" ] || t_fail "an unchanged $ENVFILE was left"
}

systemdunitdir_is_honoured() {
	t_expect_rc 0 make -s -C "$TOP" install DESTDIR="$T_TMP/d2" SYSTEMDUNITDIR=/lib/systemd/system \
		BUILD="$FL_TEST_BUILD" SAN=$SAN || return 1
	grep -qx 'ExecStart=/usr/local/bin/fastlocal daemon' "$T_TMP/d2/lib/systemd/system/fastlocal.service" ||
		t_fail "no unit naming /usr/local/bin in SYSTEMDUNITDIR: $(find "$T_TMP/d2" -name '*.service')"
}

t_run "make install puts the unit and /etc/default/fastlocal under DESTDIR" install_puts_the_unit_under_destdir
t_run "systemd-analyze verify accepts the installed unit without a word" systemd_analyze_verify_is_silent
t_run "the unit's commands load, its broker says READY=1 and enrolls processes of nobody" the_unit_loads_and_its_broker_enrolls_nobody
t_run "stopping the unit stops the broker and leaves the pins" stopping_leaves_the_pins
t_run "the broker does not start without CAP_SYS_ADMIN" the_broker_needs_cap_sys_admin
t_run "with FASTLOCAL_UNLOAD_ON_STOP=yes stopping unloads" unload_on_stop_removes_the_pins
t_run "make uninstall removes the unit and keeps a changed default file" uninstall_removes_the_unit_and_keeps_a_changed_default
t_run "make install honours SYSTEMDUNITDIR and PREFIX" systemdunitdir_is_honoured
t_done
