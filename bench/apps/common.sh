# common.sh - sourced by bench/apps/run.sh and the per-application files.
# Ports, servers started and stopped by PID, the Tcp OutSegs counter, a
# command run plain or under the shim, and the records every app writes.
#
# Expects: CLI (build/fastlocal), WORK (the run's temp dir), REPS.
# Records, one line each, read back by report.sh:
#   $WORK/raw.txt        app|variant|unit|mode|rep|value|outsegs|redirected|over TCP
#   $WORK/integrity.txt  app|variant|mode|ok or FAIL|what was checked

log() { printf 'apps: %s\n' "$*" >&2; }

# Ports handed out so far in this run: two servers started back to back
# must not draw the same one before either listens.
free_port() {
	while :; do
		p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
		grep -qx "$p" "$WORK/ports" 2>/dev/null && continue
		ss -Htan "sport = :$p" | grep -q . && continue
		echo "$p" >>"$WORK/ports"
		echo "$p"
		return
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

# with_mode MODE CMD...: CMD plain, or under the shim ("fastlocal run"
# execs CMD, so a PID taken from "&" is the server's own). Clients only:
# CLIENT_MODE, when set, overrides MODE (onesided.sh keeps them plain).
# CLIENT_AS, when set (a user name), runs the client as that user, as a
# user's own program is run: under the shim it enrolls through the broker.
# (Its own variable: sh has no locals, and callers keep theirs in m.)
with_mode() {
	wm=${CLIENT_MODE:-$1}
	shift
	[ -z "${CLIENT_AS:-}" ] ||
		set -- setpriv --reuid="$CLIENT_AS" --regid="$(id -g "$CLIENT_AS")" --clear-groups "$@"
	case $wm in
	plain) "$@" ;;
	shim) "$CLI" run -- "$@" ;;
	*) log "with_mode: bad mode '$wm'"; return 2 ;;
	esac
}

# start_server NAME MODE PORT CMD...: starts CMD in the background, output
# in $WORK/NAME.log, its PID kept for stop_servers, and waits for PORT
# (and checks that the PID is CMD's own).
start_server() {
	name=$1 m=$2 port=$3
	shift 3
	# Simple commands, not with_mode: a function run with "&" is a subshell
	# whose PID is not the server's, and killing it leaves the server.
	case $m in
	plain) "$@" >"$WORK/$name.log" 2>&1 & ;;
	*) "$CLI" run -- "$@" >"$WORK/$name.log" 2>&1 & ;;
	esac
	pid=$!
	echo "$pid $name" >>"$WORK/pids"
	if ! wait_listen "$port" || [ "$(cat /proc/$pid/comm 2>/dev/null)" != "${1##*/}" ]; then
		log "$name did not listen on port $port: $(tail -c 400 "$WORK/$name.log")"
		return 1
	fi
}

# start_broker: "fastlocal daemon" on $FASTLOCAL_BROKER for this run's pin
# dir, in the background, until it answers (up to 10 s). Both are given
# explicitly, though the daemon would take them from the environment too:
# a broker serving the default pin dir would enroll nothing of this run's.
start_broker() {
	"$CLI" daemon --socket "$FASTLOCAL_BROKER" --pin-dir "$FASTLOCAL_PIN_DIR" >"$WORK/broker.log" 2>&1 &
	BROKER_PID=$!
	i=0
	until [ "$("$CLI" status --json --socket "$FASTLOCAL_BROKER" | jq -r .broker.answers)" = true ]; do
		i=$((i + 1))
		if [ $i -ge 200 ] || ! alive "$BROKER_PID"; then
			log "the broker did not answer on $FASTLOCAL_BROKER: $(tail -c 400 "$WORK/broker.log")"
			return 1
		fi
		sleep 0.05
	done
}

stop_broker() {
	[ -n "${BROKER_PID:-}" ] || return 0
	kill "$BROKER_PID" 2>/dev/null && wait "$BROKER_PID" 2>/dev/null
	BROKER_PID=
}

# alive PID: running, not a zombie waiting to be reaped (kill -0 succeeds on
# those).
alive() {
	st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

# stop_servers: TERM every server by PID, newest first (a proxy before its
# backend), KILL what is left after 5 s, and reap it.
stop_servers() {
	[ -s "$WORK/pids" ] || return 0
	for pid in $(tac "$WORK/pids" | cut -d' ' -f1); do
		kill "$pid" 2>/dev/null || continue
		i=0
		while alive "$pid" && [ $i -lt 100 ]; do
			sleep 0.05
			i=$((i + 1))
		done
		alive "$pid" && kill -9 "$pid" 2>/dev/null &&
			log "$(grep "^$pid " "$WORK/pids" | cut -d' ' -f2) ($pid) ignored SIGTERM; killed"
		wait "$pid" 2>/dev/null
	done
	: >"$WORK/pids"
}

# outsegs: Tcp OutSegs of this network namespace (run.sh gives the run a
# private one, so only the benchmark's own segments are counted).
outsegs() {
	awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "OutSegs") c = i; h = 1 } else print $c }' /proc/net/snmp
}

# flstat KEY: one counter of "fastlocal status --json".
flstat() {
	"$CLI" status --json | jq -r ".$1"
}

# ipass/ifail APP VARIANT MODE TEXT: an integrity check passed or failed.
ipass() { echo "$1|$2|$3|ok|$4" >>"$WORK/integrity.txt"; }
ifail() {
	echo "$1|$2|$3|FAIL|$4" >>"$WORK/integrity.txt"
	log "INTEGRITY FAILURE: $1 $2 ($3): $4"
}

# measure APP VARIANT UNIT MODE REP FUNC ARGS...: runs "FUNC MODE ARGS...",
# which prints the measured value (or nothing on failure) and records its
# own integrity checks; keeps the value with the run's OutSegs delta and
# fastlocal's redirected and over-TCP (passed) byte deltas.
measure() {
	app=$1 var=$2 unit=$3 m=$4 rep=$5 fn=$6
	shift 6
	o0=$(outsegs)
	r0=$(flstat redirected_bytes)
	t0=$(flstat passed_bytes)
	val=$("$fn" "$m" "$@")
	o1=$(outsegs)
	r1=$(flstat redirected_bytes)
	t1=$(flstat passed_bytes)
	[ -n "$val" ] || val=NA
	echo "$app|$var|$unit|$m|$rep|$val|$((o1 - o0))|$((r1 - r0))|$((t1 - t0))" >>"$WORK/raw.txt"
	STEP=$((STEP + 1))
	log "[$STEP/$STEPS] $app $var $m rep $rep: $val $unit, OutSegs +$((o1 - o0)), redirected +$((r1 - r0)) B, over TCP +$((t1 - t0)) B ($(($(date +%s) - START)) s)"
}

# pair REP APP VARIANT UNIT FUNC ARGS...: one plain and one shim run, the
# order swapped on even repetitions so that neither always goes first.
pair() {
	rep=$1 a=$2 v=$3 u=$4 f=$5
	shift 5
	if [ $((rep % 2)) = 1 ]; then
		measure "$a" "$v" "$u" plain "$rep" "$f" "$@"
		measure "$a" "$v" "$u" shim "$rep" "$f" "$@"
	else
		measure "$a" "$v" "$u" shim "$rep" "$f" "$@"
		measure "$a" "$v" "$u" plain "$rep" "$f" "$@"
	fi
}
