#!/bin/sh
# broker_drain.sh - a brokered process holds no map fd: after "fastlocal
# unload" and the broker's exit nothing in user space holds the sockhash,
# and bytes queued in its sockets must still arrive (docs/security.md).
# broker_nobody --drain does the work; it runs here WITHOUT the shim, so
# that no root process holds the maps either.
. "$(dirname "$0")/../lib/fltest.sh"
exec "$FL_TEST_BUILD/test/broker_nobody" --drain
