#!/bin/sh
# conformance.sh - the differential TCP conformance suite (test/conformance/),
# as part of make test, in the default configuration (deferred enrollment:
# each scenario's connections first move the threshold's worth of bytes,
# then run redirected): every scenario over IPv4 and IPv6, on plain TCP and
# under the shim; any difference fails, and so does a scenario marked
# "redirects" that redirected nothing.
# Two shards at once, each in a pin dir of its own (run.sh loads the second).
# fl-test-weight: 30
# fl-test-timeout: 900
FL_CONFORMANCE_JOBS=2 exec "$FL_TEST_TOP/test/conformance/run.sh" "$FL_TEST_BUILD"
