#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shadowsocks over TCP, spliced against itself and against tests/tools/sstool.py (an independent
# encoder/decoder from the specs: python3-cryptography, python3-nacl, b3sum): every AEAD and 2022
# method both ways through a spliced client and server; 2022 with two identity-header users;
# spliced's server checked by the Python client and spliced's client by the Python server; what
# must be refused (a wrong key, an unknown user, timestamps 32 s off, a request with neither
# payload nor padding) is refused without a byte back and counted; probe resistance: garbage of
# every length 1..600 gets nothing back and a FIN at handshake-timeout (2 s) +-10%, also after
# more garbage half-way; a replayed first flight is refused on the other worker (workers = 2,
# accept-steering = cpu, the two connections pinned with taskset).
. "$(dirname "$0")/../lib.sh"
need_spliced
need taskset b3sum
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
SSTOOL="$PY $T_TOP/tests/tools/sstool.py"
if ! $PY -c 'import cryptography, nacl' 2>/dev/null; then
	skip all "python3-cryptography and python3-nacl are not installed (scripts/deps installs them)"
	exit 0
fi

AEAD="aes-128-gcm aes-256-gcm chacha20-ietf-poly1305 xchacha20-ietf-poly1305"
V2022="2022-blake3-aes-128-gcm 2022-blake3-aes-256-gcm 2022-blake3-chacha20-poly1305"
psk() { head -c "$1" /dev/urandom | base64; }
klen() { case $1 in *aes-128*) echo 16 ;; *) echo 32 ;; esac; }

# The target: an echo server (every connection), which also counts what reaches it.
xfer_server E -- 127.0.0.1 0 --echo || { fail setup "echo server"; finish; }
EP=$E_PORT

# --- one server and one client, an inbound per method --------------------------------------
declare -A KEY SPORT CPORT
srv="[main]
workers = 2
"
cli="[main]
workers = 2
"
i=0
for m in $AEAD $V2022; do
	i=$((i + 1))
	case $m in 2022*) KEY[$m]=$(psk "$(klen "$m")") ;; *) KEY[$m]="pw-$m-$RANDOM" ;; esac
	SPORT[$m]=$(free_port) CPORT[$m]=$(free_port)
	srv+="[inbound s$i]
type = shadowsocks
listen = 127.0.0.1:${SPORT[$m]}
method = $m
password = ${KEY[$m]}
"
	cli+="[inbound c$i]
type = socks5
listen = 127.0.0.1:${CPORT[$m]}
outbound = o$i
[outbound o$i]
type = shadowsocks
server = 127.0.0.1:${SPORT[$m]}
method = $m
password = ${KEY[$m]}
"
done
# 2022 with identity headers: a server key, two users of a users file, a client each.
declare -A IPSK UPORT
for m in 2022-blake3-aes-128-gcm 2022-blake3-aes-256-gcm; do
	i=$((i + 1))
	n=$(klen "$m")
	IPSK[$m]=$(psk "$n")
	printf 'alice %s\nbob %s\n' "$(psk "$n")" "$(psk "$n")" >"$T_TMP/users-$n"
	chmod 600 "$T_TMP/users-$n"
	UPORT[$m]=$(free_port)
	srv+="[inbound u$i]
type = shadowsocks
listen = 127.0.0.1:${UPORT[$m]}
method = $m
password = ${IPSK[$m]}
users = $T_TMP/users-$n
"
	for who in alice bob; do
		p=$(free_port)
		CPORT[$m-$who]=$p
		cli+="[inbound $who$i]
type = socks5
listen = 127.0.0.1:$p
outbound = $who$i
[outbound $who$i]
type = shadowsocks
server = 127.0.0.1:${UPORT[$m]}
method = $m
password = ${IPSK[$m]}:$(awk -v u="$who" '$1 == u { print $2 }' "$T_TMP/users-$n")
"
	done
done
# An http inbound through Shadowsocks: CONNECT, and plain-HTTP requests (absolute form).
HP=$(free_port)
cli+="[inbound web]
type = http
listen = 127.0.0.1:$HP
outbound = o2
"
start_spliced "$srv" || { fail start-server "spliced did not start"; finish; }
SRV_PID=$SPLICED_PID SRV_LOG=$SPLICED_LOG SRV_CONF=$SPLICED_CONF
start_spliced "$cli" || { fail start-client "spliced did not start"; finish; }
CLI_PID=$SPLICED_PID CLI_LOG=$SPLICED_LOG CLI_CONF=$SPLICED_CONF

