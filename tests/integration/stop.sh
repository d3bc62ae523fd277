#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGTERM with idle, half-closed and mid-transfer relays open: they drain for drain-timeout, then close; the stop is prompt, clean (ASan) and says nothing about operations still in flight.
. "$(dirname "$0")/../lib.sh"

CONNHOLD=${CONNHOLD:-$T_BUILD/tests/tools/connhold}
IDLE=${STOP_IDLE:-2500}
DRAIN_MS=1000

need_spliced
need python3 "$CONNHOLD"
ulimit -n "$(ulimit -Hn)"
use_asan_spliced

# peer.py MODE ...: the far ends of the relays that are not idle.
#   serve-hold PORTFILE    read until EOF, then keep the connection open (half-closed by the client)
#   serve-stream PORTFILE  write to every connection as fast as it reads
#   half PROXY TARGET      CONNECT, send, shutdown(SHUT_WR), wait for the end
#   stream PROXY TARGET    CONNECT, read without end
cat >"$T_TMP/peer.py" <<'PY'
import socket, struct, sys, threading, time

def serve(portfile, handler):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    open(portfile, "w").write(str(s.getsockname()[1]))
    while True:
        c, _ = s.accept()
        threading.Thread(target=handler, args=(c,), daemon=True).start()

def hold(c):
    while c.recv(65536):
        pass
    time.sleep(3600)

def stream(c):
    chunk = b"x" * 65536
    try:
        while True:
            c.sendall(chunk)
    except OSError:
        pass

def socks(proxy, port):
    h, p = proxy.rsplit(":", 1)
    s = socket.create_connection((h, int(p)))
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00"
    s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", int(port)))
    r = s.recv(10)
    assert r[:2] == b"\x05\x00", r
    return s

mode = sys.argv[1]
if mode == "serve-hold":
    serve(sys.argv[2], hold)
elif mode == "serve-stream":
    serve(sys.argv[2], stream)
elif mode == "half":
    s = socks(sys.argv[2], sys.argv[3])
    s.sendall(b"hello")
    s.shutdown(socket.SHUT_WR)
    print("half-closed", flush=True)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
elif mode == "stream":
    s = socks(sys.argv[2], sys.argv[3])
    n = 0
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            n += len(b)
            if n >= 1 << 20 and n - len(b) < 1 << 20:
                print("streaming", flush=True)
    except OSError:
        pass
PY

EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 127.0.0.2:"$EP" 2>"$T_TMP/echo.err" &
on_cleanup_pid $!
python3 "$T_TMP/peer.py" serve-hold "$T_TMP/hold.port" &
on_cleanup_pid $!
python3 "$T_TMP/peer.py" serve-stream "$T_TMP/stream.port" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$EP" 10 && wait_file "$T_TMP/hold.port" && wait_file "$T_TMP/stream.port" ||
	{ fail setup "peers did not start"; finish; }
HP=$(cat "$T_TMP/hold.port")
STP=$(cat "$T_TMP/stream.port")

# stop_case NAME BUSY: spliced with IDLE idle relays (and, when BUSY, four half-closed and
# four mid-transfer ones) gets SIGTERM.
stop_case() {
	local name=$1 busy=$2 i rc t0 took SP
	SP=$(free_port)
	start_spliced "[main]
workers = 2
max-connections = $((IDLE + 100))
drain-timeout = ${DRAIN_MS}ms
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP" || { fail "$name/setup" "spliced did not start"; return; }
	holder "idle-$name" -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -t 127.0.0.2:"$EP" -w 60000 -c 256
	hask "idle-$name" "open $IDLE"
	expect_eq "$name/open-$IDLE-idle" "$r" "opened $IDLE failed 0" "client"
	hask "idle-$name" ping
	expect_eq "$name/idle-relays-work" "$r" "ping ok $IDLE bad 0" "client"
	if [ "$busy" = 1 ]; then
		# Half-closed (the client sent EOF, the server keeps its side open) and mid-transfer.
		for i in 1 2 3 4; do
			python3 "$T_TMP/peer.py" half 127.0.0.1:"$SP" "$HP" >"$T_TMP/half$i.out" 2>&1 &
			on_cleanup_pid $!
			python3 "$T_TMP/peer.py" stream 127.0.0.1:"$SP" "$STP" >"$T_TMP/stream$i.out" 2>&1 &
			on_cleanup_pid $!
		done
		for i in 1 2 3 4; do
			wait_file "$T_TMP/half$i.out" 10 && wait_file "$T_TMP/stream$i.out" 10 ||
				fail "$name/busy-relays-up" "half$i: $(cat "$T_TMP/half$i.out") stream$i: $(cat "$T_TMP/stream$i.out")"
		done
		expect_eq "$name/half-closed-up" "$(cat "$T_TMP"/half*.out | sort -u)" "half-closed" "clients"
		expect_eq "$name/mid-transfer-up" "$(cat "$T_TMP"/stream*.out | sort -u)" "streaming" "clients"
	else
		# Nothing moves for longer than a second before the stop: no completion arrives
		# while the drain waits, which is what fooled the old in-flight guard.
		sleep 1.5
	fi
	t0=$(now_ms)
	kill -TERM "$SPLICED_PID"
	wait_pid "$SPLICED_PID" 20
	rc=$?
	took=$(($(now_ms) - t0))
	echo "# $name: SIGTERM with $IDLE idle relays$([ "$busy" = 1 ] && echo ", 4 half-closed, 4 mid-transfer"): exit $rc after $took ms (drain-timeout $DRAIN_MS ms)"
	expect_eq "$name/sigterm-exit-0" "$rc" 0 "exit status"
	if [ "$took" -ge "$DRAIN_MS" ] && [ "$took" -le $((DRAIN_MS + 3000)) ]; then
		pass "$name/stop-after-drain-timeout"
	else
		fail "$name/stop-after-drain-timeout" "took $took ms; want drain-timeout ($DRAIN_MS ms) to at most 3 s more"
	fi
	# Every relay was cut at the deadline: the clients saw their connections end.
	hask "idle-$name" check
	case "$r" in
	"check alive 0 dead $IDLE"*) pass "$name/idle-closed" ;;
	*) fail "$name/idle-closed" "client: $r" ;;
	esac
	expect_clean_log "$name/no-in-flight-warning-no-sanitizer-report"
	grep -q 'stats: relay: ' "$SPLICED_LOG" && pass "$name/exit-stats-logged" ||
		fail "$name/exit-stats-logged" "no 'stats: relay:' line"
	hquit "idle-$name"
}

stop_case idle 0
stop_case busy 1
finish
