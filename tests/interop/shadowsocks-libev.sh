#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shadowsocks AEAD against Debian's shadowsocks-libev 3.3.5, both roles, every cipher it has in
# common with spliced (aes-128-gcm, aes-256-gcm, chacha20-ietf-poly1305,
# xchacha20-ietf-poly1305): ss-local -> spliced's server, and spliced's client -> ss-server;
# 64 MiB each way, byte for byte. ss-libev has no half-close (an EOF from either side closes
# both), so each transfer ends by byte count: the client's 64 MiB, then the target's 64 MiB,
# then the client closes. ss-local with a wrong password is refused by spliced's server.
T_NAME=interop/shadowsocks-libev
. "$(dirname "$0")/../lib.sh"
need_spliced
need ss-local ss-server

CIPHERS="aes-128-gcm aes-256-gcm chacha20-ietf-poly1305 xchacha20-ietf-poly1305"
. "$(dirname "$0")/lib/shadowsocks.sh"

declare -A LP
i=0
for m in $CIPHERS; do
	i=$((i + 1))
	SP[$m]=$(free_port) CP[$m]=$(free_port) LP[$m]=$(free_port) RP[$m]=$(free_port)
	PW[$m]="libev-$m-$RANDOM"
	ss_sections "$i" "$m"
	# ss-local: a SOCKS5 front to spliced's server; ss-server: where spliced's client goes
	ss-local -s 127.0.0.1 -p "${SP[$m]}" -b 127.0.0.1 -l "${LP[$m]}" -k "${PW[$m]}" -m "$m" \
		>"$T_TMP/ss-local-$i.log" 2>&1 &
	on_cleanup_pid $!
	ss-server -s 127.0.0.1 -p "${RP[$m]}" -k "${PW[$m]}" -m "$m" >"$T_TMP/ss-server-$i.log" 2>&1 &
	on_cleanup_pid $!
	T_LOGS+=("$T_TMP/ss-local-$i.log" "$T_TMP/ss-server-$i.log")
done
start_spliced "$srv" || { fail start-server "spliced did not start"; finish; }
SRV_PID=$SPLICED_PID SRV_LOG=$SPLICED_LOG
start_spliced "$cli" || { fail start-client "spliced did not start"; finish; }
CLI_PID=$SPLICED_PID
for m in $CIPHERS; do
	wait_port 127.0.0.1 "${LP[$m]}" 10 && wait_port 127.0.0.1 "${RP[$m]}" 10 ||
		{ fail "start/$m" "ss-local or ss-server did not start"; finish; }
done

for m in $CIPHERS; do
	ss_transfer "ss-local-to-spliced/$m" "${LP[$m]}"
	ss_transfer "spliced-to-ss-server/$m" "${CP[$m]}"
done

# ss-local with another password: spliced's server answers nothing, and nothing reaches a target.
BP=$(free_port)
ss-local -s 127.0.0.1 -p "${SP[aes-256-gcm]}" -b 127.0.0.1 -l "$BP" -k wrong-password -m aes-256-gcm \
	>"$T_TMP/ss-local-bad.log" 2>&1 &
on_cleanup_pid $!
wait_port 127.0.0.1 "$BP" 10
XFER_IN=/dev/null XFER_OUT=/dev/null
xfer_server B -- 127.0.0.1 0 --once
printf 'hello' >"$T_TMP/hello"
timeout 5 "$XFER" connect --no-half-close --socks5 127.0.0.1:"$BP" 127.0.0.1 "$B_PORT" <"$T_TMP/hello" \
	>"$T_TMP/bad.out" 2>"$T_TMP/bad.err"
expect_eq wrong-password/nothing-back "$(stat -c %s "$T_TMP/bad.out")" 0 "bytes back"
expect_eq wrong-password/target-untouched "$(grep -c '^PEER=' "$B_ERR")" 0 "connections to the target"

stop_spliced "$CLI_PID" >/dev/null
stop_spliced "$SRV_PID" >/dev/null
expect_counters server "$SRV_LOG" ss_bad_auth=1 ss_replays=0 resets=0
finish
