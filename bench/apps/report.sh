#!/bin/sh
# report.sh WORK OUT REPS: turns the run's records (raw.txt, integrity.txt,
# see common.sh) into OUT/apps.md (also on stdout), OUT/apps.csv,
# OUT/apps.json, OUT/apps-targets.csv (each target of targets.txt next to
# the measured ratio: met or missed, never a failure) and OUT/apps-runs.csv
# (every single run). Exit 1 if an integrity check failed.
set -eu
WORK=$1 OUT=$2 REPS=$3
HERE=$(cd "$(dirname "$0")" && pwd)

# One '|'-separated line per row, in the order the rows were first seen:
# app|variant|unit|reps|plain mean|sd|shim mean|sd|ratio|OutSegs plain|
# OutSegs shim|redirected shim|integrity|over TCP shim. Rows with only integrity checks
# (no measurement) have empty numbers.
awk -F'|' '
FILENAME ~ /raw.txt$/ {
	k = $1 "|" $2
	if (!(k in seen)) { seen[k] = 1; order[++n] = k }
	unit[k] = $3; m = $4
	if ($6 != "NA") { c[k, m]++; s[k, m] += $6; q[k, m] += $6 * $6 }
	oc[k, m]++; os[k, m] += $7; rs[k, m] += $8; ps[k, m] += $9
	next
}
{
	k = $1 "|" $2
	if (!(k in seen)) { seen[k] = 1; order[++n] = k }
	if ($4 == "FAIL") { if (!(k in fail)) fail[k] = "FAIL (" ($3 == "shim" ? "fastlocal" : $3) "): " $5 }
	else if (!((k, $5) in said)) { said[k, $5] = 1; ok[k] = nok[k]++ ? ok[k] "; " $5 : $5 }
	modes[k] = modes[k] " " $3
}
function mean(k, m) { return c[k, m] ? s[k, m] / c[k, m] : "" }
function sd(k, m,   a, v) { if (!c[k, m]) return ""; a = mean(k, m); v = q[k, m] / c[k, m] - a * a; return v > 0 ? sqrt(v) : 0 }
function fmt(x, u) { return x == "" ? "" : (u == "rps" ? sprintf("%.0f", x) : sprintf("%.2f", x)) }
END {
	for (i = 1; i <= n; i++) {
		k = order[i]; u = unit[k]
		pm = mean(k, "plain"); fm = mean(k, "shim")
		r = (pm != "" && fm != "" && pm > 0) ? sprintf("%.2f", fm / pm) : ""
		integ = (k in fail) ? fail[k] : ((k in ok) ? "ok (" (index(modes[k], "plain") ? "plain, " : "") "fastlocal): " ok[k] : "not checked")
		if (integ ~ /^ok/ && !index(modes[k], "shim")) integ = "ok (plain only): " ok[k]
		printf "%s|%s|%d|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s\n", k, u, c[k, "shim"], \
			fmt(pm, u), fmt(sd(k, "plain"), u), fmt(fm, u), fmt(sd(k, "shim"), u), r, \
			oc[k, "plain"] ? sprintf("%.0f", os[k, "plain"] / oc[k, "plain"]) : "", \
			oc[k, "shim"] ? sprintf("%.0f", os[k, "shim"] / oc[k, "shim"]) : "", \
			oc[k, "shim"] ? sprintf("%.0f", rs[k, "shim"] / oc[k, "shim"]) : "", integ, \
			oc[k, "shim"] ? sprintf("%.0f", ps[k, "shim"] / oc[k, "shim"]) : ""
	}
}' "$WORK/raw.txt" "$WORK/integrity.txt" >"$WORK/rows"