# echo_through NAME PORT BYTES: BYTES random bytes through the SOCKS5 port to the echo target
# and back, half-closed, byte for byte.
echo_through() {
	local name=$1 port=$2 n=$3 f=$T_TMP/in.${1//\//_}
	head -c "$n" /dev/urandom >"$f"
	if timeout 30 "$XFER" connect --socks5 127.0.0.1:"$port" 127.0.0.1 "$EP" <"$f" >"$f.out" 2>"$f.err" &&
		cmp -s "$f" "$f.out"; then
		pass "$name"
	else
		fail "$name" "$(stat -c %s "$f.out") of $n bytes back; $(tr '\n' ' ' <"$f.err")"
	fi
}

for m in $AEAD $V2022; do
	echo_through "spliced-pair/$m" "${CPORT[$m]}" $((8 << 20))
done
for m in 2022-blake3-aes-128-gcm 2022-blake3-aes-256-gcm; do
	for who in alice bob; do echo_through "spliced-pair/$m/eih-$who" "${CPORT[$m-$who]}" $((2 << 20)); done
done
# A server-first exchange: the target speaks first, the client only after; the request
# header goes out alone after its 100 ms wait (with random padding in 2022).
for m in aes-256-gcm 2022-blake3-aes-256-gcm; do
	head -c 100000 /dev/urandom >"$T_TMP/greet"
	XFER_IN=$T_TMP/greet XFER_OUT=/dev/null
	if xfer_server G -- 127.0.0.1 0 --once; then
		if timeout 20 "$XFER" connect --after-eof --socks5 127.0.0.1:"${CPORT[$m]}" 127.0.0.1 "$G_PORT" \
			</dev/null >"$T_TMP/greet.out" 2>"$T_TMP/greet.err" && cmp -s "$T_TMP/greet" "$T_TMP/greet.out"; then
			pass "server-first/$m"
		else
			fail "server-first/$m" "$(tr '\n' ' ' <"$T_TMP/greet.err")"
		fi
		wait_pid "$G_PID" 5
	fi
done
XFER_IN=/dev/null XFER_OUT=/dev/null

# A relay: a third spliced takes chacha20-ietf-poly1305 from a client and passes the stream on
# as 2022-blake3-aes-256-gcm to the server (both legs transform: one copy between the keys).
RP=$(free_port) RCP=$(free_port)
start_spliced "[inbound r]
type = shadowsocks
listen = 127.0.0.1:$RP
method = chacha20-ietf-poly1305
password = relay-pw
outbound = up
[outbound up]
type = shadowsocks
server = 127.0.0.1:${SPORT[2022-blake3-aes-256-gcm]}
method = 2022-blake3-aes-256-gcm
password = ${KEY[2022-blake3-aes-256-gcm]}" || fail relay/start "spliced did not start"
RELAY_PID=$SPLICED_PID
start_spliced "[inbound s]
type = socks5
listen = 127.0.0.1:$RCP
outbound = r
[outbound r]
type = shadowsocks
server = 127.0.0.1:$RP
method = chacha20-ietf-poly1305
password = relay-pw" || fail relay/start-client "spliced did not start"
RELAY_CLI=$SPLICED_PID
echo_through relay-chain "$RCP" $((8 << 20))
out=$($SSTOOL client 127.0.0.1 "$RP" -m chacha20-ietf-poly1305 -k relay-pw -t 127.0.0.1:"$EP" \
	--send-len 70000 --expect-echo 2>&1)
expect_eq relay-chain/early-payload "$out" "OK got 70000 bytes" "a first chunk's payload through the relay"
stop_spliced "$RELAY_CLI" >/dev/null
stop_spliced "$RELAY_PID" >/dev/null

# plain HTTP through an http inbound and a Shadowsocks outbound: sent rewritten as a tunnel
www_blob 3000000 || fail http/setup "http server"
curl_cmp http-absolute-form "$www/blob" "http://127.0.0.1:$H_PORT/blob" -x "http://127.0.0.1:$HP"
curl_cmp http-connect "$www/blob" "http://127.0.0.1:$H_PORT/blob" -x "http://127.0.0.1:$HP" --proxytunnel

# A user added to the users file works after SIGHUP, without a restart.
m=2022-blake3-aes-256-gcm
carol=$(psk 32)
echo "carol $carol" >>"$T_TMP/users-32"
if sighup_reload "$SRV_PID" "$SRV_LOG"; then pass users-reload/applied; else fail users-reload/applied "$(tail -n 3 "$SRV_LOG")"; fi
out=$($SSTOOL client 127.0.0.1 "${UPORT[$m]}" -m "$m" -k "${IPSK[$m]}:$carol" -t 127.0.0.1:"$EP" \
	--send-len 1000 --expect-echo 2>&1)
expect_eq users-reload/new-user "$out" "OK got 1000 bytes" "a user added to the users file, after SIGHUP"
# Whole-config reload: bob leaves the users file (his client is refused, alice's is not), and a
# Shadowsocks inbound and the client's outbound to it are added, each by a SIGHUP.
sed -i '/^bob /d' "$T_TMP/users-32"
NP=$(free_port) NCP=$(free_port)
printf '[inbound n]\ntype = shadowsocks\nlisten = 127.0.0.1:%s\nmethod = xchacha20-ietf-poly1305\npassword = new-pw\n' \
	"$NP" >>"$SRV_CONF"
if sighup_reload "$SRV_PID" "$SRV_LOG"; then pass reload/server-applied; else fail reload/server-applied "$(tail -n 3 "$SRV_LOG")"; fi
printf '[inbound nc]\ntype = socks5\nlisten = 127.0.0.1:%s\noutbound = nc\n[outbound nc]\ntype = shadowsocks\nserver = 127.0.0.1:%s\nmethod = xchacha20-ietf-poly1305\npassword = new-pw\n' \
	"$NCP" "$NP" >>"$CLI_CONF"
if sighup_reload "$CLI_PID" "$CLI_LOG"; then pass reload/client-applied; else fail reload/client-applied "$(tail -n 3 "$CLI_LOG")"; fi
echo_through reload/added-pair "$NCP" $((2 << 20))
echo_through reload/kept-user "${CPORT[$m-alice]}" 100000
f=$T_TMP/bob.out
echo hi | timeout 10 "$XFER" connect --socks5 127.0.0.1:"${CPORT[$m-bob]}" 127.0.0.1 "$EP" >"$f" 2>/dev/null
expect_eq reload/removed-user-refused "$(cat "$f")" "" "bytes echoed to a user no longer in the file"
echo "# spliced pair: $((SECONDS - T_START)) s"
# --- the independent encoder/decoder -------------------------------------------------------
for m in $AEAD $V2022; do
	out=$($SSTOOL client 127.0.0.1 "${SPORT[$m]}" -m "$m" -k "${KEY[$m]}" -t 127.0.0.1:"$EP" \
		--send-len 1,300000 --expect-echo --timeout 10 2>&1)
	expect_eq "sstool-client/$m" "$(tr '\n' ' ' <<<"$out")" "OK got 1 bytes OK got 300000 bytes " \
		"sstool.py client against spliced's server"
done
# the address in 1-byte chunks, as a client may split it (AEAD)
out=$($SSTOOL client 127.0.0.1 "${SPORT[aes-256-gcm]}" -m aes-256-gcm -k "${KEY[aes-256-gcm]}" \
	-t 127.0.0.1:"$EP" --send-len 1000 --expect-echo --addr-chunk 1 --timeout 10 2>&1)
expect_eq sstool-client/address-split "$out" "OK got 1000 bytes" "the address in 1-byte chunks"
# 2022: a first flight with no payload but padding is fine (the payload follows)
out=$($SSTOOL client 127.0.0.1 "${SPORT[2022-blake3-aes-128-gcm]}" -m 2022-blake3-aes-128-gcm \
	-k "${KEY[2022-blake3-aes-128-gcm]}" -t 127.0.0.1:"$EP" --send-len 5000 --empty-first --expect-echo 2>&1)
expect_eq sstool-client/padding-only-first "$out" "OK got 5000 bytes" "a padded first flight without payload"
for m in 2022-blake3-aes-128-gcm 2022-blake3-aes-256-gcm; do
	n=$(klen "$m")
	u=$(awk '$1 == "alice" { print $2 }' "$T_TMP/users-$n") # bob left in the reload case
	out=$($SSTOOL client 127.0.0.1 "${UPORT[$m]}" -m "$m" -k "${IPSK[$m]}:$u" -t 127.0.0.1:"$EP" \
		--send-len 70000 --expect-echo 2>&1)
	expect_eq "sstool-client/$m/eih" "$out" "OK got 70000 bytes" "an identity-header user"
done

echo "# sstool client: $((SECONDS - T_START)) s"
# spliced's client against the Python server, each method: a server each, one spliced client
cfg=
declare -A PYPID TGT
i=0
for m in $AEAD $V2022; do
	i=$((i + 1))
	TGT[$m]=127.0.0.1:$(free_port) sp=$(free_port)
	CPORT[py-$m]=$(free_port)
	cfg+="[inbound p$i]
type = socks5
listen = 127.0.0.1:${CPORT[py-$m]}
outbound = o$i
[outbound o$i]
type = shadowsocks
server = 127.0.0.1:$sp
method = $m
password = ${KEY[$m]}
"
	$SSTOOL server 127.0.0.1 "$sp" -m "$m" -k "${KEY[$m]}" -t "${TGT[$m]}" --timeout 30 \
		--port-file "$T_TMP/pys.$i.port" >"$T_TMP/pys.$i.out" 2>&1 &
	PYPID[$m]=$!
	on_cleanup_pid $!
done
for i in $(seq "$i"); do wait_file "$T_TMP/pys.$i.port" 20; done
start_spliced "$cfg" || fail sstool-server/start "spliced did not start"
head -c 1000000 /dev/urandom >"$T_TMP/pyin"
i=0
for m in $AEAD $V2022; do
	i=$((i + 1))
	timeout 30 "$XFER" connect --socks5 127.0.0.1:"${CPORT[py-$m]}" "${TGT[$m]%:*}" "${TGT[$m]#*:}" \
		<"$T_TMP/pyin" >"$T_TMP/pyout.$i" 2>"$T_TMP/pyerr.$i" &
done
sleep 0.1
i=0
for m in $AEAD $V2022; do
	i=$((i + 1))
	wait_pid "${PYPID[$m]}" 30
	for _ in $(seq 50); do [ "$(stat -c %s "$T_TMP/pyout.$i" 2>/dev/null)" = 1000000 ] && break; sleep 0.1; done
	if cmp -s "$T_TMP/pyin" "$T_TMP/pyout.$i" && grep -q "^OK echoed 1000000 bytes target ${TGT[$m]}" "$T_TMP/pys.$i.out"; then
		pass "sstool-server/$m"
	else
		fail "sstool-server/$m" "python: $(cat "$T_TMP/pys.$i.out"); xfer: $(tr '\n' ' ' <"$T_TMP/pyerr.$i")"
	fi
done
stop_spliced >/dev/null
echo "# sstool server: $((SECONDS - T_START)) s"
# --- refusals: no byte back, counted, nothing reaches the target --------------------------
before=$(grep -c '^PEER=' "$E_ERR")
# all at once: each waits 1.5 s for the answer that must not come
REFUSING=()
refused() { # NAME SSTOOL-ARGS...
	local name=$1
	shift
	$SSTOOL client 127.0.0.1 "$@" -t 127.0.0.1:"$EP" --send-len 100 --timeout 1.5 >"$T_TMP/refused.$name" 2>&1 &
	REFUSING+=($!)
}
refused wrong-password "${SPORT[aes-128-gcm]}" -m aes-128-gcm -k not-the-password
refused wrong-psk "${SPORT[2022-blake3-aes-256-gcm]}" -m 2022-blake3-aes-256-gcm -k "$(psk 32)"
refused unknown-user "${UPORT[2022-blake3-aes-256-gcm]}" -m 2022-blake3-aes-256-gcm -k "${IPSK[2022-blake3-aes-256-gcm]}:$(psk 32)"
# (32, not 31: whole seconds on both sides, and the request may cross a second on its way;
# tests/unit/test_shadowsocks.c checks 30 and 31 exactly, with a fixed clock)
refused time-minus-32 "${SPORT[2022-blake3-aes-128-gcm]}" -m 2022-blake3-aes-128-gcm -k "${KEY[2022-blake3-aes-128-gcm]}" --ts-offset -32
refused time-plus-32 "${SPORT[2022-blake3-chacha20-poly1305]}" -m 2022-blake3-chacha20-poly1305 -k "${KEY[2022-blake3-chacha20-poly1305]}" --ts-offset 32
refused no-payload-no-padding "${SPORT[2022-blake3-aes-256-gcm]}" -m 2022-blake3-aes-256-gcm -k "${KEY[2022-blake3-aes-256-gcm]}" --empty-first --pad 0
for p in "${REFUSING[@]}"; do wait_pid "$p" 20; done
for name in wrong-password wrong-psk unknown-user time-minus-32 time-plus-32 no-payload-no-padding; do
	out=$(cat "$T_TMP/refused.$name")
	if [[ $out == NO-RESPONSE* ]]; then pass "refused/$name"; else fail "refused/$name" "$out"; fi
done
out=$($SSTOOL client 127.0.0.1 "${SPORT[2022-blake3-aes-128-gcm]}" -m 2022-blake3-aes-128-gcm -k "${KEY[2022-blake3-aes-128-gcm]}" \
	-t 127.0.0.1:"$EP" --send-len 100 --ts-offset -28 --expect-echo 2>&1)
expect_eq accepted/time-minus-28 "$out" "OK got 100 bytes" "a timestamp 28 s off"
expect_eq refused/none-reached-the-target "$(($(grep -c '^PEER=' "$E_ERR") - before))" 1 "target connections during the refusals (only the -28 s one)"

stop_spliced "$CLI_PID" >/dev/null
stop_spliced "$SRV_PID" >/dev/null
expect_counters server "$SRV_LOG" ss_bad_auth=2 ss_bad_user=2 ss_bad_time=2 ss_bad_format=1 ss_replays=0 resets=0

echo "# refusals: $((SECONDS - T_START)) s"
# --- probe resistance ------------------------------------------------------------------------
PA=$(free_port) PB=$(free_port)
start_spliced "[main]
handshake-timeout = 2s
[inbound a]
type = shadowsocks
listen = 127.0.0.1:$PA
method = chacha20-ietf-poly1305
password = probe-me
[inbound b]
type = shadowsocks
listen = 127.0.0.1:$PB
method = 2022-blake3-aes-128-gcm
password = $(psk 16)" || { fail probe-start "spliced did not start"; finish; }
for p in "$PA:aead" "$PB:2022"; do
	out=$($SSTOOL probe 127.0.0.1 "${p%:*}" --lengths 1-600 --timeout 2 2>&1)
	echo "# ${p#*:}: $(head -n 1 <<<"$out")"
	if [[ $out == "PROBE 600 connections, 0 bad"* ]]; then pass "probe/${p#*:}"; else fail "probe/${p#*:}" "$(tr '\n' '|' <<<"$out")"; fi
done
stop_spliced >/dev/null
expect_counters probe "$SPLICED_LOG" ss_drained=1200 connect_failed=0 bytes_up=0

echo "# probes: $((SECONDS - T_START)) s"
# --- a replay lands on the other worker ------------------------------------------------------
RA=$(free_port) RB=$(free_port)
K22=$(psk 32)
start_spliced "[main]
workers = 2
accept-steering = cpu
handshake-timeout = 2s
[inbound a]
type = shadowsocks
listen = 127.0.0.1:$RA
method = aes-256-gcm
password = replay-me
[inbound b]
type = shadowsocks
listen = 127.0.0.1:$RB
method = 2022-blake3-aes-256-gcm
password = $K22" || { fail replay-start "spliced did not start"; finish; }
before=$(grep -c '^PEER=' "$E_ERR")
for spec in "$RA:aes-256-gcm:replay-me" "$RB:2022-blake3-aes-256-gcm:$K22"; do
	IFS=: read -r port m key <<<"$spec"
	for cpus in "0 1" "1 0"; do
		read -r c1 c2 <<<"$cpus"
		out=$(taskset -c "$c1" $SSTOOL client 127.0.0.1 "$port" -m "$m" -k "$key" -t 127.0.0.1:"$EP" \
			--send-len 100 --expect-echo --save "$T_TMP/flight" 2>&1)
		again=$(taskset -c "$c2" $SSTOOL flight 127.0.0.1 "$port" --replay "$T_TMP/flight" --timeout 1 2>&1)
		if [ "$out" = "OK got 100 bytes" ] && [[ $again == NO-RESPONSE* ]]; then
			pass "replay/$m/cpu$c1-then-cpu$c2"
		else
			fail "replay/$m/cpu$c1-then-cpu$c2" "first: $out; replay: $again"
		fi
	done
done
expect_eq replay/none-reached-the-target "$(($(grep -c '^PEER=' "$E_ERR") - before))" 4 "target connections (4 first flights, 0 replays)"
stop_spliced >/dev/null
expect_counters replay "$SPLICED_LOG" ss_replays=4 ss_bad_auth=0
per=$(sed -n 's/.*accepted per worker: //p' "$SPLICED_LOG" | tail -n 1)
read -r w0 w1 <<<"$per"
if [ "${w0:-0}" -ge 4 ] && [ "${w1:-0}" -ge 4 ]; then pass replay/both-workers; else fail replay/both-workers "accepted per worker: $per (want 4 each, +1 readiness probe)"; fi
finish
