#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# When unshare(CLONE_FILES) is denied (a seccomp profile), the workers share one descriptor table: spliced says so, and the EMFILE pause, the limits and the drain (limits.sh, signals.sh run again) still work, without closing anyone's descriptors.
. "$(dirname "$0")/../lib.sh"
need_spliced
SHIM=${SHIM:-$T_BUILD/tests/tools/libunshare_eperm.so}
need "$SHIM"

# The binary under test, with unshare(2) failing (an LD_PRELOAD shim built for the tests).
# The ASan build cannot take a preloaded library before its runtime: the release build runs.
WRAP=$T_TMP/spliced-shared-table
printf '#!/bin/sh\nLD_PRELOAD=%s exec %s "$@"\n' "$SHIM" "$SPLICED_BIN" >"$WRAP"
chmod +x "$WRAP"
REAL=$SPLICED_BIN
SPLICED_BIN=$WRAP

SP=$(free_port)
www=$T_TMP/www
mkdir -p "$www"
head -c 1000000 /dev/urandom >"$www/blob"
http_server H "$www" 127.0.0.1 || { fail setup "http server"; finish; }
start_spliced "[main]
workers = 2
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP" || { fail setup "spliced did not start"; finish; }
n=$(grep -c 'unshare(CLONE_FILES): Operation not permitted; sharing one descriptor table' "$SPLICED_LOG")
expect_eq says-shared-table "$n" 2 "workers that said they share the table"
# One table: every worker's sockets show in the main thread's /proc/PID/fd.
main_listeners=$(ls -l /proc/"$SPLICED_PID"/fd | grep -c 'socket:')
if [ "$main_listeners" -ge 2 ]; then pass listeners-in-the-one-table
else fail listeners-in-the-one-table "$main_listeners sockets in /proc/PID/fd, want both workers' listeners"; fi
for i in 1 2 3 4; do
	curl -sS --max-time 10 --socks5 127.0.0.1:"$SP" -o "$T_TMP/got" "http://127.0.0.1:$H_PORT/blob" &&
		cmp -s "$T_TMP/got" "$www/blob" || { fail relays "transfer $i"; break; }
done
[ "$i" = 4 ] && pass relays
stop_spliced
expect_eq sigterm-exit $? 0 "exit status"
expect_clean_log clean-log

# The EMFILE pause and the drain tests, once more on the shared table.
for s in limits signals; do
	T_NAME=integration/shared-fdtable/$s SPLICED_BIN=$WRAP SPLICED_ASAN_BIN=$WRAP \
		bash "$(dirname "$0")/$s.sh" 2>&1 | grep -E '^(PASS|FAIL|SKIP|#)'
	[ "${PIPESTATUS[0]}" -eq 0 ] || fail "$s-script" "$s.sh exited non-zero"
done
SPLICED_BIN=$REAL
finish