{
	echo "| app | variant | plain | fastlocal | ratio | OutSegs plain | OutSegs fastlocal | redirected / over TCP (fastlocal) | integrity |"
	echo "|---|---|---|---|---|---|---|---|---|"
	awk -F'|' '{
		if ($5 == "") { printf "| %s | %s | | | | | | | %s |\n", $1, $2, $13; next }
		printf "| %s | %s | %s ± %s %s | %s ± %s %s | %sx | %s | %s | %.1f / %.1f MB | %s |\n",
			$1, $2, $5, $6, $3, $7, $8, $3, $9, $10, $11, $12 / 1e6, $14 / 1e6, $13
	}' "$WORK/rows"
	echo
	echo "Mean ± stddev of $REPS run(s) per cell, plain and fastlocal alternated; ratio = fastlocal / plain" \
		"(higher is better for every unit here). OutSegs: Tcp OutSegs of the run's private network" \
		"namespace, mean per run. Redirected / over TCP: fastlocal's redirected_bytes and passed_bytes," \
		"mean per run (a proxy counts both of its connections)."

	# The targets of the rows this run measured: app|variant|target|ratio|verdict.
	grep -v '^#' "$HERE/targets.txt" | awk -F'|' '
	NR == FNR { want[$1 "|" $2] = $3; order[++n] = $1 "|" $2; next }
	{ got[$1 "|" $2] = $9 }
	END {
		for (i = 1; i <= n; i++) {
			k = order[i]
			if (!(k in got)) continue
			r = got[k]
			v = r == "" ? "not measured" : (r + 0 >= want[k] + 0 ? "met" : "missed")
			printf "%s|%s|%s|%s\n", k, want[k], r, v
		}
	}' - "$WORK/rows" >"$WORK/targets"
	if [ -s "$WORK/targets" ]; then
		echo
		echo "Targets (issue 14; met or missed is reported, never a failure):"
		echo
		echo "| app | variant | target | measured | |"
		echo "|---|---|---|---|---|"
		awk -F'|' '{ printf "| %s | %s | >= %.2fx | %s | %s |\n", $1, $2, $3, $4 == "" ? "-" : $4 "x", $5 }' "$WORK/targets"
	fi
} >"$OUT/apps.md"
cat "$OUT/apps.md"

{
	echo "app,variant,unit,reps,plain_mean,plain_sd,fastlocal_mean,fastlocal_sd,ratio,outsegs_plain,outsegs_fastlocal,redirected_bytes_fastlocal,integrity,passed_bytes_fastlocal"
	awk -F'|' '{
		for (i = 1; i <= NF; i++) { v = $i; if (v ~ /[,"]/) { gsub(/"/, "\"\"", v); v = "\"" v "\"" } printf "%s%s", v, i < NF ? "," : "\n" }
	}' "$WORK/rows"
} >"$OUT/apps.csv"

jq -R -s '[split("\n")[] | select(length > 0) | split("|") |
	def num: if . == "" then null else tonumber end;
	{app: .[0], variant: .[1], unit: .[2], reps: (.[3] | num),
	 plain: {mean: (.[4] | num), sd: (.[5] | num), outsegs: (.[9] | num)},
	 fastlocal: {mean: (.[6] | num), sd: (.[7] | num), outsegs: (.[10] | num), redirected_bytes: (.[11] | num), passed_bytes: (.[13] | num)},
	 ratio: (.[8] | num), integrity: .[12], integrity_ok: (.[12] | startswith("FAIL") | not)}]' \
	"$WORK/rows" >"$OUT/apps.json"

{
	echo "app,variant,target_ratio,ratio,verdict"
	awk -F'|' '{
		for (i = 1; i <= NF; i++) { v = $i; if (v ~ /[,"]/) { gsub(/"/, "\"\"", v); v = "\"" v "\"" } printf "%s%s", v, i < NF ? "," : "\n" }
	}' "$WORK/targets"
} >"$OUT/apps-targets.csv"

{
	echo "app,variant,unit,mode,rep,value,outsegs,redirected_bytes,passed_bytes"
	awk -F'|' '{ $4 = ($4 == "shim") ? "fastlocal" : $4
		for (i = 1; i <= NF; i++) { v = $i; if (v ~ /[,"]/) { gsub(/"/, "\"\"", v); v = "\"" v "\"" } printf "%s%s", v, i < NF ? "," : "\n" } }' "$WORK/raw.txt"
} >"$OUT/apps-runs.csv"

if grep -q '|FAIL|' "$WORK/integrity.txt"; then
	echo >&2
	echo "bench/apps: INTEGRITY CHECKS FAILED:" >&2
	grep '|FAIL|' "$WORK/integrity.txt" | sed 's/^/  /; s/|shim|/|fastlocal|/' >&2
	exit 1
fi
