# onesided.sh - sourced by run.sh after redis.sh and iperf3.sh: one end
# under the shim, its peer never enrolls (a program started without
# "fastlocal run", or a remote one). The shim must then cost nothing: every
# byte goes over TCP, and the rate should stay within 2% of plain (target
# >= 0.98x in targets.txt). Each workload with either end enrolled:
#   rr      64 B request/response: redis-benchmark GET of a 64 B value,
#           -c 50, -P 1; redis-server under the shim with a plain client,
#           and redis-benchmark under the shim against a plain server, run
#           by root and by nobody (which enrolls through the broker; its
#           plain row runs as nobody too)
#   stream  one iperf3 stream; the sending client under the shim to a plain
#           server, and a plain client to a receiving server under the shim
# (fl-bench runs both ends in one process, so it cannot leave one end out.)
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

# The rows' servers: OS_REDIS_plain, OS_IPERF_plain started plain,
# OS_REDIS_shim, OS_IPERF_shim under the shim. Each wrapper points redis.sh's
# and iperf3.sh's per-mode port at the server its row needs, and keeps the
# client plain (CLIENT_MODE) when the server is the enrolled end.
onesided_rr() {
	REDIS_PORT_plain=$OS_REDIS_plain REDIS_PORT_shim=$OS_REDIS_shim
	CLIENT_MODE=plain RB_VARIANT=$2
	onesided_check "$1" "$2" redis_bench get 1 64
	CLIENT_MODE= RB_VARIANT=
}
onesided_rr_client() {
	REDIS_PORT_plain=$OS_REDIS_plain REDIS_PORT_shim=$OS_REDIS_plain
	RB_VARIANT=$2
	onesided_check "$1" "$2" redis_bench get 1 64
	RB_VARIANT=
}
onesided_rr_nobody() {
	CLIENT_AS=nobody
	onesided_rr_client "$@"
	CLIENT_AS=
}
onesided_stream() {
	IPERF_PORT_plain=$OS_IPERF_plain IPERF_PORT_shim=$OS_IPERF_plain
	onesided_check "$1" "$2" iperf3_run "$2"
}
onesided_stream_server() {
	IPERF_PORT_plain=$OS_IPERF_plain IPERF_PORT_shim=$OS_IPERF_shim
	CLIENT_MODE=plain
	onesided_check "$1" "$2" iperf3_run "$2"
	CLIENT_MODE=
}

onesided_main() {
	RB_APP=onesided IPERF_APP=onesided
	for m in plain shim; do
		port=$(free_port)
		eval "OS_REDIS_$m=$port"
		start_server "os-redis-$m" "$m" "$port" redis-server --port "$port" \
			--bind 127.0.0.1 --save '' --appendonly no --daemonize no || return 1
		port=$(free_port)
		eval "OS_IPERF_$m=$port"
		start_server "os-iperf3-$m" "$m" "$port" iperf3 -s -B 127.0.0.1 -p "$port" || return 1
	done
	# The key redis-benchmark's GET reads (without -r, one literal key),
	# with a 64 B value: the reply is the 64 B response.
	val=$(head -c 48 /dev/urandom | base64 -w0)
	for port in "$OS_REDIS_plain" "$OS_REDIS_shim"; do
		[ "$(redis-cli -h 127.0.0.1 -p "$port" set key:__rand_int__ "$val")" = OK ] || return 1
	done
	vr="64 B GET -c 50 -P 1, redis-server under the shim, client plain"
	vrc="64 B GET -c 50 -P 1, redis-benchmark under the shim, server plain"
	vrn="64 B GET -c 50 -P 1, redis-benchmark as nobody under the shim (the broker), server plain"
	vs="1 stream, iperf3 client under the shim, server plain"
	vss="1 stream, iperf3 server under the shim, client plain"
	rep=1
	while [ $rep -le "$REPS" ]; do
		pair $rep onesided "$vr" rps onesided_rr "$vr"
		pair $rep onesided "$vrc" rps onesided_rr_client "$vrc"
		pair $rep onesided "$vrn" rps onesided_rr_nobody "$vrn"
		pair $rep onesided "$vs" Gbit/s onesided_stream "$vs"
		pair $rep onesided "$vss" Gbit/s onesided_stream_server "$vss"
		rep=$((rep + 1))
	done
	CLIENT_MODE=plain REDIS_PORT_shim=$OS_REDIS_shim
	redis_verify shim
	CLIENT_MODE=
	RB_APP= IPERF_APP=
	stop_servers
}
