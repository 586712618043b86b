#!/bin/sh
# syscall_cost.sh - a connection that never enrolls costs no system call
# the application did not make itself.
#
# redis-benchmark asking for a new connection per request (-k 0: hiredis's
# non-blocking connect, 21 bytes each way, far below the enrollment
# threshold) against a plain redis-server, counted by strace -c: under the
# shim, with the default settings, it makes as many getsockopt,
# getsockname, getpeername and poll calls as without it. Each such
# connection used to pay five (the socket's type, domain and protocol, its
# two addresses) and a poll at its first use (preload/entry/sock_calls.c,
# fl_mark_connecting; io.c, fl_first_use): nginx behind wrk opening a
# connection per request ran at 0.89x of plain TCP.
. "$FL_TEST_TOP/test/lib/fltest.sh"

# Under ASan the runtime has to come first in LD_PRELOAD.
PRE=${FL_TEST_ASAN_RT:+$FL_TEST_ASAN_RT:}$FL_TEST_LIB
REQS=2000
SRV=
PORT=

# A plain redis-server on a free port ($PORT, pid $SRV).
start_redis() {
	PORT=$((20000 + $$ % 20000))
	tries=0
	while :; do
		redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
			>"$T_TMP/redis.out" 2>&1 &
		SRV=$!
		i=0
		while [ $i -lt 100 ]; do
			[ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ] && return 0
			kill -0 "$SRV" 2>/dev/null || break
			sleep 0.05
			i=$((i + 1))
		done
		kill "$SRV" 2>/dev/null
		wait "$SRV" 2>/dev/null
		tries=$((tries + 1))
		[ $tries -lt 20 ] || { t_fail "redis-server did not start: $(tail -c 300 "$T_TMP/redis.out")"; return 1; }
		PORT=$((PORT + 1))
	done
}

# calls FILE NAME: the calls strace -c counted for system call NAME (0 if none).
calls() {
	awk -v n="$2" '$NF == n { print $4; f = 1 } END { if (!f) print 0 }' "$1"
}

# bench OUT [env...]: redis-benchmark, a connection per request, under
# strace -c -f into OUT. (LeakSanitizer cannot run under ptrace: off for
# this run of an ASan build.)
bench() {
	out=$1
	shift
	t_expect_rc 0 strace -f -c -o "$out" env ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$@" \
		redis-benchmark -p "$PORT" -t ping_inline -n $REQS -c 10 -k 0 -q
}

a_connection_per_request_costs_no_extra_call() {
	bench "$T_TMP/plain" || return 1
	bench "$T_TMP/shim" LD_PRELOAD="$PRE" || return 1
	for f in plain shim; do
		c=$(calls "$T_TMP/$f" connect)
		[ "$c" -ge $REQS ] || t_fail "$f: $c connect calls for $REQS requests: not a connection per request" ||
			return 1
	done
	for sc in getsockopt getsockname getpeername poll; do
		p=$(calls "$T_TMP/plain" $sc)
		s=$(calls "$T_TMP/shim" $sc)
		echo "  $sc: $p plain, $s under the shim"
		# A few at most for the shim's own start (none today).
		[ "$s" -le $((p + 10)) ] ||
			t_fail "$sc: $s calls under the shim against $p plain, for $REQS connections" ||
			return 1
	done
}

t_setup "a plain redis-server" start_redis || t_done
t_run "a connection per request (redis-benchmark -k 0) makes no getsockopt, getsockname, getpeername or poll beyond plain TCP's" \
	a_connection_per_request_costs_no_extra_call
kill "$SRV" 2>/dev/null
wait "$SRV" 2>/dev/null
t_done
