#!/bin/sh
# haproxy_splice.sh - a proxy in splice mode (docs/kernel.md#splice-blind)
# under the shim with its default settings: haproxy from Debian's package, at its
# default thread count, in TCP mode with "option splice-auto",
# "splice-request" and "splice-response", in front of nginx and in front of
# "python3 -m http.server". Each backend serves 20 downloads of a 64 MiB
# file in a row through haproxy to an HTTP client, all under the shim; each
# download must keep the file's sha256, and end within a time limit (a
# stall is a FAIL line naming the download, never a hung suite). haproxy
# must really have spliced out of enrolled sockets, and bytes must have
# been redirected.
#
# The client is Python's urllib, not curl: curl with ASan's runtime
# preloaded (the SAN build's shim needs it) deadlocks before it connects,
# even without the shim. Debian's /usr/bin/python3 serves and fetches
# (pyenv's shims are shell scripts). ASan's leak check is off for these
# programs: their leaks are not the shim's. nginx runs as deployed: master
# root, workers www-data, which enroll through "fastlocal daemon".
#
# splice-request/-response are set: with splice-auto alone haproxy 2.6 chose
# not to splice at all, which would test nothing. haproxy splices into
# blocking pipes with SPLICE_F_NONBLOCK and drains them itself: a splice
# emulation that blocks on such a pipe stalls haproxy for good (it did, at
# 29.7 MB of a 256 MiB download).
#
# FASTLOCAL_ENROLL_AFTER is unset for every process here: the default
# (connections switch over after 4 KiB) is what users run.
# fl-test-timeout: 240
. "$FL_TEST_TOP/test/lib/fltest.sh"

PRE=${FL_TEST_ASAN_RT:-}
export FASTLOCAL_LIB="$FL_TEST_LIB"
# For the programs of Debian's (the last setting counts).
NOLEAK="${ASAN_OPTIONS:-}:detect_leaks=0"
PY=/usr/bin/python3
unset FASTLOCAL_ENROLL_AFTER
BIG=67108864
N=20
LIMIT=20 # seconds for one 64 MiB download
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T_TMP"
}
trap cleanup EXIT INT TERM

free_port() {
	while :; do
		p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
		ss -Htan "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
}

# wait_listen PORT: up to 10 s for something to listen there.
wait_listen() {
	i=0
	while ! ss -Htln "sport = :$1" | grep -q .; do
		i=$((i + 1))
		[ $i -lt 200 ] || return 1
		sleep 0.05
	done
}

stat_of() {
	"$CLI" status --json | jq ".$1"
}

# The file, readable by nginx's www-data worker.
setup_www() {
	chmod 755 "$T_TMP"
	mkdir -p "$T_TMP/www"
	head -c $BIG /dev/urandom >"$T_TMP/www/64m.bin" || return 1
	chmod 644 "$T_TMP/www/64m.bin"
	SUM=$(sha256sum "$T_TMP/www/64m.bin" | cut -d' ' -f1)
}

# fastlocal as deployed for processes that are not root (nginx's workers):
# "fastlocal daemon", without the shim, serving a socket of the test's own.
start_daemon() {
	[ -n "${BROKER:-}" ] && return 0
	LD_PRELOAD="$PRE" "$CLI" daemon --socket "$T_TMP/broker.sock" \
		--pin-dir "$FASTLOCAL_PIN_DIR" >"$T_TMP/daemon.out" 2>&1 &
	PIDS="$PIDS $!"
	i=0
	until grep -q serving "$T_TMP/daemon.out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 200 ] || t_fail "fastlocal daemon did not start: $(head -c 300 "$T_TMP/daemon.out")" || return 1
		sleep 0.05
	done
	BROKER=$T_TMP/broker.sock
}

# nginx as deployed: master root, workers www-data (enrolled through the
# daemon), its own prefix and configuration, in the foreground so that $!
# is the master.
start_nginx() {
	start_daemon || return 1
	d=$T_TMP/nginx
	mkdir -p "$d"
	cat >"$d/nginx.conf" <<CONF
user www-data;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    sendfile on;
    default_type application/octet-stream;
    client_body_temp_path $d/body;
    proxy_temp_path $d/proxy;
    fastcgi_temp_path $d/fastcgi;
    uwsgi_temp_path $d/uwsgi;
    scgi_temp_path $d/scgi;
    server {
        listen 127.0.0.1:$1;
        root $T_TMP/www;
    }
}
CONF
	# A simple command, not a function: "&" then gives nginx's own PID
	# ("fastlocal run" execs it).
	ASAN_OPTIONS=$NOLEAK FASTLOCAL_BROKER=$BROKER LD_PRELOAD="$PRE" "$CLI" run -- nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf" >"$T_TMP/nginx.out" 2>&1 &
	master=$!
	PIDS="$PIDS $master"
	wait_listen "$1" || t_fail "nginx did not start: $(head -c 400 "$T_TMP/nginx.out" "$d/error.log")" || return 1
	users=$(ps -o user= --ppid "$master" | sort -u | tr '\n' ' ')
	[ "$(ps -o user= -p "$master")" = root ] && [ "$users" = "www-data " ] ||
		t_fail "nginx: master not root or workers not www-data ($users)"
}

start_python() {
	ASAN_OPTIONS=$NOLEAK LD_PRELOAD="$PRE" "$CLI" run -- "$PY" -m http.server "$1" --bind 127.0.0.1 --directory "$T_TMP/www" \
		>"$T_TMP/python.out" 2>&1 &
	PIDS="$PIDS $!"
	wait_listen "$1" || t_fail "$PY -m http.server did not start: $(head -c 400 "$T_TMP/python.out")"
}

