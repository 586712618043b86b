#!/bin/sh
# conformance_lazy.sh - the conformance suite again, with deferred enrollment
# at its most eager (FASTLOCAL_ENROLL_AFTER=1): every connection starts on
# TCP and is enrolled by its first byte of I/O, so it crosses the switch
# from TCP to the sockhash after one byte each way (the warm-up,
# conformance.h), and the scenario must then behave exactly as TCP does.
# "Redirected something" is required as in every pass. IPv4 only, so that
# make test stays short (conformance.sh covers both families). Two shards at
# once, in pin dirs of their own.
# fl-test-env: FASTLOCAL_ENROLL_AFTER=1
# fl-test-weight: 20
# fl-test-not-under-san: lazy mode in the normal build; conformance.sh runs the scenarios under ASan
# fl-test-timeout: 600
FL_CONFORMANCE_JOBS=2 FL_CONFORMANCE_LABEL="lazy " FL_CONFORMANCE_FAMILIES=4 \
	exec "$FL_TEST_TOP/test/conformance/run.sh" "$FL_TEST_BUILD"
