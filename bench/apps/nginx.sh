# nginx.sh - sourced by run.sh: nginx as a deployment runs it (master as
# root, one worker as nobody, sendfile, tcp_nopush, tcp_nodelay, keep-alive)
# serving a 1 KiB and a 64 MiB file to wrk and curl; then both files fetched
# with curl and compared by sha256 and cmp. Under the shim the worker, not
# being root, enrolls through the broker (run.sh starts it): a keep-alive
# wrk run in which the broker enrolled none of the worker's sockets fails
# the run. nginx_start and wrk_run are used by haproxy.sh too.

WRK_SECS=3 CURL_1K=2000 CURL_BIG=4
[ "$QUICK" = 1 ] && WRK_SECS=1 CURL_1K=500 CURL_BIG=2
BIG=67108864

# www_files: the two files, random, made once per run.
www_files() {
	[ -d "$WORK/www" ] && return 0
	mkdir -p "$WORK/www"
	head -c 1024 /dev/urandom >"$WORK/www/1k.bin"
	head -c $BIG /dev/urandom >"$WORK/www/64m.bin"
}

# nginx_start NAME MODE PORT: an nginx of its own in $WORK/NAME, in the
# foreground (daemon off) so that its PID is the master's. The master runs
# as root, the worker as nobody.
nginx_start() {
	d=$WORK/$1
	mkdir -p "$d"
	www_files
	cat >"$d/nginx.conf" <<CONF
user nobody $(id -gn nobody);
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    # wrk's keep-alive connections must not be closed every 1000 requests.
    keepalive_requests 100000000;
    default_type application/octet-stream;
    client_body_temp_path $d/body;
    proxy_temp_path $d/proxy;
    fastcgi_temp_path $d/fastcgi;
    uwsgi_temp_path $d/uwsgi;
    scgi_temp_path $d/scgi;
    server {
        listen 127.0.0.1:$3;
        root $WORK/www;
    }
}
CONF
	start_server "$1" "$2" "$3" nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf"
}

# wrk_run APP VARIANT MODE PORT FILE CONNS UNIT [close]: wrk for WRK_SECS;
# prints requests/s or Gbit/s. Integrity: no socket error, no non-2xx.
# wrk counts a response slower than its timeout (2 s by default) as a socket
# error; a 64 MiB response can take that long under the shim (wrk's FIONREAD
# after every read is slow there, see docs/benchmarks.md), which is a speed
# the table reports, not a wrong byte, so the timeout is 30 s.
wrk_run() {
	a=$1 v=$2 m=$3 port=$4 f=$5 c=$6 u=$7
	cl=0
	[ "${8:-}" = close ] && cl=1
	WRK_CLOSE=$cl with_mode "$m" wrk -t 1 -c "$c" -d "${WRK_SECS}s" --timeout 30s \
		-s "$APPS_DIR/wrk-report.lua" "http://127.0.0.1:$port/$f" >"$WORK/wrk.out" 2>&1
	rc=$?
	line=$(grep '^wrk requests=' "$WORK/wrk.out")
	if [ $rc != 0 ] || [ -z "$line" ]; then
		ifail "$a" "$v" "$m" "wrk exited $rc: $(tail -c 300 "$WORK/wrk.out")"
		return
	fi
	set -- $line
	for kv in "$@"; do
		case $kv in *=*) eval "w_${kv%%=*}=${kv#*=}" ;; esac
	done
	errs="connect $w_connect, read $w_read, write $w_write, timeout $w_timeout, non-2xx $w_status"
	if [ "$w_requests" = 0 ]; then
		ifail "$a" "$v" "$m" "wrk completed no request ($errs)"
	elif [ $((w_connect + w_read + w_write + w_timeout + w_status)) != 0 ]; then
		ifail "$a" "$v" "$m" "wrk errors: $errs"
	else
		ipass "$a" "$v" "$m" "wrk: no socket errors, no non-2xx"
	fi
	case $u in
	rps) awk -v r="$w_requests" -v us="$w_us" 'BEGIN { printf "%.0f\n", r * 1e6 / us }' ;;
	*) awk -v b="$w_bytes" -v us="$w_us" 'BEGIN { printf "%.3f\n", b * 8 / us / 1e3 }' ;;
	esac
}

