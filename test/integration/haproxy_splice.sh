#!/bin/sh
# haproxy_splice.sh - a proxy in splice mode (kernel-facts trap 6): haproxy
# in TCP mode with "option splice-auto", from Debian's package, between a
# backend and a client, all three under the shim. 256 MiB must arrive
# byte-exact, and haproxy must really have spliced out of enrolled sockets.
# splice-request/-response are set too: with splice-auto alone haproxy 2.6
# chose not to splice this transfer at all, which would test nothing.
# (The transfer takes about a second, under ASan a few: a stall shows in
# two minutes rather than the default five.)
# fl-test-timeout: 120
. "$FL_TEST_TOP/test/lib/fltest.sh"

B=$FL_TEST_BUILD
PRE=${FL_TEST_ASAN_RT:-}
export FASTLOCAL_LIB="$FL_TEST_LIB"
BYTES=268435456
HP=""
SRV=""
cleanup() {
	[ -n "$HP" ] && kill "$HP" 2>/dev/null
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
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

# wait_listen PORT: up to 5 s for something to listen there.
wait_listen() {
	i=0
	while ! ss -Htln "sport = :$1" | grep -q .; do
		i=$((i + 1))
		[ $i -lt 100 ] || return 1
		sleep 0.05
	done
}

splice_through_haproxy() {
	command -v haproxy >/dev/null || t_fail "haproxy is not installed (make deps)" || return 1
	fp=$(free_port)
	bp=$(free_port)
	cat >"$T_TMP/haproxy.cfg" <<CFG
global
    maxconn 64
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
    bind 127.0.0.1:$fp
    default_backend be
backend be
    server s1 127.0.0.1:$bp
CFG
	spliced0=$("$CLI" status --json | jq .splice_emulated_bytes)
	red0=$("$CLI" status --json | jq .redirected_bytes)
	LD_PRELOAD="$PRE" "$CLI" run -- "$B/fl-xfer" serve "$bp" "$BYTES" >"$T_TMP/serve.out" 2>&1 &
	SRV=$!
	wait_listen "$bp" || t_fail "the backend did not start: $(cat "$T_TMP/serve.out")" || return 1
	LD_PRELOAD="$PRE" "$CLI" run -- haproxy -f "$T_TMP/haproxy.cfg" -db >"$T_TMP/haproxy.out" 2>&1 &
	HP=$!
	wait_listen "$fp" || t_fail "haproxy did not start: $(head -c 400 "$T_TMP/haproxy.out")" || return 1
	t_expect_rc 0 env LD_PRELOAD="$PRE" "$CLI" run -- "$B/fl-xfer" fetch "$fp" "$BYTES" || return 1
	echo "  $(cat "$T_TMP/out") through haproxy (splice-auto)"
	wait "$SRV" || t_fail "the backend failed: $(cat "$T_TMP/serve.out")" || return 1
	SRV=""
	spliced=$(($("$CLI" status --json | jq .splice_emulated_bytes) - spliced0))
	red=$(($("$CLI" status --json | jq .redirected_bytes) - red0))
	echo "  haproxy spliced $spliced bytes out of enrolled sockets; $red bytes redirected"
	[ "$spliced" -gt 0 ] || t_fail "haproxy never spliced from an enrolled socket" || return 1
	[ "$red" -ge "$BYTES" ] || t_fail "only $red bytes were redirected"
}

t_run "haproxy in splice mode moves 256 MiB byte-exact between enrolled sockets" splice_through_haproxy
t_done
