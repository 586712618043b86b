-- wrk-report.lua - wrk -s script for bench/apps: prints wrk's summary as
-- one "key=value" line that nginx.sh parses (wrk's own text output mixes
-- units). With WRK_CLOSE=1 every request asks for a new connection, to
-- measure connection setup (where the shim enrolls) rather than transfer.
if os.getenv("WRK_CLOSE") == "1" then
	wrk.headers["Connection"] = "close"
end

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format(
		"wrk requests=%d bytes=%d us=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
		summary.requests, summary.bytes, summary.duration,
		e.connect, e.read, e.write, e.status, e.timeout))
end
