# onesided.sh - sourced by run.sh after redis.sh and iperf3.sh: one end
# under the shim, its peer never enrolls (a program started without
# "fastlocal run", or a remote one). The shim must then cost nothing: every
# byte goes over TCP, and the rate should stay within 2% of plain (target
# >= 0.98x in report.sh).
#   rr      redis-server under the shim, redis-benchmark plain: GET of 64 B
#           values, -c 50, -P 1 (a 64 B request/response)
#   stream  an iperf3 client under the shim sending one stream to a plain
#           iperf3 server (the sending side enrolled this time)
# "plain" is both ends plain. Integrity: redis-benchmark's and iperf3's own
# checks (redis.sh, iperf3.sh), the known values read back through a plain
# redis-cli from the shim's server, and in the shim runs no byte redirected
# (one end enrolled cannot redirect; a byte that was means the peer did
# enroll and the row measures something else).

# onesided_check MODE VARIANT FUNC ARGS...: FUNC's value, and in the shim
# runs the redirected-bytes check.
onesided_check() {
	m=$1 v=$2 fn=$3
	shift 3
	r0=$(flstat redirected_bytes)
	"$fn" "$m" "$@"
	[ "$m" = shim ] || return 0
	r=$(($(flstat redirected_bytes) - r0))
	if [ "$r" = 0 ]; then
		ipass onesided "$v: nothing redirected" shim "the peer stayed unenrolled: 0 bytes redirected"
	else
		ifail onesided "$v: nothing redirected" shim "$r bytes were redirected: the plain peer enrolled after all"
	fi
}

onesided_rr() {
	CLIENT_MODE=plain RB_VARIANT=$2
	onesided_check "$1" "$2" redis_bench get 1 64
	CLIENT_MODE= RB_VARIANT=
}
onesided_stream() { onesided_check "$1" "$2" iperf3_run "$2"; }

onesided_main() {
	RB_APP=onesided IPERF_APP=onesided
	for m in plain shim; do
		port=$(free_port)
		eval "REDIS_PORT_$m=$port"
		start_server "os-redis-$m" "$m" "$port" redis-server --port "$port" \
			--bind 127.0.0.1 --save '' --appendonly no --daemonize no || return 1
		# Both iperf3 servers are plain: the client is the enrolled end.
		port=$(free_port)
		eval "IPERF_PORT_$m=$port"
		start_server "os-iperf3-$m" plain "$port" iperf3 -s -B 127.0.0.1 -p "$port" || return 1
	done
	# The key redis-benchmark's GET reads (without -r, one literal key),
	# with a 64 B value: the reply is the 64 B response.
	val=$(head -c 48 /dev/urandom | base64 -w0)
	for m in plain shim; do
		eval "port=\$REDIS_PORT_$m"
		[ "$(redis-cli -h 127.0.0.1 -p "$port" set key:__rand_int__ "$val")" = OK ] || return 1
	done
	vr="64 B GET -c 50 -P 1, redis-server under the shim, client plain"
	vs="1 stream, iperf3 client under the shim, server plain"
	rep=1
	while [ $rep -le "$REPS" ]; do
		pair $rep onesided "$vr" rps onesided_rr "$vr"
		pair $rep onesided "$vs" Gbit/s onesided_stream "$vs"
		rep=$((rep + 1))
	done
	CLIENT_MODE=plain
	redis_verify shim
	CLIENT_MODE=
	RB_APP= IPERF_APP=
	stop_servers
}
