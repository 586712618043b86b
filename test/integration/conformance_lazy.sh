#!/bin/sh
# conformance_lazy.sh - the conformance suite again, with deferred enrollment
# at its most eager (FASTLOCAL_ENROLL_AFTER=1): every connection starts on
# TCP and is enrolled by its first byte of I/O, so every scenario crosses
# the switch from TCP to the sockhash with bytes already moved, read or in
# flight, and must still behave exactly as TCP does. A scenario may end
# before both ends are enrolled, so "redirected something" is not required.
# IPv4 only: the switch does not depend on the family, and make test must
# stay short (conformance.sh covers both families).
FASTLOCAL_ENROLL_AFTER=1 FL_CONFORMANCE_LABEL="lazy " FL_CONFORMANCE_REDIRECT_CHECK=0 \
	FL_CONFORMANCE_FAMILIES=4 \
	exec "$FL_TEST_TOP/test/conformance/run.sh" "$FL_TEST_BUILD"
