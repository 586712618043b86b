#!/bin/sh
# conformance.sh - the differential TCP conformance suite (test/conformance/),
# as part of make test: every scenario over IPv4 and IPv6, on plain TCP and
# under the shim; any difference fails.
exec "$FL_TEST_TOP/test/conformance/run.sh" "$FL_TEST_BUILD"
