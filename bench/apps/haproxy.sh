# haproxy.sh - sourced by run.sh after nginx.sh: haproxy in TCP mode with
# splicing forced (splice-auto alone chose not to splice at all in haproxy
# 2.6, see test/integration/haproxy_splice.sh) in front of an nginx backend
# of the same mode. The 64 MiB file through haproxy must keep its sha256,
# and under the shim haproxy must really have spliced out of enrolled
# sockets (splice_emulated_bytes grows).

haproxy_start() {
	name=$1 m=$2 port=$3 backend=$4
	cat >"$WORK/$name.cfg" <<CFG
global
    maxconn 256
    nbthread 1
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    option splice-auto
    option splice-request
    option splice-response
frontend fe
    bind 127.0.0.1:$port
    default_backend be
backend be
    server s1 127.0.0.1:$backend
CFG
	start_server "$name" "$m" "$port" haproxy -f "$WORK/$name.cfg" -db
}

haproxy_wrk() {
	eval "port=\$HAPROXY_PORT_$1"
	wrk_run haproxy "$2" "$1" "$port" 1k.bin 50 rps
}
haproxy_curl_big() {
	eval "port=\$HAPROXY_PORT_$1"
	curl_big haproxy "64 MiB, curl" "$1" "$port"
}

haproxy_main() {
	for m in plain shim; do
		bport=$(free_port)
		nginx_start "hx-nginx-$m" "$m" "$bport" || return 1
		port=$(free_port)
		eval "HAPROXY_PORT_$m=$port"
		haproxy_start "haproxy-$m" "$m" "$port" "$bport" || return 1
	done
	s0=$(flstat splice_emulated_bytes)
	v1="1 KiB, wrk -c 50, keep-alive"
	rep=1
	while [ $rep -le "$REPS" ]; do
		pair $rep haproxy "64 MiB, curl" Gbit/s haproxy_curl_big
		pair $rep haproxy "$v1" rps haproxy_wrk "$v1"
		rep=$((rep + 1))
	done
	curl_sha256 haproxy plain "$HAPROXY_PORT_plain"
	curl_sha256 haproxy shim "$HAPROXY_PORT_shim"
	s=$(($(flstat splice_emulated_bytes) - s0))
	if [ "$s" -gt 0 ]; then
		ipass haproxy "splice out of enrolled sockets" shim "haproxy spliced $s bytes out of enrolled sockets"
	else
		ifail haproxy "splice out of enrolled sockets" shim "haproxy never spliced out of an enrolled socket (splice_emulated_bytes +0)"
	fi
	stop_servers
}