# curl_big APP VARIANT MODE PORT: CURL_BIG downloads of the 64 MiB file on
# one connection, to /dev/null; prints Gbit/s over the transfers' own time
# (not curl's start-up). Integrity here: status 200 and the full size; the
# content is checked by curl_sha256.
curl_big() {
	a=$1 v=$2 m=$3 port=$4
	set --
	i=0
	while [ $i -lt "$CURL_BIG" ]; do
		set -- "$@" -o /dev/null "http://127.0.0.1:$port/64m.bin"
		i=$((i + 1))
	done
	with_mode "$m" curl -s -w '%{http_code} %{size_download} %{time_total}\n' "$@" >"$WORK/curl.out" 2>&1
	rc=$?
	bad=$(awk -v n="$CURL_BIG" -v sz=$BIG '$1 != 200 || $2 != sz { b++ } END { print b + (NR != n) }' "$WORK/curl.out")
	if [ $rc != 0 ] || [ "$bad" != 0 ]; then
		ifail "$a" "$v" "$m" "curl exited $rc; transfers: $(tr '\n' ';' <"$WORK/curl.out")"
		return
	fi
	ipass "$a" "$v" "$m" "curl: $CURL_BIG x 64 MiB, status 200, full size"
	awk '{ b += $2; t += $3 } END { printf "%.3f\n", b * 8 / t / 1e9 }' "$WORK/curl.out"
}

# curl_small MODE PORT: CURL_1K requests for the 1 KiB file on one
# keep-alive connection; prints requests/s over the transfers' own time.
# Integrity: every status 200 and exactly CURL_1K KiB of body.
curl_small() {
	m=$1 port=$2
	v="1 KiB, curl, $CURL_1K requests, keep-alive"
	with_mode "$m" curl -s -w '%{stderr}%{http_code} %{time_total}\n' \
		"http://127.0.0.1:$port/1k.bin?[1-$CURL_1K]" 2>"$WORK/curl.err" | wc -c >"$WORK/curl.len"
	got=$(cat "$WORK/curl.len")
	ok=$(awk '$1 == 200 { n++ } END { print n + 0 }' "$WORK/curl.err")
	if [ "$got" != $((CURL_1K * 1024)) ] || [ "$ok" != "$CURL_1K" ]; then
		ifail nginx "$v" "$m" "$ok of $CURL_1K requests got 200, $got body bytes of $((CURL_1K * 1024)): $(grep -v '^200 ' "$WORK/curl.err" | head -c 300)"
		return
	fi
	ipass nginx "$v" "$m" "curl: all 200, all bytes"
	awk '{ t += $2 } END { printf "%.0f\n", NR / t }' "$WORK/curl.err"
}

# curl_sha256 APP MODE PORT: both files through curl, compared by sha256
# and byte for byte (cmp).
curl_sha256() {
	a=$1 m=$2 port=$3
	for f in 1k.bin 64m.bin; do
		rm -f "$WORK/dl"
		with_mode "$m" curl -s -o "$WORK/dl" "http://127.0.0.1:$port/$f"
		want=$(sha256sum <"$WORK/www/$f" | cut -d' ' -f1)
		got=$(sha256sum <"$WORK/dl" | cut -d' ' -f1)
		if [ "$want" = "$got" ] && cmp -s "$WORK/dl" "$WORK/www/$f"; then
			ipass "$a" "curl $f, sha256" "$m" "sha256 and cmp match the original"
		else
			ifail "$a" "curl $f, sha256" "$m" "sha256 $got ($(wc -c <"$WORK/dl") bytes) is not the original's $want"
		fi
	done
}

# Wrappers with the mode first, as measure() calls them.
# resp_size PORT FILE: the length of nginx's whole response for FILE
# (headers and body; its headers have a fixed length for one file, the
# Date included), from a HEAD request. Asked once, before the runs, so that
# no run's counters include it.
resp_size() {
	h=$(curl -s -I "http://127.0.0.1:$1/$2" | wc -c)
	echo $((h + $(wc -c <"$WORK/www/$2")))
}

# wrk_size_check VARIANT MODE FILE CONNS: every response wrk read on
# keep-alive connections had the right length: wrk's byte count is its
# complete responses' plus at most one partial response per connection in
# flight when it stopped.
wrk_size_check() {
	case $3 in 1k.bin) one=$RESP_1K ;; *) one=$RESP_BIG ;; esac
	lo=$((w_requests * one)) hi=$(((w_requests + $4) * one))
	if [ "$w_bytes" -ge $lo ] && [ "$w_bytes" -le $hi ]; then
		ipass nginx "$1" "$2" "wrk's bytes = its responses x $one B each (+ those in flight)"
	else
		ifail nginx "$1" "$2" "wrk read $w_bytes bytes in $w_requests responses of $one B each (+ at most $4 in flight): a response of the wrong length"
	fi
}

