# redis.sh - sourced by run.sh: redis-server with redis-benchmark, SET and
# GET from 50 clients, without and with 16-command pipelining; then SET/GET
# of known random values through redis-cli.
#
# SET and GET are separate redis-benchmark runs (-t set, then -t get) so that
# each row's OutSegs and redirected bytes are its own; GET reads the key the
# SET run wrote, as "-t set,get" would.

# Enough requests for a run of at least a second at either pipeline depth
# (about 30 000 and 300 000 requests/s plain on the 2-core test machine),
# not more: the whole application part should stay near 5 minutes.
REDIS_N=100000 REDIS_NP=1000000
[ "$QUICK" = 1 ] && REDIS_N=30000 REDIS_NP=300000

# redis_cmds MODE PORT: commands the server has processed so far.
redis_cmds() {
	with_mode "$1" redis-cli -h 127.0.0.1 -p "$2" info stats |
		tr -d '\r' | sed -n 's/^total_commands_processed://p'
}

# redis_bench MODE TEST PIPELINE [SIZE]: one redis-benchmark run against
# this mode's server (values of SIZE bytes, redis-benchmark's 3 by
# default); prints requests per second. Rows are app $RB_APP, variant
# $RB_VARIANT when set (onesided.sh sets them). Integrity: exit 0, no error
# (redis-benchmark 7 stops at the first error reply), and the server
# processed every request.
redis_bench() {
	m=$1 t=$2 pl=$3 d=${4:-3}
	a=${RB_APP:-redis}
	eval "port=\$REDIS_PORT_$m"
	n=$REDIS_N
	[ "$pl" = 1 ] || n=$REDIS_NP
	c0=$(redis_cmds "$m" "$port")
	with_mode "$m" redis-benchmark -h 127.0.0.1 -p "$port" -t "$t" -c 50 \
		-n "$n" -P "$pl" -d "$d" --csv >"$WORK/rb.out" 2>&1
	rc=$?
	c1=$(redis_cmds "$m" "$port")
	v="$t -c 50 -P $pl"
	[ "$d" = 3 ] || v="$t $d B -c 50 -P $pl"
	v=${RB_VARIANT:-$v}
	rps=$(awk -F'"' -v t="$(echo "$t" | tr a-z A-Z)" '$2 == t { print $4 }' "$WORK/rb.out")
	if [ $rc != 0 ] || [ -z "$rps" ]; then
		ifail "$a" "$v" "$m" "redis-benchmark exited $rc: $(tail -c 300 "$WORK/rb.out")"
	elif grep -qi error "$WORK/rb.out"; then
		ifail "$a" "$v" "$m" "redis-benchmark saw errors: $(grep -i -m 2 error "$WORK/rb.out")"
	elif [ $((c1 - c0)) -lt "$n" ]; then
		ifail "$a" "$v" "$m" "the server processed $((c1 - c0)) commands of $n"
	else
		ipass "$a" "$v" "$m" "no errors, all $n requests processed"
	fi
	echo "$rps"
}

# redis_verify MODE: (rows of app $RB_APP) five keys with random 1 KiB values and one 1 MiB
# binary value, set and read back through redis-cli, must come back exact.
redis_verify() {
	m=$1
	a=${RB_APP:-redis}
	eval "port=\$REDIS_PORT_$m"
	v="SET/GET of known values"
	bad=""
	for k in 1 2 3 4 5; do
		val=$(head -c 768 /dev/urandom | base64 -w0)
		with_mode "$m" redis-cli -h 127.0.0.1 -p "$port" set "fl:check:$k" "$val" >/dev/null
		got=$(with_mode "$m" redis-cli -h 127.0.0.1 -p "$port" get "fl:check:$k")
		[ "$got" = "$val" ] || bad="$bad key $k (${#got} of ${#val} chars back)"
	done
	head -c 1048576 /dev/urandom >"$WORK/redis-big"
	with_mode "$m" redis-cli -h 127.0.0.1 -p "$port" -x set fl:check:big <"$WORK/redis-big" >/dev/null
	# redis-cli ends a raw reply with a newline; drop it before comparing.
	with_mode "$m" redis-cli -h 127.0.0.1 -p "$port" get fl:check:big | head -c -1 >"$WORK/redis-big.got"
	cmp -s "$WORK/redis-big" "$WORK/redis-big.got" || bad="$bad the 1 MiB value ($(wc -c <"$WORK/redis-big.got") bytes back)"
	if [ -n "$bad" ]; then
		ifail "$a" "$v" "$m" "redis-cli got back different values:$bad"
	else
		ipass "$a" "$v" "$m" "5 x 1 KiB and 1 x 1 MiB read back exact"
	fi
}

redis_main() {
	for m in plain shim; do
		port=$(free_port)
		eval "REDIS_PORT_$m=$port"
		start_server "redis-$m" "$m" "$port" redis-server --port "$port" \
			--bind 127.0.0.1 --save '' --appendonly no --daemonize no || return 1
	done
	rep=1
	while [ $rep -le "$REPS" ]; do
		for pl in 1 16; do
			pair $rep redis "set -c 50 -P $pl" rps redis_bench set $pl
			pair $rep redis "get -c 50 -P $pl" rps redis_bench get $pl
		done
		rep=$((rep + 1))
	done
	redis_verify plain
	redis_verify shim
	stop_servers
}
