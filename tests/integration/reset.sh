# SPDX-License-Identifier: MIT
# Resets cross spliced: a target RST reaches the client as ECONNRESET (not a clean EOF), and a
# client RST makes spliced drop the target leg promptly (socks5 and forward inbounds, and a
# spliced client and server speaking Shadowsocks AEAD between them); a client that resets while
# its CONNECT is in flight costs nothing once the reply fails to send.
. "$(dirname "$0")/../lib.sh"
need_spliced
PROBE=${PROBE:-$T_BUILD/tests/tools/probe}
need "$PROBE"

TPORT=$(free_port)
PS=$(free_port)
PF=$(free_port)
start_spliced "
[main]
workers = 2
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
[inbound f]
type = forward
listen = 127.0.0.1:$PF
target = 127.0.0.1:$TPORT
" || { fail start "spliced did not start"; finish; }
MAIN_PID=$SPLICED_PID
# A Shadowsocks pair: a socks5 front whose outbound is a spliced Shadowsocks server.
PSS=$(free_port) PSC=$(free_port)
start_spliced "
[inbound ss]
type = shadowsocks
listen = 127.0.0.1:$PSS
method = aes-256-gcm
password = reset-pair
" || { fail start-ss-server "spliced did not start"; finish; }
SS_SRV_PID=$SPLICED_PID
start_spliced "
[inbound s]
type = socks5
listen = 127.0.0.1:$PSC
outbound = ss
[outbound ss]
type = shadowsocks
server = 127.0.0.1:$PSS
method = aes-256-gcm
password = reset-pair
" || { fail start-ss-client "spliced did not start"; finish; }
SS_CLI_PID=$SPLICED_PID
SPLICED_PID=$MAIN_PID

via() {
	case $1 in
	socks5) echo "--socks5 127.0.0.1:$PS 127.0.0.1 $TPORT" ;;
	forward) echo "127.0.0.1 $PF" ;;
	shadowsocks) echo "--socks5 127.0.0.1:$PSC 127.0.0.1 $TPORT" ;;
	esac
}

# client_resets INBOUND CASE LIMIT_MS: the client reads 5 bytes through INBOUND and resets
# while the target (which never half-closes) sends XFER_IN; the target must see a reset or an
# EOF within LIMIT_MS of the client's reset.
client_resets() {
	local inb=$1 name="$1-$2" limit=$3 o rc src t0 ms
	xfer_server S -- 127.0.0.1 "$TPORT" --once --no-half-close || return 0
	# shellcheck disable=SC2046
	o=$(timeout 10 "$XFER" connect --no-half-close --reset-after 5 $(via "$inb") </dev/null 2>&1 >/dev/null)
	rc=$?
	t0=$(date +%s%N)
	wait_pid "$S_PID" 5
	src=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	if [ $rc -ne 0 ] || ! grep -q 'END=reset-sent' <<<"$o"; then
		fail "$name" "client did not get to reset: exit $rc: $(tr '\n' ' ' <<<"$o")"
	elif [ $src -eq 124 ]; then
		fail "$name" "target still connected 5 s after the client reset"
	elif ! grep -q 'END=reset\|END=eof' "$S_ERR"; then
		fail "$name" "target exit $src: $(tr '\n' ' ' <"$S_ERR")"
	elif [ "$ms" -ge "$limit" ]; then
		fail "$name" "target leg closed ${ms} ms after the client's reset (want < $limit)"
	else
		pass "$name"
		echo "# $inb: target leg closed ${ms} ms after the client's reset ($(grep -o 'END=[a-z-]*' "$S_ERR"))"
	fi
}

hello=$T_TMP/hello
printf 'hello' >"$hello"
big=$T_TMP/big
head -c $((4 * 1024 * 1024)) /dev/urandom >"$big"
huge=$T_TMP/huge
head -c $((16 * 1024 * 1024)) /dev/urandom >"$huge"

# A control run without spliced: the same tools must see the reset directly, otherwise the
# checks below would prove nothing.
XFER_IN=/dev/null
if xfer_server S -- 127.0.0.1 "$TPORT" --once --no-half-close --reset-after 5; then
	o=$(timeout 10 "$XFER" connect --no-half-close 127.0.0.1 "$TPORT" <"$hello" 2>&1)
	rc=$?
	if [ $rc -eq 3 ] && grep -q 'END=reset' <<<"$o"; then pass control-direct-reset
	else fail control-direct-reset "exit $rc: $(tr '\n' ' ' <<<"$o")"; fi
fi

