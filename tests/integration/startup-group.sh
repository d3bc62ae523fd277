#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The start-up group (app/startup.ld) still holds what an idle spliced runs: the release
# build, started with one SOCKS5 listener and connected to once, faults no code page of
# its own in outside .text.startup_path (scripts/startup-order --check: perf's
# exceptions:page_fault_user tracepoint, each fault-around window's first code fault named).
# Each such function holds a 64 KiB window of the binary resident in every idle process
# (bench/idle, docs/benchmarks.md#idle-memory); the list went stale twice as code was added.
# Where ASLR puts the windows decides which fault of a window shows, so three runs.
. "$(dirname "$0")/../lib.sh"
need perf readelf nm python3
bin=$T_BUILD/app/spliced
[ -x "$bin" ] || { fail release/present "no $bin"; finish; }
if ! readelf -SW "$bin" | grep -q '\.text\.startup_path'; then
	fail release/has-group "$bin has no .text.startup_path section (app/startup.ld not linked)"
	finish
fi
pass release/has-group
# perf may be refused the tracepoint (perf_event_paranoid, a container's seccomp): say so
if ! out=$(perf record -q -e exceptions:page_fault_user -o "$T_TMP/probe.data" -- true 2>&1); then
	skip idle-faults "perf cannot record exceptions:page_fault_user here: $(head -n 1 <<<"$out")"
	finish
fi
# Three runs the check could complete; one it could not (exit 2: spliced did not start on
# its port, ...) is shown and tried again, up to six attempts.
bad=0 done_runs=0 attempts=0
while [ $done_runs -lt 3 ] && [ $attempts -lt 6 ]; do
	attempts=$((attempts + 1))
	out=$("$T_TOP/scripts/startup-order" --check "$bin" 2>&1)
	rc=$?
	case $rc in
	0) done_runs=$((done_runs + 1)) ;;
	1) done_runs=$((done_runs + 1)) bad=1; echo "# attempt $attempts: $out" ;;
	*) echo "# attempt $attempts (exit $rc, not counted): $out" ;;
	esac
done
if [ $done_runs -lt 3 ]; then
	fail idle-faults "the check completed $done_runs of $attempts attempts (above)"
elif [ $bad = 0 ]; then
	pass idle-faults
else
	fail idle-faults "code outside the start-up group ran (above): add it to app/startup.ld with scripts/startup-order"
fi
finish