# Keep-alive runs under the shim also check that the worker enrolled: the
# broker (which only non-root processes use, so here only the worker) must
# have enrolled some of its sockets, and the redirected bytes must have
# grown by at least 90% of the bytes of the responses wrk read (they count
# both directions, so requests add about 6% on top of the responses).
# Otherwise the row would measure (mostly) plain TCP under a fastlocal
# label: an integrity failure, not a slow number. Not every byte is
# required: a connection enrolls after its first 4 KiB
# (FASTLOCAL_ENROLL_AFTER), and with -c 400 a few connections were seen
# never to enroll (386 of 400); the counts are logged. The 64 MiB run
# only needs some bytes redirected: large responses go over TCP for a
# while when the reader's redirected budget is full (flow control,
# docs/design.md section 3), by design, not for want of enrollment.
nginx_wrk() {
	eval "port=\$NGINX_PORT_$1"
	b0=$(flstat broker.enrolled_total)
	r0=$(flstat redirected_bytes)
	w_requests= w_bytes=
	wrk_run nginx "$2" "$1" "$port" "$3" "$4" "$5" "${6:-}"
	[ "${6:-}" != close ] || return 0
	b=$(($(flstat broker.enrolled_total) - b0))
	r=$(($(flstat redirected_bytes) - r0))
	[ -z "$w_requests" ] || wrk_size_check "$2" "$1" "$3" "$4"
	[ "$1" = shim ] || return 0
	wb=${w_bytes:-0} want=$(((${w_bytes:-0} * 9 + 9) / 10))
	[ "$3" = 1k.bin ] || want=1
	log "nginx $2 (shim): the broker enrolled $b of the worker's sockets for $4 connections; $r bytes redirected, wrk read $wb"
	if [ "$b" -gt 0 ] && [ "$wb" -gt 0 ] && [ "$r" -ge "$want" ]; then
		ipass nginx "worker (as nobody) enrolled" shim "in every keep-alive run the broker enrolled the worker's sockets; redirected bytes >= 90% of wrk's response bytes (1 KiB), > 0 (64 MiB)"
	else
		ifail nginx "worker (as nobody) enrolled" shim "$2: the broker enrolled $b of the nginx worker's sockets, $r bytes redirected for $wb bytes of responses (needed $want): the worker ran (mostly) on plain TCP"
	fi
}

nginx_curl_big() {
	eval "port=\$NGINX_PORT_$1"
	curl_big nginx "64 MiB, curl" "$1" "$port"
}
nginx_curl_small() {
	eval "port=\$NGINX_PORT_$1"
	curl_small "$1" "$port"
}

nginx_main() {
	for m in plain shim; do
		port=$(free_port)
		eval "NGINX_PORT_$m=$port"
		nginx_start "nginx-$m" "$m" "$port" || return 1
	done
	RESP_1K=$(resp_size "$NGINX_PORT_plain" 1k.bin)
	RESP_BIG=$(resp_size "$NGINX_PORT_plain" 64m.bin)
	v1="1 KiB, wrk -c 50, keep-alive"
	v1b="1 KiB, wrk -c 400, keep-alive"
	v2="1 KiB, wrk -c 50, new connection per request"
	v3="64 MiB, wrk -c 4"
	rep=1
	while [ $rep -le "$REPS" ]; do
		pair $rep nginx "$v1" rps nginx_wrk "$v1" 1k.bin 50 rps
		pair $rep nginx "$v1b" rps nginx_wrk "$v1b" 1k.bin 400 rps
		pair $rep nginx "$v2" rps nginx_wrk "$v2" 1k.bin 50 rps close
		pair $rep nginx "$v3" Gbit/s nginx_wrk "$v3" 64m.bin 4 Gbit/s
		pair $rep nginx "64 MiB, curl" Gbit/s nginx_curl_big
		pair $rep nginx "1 KiB, curl, $CURL_1K requests, keep-alive" rps nginx_curl_small
		rep=$((rep + 1))
	done
	curl_sha256 nginx plain "$NGINX_PORT_plain"
	curl_sha256 nginx shim "$NGINX_PORT_shim"
	stop_servers
}
