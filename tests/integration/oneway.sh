#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An error in one direction keeps the other direction's bytes: a server that answers and then resets an upload still has its whole answer reach a slow client, through the socks5 and the http inbound.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3
need_root || finish
use_asan_spliced

ANSWER=$((256 * 1024))

# server PORTFILE: per connection, read 64 KiB of the upload, send ANSWER bytes of a
# pattern, wait until the relay has acknowledged all of them (they fit its pipe and
# socket buffers), then close with the rest of the upload unread: the kernel resets
# the connection under the upload. Every answer byte is then in the relay's hands.
# client MODE PROXY TARGET-PORT: SOCKS5 or HTTP CONNECT, then upload without end while
# reading slowly; prints "got N sha256 (how it ended)".
cat >"$T_TMP/peer.py" <<PY
import fcntl, hashlib, socket, struct, sys, termios, threading, time
N = $ANSWER
answer = bytes((i * 7 + 3) & 0xff for i in range(N))

def server(portfile):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    open(portfile, "w").write(str(s.getsockname()[1]))
    while True:
        c, _ = s.accept()
        got = 0
        while got < 65536:
            b = c.recv(65536 - got)
            if not b:
                break
            got += len(b)
        c.sendall(answer)
        until = time.time() + 5
        while time.time() < until:
            left = struct.unpack("i", fcntl.ioctl(c, termios.TIOCOUTQ, b"\0\0\0\0"))[0]
            if left == 0:
                break
            time.sleep(0.01)
        c.close()

def client(mode, proxy, port):
    h, p = proxy.rsplit(":", 1)
    s = socket.create_connection((h, int(p)))
    if mode == "socks5":
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", int(port)))
        assert s.recv(10)[:2] == b"\x05\x00"
    else:
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % int(port))
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += s.recv(1)
        assert head.startswith(b"HTTP/1.1 200"), head
    def upload():
        chunk = b"u" * 65536
        try:
            while True:
                s.send(chunk)
        except OSError:
            pass
    threading.Thread(target=upload, daemon=True).start()
    # A slow reader: 4 KiB every 5 ms, so the answer queues up in the relay, yet the
    # receive window keeps reopening by whole segments.
    got = b""
    end = "eof"
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
            time.sleep(0.005)
    except OSError as e:
        end = e.strerror
    print("got %d %s (%s)" % (len(got), hashlib.sha256(got).hexdigest()[:16], end))

if sys.argv[1] == "server":
    server(sys.argv[2])
else:
    client(sys.argv[1], sys.argv[2], sys.argv[3])
PY
# In a namespace whose loopback has an Ethernet MTU: with loopback's 64 KiB segments a
# 16 KiB receive buffer would never reopen its window by a whole segment (the silly-window
# rule), and the client could not read at all.
netns_new NS || { fail setup "netns"; finish; }
ip -n "$NS" link set lo mtu 1500
ip netns exec "$NS" python3 "$T_TMP/peer.py" server "$T_TMP/server.port" &
on_cleanup_pid $!
wait_file "$T_TMP/server.port" 10 || { fail setup "server did not start"; finish; }
EP=$(cat "$T_TMP/server.port")
want_sha=$(python3 -c "import hashlib; print(hashlib.sha256(bytes((i * 7 + 3) & 0xff for i in range($ANSWER))).hexdigest()[:16])")

SP=$(free_port)
HP=$(free_port)
SPLICED_NETNS=$NS start_spliced "[main]
workers = 2
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP
[inbound web]
type = http
listen = 127.0.0.1:$HP" || { fail setup "spliced did not start"; finish; }

for i in 1 2 3; do
	for mode in socks5 http; do
		proxy=127.0.0.1:$SP
		[ $mode = http ] && proxy=127.0.0.1:$HP
		out=$(timeout 20 ip netns exec "$NS" python3 "$T_TMP/peer.py" $mode "$proxy" "$EP" 2>&1)
		case "$out" in
		"got $ANSWER $want_sha "*) pass "$mode-$i-whole-answer" ;;
		*) fail "$mode-$i-whole-answer" "want 'got $ANSWER $want_sha', $out" ;;
		esac
	done
done
stop_spliced
grep -q 'resets=[1-9]' "$SPLICED_LOG" && pass counted-as-resets ||
	fail counted-as-resets "no resets counted: $(grep 'stats: relay' "$SPLICED_LOG")"
expect_clean_log no-sanitizer-report
finish
