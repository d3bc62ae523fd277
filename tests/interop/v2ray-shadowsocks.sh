#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shadowsocks AEAD against Debian's v2ray 4.34, both roles, every cipher it has in common with
# spliced (aes-128-gcm, aes-256-gcm, chacha20-ietf-poly1305; it has no xchacha and no 2022):
# v2ray's shadowsocks outbound -> spliced's server, and spliced's client -> v2ray's shadowsocks
# inbound; 64 MiB each way, byte for byte (ended by byte count, as with ss-libev: the same
# transfer works for both peers).
T_NAME=interop/v2ray-shadowsocks
. "$(dirname "$0")/../lib.sh"
need_spliced
need v2ray

CIPHERS="aes-128-gcm aes-256-gcm chacha20-ietf-poly1305"
. "$(dirname "$0")/lib/shadowsocks.sh"

# One v2ray: per cipher a socks inbound whose shadowsocks outbound is spliced's server, and a
# shadowsocks inbound (for spliced's client) going out direct.
declare -A VP
vin= vout= vrules=
i=0
for m in $CIPHERS; do
	i=$((i + 1))
	SP[$m]=$(free_port) CP[$m]=$(free_port) VP[$m]=$(free_port) RP[$m]=$(free_port)
	PW[$m]="v2ray-$m-$RANDOM"
	ss_sections "$i" "$m"
	vin+="{\"tag\": \"socks$i\", \"listen\": \"127.0.0.1\", \"port\": ${VP[$m]}, \"protocol\": \"socks\", \"settings\": {\"udp\": false}},
	      {\"tag\": \"ss$i\", \"listen\": \"127.0.0.1\", \"port\": ${RP[$m]}, \"protocol\": \"shadowsocks\",
	       \"settings\": {\"method\": \"$m\", \"password\": \"${PW[$m]}\", \"network\": \"tcp\"}},"
	vout+="{\"tag\": \"to-spliced$i\", \"protocol\": \"shadowsocks\", \"settings\": {\"servers\": [
	         {\"address\": \"127.0.0.1\", \"port\": ${SP[$m]}, \"method\": \"$m\", \"password\": \"${PW[$m]}\"}]}},"
	vrules+="{\"type\": \"field\", \"inboundTag\": [\"socks$i\"], \"outboundTag\": \"to-spliced$i\"},
	         {\"type\": \"field\", \"inboundTag\": [\"ss$i\"], \"outboundTag\": \"direct\"},"
done
cat >"$T_TMP/v2ray.json" <<C
{
  "log": {"loglevel": "warning"},
  "inbounds": [${vin%,}],
  "outbounds": [${vout} {"tag": "direct", "protocol": "freedom"}],
  "routing": {"rules": [${vrules%,}]}
}
C
if ! out=$(v2ray -test -config "$T_TMP/v2ray.json" 2>&1); then
	fail v2ray-config "$(tail -n 3 <<<"$out")"
	finish
fi
v2ray -config "$T_TMP/v2ray.json" >"$T_TMP/v2ray.log" 2>&1 &
on_cleanup_pid $!
T_LOGS+=("$T_TMP/v2ray.log")
start_spliced "$srv" || { fail start-server "spliced did not start"; finish; }
SRV_PID=$SPLICED_PID SRV_LOG=$SPLICED_LOG
start_spliced "$cli" || { fail start-client "spliced did not start"; finish; }
CLI_PID=$SPLICED_PID
for m in $CIPHERS; do
	wait_port 127.0.0.1 "${VP[$m]}" 15 && wait_port 127.0.0.1 "${RP[$m]}" 15 ||
		{ fail "start/$m" "v2ray did not listen"; finish; }
done

for m in $CIPHERS; do
	ss_transfer "v2ray-to-spliced/$m" "${VP[$m]}"
	ss_transfer "spliced-to-v2ray/$m" "${CP[$m]}"
done

stop_spliced "$CLI_PID" >/dev/null
stop_spliced "$SRV_PID" >/dev/null
expect_counters server "$SRV_LOG" ss_bad_auth=0 ss_bad_format=0 resets=0
finish
