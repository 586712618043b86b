#!/bin/sh
# bench/report.sh DIR - turns bench/run.sh's raw runs (DIR/stream.csv,
# rtt.csv, rr.csv, churn.csv, meta.txt) into DIR/summary.csv (mean and sample
# stddev per point), DIR/results.md (the kernel series' table shape: one row
# a transport, one column a size, "mean ± stddev" cells, then ratio rows) and
# DIR/results.json (the same numbers, for scripts).
#
# Ratios are of the means; their ± is the stddev propagated from both means
# (relative errors added in quadrature), so a ratio within its ± of 1.00x is
# a tie on this machine. Beside them: the patched/vanilla ratios that the
# kernel series (tcp_bpf: improve ingress redirection performance with
# message corking, v2, March 2025) published in its cover letter, which
# compared a batching kernel against the raw redirect path, as fastlocal
# against redirect-raw does here.
set -eu
DIR=${1:?usage: bench/report.sh DIR}
for f in stream rtt rr churn; do
	[ -s "$DIR/$f.csv" ] || { echo "bench/report.sh: $DIR/$f.csv is missing" >&2; exit 1; }
done
[ -f "$DIR/meta.txt" ] || : >"$DIR/meta.txt"

awk -F, -v md="$DIR/results.md" -v js="$DIR/results.json" -v sum="$DIR/summary.csv" '
BEGIN {
	nT = split("tcp tcp-nodelay unix redirect-raw fastlocal fastlocal-nodelay", T, " ")
	# The series cover letter: throughput (Gbit/s-like units, only ratios
	# matter) and latency (us), vanilla and patched means.
	split("64 128 256 512 1024 4096 16384 32768 65536 131072 262144", sz, " ")
	split("0.17 0.36 0.72 1.37 2.60 8.24 22.38 25.49 43.07 66.87 73.70", tv, " ")
	split("0.41 0.82 1.62 3.33 6.45 21.50 46.22 50.20 45.39 68.96 78.35", tp, " ")
	for (i = 1; i <= 11; i++) { SV["stream", sz[i]] = tv[i]; SP["stream", sz[i]] = tp[i] }
	split("5.80 5.83 5.86 5.91 5.98 6.61 8.60 10.96 15.02", lv, " ")
	split("6.18 6.23 6.25 6.13 6.32 6.94 8.90 11.12 14.88", lp, " ")
	for (i = 1; i <= 9; i++) { SV["rtt", sz[i]] = lv[i]; SP["rtt", sz[i]] = lp[i] } # their last is 63k
}
FILENAME ~ /meta.txt$/ { i = index($0, "="); if (i) meta[substr($0, 1, i - 1)] = substr($0, i + 1); next }
FNR == 1 { next }
function add(w, t, p, pin, v,   k) {
	k = w SUBSEP t SUBSEP p SUBSEP pin
	n[k]++; s[k] += v; q[k] += v * v
	if (!((w, p) in pseen)) { pseen[w, p] = 1; P[w, ++nP[w]] = p }
}
FILENAME ~ /stream.csv$/ { add("stream", $1, $2, "", $4) }
FILENAME ~ /rtt.csv$/ {
	add("rtt", $1, $2, $3, $6)
	k = "rtt" SUBSEP $1 SUBSEP $2 SUBSEP $3; p50[k] += $7; p99[k] += $8; p999[k] += $9
}
FILENAME ~ /rr.csv$/ { add("rr", $1, $2, "", $5) }
FILENAME ~ /churn.csv$/ { add("churn", $1, $2, "", $4) }

