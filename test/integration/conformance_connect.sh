#!/bin/sh
# conformance_connect.sh - the conformance suite again, with enrollment at
# connect/accept (FASTLOCAL_ENROLL_AFTER=0): each scenario meets the
# redirect path from its connection's first byte, bytes written before
# accept() included, as it was written to. IPv6 only, so that make test
# stays short: the default pass (conformance.sh) covers both families, and
# conformance_lazy.sh takes IPv4. Two shards at once, in pin dirs of their own.
# fl-test-env: FASTLOCAL_ENROLL_AFTER=0
# fl-test-weight: 20
# fl-test-not-under-san: at-connect mode in the normal build; conformance.sh runs the scenarios under ASan
# fl-test-timeout: 600
FL_CONFORMANCE_JOBS=2 FL_CONFORMANCE_LABEL="at-connect " FL_CONFORMANCE_FAMILIES=6 \
	exec "$FL_TEST_TOP/test/conformance/run.sh" "$FL_TEST_BUILD"
