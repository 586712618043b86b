#!/bin/sh
# conformance.sh - the differential TCP conformance suite (test/conformance/),
# as part of make test, in the default configuration (deferred enrollment:
# each scenario's connections first move the threshold's worth of bytes,
# then run redirected): every scenario over IPv4 and IPv6, on plain TCP and
# under the shim; any difference fails, and so does a scenario marked
# "redirects" that redirected nothing.
# fl-test-weight: 80
# fl-test-timeout: 900
exec "$FL_TEST_TOP/test/conformance/run.sh" "$FL_TEST_BUILD"