# start_haproxy NAME PORT BACKEND_PORT: no nbthread, its default.
start_haproxy() {
	cat >"$T_TMP/$1.cfg" <<CFG
global
    maxconn 64
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    option splice-auto
    option splice-request
    option splice-response
frontend fe
    bind 127.0.0.1:$2
    default_backend be
backend be
    server s1 127.0.0.1:$3
CFG
	ASAN_OPTIONS=$NOLEAK LD_PRELOAD="$PRE" "$CLI" run -- haproxy -f "$T_TMP/$1.cfg" -db >"$T_TMP/$1.out" 2>&1 &
	PIDS="$PIDS $!"
	wait_listen "$2" || t_fail "haproxy did not start: $(head -c 400 "$T_TMP/$1.out")"
}

# The client: fetches URL, prints "<bytes> <sha256>"; ends with "STALL
# <bytes>" and status 3 when no byte came for LIMIT seconds or the whole
# took longer.
write_client() {
	cat >"$T_TMP/fetch.py" <<'PY'
import hashlib, socket, sys, time, urllib.request
url, limit = sys.argv[1], float(sys.argv[2])
h, n, t0 = hashlib.sha256(), 0, time.monotonic()
try:
    with urllib.request.urlopen(url, timeout=limit) as r:
        while True:
            if time.monotonic() - t0 > limit:
                raise socket.timeout()
            b = r.read(1 << 20)
            if not b:
                break
            h.update(b)
            n += len(b)
except (socket.timeout, TimeoutError):
    print("STALL", n)
    sys.exit(3)
print(n, h.hexdigest())
PY
}

# downloads WHAT PORT: N downloads in a row through haproxy at PORT, each
# within LIMIT seconds and with the file's sha256.
downloads() {
	i=1
	while [ $i -le $N ]; do
		# timeout: a backstop, should the client itself hang.
		timeout -s KILL $((LIMIT + 10)) env ASAN_OPTIONS="$NOLEAK" LD_PRELOAD="$PRE" "$CLI" run -- \
			"$PY" "$T_TMP/fetch.py" "http://127.0.0.1:$2/64m.bin" $LIMIT \
			>"$T_TMP/fetch.out" 2>"$T_TMP/fetch.err"
		rc=$?
		got="" sum=""
		read -r got sum <"$T_TMP/fetch.out"
		step="download $i/$N through haproxy -> $1"
		case $rc in
		0) ;;
		3) t_fail "$step: no end after $LIMIT s, stalled at $sum of $BIG bytes"; return 1 ;;
		137) t_fail "$step: the client hung (killed)"; return 1 ;;
		*) t_fail "$step: the client exited $rc: $(tail -c 300 "$T_TMP/fetch.err")"; return 1 ;;
		esac
		[ "$got" = $BIG ] && [ "$sum" = "$SUM" ] ||
			t_fail "$step: ${got:-no} bytes, sha256 ${sum:-none}; expected $BIG, $SUM" || return 1
		i=$((i + 1))
	done
}

# through BACKEND START_FN: haproxy in front of the backend, the downloads,
# and the counters.
through() {
	command -v haproxy >/dev/null || t_fail "haproxy is not installed (make deps)" || return 1
	[ -n "${SUM:-}" ] || { setup_www && write_client; } || t_fail "cannot write the test files" || return 1
	bp=$(free_port)
	"$2" "$bp" || return 1
	fp=$(free_port)
	start_haproxy "haproxy-$1" "$fp" "$bp" || return 1
	spliced0=$(stat_of splice_emulated_bytes)
	red0=$(stat_of redirected_bytes)
	t0=$(date +%s.%N)
	downloads "$1" "$fp" || return 1
	t1=$(date +%s.%N)
	spliced=$(($(stat_of splice_emulated_bytes) - spliced0))
	red=$(($(stat_of redirected_bytes) - red0))
	echo "  $N x 64 MiB through haproxy -> $1 in $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s: sha256 ok;" \
		"haproxy spliced $spliced bytes out of enrolled sockets; $red bytes redirected"
	# The backend's socket is enrolled once it moved 4 KiB: almost every
	# byte of the responses is spliced out of an enrolled socket.
	[ "$spliced" -ge $((N * BIG / 2)) ] ||
		t_fail "haproxy spliced only $spliced bytes out of enrolled sockets" || return 1
	# Half of the bytes must have been redirected. Not in the SAN build:
	# there the shim is several times slower, haproxy falls behind, and
	# nginx's non-blocking sendfile falls to TCP for flow control and
	# stays there (docs/design.md, "Left open": a non-blocking writer that
	# stays ahead of its reader never lets the gate reopen); 218 to 457 MB
	# of 1342 were redirected in six SAN runs. There one download's worth
	# must have been, which still proves the path ran; the sha256 checks
	# are the same in both builds.
	want_red=$((N * BIG / 2))
	[ -z "$PRE" ] || want_red=$BIG
	[ "$red" -ge "$want_red" ] || t_fail "only $red bytes were redirected (at least $want_red expected)"
}

# stop_last N: stops the last N servers started (haproxy, its backend).
stop_last() {
	for p in $(echo $PIDS | tr ' ' '\n' | tail -n "$1"); do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}

through_nginx() {
	through nginx start_nginx
	r=$?
	stop_last 2
	return $r
}
through_python() {
	through "python3 -m http.server" start_python
	r=$?
	stop_last 2
	return $r
}

t_run "haproxy in splice mode in front of nginx: $N downloads of 64 MiB, each sha256-exact and in time" through_nginx
t_run "haproxy in splice mode in front of python3 -m http.server: $N downloads of 64 MiB, each sha256-exact and in time" through_python
t_done
