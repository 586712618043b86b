#!/bin/sh
# check_layers.sh OBJ_DIR OBJ... - the shim's layers, checked at build time.
#
# Each object's layer is its source folder: preload/<layer>/x.c or common/x.c.
# The layers, from the top (docs/architecture.md):
#   entry enroll rx tx socket kernel base common
# A file may call and include only files of its own layer or of a layer
# below it, and no two files may call or include each other in a circle.
# Calls are read from the objects (nm: what each defines and what it needs),
# includes from the sources' #include "..." lines. Prints every violation;
# exits 1 if there is any. OBJ_DIR/x/y.o is the object of x/y.c; run from
# the top of the tree.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OBJ_DIR OBJ..." >&2; exit 2; }
objdir=$1
shift
root=.
ORDER="entry enroll rx tx socket kernel base common"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# "call FROM TO" lines: FROM's object needs a symbol TO's object defines.
for o in "$@"; do
	src=${o#"$objdir"/}; src=${src%.o}.c
	nm "$o" | awk -v f="$src" '$1 == "U" { print "U", f, $2; next }
		NF == 3 && $2 ~ /[TDBR]/ { print "D", f, $3 }'
done > "$tmp.nm"
awk '$1 == "D" { def[$3] = $2; next }
     $1 == "U" && ($3 in def) && def[$3] != $2 { print "call", $2, def[$3], $3 }' \
	"$tmp.nm" "$tmp.nm" | sort -u > "$tmp"
# "include FROM TO" lines, for headers and sources of the shim and common/.
for f in $(cd "$root" && for d in preload common; do [ ! -d "$d" ] || find "$d" -name '*.[ch]'; done | sort); do
	d=$(dirname "$f")
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$root/$f" |
	while read -r inc; do
		for cand in "$d/$inc" "preload/$inc" "$inc"; do
			if [ -f "$root/$cand" ]; then echo "include $f $cand -"; break; fi
		done
	done
done >> "$tmp"
rm -f "$tmp.nm"

awk -v order="$ORDER" '
function layer(p,   a) {
	if (p ~ /^common\//) return "common"
	split(p, a, "/"); return a[2]
}
function unit(p) { sub(/\.[ch]$/, "", p); return p }   # x.c and x.h are one file
BEGIN { n = split(order, o, " "); for (i = 1; i <= n; i++) rank[o[i]] = i }
{
	from = unit($2); to = unit($3)
	if (from == to) next
	lf = layer($2); lt = layer($3)
	if (!(lf in rank) || !(lt in rank)) {
		p = (lf in rank) ? $3 : $2
		if (!(p in homeless))
			printf "check_layers: %s is in no layer folder (preload/<layer>/ or common/, docs/architecture.md)\n", p > "/dev/stderr"
		homeless[p]; bad = 1; next
	}
	if (rank[lt] < rank[lf]) {
		printf "check_layers: %s (%s) %s %s (%s)%s: a lower layer may not use a higher one\n",
			$2, lf, ($1 == "call" ? "calls" : "includes"), $3, lt, ($1 == "call" ? " via " $4 : "") > "/dev/stderr"
		bad = 1
	}
	if (!((from, to) in edge)) { edge[from, to] = 1; adj[from] = adj[from] " " to; nodes[from]; nodes[to] }
}
function dfs(u,   i, k, v, a) {
	state[u] = 1; path[++depth] = u
	k = split(adj[u], a, " ")
	for (i = 1; i <= k; i++) {
		v = a[i]
		if (state[v] == 1) {
			for (j = depth; j >= 1 && path[j] != v; j--) ;
			s = path[j]; for (j++; j <= depth; j++) s = s " -> " path[j]
			printf "check_layers: loop: %s -> %s\n", s, v > "/dev/stderr"; bad = 1
		} else if (state[v] == 0) dfs(v)
	}
	depth--; state[u] = 2
}
END {
	for (u in nodes) state[u] = 0
	for (u in nodes) if (state[u] == 0) dfs(u)
	exit bad
}' "$tmp"
