#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A WireGuard interface declared in spliced.ini ([wireguard NAME] config = FILE) next to a
# SOCKS5 inbound: --check validates the wg-quick file too; the interface comes up in-process,
# talks to a `spliced wg up` peer in another namespace (ping, a sha256-checked transfer through
# the SOCKS5 inbound over the tunnel), and SIGTERM removes it. [main] log-level governs the
# WireGuard code's messages as it does the relay's.
. "$(dirname "$0")/../lib.sh"
need ip wg python3 sha256sum
need_root wireguard-ini || { finish; }
. "$T_TOP/tests/wg-lib.sh"

wg_keypair KA
wg_keypair KB
NA="sia$$"; NA=${NA:0:15}
NB="sib$$"; NB=${NB:0:15}
cat >"$T_TMP/a.conf" <<C
[Interface]
PrivateKey = $KA_PRIV
ListenPort = 51830
Address = 10.78.0.1/24
# wg-quick's key, ignored by spliced with a warning
DNS = 10.78.0.53

[Peer]
PublicKey = $KB_PUB
AllowedIPs = 10.78.0.2/32
C
cat >"$T_TMP/b.conf" <<C
[Interface]
PrivateKey = $KB_PRIV
ListenPort = 51831
Address = 10.78.0.2/24

[Peer]
PublicKey = $KA_PUB
AllowedIPs = 10.78.0.0/24
Endpoint = 192.168.242.1:51830
PersistentKeepalive = 25
C
# relative path: resolved against the INI's directory
cat >"$T_TMP/a.ini" <<C
[main]
log-level = error

[inbound socks]
type = socks5
listen = 10.78.0.1:1080

[wireguard $NA]
config = a.conf
C

# --check parses the wg-quick file as well
printf '[Interface]\nPrivateKey = %s\n\n[Peer]\nPublicKey = nope\n' "$KA_PRIV" >"$T_TMP/bad.conf"
printf '[wireguard wgx]\nconfig = bad.conf\n' >"$T_TMP/bad.ini"
out=$("$SPLICED_BIN" --check -c "$T_TMP/bad.ini" 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q "bad.conf:5: PublicKey" <<<"$out"; then pass check/wg-file-line
else fail check/wg-file-line "rc=$rc out=$out"; fi
printf '[wireguard wgx]\n' >"$T_TMP/nokey.ini"
out=$("$SPLICED_BIN" --check -c "$T_TMP/nokey.ini" 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q "nokey.ini:1: \[wireguard wgx\]: missing key: config" <<<"$out"; then pass check/missing-config
else fail check/missing-config "rc=$rc out=$out"; fi
out=$("$SPLICED_BIN" --check -c "$T_TMP/a.ini" 2>&1); rc=$?
if [ $rc -eq 0 ]; then pass check/good; else fail check/good "rc=$rc out=$out"; fi
# log-level = error: the wg-quick file's warning (and the open inbound's) stay quiet; at
# log-level = warn they are printed.
if grep -q "warn:" <<<"$out"; then fail check/log-level-error-quiet "$out"; else pass check/log-level-error-quiet; fi
sed 's/^log-level = error/log-level = warn/' "$T_TMP/a.ini" >"$T_TMP/a-warn.ini"
out=$("$SPLICED_BIN" --check -c "$T_TMP/a-warn.ini" 2>&1)
if grep -q "a.conf:[0-9]*: DNS is ignored" <<<"$out"; then pass check/log-level-warn-prints
else fail check/log-level-warn-prints "$out"; fi

netns_new A || { fail setup/netns; finish; }
netns_new B || { fail setup/netns; finish; }
netns_veth "$A" 192.168.242.1/24 "$B" 192.168.242.2/24 || { fail setup/veth; finish; }

log=$T_TMP/spliced-ini.log
T_LOGS+=("$log")
ip netns exec "$A" "$SPLICED_BIN" -c "$T_TMP/a.ini" 2>"$log" &
SPID=$!
on_cleanup_pid "$SPID"
on_cleanup_file "/var/run/wireguard/$NA.sock"
if wg_wait_sock "$NA" 10 && kill -0 "$SPID" 2>/dev/null; then pass up/in-process
else fail up/in-process "$(tail -n 20 "$log")"; finish; fi
start_swg DB "$B" "$T_TMP/b.conf" "$NB" || { fail setup/spliced-b; finish; }

check ping/over-ini-interface ip netns exec "$B" ping -c 3 -i 0.2 -W 2 10.78.0.1

# SOCKS5 inbound listening on the tunnel address; a local target inside A
head -c 8388608 /dev/urandom >"$T_TMP/blob"
want=$(sha256sum <"$T_TMP/blob" | cut -d' ' -f1)
ip netns exec "$A" "$XFER" listen 127.0.0.1 18090 --once <"$T_TMP/blob" >/dev/null 2>"$T_TMP/tgt.log" &
on_cleanup_pid $!
for i in $(seq 50); do grep -q ':18090 ' <<<"$(ip netns exec "$A" ss -ltn)" && break; sleep 0.1; done
got=$(ip netns exec "$B" "$XFER" connect --socks5 10.78.0.1:1080 127.0.0.1 18090 </dev/null 2>"$T_TMP/cli.log" | sha256sum | cut -d' ' -f1)
expect_eq socks-over-tunnel/sha256 "$got" "$want"

kill -TERM "$SPID"
for i in $(seq 50); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$SPID" 2>/dev/null; then fail stop/sigterm "still running after 5 s"
else
	wait "$SPID"; rc=$?
	expect_eq stop/exit-0 "$rc" 0
	if ip -n "$A" link show "$NA" >/dev/null 2>&1; then fail stop/interface-removed; else pass stop/interface-removed; fi
fi
# The hosted device ran under log-level = error: none of its warnings (nor the relay's).
if grep -q "warn:" "$log"; then fail log-level/hosted-error-quiet "$(grep warn: "$log" | head -n 3)"
else pass log-level/hosted-error-quiet; fi
finish
