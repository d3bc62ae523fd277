# SPDX-License-Identifier: MIT
# Half-close through spliced: either side may shutdown(SHUT_WR) first and the other direction
# still delivers every byte (socks5, http and forward inbounds, and a spliced client and server
# speaking Shadowsocks 2022 between them).
. "$(dirname "$0")/../lib.sh"
need_spliced

req=$T_TMP/request
rep=$T_TMP/reply
head -c 300000 /dev/urandom >"$req"
head -c $((8 * 1024 * 1024)) /dev/urandom >"$rep"
req_sha=$(sha "$req")
rep_sha=$(sha "$rep")

TPORT=$(free_port)
PS=$(free_port)
PH=$(free_port)
PF=$(free_port)
start_spliced "
[main]
workers = 2
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
[inbound h]
type = http
listen = 127.0.0.1:$PH
[inbound f]
type = forward
listen = 127.0.0.1:$PF
target = 127.0.0.1:$TPORT
" || { fail start "spliced did not start"; finish; }
# A Shadowsocks pair: a socks5 front whose outbound is a spliced Shadowsocks server.
PSS=$(free_port) PSC=$(free_port)
key=$(head -c 32 /dev/urandom | base64)
start_spliced "
[inbound ss]
type = shadowsocks
listen = 127.0.0.1:$PSS
method = 2022-blake3-aes-256-gcm
password = $key
" || { fail start-ss-server "spliced did not start"; finish; }
start_spliced "
[inbound s]
type = socks5
listen = 127.0.0.1:$PSC
outbound = ss
[outbound ss]
type = shadowsocks
server = 127.0.0.1:$PSS
method = 2022-blake3-aes-256-gcm
password = $key
" || { fail start-ss-client "spliced did not start"; finish; }

# via INBOUND: the xfer connect arguments for that inbound to reach 127.0.0.1:TPORT.
via() {
	case $1 in
	socks5) echo "--socks5 127.0.0.1:$PS 127.0.0.1 $TPORT" ;;
	http) echo "--http 127.0.0.1:$PH 127.0.0.1 $TPORT" ;;
	forward) echo "127.0.0.1 $PF" ;;
	shadowsocks) echo "--socks5 127.0.0.1:$PSC 127.0.0.1 $TPORT" ;;
	esac
}

for inb in socks5 http forward shadowsocks; do
	# 1. The client sends its request and shuts down writing; the target reads to EOF and
	# only then sends its reply (--after-eof), which must arrive whole.
	name=$inb-client-shuts-first
	XFER_IN=$rep XFER_OUT=$T_TMP/srv.out
	if xfer_server S -- 127.0.0.1 "$TPORT" --once --after-eof; then
		# shellcheck disable=SC2046
		timeout 30 "$XFER" connect $(via $inb) <"$req" >"$T_TMP/cli.out" 2>"$T_TMP/cli.err"
		crc=$?
		wait_pid "$S_PID" 10
		src=$?
		got_req=$(sha "$T_TMP/srv.out")
		got_rep=$(sha "$T_TMP/cli.out")
		if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ "$got_req" = "$req_sha" ] && [ "$got_rep" = "$rep_sha" ]; then
			pass "$name"
		else
			fail "$name" "client exit $crc, target exit $src; request $(stat -c %s "$T_TMP/srv.out")/300000 bytes ok=$([ "$got_req" = "$req_sha" ] && echo y || echo n), reply $(stat -c %s "$T_TMP/cli.out")/$((8 << 20)) ok=$([ "$got_rep" = "$rep_sha" ] && echo y || echo n); client: $(tr '\n' ' ' <"$T_TMP/cli.err") target: $(tr '\n' ' ' <"$S_ERR")"
		fi
	else
		fail "$name" "target did not start"
	fi

	# 2. The reverse: the target sends a greeting and shuts down writing first; the client
	# reads to EOF, then uploads; the target must receive the whole upload.
	name=$inb-target-shuts-first
	XFER_IN=$req XFER_OUT=$T_TMP/srv.out
	if xfer_server S -- 127.0.0.1 "$TPORT" --once; then
		# shellcheck disable=SC2046
		timeout 30 "$XFER" connect --after-eof $(via $inb) <"$rep" >"$T_TMP/cli.out" 2>"$T_TMP/cli.err"
		crc=$?
		wait_pid "$S_PID" 10
		src=$?
		got_req=$(sha "$T_TMP/cli.out")
		got_rep=$(sha "$T_TMP/srv.out")
		if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ "$got_req" = "$req_sha" ] && [ "$got_rep" = "$rep_sha" ]; then
			pass "$name"
		else
			fail "$name" "client exit $crc, target exit $src; greeting ok=$([ "$got_req" = "$req_sha" ] && echo y || echo n), upload $(stat -c %s "$T_TMP/srv.out")/$((8 << 20)) ok=$([ "$got_rep" = "$rep_sha" ] && echo y || echo n); client: $(tr '\n' ' ' <"$T_TMP/cli.err") target: $(tr '\n' ' ' <"$S_ERR")"
		fi
	else
		fail "$name" "target did not start"
	fi
done
XFER_IN=/dev/null XFER_OUT=/dev/null
finish