for inb in socks5 forward shadowsocks; do
	# 1. The target reads 5 bytes and aborts (SO_LINGER 0): the client must get ECONNRESET.
	# Neither side half-closes, so a FIN cannot be mistaken for the reset.
	XFER_IN=/dev/null
	if xfer_server S -- 127.0.0.1 "$TPORT" --once --no-half-close --reset-after 5; then
		# shellcheck disable=SC2046
		o=$(timeout 10 "$XFER" connect --no-half-close $(via $inb) <"$hello" 2>&1)
		rc=$?
		if [ $rc -eq 3 ] && grep -q 'END=reset' <<<"$o"; then
			pass "$inb-target-reset-reaches-client"
		else
			fail "$inb-target-reset-reaches-client" "client exit $rc (want 3, END=reset): $(tr '\n' ' ' <<<"$o")"
		fi
		wait_pid "$S_PID" 5
	fi

	# 2. The same while the target streams 4 MiB at the client, so bytes are in flight in
	# spliced's pipes and socket buffers when the reset arrives: still a reset, not an EOF.
	XFER_IN=$big
	if xfer_server S -- 127.0.0.1 "$TPORT" --once --no-half-close --reset-after 5; then
		# shellcheck disable=SC2046
		o=$(timeout 10 "$XFER" connect --no-half-close $(via $inb) <"$hello" 2>&1 >/dev/null)
		rc=$?
		if [ $rc -eq 3 ] && grep -q 'END=reset' <<<"$o"; then
			pass "$inb-target-reset-while-streaming"
		else
			fail "$inb-target-reset-while-streaming" "client exit $rc (want 3, END=reset): $(tr '\n' ' ' <<<"$o")"
		fi
		wait_pid "$S_PID" 5
	fi

	# 3. The client reads 5 bytes and aborts: the target (which never half-closes and has
	# more to say) must see a reset or EOF within 3 s.
	XFER_IN=$hello
	client_resets "$inb" client-reset-closes-target 3000

	# 3b. The same while the target streams 16 MiB, so spliced holds bytes for the client that
	# the client never acknowledges: the reset must still be passed on at once. Those bytes
	# count in SIOCOUTQ even after the reset; when that was taken for "still delivering", the
	# target leg stayed open for the whole 2 s linger time.
	XFER_IN=$huge
	client_resets "$inb" client-abort-download-prompt 1000
done
XFER_IN=/dev/null
stop_spliced "$SS_CLI_PID" >/dev/null
stop_spliced "$SS_SRV_PID" >/dev/null

# 4. The client resets while spliced is still connecting, so the CONNECT reply (sent through
# io_uring, linked to the poll of the target leg) fails. The target is a listener whose
# accept queue a blocker fills (backlog 0), so spliced's SYN is dropped until the listener
# accepts the blocker at 0.5 s and the retransmitted SYN (1 s) gets through. Wanted: the
# failure is seen (debug log), the slot and both sockets are released, and spliced still
# stops at once on SIGTERM (the failed send must not leave an op counted as in flight).
# Without IOSQE_CQE_SKIP_SUCCESS (the epoll backend, kernel profiles before 5.17) the reply
# is a plain send(2) instead, and its failure is logged as "early write failed".
failed_reply='reply not sent'
if [ "${SPLICED_BACKEND:-}" = epoll ] || [[ ${SPLICED_KERNEL_PROFILE:-} == 5.1[05] ]]; then
	failed_reply='early write failed'
fi
stop_spliced
SLOW=$(free_port)
python3 -c '
import socket, sys, time
port = int(sys.argv[1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(0)
blocker = socket.create_connection(("127.0.0.1", port))
print("ready", flush=True)
time.sleep(0.5)
held = [s.accept(), s.accept()]
time.sleep(8)
' "$SLOW" >"$T_TMP/slow.out" 2>&1 &
SLOW_PID=$!
on_cleanup_pid $SLOW_PID
for _ in $(seq 50); do grep -q ready "$T_TMP/slow.out" && break; sleep 0.1; done
# Under ASan when it is built: the failure path frees the connection with a send just failed.
use_asan_spliced
start_spliced "
[main]
log-level = debug
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
" || { fail start-debug "spliced did not start"; finish; }
base=$(fd_count "$SPLICED_PID")
o=$("$PROBE" 127.0.0.1:"$PS" -x 050100 -d 100 -x "050100017f000001$(printf '%04x' "$SLOW")" -r 2>&1)
ok=0
for _ in $(seq 40); do
	grep -q "$failed_reply" "$SPLICED_LOG" && { ok=1; break; }
	sleep 0.1
done
if [[ $o != *end=rst-sent* ]]; then
	fail client-reset-during-connect "probe: $o"
elif [ $ok = 1 ]; then
	pass client-reset-during-connect
	echo "# $(grep -m1 "$failed_reply" "$SPLICED_LOG")"
else
	fail client-reset-during-connect "no failed reply in the log 4 s later: $(grep -v 'listening\|started' "$SPLICED_LOG" | tr '\n' ' ')"
fi
ok=0
for _ in $(seq 30); do
	[ "$(fd_count "$SPLICED_PID")" -le "$base" ] && { ok=1; break; }
	sleep 0.1
done
expect_eq client-reset-during-connect-fds-freed "$ok" 1 "open files back to $base (now $(fd_kinds "$SPLICED_PID"))"
t0=$(date +%s%N)
stop_spliced
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ $rc -eq 0 ] && [ $ms -lt 3000 ]; then pass client-reset-during-connect-prompt-stop
else fail client-reset-during-connect-prompt-stop "SIGTERM to exit: ${ms} ms, status $rc"; fi
expect_clean_log client-reset-during-connect-clean-log
kill "$SLOW_PID" 2>/dev/null
finish
