#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# check_loops.sh - loops between the shim's files: a file that calls into
# another which (through any others) calls back, or headers that include
# each other's files round in a circle. Each file should sit on a layer that
# only calls down.
#
# Usage: check_loops.sh OBJ_DIR [SRC_DIR]
#   OBJ_DIR  the shim's objects, one a source (build/obj/preload)
#   SRC_DIR  its sources (preload)
#
# Calls: file A calls file B if A.o leaves undefined a symbol B.o defines
# (nm). Includes: file A includes file B if A.c or A.h has #include "B.h".
# Prints each loop (a strongly connected set of files) with the edges
# inside it and the symbols or headers behind them; exits 1 if any.
set -eu

[ $# -ge 1 ] || { echo "usage: $0 OBJ_DIR [SRC_DIR]" >&2; exit 2; }
objs=$1
srcs=${2:-preload}
NM=${NM:-nm}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

set -- "$objs"/*.o
[ -f "$1" ] || { echo "check_loops: no objects in $objs" >&2; exit 2; }
# "use FILE SYM" for each symbol a file leaves undefined, "def FILE SYM"
# for each it defines; then "inc FILE HEADER" for each #include "HEADER.h".
$NM -A "$@" | awk '{
	split($1, p, ":"); f = p[1]; sub(/.*\//, "", f); sub(/\.o$/, "", f)
	if ($2 == "U" && NF == 3) print "use", f, $3
	else if (NF == 3 && $2 ~ /^[TDBRGSVW]$/) print "def", f, $3
}' >"$tmp"
grep -H '^#include "[^"/]*\.h"' "$srcs"/*.c "$srcs"/*.h | awk '{
	f = $0; sub(/:.*/, "", f); sub(/.*\//, "", f); sub(/\.[ch]$/, "", f)
	h = $0; sub(/^[^"]*"/, "", h); sub(/\.h".*/, "", h)
	if (h != f) print "inc", f, h
}' >>"$tmp"

awk '
function visit(g, v,    i, w, n) {
	idx[g, v] = low[g, v] = ++counter
	stack[++sp] = v
	on[g, v] = 1
	for (i = 1; i <= nout[g, v]; i++) {
		w = out[g, v, i]
		if (!((g, w) in idx)) {
			visit(g, w)
			if (low[g, w] < low[g, v])
				low[g, v] = low[g, w]
		} else if (on[g, w] && idx[g, w] < low[g, v])
			low[g, v] = idx[g, w]
	}
	if (low[g, v] == idx[g, v]) {
		n = 0
		do {
			w = stack[sp--]
			on[g, w] = 0
			comp[++n] = w
		} while (w != v)
		if (n > 1)
			report(g, n)
	}
}
function report(g, n,    i, j, line) {
	loops++
	line = ""
	for (i = n; i >= 1; i--)
		line = line " " comp[i]
	print "check_loops: " (g == "call" ? "call" : "include") " loop:" line
	for (i = n; i >= 1; i--)
		for (j = n; j >= 1; j--)
			if ((g, comp[i], comp[j]) in why)
				print "    " comp[i] " -> " comp[j] ": " why[g, comp[i], comp[j]]
}
function edge(g, a, b, what) {
	if (!((g, a, b) in why)) {
		out[g, a, ++nout[g, a]] = b
		why[g, a, b] = what
		if (!((g, a) in node)) { node[g, a] = 1; nodes[g, ++nn[g]] = a }
		if (!((g, b) in node)) { node[g, b] = 1; nodes[g, ++nn[g]] = b }
	} else if (length(why[g, a, b]) < 60)
		why[g, a, b] = why[g, a, b] " " what
}
$1 == "def" { def[$3] = $2 }
$1 == "use" { nu++; ufile[nu] = $2; usym[nu] = $3 }
$1 == "inc" { edge("inc", $2, $3, $3 ".h") }
END {
	for (i = 1; i <= nu; i++)
		if ((usym[i] in def) && def[usym[i]] != ufile[i])
			edge("call", ufile[i], def[usym[i]], usym[i])
	loops = 0
	for (k = 1; k <= nn["call"]; k++)
		if (!(("call", nodes["call", k]) in idx))
			visit("call", nodes["call", k])
	for (k = 1; k <= nn["inc"]; k++)
		if (!(("inc", nodes["inc", k]) in idx))
			visit("inc", nodes["inc", k])
	exit loops > 0
}' "$tmp"
