#!/bin/sh
# bench/plot.sh DIR - draws bench/report.sh's DIR/summary.csv as three PNG
# charts with gnuplot (bench/plot.gnuplot): DIR/throughput.png (MB/s against
# write size), DIR/rtt.png (round trip against message size, pinned and
# unpinned) and DIR/speedup.png (throughput ratios against size, beside the
# kernel series' patched/vanilla). This script only reshapes the numbers
# into whitespace tables (one column pair a transport), gnuplot's input.
set -eu
DIR=${1:?usage: bench/plot.sh DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -s "$DIR/summary.csv" ] || { echo "bench/plot.sh: $DIR/summary.csv is missing (bench/report.sh)" >&2; exit 1; }

awk -F, -v dir="$DIR" '
BEGIN { nT = split("tcp tcp-nodelay unix redirect-raw fastlocal fastlocal-nodelay", T, " ") }
FNR == 1 { next }
{
	k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; m[k] = $6; d[k] = $7
	if ($1 == "stream" || $1 == "rtt") if (!(($1, $3) in seen)) { seen[$1, $3] = 1; S[$1, ++nS[$1]] = $3 }
}
function v(k) { return (k in m) ? m[k] " " d[k] : "NaN NaN" }
function r(w, a, b, p, pin,   ka, kb, x) {
	ka = w SUBSEP a SUBSEP p SUBSEP pin; kb = w SUBSEP b SUBSEP p SUBSEP pin
	if (!(ka in m) || !(kb in m) || m[kb] == 0) return "NaN NaN"
	x = m[ka] / m[kb]
	return x " " x * sqrt((d[ka] / m[ka]) ^ 2 + (d[kb] / m[kb]) ^ 2)
}
END {
	f = dir "/throughput.dat"
	printf "# size" >f; for (j = 1; j <= nT; j++) printf " %s sd", T[j] >f; printf "\n" >f
	for (i = 1; i <= nS["stream"]; i++) {
		p = S["stream", i]; printf "%s", p >f
		for (j = 1; j <= nT; j++) printf " %s", v("stream" SUBSEP T[j] SUBSEP p SUBSEP "") >f
		printf "\n" >f
	}
	f = dir "/rtt.dat"
	printf "# size, pinned then unpinned:" >f; for (j = 1; j <= nT; j++) printf " %s sd", T[j] >f; printf "\n" >f
	for (i = 1; i <= nS["rtt"]; i++) {
		p = S["rtt", i]; printf "%s", p >f
		for (pin = 1; pin >= 0; pin--) for (j = 1; j <= nT; j++) printf " %s", v("rtt" SUBSEP T[j] SUBSEP p SUBSEP pin) >f
		printf "\n" >f
	}
	f = dir "/speedup.dat"
	printf "# size fastlocal/tcp sd fastlocal/redirect-raw sd fastlocal-nodelay/tcp-nodelay sd redirect-raw/tcp sd fastlocal/unix sd series\n" >f
	for (i = 1; i <= nS["stream"]; i++) {
		p = S["stream", i]; ks = "series-stream" SUBSEP "patched/vanilla" SUBSEP p SUBSEP ""
		printf "%s %s %s %s %s %s %s\n", p, r("stream", "fastlocal", "tcp", p, ""), \
			r("stream", "fastlocal", "redirect-raw", p, ""), r("stream", "fastlocal-nodelay", "tcp-nodelay", p, ""), \
			r("stream", "redirect-raw", "tcp", p, ""), r("stream", "fastlocal", "unix", p, ""), \
			(ks in m) ? m[ks] : "NaN" >f
	}
}' "$DIR/summary.csv"

gnuplot -e "dir='$DIR'" "$HERE/plot.gnuplot"
echo "bench/plot.sh: wrote $DIR/throughput.png, $DIR/rtt.png, $DIR/speedup.png" >&2