function K(w, t, p, pin) { return w SUBSEP t SUBSEP p SUBSEP pin }
function has(k) { return (k in n) }
function mean(k) { return s[k] / n[k] }
function sd(k,   m, v) { # sample stddev
	if (n[k] < 2) return 0
	m = mean(k); v = (q[k] - n[k] * m * m) / (n[k] - 1); return v > 0 ? sqrt(v) : 0
}
function rsd(a, b,   r) { # the stddev of mean(a)/mean(b), propagated
	r = mean(a) / mean(b); return r * sqrt((sd(a) / mean(a)) ^ 2 + (sd(b) / mean(b)) ^ 2)
}
function lab(b) { return b >= 1024 ? (b / 1024) "k" : b }
function num(v) { return v >= 100 ? sprintf("%.0f", v) : v >= 10 ? sprintf("%.1f", v) : sprintf("%.2f", v) }
function cell(k) { return !has(k) ? "-" : n[k] < 2 ? num(mean(k)) : num(mean(k)) " ± " num(sd(k)) }
function rcell(a, b) {
	if (!has(a) || !has(b) || mean(b) == 0) return "-"
	return n[a] < 2 ? sprintf("%.2fx", mean(a) / mean(b)) : sprintf("%.2fx ± %.2f", mean(a) / mean(b), rsd(a, b))
}
function head(title, w,   i) {
	printf "| %s |", title >md
	for (i = 1; i <= nP[w]; i++) printf " %s |", lab(P[w, i]) >md
	printf "\n|---|" >md
	for (i = 1; i <= nP[w]; i++) printf "---|" >md
	printf "\n" >md
}
function rows(w, pin,   i, j) {
	for (j = 1; j <= nT; j++) {
		printf "| %s |", T[j] >md
		for (i = 1; i <= nP[w]; i++) printf " %s |", cell(K(w, T[j], P[w, i], pin)) >md
		printf "\n" >md
	}
}
function ratio(w, pin, a, b, label,   i) {
	printf "| %s |", label ? label : a " / " b >md
	for (i = 1; i <= nP[w]; i++) printf " %s |", rcell(K(w, a, P[w, i], pin), K(w, b, P[w, i], pin)) >md
	printf "\n" >md
}
function series(w,   i, p) {
	printf "| series: patched / vanilla |" >md
	for (i = 1; i <= nP[w]; i++) {
		p = P[w, i]
		printf " %s |", ((w, p) in SV) ? sprintf("%.2fx", SP[w, p] / SV[w, p]) : "-" >md
	}
	printf "\n" >md
}
function pct(w, pin, a, b,   i, ka, kb) {
	printf "| Percentage (%s vs %s) |", a, b >md
	for (i = 1; i <= nP[w]; i++) {
		ka = K(w, a, P[w, i], pin); kb = K(w, b, P[w, i], pin)
		printf " %s |", has(ka) && has(kb) ? sprintf("%+.1f%%", (mean(ka) / mean(kb) - 1) * 100) : "-" >md
	}
	printf "\n" >md
}
function pcts(pin,   i, j, k) {
	for (j = 1; j <= nT; j++) {
		printf "| %s |", T[j] >md
		for (i = 1; i <= nP["rtt"]; i++) {
			k = K("rtt", T[j], P["rtt", i], pin)
			printf " %s |", has(k) ? num(p50[k] / n[k]) " / " num(p99[k] / n[k]) " / " num(p999[k] / n[k]) : "-" >md
		}
		printf "\n" >md
	}
}
function latency(pin, what) {
	printf "\n### Round trip, %s (µs, mean ± stddev of the runs'"'"' means)\n\n", what >md
	head("Latency", "rtt"); rows("rtt", pin)
	ratio("rtt", pin, "fastlocal", "tcp"); ratio("rtt", pin, "fastlocal", "redirect-raw")
	ratio("rtt", pin, "fastlocal-nodelay", "tcp-nodelay"); ratio("rtt", pin, "redirect-raw", "tcp")
	pct("rtt", pin, "fastlocal", "redirect-raw")
	if (pin) series("rtt")
	printf "\nPercentiles, %s (µs, p50 / p99 / p999, each the mean over the runs):\n\n", what >md
	head("p50 / p99 / p999", "rtt"); pcts(pin)
}
function jstr(v) { gsub(/\\/, "\\\\", v); gsub(/"/, "\\\"", v); return "\"" v "\"" }
function jrec(w, t, p, pin, unit,   k, out) {
	k = K(w, t, p, pin)
	out = sprintf("{\"transport\": %s, \"%s\": %s", jstr(t), w == "rr" ? "conns" : "size", p)
	if (w == "rr") out = out ", \"size\": 64"
	if (pin != "") out = out sprintf(", \"pinned\": %s", pin ? "true" : "false")
	out = out sprintf(", \"n\": %d, \"mean\": %.3f, \"sd\": %.3f, \"unit\": %s", n[k], mean(k), sd(k), jstr(unit))
	if (w == "rtt") out = out sprintf(", \"p50_us\": %.2f, \"p99_us\": %.2f, \"p999_us\": %.2f", p50[k] / n[k], p99[k] / n[k], p999[k] / n[k])
	return out "}"
}
function jlist(w, pin, unit,   i, j, first, k) {
	first = 1
	for (j = 1; j <= nT; j++)
		for (i = 1; i <= nP[w]; i++) {
			k = K(w, T[j], P[w, i], pin)
			if (!has(k)) continue
			printf "%s\n    %s", first ? "" : ",", jrec(w, T[j], P[w, i], pin, unit) >js
			first = 0
		}
}
function jratios(w, pin, a, b,   i, ka, kb) {
	for (i = 1; i <= nP[w]; i++) {
		ka = K(w, a, P[w, i], pin); kb = K(w, b, P[w, i], pin)
		if (!has(ka) || !has(kb)) continue
		printf "%s\n    {\"workload\": \"%s\", \"%s\": %s%s, \"of\": %s, \"to\": %s, \"ratio\": %.4f, \"sd\": %.4f%s}", \
			nR++ ? "," : "", w, w == "rr" ? "conns" : "size", P[w, i], \
			pin != "" ? sprintf(", \"pinned\": %s", pin ? "true" : "false") : "", jstr(a), jstr(b), \
			mean(ka) / mean(kb), rsd(ka, kb), \
			((w, P[w, i]) in SV) && (w == "stream" || pin) ? sprintf(", \"series_patched_over_vanilla\": %.4f", SP[w, P[w, i]] / SV[w, P[w, i]]) : "" >js
	}
}
END {
	# summary.csv
	print "workload,transport,param,pinned,n,mean,sd,p50_us,p99_us,p999_us" >sum
	split("stream rtt rr churn", W, " ")
	for (x = 1; x <= 4; x++) for (j = 1; j <= nT; j++) for (i = 1; i <= nP[W[x]]; i++) for (pin = 1; pin >= 0; pin--) {
		pp = W[x] == "rtt" ? pin : ""
		if (W[x] != "rtt" && pin == 0) continue
		k = K(W[x], T[j], P[W[x], i], pp)
		if (!has(k)) continue
		printf "%s,%s,%s,%s,%d,%.3f,%.3f", W[x], T[j], P[W[x], i], pp, n[k], mean(k), sd(k) >sum
		if (W[x] == "rtt") printf ",%.2f,%.2f,%.2f\n", p50[k] / n[k], p99[k] / n[k], p999[k] / n[k] >sum
		else printf ",,,\n" >sum
	}
	# The series patched/vanilla ratios, for the speed-up chart (bench/plot.sh).
	for (x = 1; x <= 2; x++) for (i = 1; i <= nP[W[x]]; i++) if ((W[x], P[W[x], i]) in SV)
		printf "series-%s,patched/vanilla,%s,,1,%.4f,0,,,\n", W[x], P[W[x], i], SP[W[x], P[W[x], i]] / SV[W[x], P[W[x], i]] >sum

	# results.md
	reps = meta["reps"]; secs = meta["seconds"]
	printf "Measured %s on %s CPU(s) (%s), Linux %s, %s; commit %s. %d repetition(s)%s; every byte verified.\n", \
		meta["date"], meta["cpus"], meta["cpu"], meta["kernel"], meta["os"], meta["commit"], reps, \
		meta["quick"] == 1 ? " (--quick: short runs, fewer sizes, no stddev)" : "" >md
	printf "Cells are mean ± sample stddev over the repetitions; ratios are of the means, ± propagated.\n" >md
	printf "\n### Throughput (MB/s, one-way stream of N-byte writes for %s s; writer on CPU 0, reader on CPU 1, 64 KiB reads)\n\n", secs >md
	head("Throughput", "stream"); rows("stream", "")
	printf "\nRatios (higher is better for the first transport):\n\n" >md
	head("ratio", "stream")
	ratio("stream", "", "fastlocal", "tcp"); ratio("stream", "", "fastlocal", "unix")
	ratio("stream", "", "fastlocal", "redirect-raw"); ratio("stream", "", "fastlocal-nodelay", "tcp-nodelay")
	ratio("stream", "", "redirect-raw", "tcp")
	pct("stream", "", "fastlocal", "redirect-raw"); series("stream")
	latency(1, "pinned to one CPU (taskset -c 0)")
	latency(0, "unpinned")
	printf "\nThe series row compares its patched kernel with its vanilla one: a higher ratio is worse there, as here. Its last column is 63k.\n" >md
	printf "\n### Request/response rate (transactions/s, 64 B each way, one epoll client thread and one epoll server thread, %s s)\n\n", secs >md
	printf "| Request/response |" >md; for (i = 1; i <= nP["rr"]; i++) printf " %s conn%s |", P["rr", i], (P["rr", i] > 1 ? "s" : "") >md
	printf "\n|---|" >md; for (i = 1; i <= nP["rr"]; i++) printf "---|" >md; printf "\n" >md
	rows("rr", "")
	ratio("rr", "", "fastlocal", "tcp"); ratio("rr", "", "fastlocal", "redirect-raw"); ratio("rr", "", "fastlocal-nodelay", "tcp-nodelay")
	printf "\n### Connection churn (connections/s: connect, 64 B request/response, close, for %s s)\n\n", secs >md
	printf "| transport | connections/s | vs tcp | vs redirect-raw |\n|---|---|---|---|\n" >md
	for (j = 1; j <= nT; j++) {
		k = K("churn", T[j], 64, "")
		printf "| %s | %s | %s | %s |\n", T[j], cell(k), rcell(k, K("churn", "tcp", 64, "")), rcell(k, K("churn", "redirect-raw", 64, "")) >md
	}

	# results.json
	printf "{\n  \"meta\": {" >js
	split("date kernel cpu cpus os commit reps seconds pingpong_seconds quick", M, " ")
	for (i = 1; i <= 10; i++) printf "%s%s: %s", (i > 1 ? ", " : ""), jstr(M[i]), jstr(meta[M[i]]) >js
	printf "},\n  \"stream\": [" >js; jlist("stream", "", "MB/s")
	printf "\n  ],\n  \"rtt_pinned\": [" >js; jlist("rtt", 1, "us")
	printf "\n  ],\n  \"rtt_unpinned\": [" >js; jlist("rtt", 0, "us")
	printf "\n  ],\n  \"rr\": [" >js; jlist("rr", "", "transactions/s")
	printf "\n  ],\n  \"churn\": [" >js; jlist("churn", "", "connections/s")
	printf "\n  ],\n  \"ratios\": [" >js
	nR = 0
	split("fastlocal/tcp fastlocal/unix fastlocal/redirect-raw fastlocal-nodelay/tcp-nodelay redirect-raw/tcp", RR, " ")
	for (r = 1; r <= 5; r++) {
		split(RR[r], ab, "/")
		jratios("stream", "", ab[1], ab[2]); jratios("rtt", 1, ab[1], ab[2]); jratios("rtt", 0, ab[1], ab[2])
		jratios("rr", "", ab[1], ab[2]); jratios("churn", "", ab[1], ab[2])
	}
	printf "\n  ]\n}\n" >js
}' "$DIR/meta.txt" "$DIR/stream.csv" "$DIR/rtt.csv" "$DIR/rr.csv" "$DIR/churn.csv"
