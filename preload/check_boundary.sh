#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# check_boundary.sh - the shim's sealed boundary, checked before it is linked.
#
# Usage: check_boundary.sh EXPORTS_MAP FORWARDERS_OBJ OBJ...
#
# Inside the shim an interposed function (every name in exports.map except
# fastlocal_*) is called only through its libc_<fn> trampoline
# (preload/base/libc.h): a plain call would resolve to the shim's own export and
# run the shim's logic a second time on its own fd. So no object may leave
# such a name undefined, except FORWARDERS_OBJ, the one that defines the
# exported forwarders (shim.c). Fortified and large-file variants
# (__read_chk, fcntl64, sendfile64) are listed in exports.map themselves and
# are caught like the rest. Exits 1, naming each object and symbol.
set -eu

[ $# -ge 2 ] || { echo "usage: $0 EXPORTS_MAP FORWARDERS_OBJ OBJ..." >&2; exit 2; }
map=$1
fwd=$2
shift 2
NM=${NM:-nm}

# The names between "global:" and "local:", one a line, without fastlocal_*.
names=$(sed -n '/global:/,/local:/p' "$map" | sed 's,/\*.*\*/,,; s/global://; s/local:.*//' |
	tr ';' '\n' | tr -d ' \t' | grep -v -e '^$' -e '^fastlocal_') || true
[ -n "$names" ] || { echo "check_boundary: no interposed names found in $map" >&2; exit 2; }

bad=0
for obj in "$@"; do
	[ "$obj" = "$fwd" ] && continue
	[ -f "$obj" ] || { echo "check_boundary: $obj: no such object" >&2; exit 2; }
	und=$($NM -u "$obj" | awk '{ print $NF }') || { echo "check_boundary: $NM -u $obj failed" >&2; exit 2; }
	for sym in $und; do
		for n in $names; do
			[ "$sym" = "$n" ] || continue
			# The trampoline to name: __read_chk -> read, fcntl64 -> fcntl.
			fn=$sym
			case $fn in
			__*_chk) fn=${fn#__}; fn=${fn%_chk} ;;
			fcntl64|sendfile64) fn=${fn%64} ;;
			esac
			echo "check_boundary: $obj calls the interposed $sym: call libc_$fn instead (preload/base/libc.h)" >&2
			bad=1
		done
	done
done
exit $bad
