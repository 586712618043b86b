# iperf3.sh - sourced by run.sh: iperf3, one TCP stream of a fixed size from
# client to server, with plain writes and with -Z (sendfile from a file).
#
# Integrity: iperf3 succeeds and the sender sent exactly the bytes asked for.
# The receiver's count cannot be required to equal it: iperf3 3.12's server
# stops counting when the client's TEST_END arrives on the control
# connection, so bytes still queued in the sockets are left out - on plain
# TCP too (1.5 to 2.6 MB short when this was written). So the receiver must
# have got no more than was sent, and at most what the queues between them
# can hold: the receiver's budget twice (redirected queue, then TCP's after a
# flow-control fallback), the sender's send buffer and the shim's largest
# batch buffer.

IPERF_BYTES=2G
[ "$QUICK" = 1 ] && IPERF_BYTES=512M

iperf3_slack() {
	r=$(awk '{ print $3 }' /proc/sys/net/ipv4/tcp_rmem)
	w=$(awk '{ print $3 }' /proc/sys/net/ipv4/tcp_wmem)
	echo $((2 * r + w + 4194304))
}

# iperf3_run MODE VARIANT [-Z]: prints the receiver's Gbit/s. Rows are app
# $IPERF_APP (onesided.sh sets it).
iperf3_run() {
	m=$1 v=$2
	shift 2
	eval "port=\$IPERF_PORT_$m"
	with_mode "$m" iperf3 -c 127.0.0.1 -p "$port" -n "$IPERF_BYTES" -J "$@" >"$WORK/iperf3.json" 2>"$WORK/iperf3.err"
	rc=$?
	r=$(jq -r '[.error // "", .end.sum_sent.bytes // 0, .end.sum_received.bytes // 0,
		.end.sum_received.bits_per_second // 0] | @tsv' "$WORK/iperf3.json" 2>/dev/null)
	err=$(printf '%s' "$r" | cut -f1)
	sent=$(printf '%s' "$r" | cut -f2)
	recv=$(printf '%s' "$r" | cut -f3)
	bps=$(printf '%s' "$r" | cut -f4)
	want=$(numfmt --from=iec "$IPERF_BYTES")
	if [ $rc != 0 ] || [ -z "$r" ] || [ -n "$err" ]; then
		ifail "${IPERF_APP:-iperf3}" "$v" "$m" "iperf3 exited $rc: ${err:-$(tail -c 300 "$WORK/iperf3.err")}"
		return
	fi
	short=$((sent - recv))
	if [ "$sent" != "$want" ]; then
		ifail "${IPERF_APP:-iperf3}" "$v" "$m" "the sender sent $sent bytes, not $want"
	elif [ "$short" -lt 0 ] || [ "$short" -gt "$(iperf3_slack)" ]; then
		ifail "${IPERF_APP:-iperf3}" "$v" "$m" "sender sent $sent bytes, receiver counted $recv"
	else
		ipass "${IPERF_APP:-iperf3}" "$v" "$m" "all $IPERF_BYTES sent; receiver's count short only by what was still queued"
		log "iperf3 $v ($m): receiver counted $short bytes fewer than sent (still queued at TEST_END)"
	fi
	awk -v b="$bps" 'BEGIN { printf "%.3f\n", b / 1e9 }'
}

iperf3_main() {
	for m in plain shim; do
		port=$(free_port)
		eval "IPERF_PORT_$m=$port"
		start_server "iperf3-$m" "$m" "$port" iperf3 -s -B 127.0.0.1 -p "$port" || return 1
	done
	rep=1
	while [ $rep -le "$REPS" ]; do
		pair $rep iperf3 "1 stream" Gbit/s iperf3_run "1 stream"
		pair $rep iperf3 "1 stream, -Z (sendfile)" Gbit/s iperf3_run "1 stream, -Z (sendfile)" -Z
		rep=$((rep + 1))
	done
	stop_servers
}
