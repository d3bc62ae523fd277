#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Running as a service: the sd_notify sequence systemd's Type=notify waits for (READY=1 only
# once the listeners accept, RELOADING=1 then READY=1 around SIGHUP, STOPPING=1 at SIGTERM)
# against a test $NOTIFY_SOCKET, a path one and an abstract one; a socket that is not there
# costs a warning, not the start. Then the files under packaging/: systemd-analyze verify and
# security --offline on the unit (rated OK or better), sh -n and shellcheck on the OpenWrt
# procd script. PID 1 here is not systemd, so systemctl itself is not run.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 systemd-analyze shellcheck
use_asan_spliced

# notify_listener SOCKET LISTEN-PORT OUT: print each datagram on SOCKET to OUT, one line per
# field; at READY=1, also whether LISTEN-PORT accepts a connection at that moment.
notify_listener() {
	python3 -c '
import socket, sys
path, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + path[1:] if path[0] == "@" else path)
with open(out, "a") as f:
    print("listening", file=f, flush=True)
    while True:
        d = s.recv(4096).decode()
        for field in d.split("\n"):
            print(field, file=f, flush=True)
        if "READY=1" in d.split("\n"):
            c = socket.socket()
            c.settimeout(2)
            try:
                c.connect(("127.0.0.1", port)); print("accepts", file=f, flush=True)
            except OSError as e:
                print("refuses", e, file=f, flush=True)
            c.close()
' "$1" "$2" "$3" 2>>"$3.err" &
	on_cleanup_pid $!
	for _ in $(seq 50); do grep -q listening "$3" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
# wait_line OUT PATTERN COUNT: until OUT has COUNT lines matching PATTERN (5 s).
wait_line() {
	for _ in $(seq 50); do [ "$(grep -c -- "$2" "$1")" -ge "$3" ] && return 0; sleep 0.1; done
	return 1
}

for kind in path abstract; do
	P=$(free_port)
	out=$T_TMP/notify-$kind.log
	if [ "$kind" = path ]; then sock=$T_TMP/notify.sock; else sock=@spliced-test-$$; fi
	notify_listener "$sock" "$P" "$out" || { fail "$kind/setup" "$(cat "$out.err")"; continue; }
	export NOTIFY_SOCKET=$sock
	start_spliced "
[inbound s]
type = socks5
listen = 127.0.0.1:$P
" || { fail "$kind/start"; unset NOTIFY_SOCKET; continue; }
	unset NOTIFY_SOCKET
	if wait_line "$out" '^READY=1$' 1 && wait_line "$out" '^accepts' 1; then
		pass "$kind/ready-once-listening"
	else
		fail "$kind/ready-once-listening" "$(tr '\n' '|' <"$out")"
	fi
	if grep -q '^STATUS=1 inbounds on [0-9]* workers' "$out"; then pass "$kind/status"; else fail "$kind/status" "$(tr '\n' '|' <"$out")"; fi
	kill -HUP "$SPLICED_PID"
	if wait_line "$out" '^READY=1$' 2 && grep -q '^RELOADING=1$' "$out" && grep -q '^MONOTONIC_USEC=[0-9]\+$' "$out"; then
		pass "$kind/reload-sequence"
	else
		fail "$kind/reload-sequence" "$(tr '\n' '|' <"$out")"
	fi
	order=$(grep -E '^(READY=1|RELOADING=1)$' "$out" | tr '\n' ' ')
	expect_eq "$kind/reload-order" "$order" "READY=1 RELOADING=1 READY=1 " "states in order"
	stop_spliced
	expect_eq "$kind/sigterm-exit" "$?" 0 "exit status"
	if grep -q '^STOPPING=1$' "$out"; then pass "$kind/stopping"; else fail "$kind/stopping" "$(tr '\n' '|' <"$out")"; fi
	expect_clean_log "$kind/clean-log"
done

# A NOTIFY_SOCKET nobody listens on: a warning, and spliced runs all the same.
P=$(free_port)
export NOTIFY_SOCKET=$T_TMP/nobody.sock
start_spliced "
[inbound s]
type = socks5
listen = 127.0.0.1:$P
" && pass missing-socket/starts || fail missing-socket/starts
unset NOTIFY_SOCKET
if grep -q "warn: NOTIFY_SOCKET=$T_TMP/nobody.sock: .*not notifying" "$SPLICED_LOG"; then pass missing-socket/warns; else fail missing-socket/warns "$(tail -n 5 "$SPLICED_LOG")"; fi
stop_spliced

# The unit: systemd-analyze verify with the binary under test in ExecStart and the man pages
# it names on MANPATH, and the offline security review.
unit=$T_TOP/packaging/systemd/spliced.service
mkdir -p "$T_TMP/man/man8" "$T_TMP/man/man5" "$T_TMP/unit"
cp "$T_TOP/man/spliced.8" "$T_TMP/man/man8/" && cp "$T_TOP/man/spliced.ini.5" "$T_TMP/man/man5/"
sed "s|/usr/bin/spliced|$(readlink -f "$SPLICED_BIN")|g" "$unit" >"$T_TMP/unit/spliced.service"
if o=$(MANPATH=$T_TMP/man systemd-analyze verify "$T_TMP/unit/spliced.service" 2>&1); then pass unit/verify; else fail unit/verify "$o"; fi
o=$(systemd-analyze security --offline=yes "$unit" 2>&1 | tail -n 1)
case "$o" in
*"exposure level for spliced.service:"*" SAFE"* | *"exposure level for spliced.service:"*" OK"*)
	echo "# systemd-analyze security: ${o#*: }"
	pass unit/security-ok-or-better ;;
*) fail unit/security "$o" ;;
esac
grep -q '^Type=notify$' "$unit" && grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$unit" && pass unit/notify-and-reload || fail unit/notify-and-reload "Type= or ExecReload= changed"

# The OpenWrt procd script (its START/STOP/USE_PROCD are read by /etc/rc.common: SC2034).
init=$T_TOP/packaging/openwrt/files/spliced.init
if sh -n "$init"; then pass openwrt/sh-n; else fail openwrt/sh-n; fi
if o=$(shellcheck -s sh -e SC2034 "$init" 2>&1); then pass openwrt/shellcheck; else fail openwrt/shellcheck "$o"; fi
finish
