# SPDX-License-Identifier: MIT
# Shared by the Shadowsocks interop scripts (shadowsocks-libev.sh, v2ray-shadowsocks.sh), sourced
# after tests/lib.sh: the 64 MiB of test data, spliced's server and client sections per cipher,
# and the transfer both peers pass. (Not a test itself: scripts/test runs tests/interop/*.sh.)

N=$((64 << 20))
head -c "$N" /dev/urandom >"$T_TMP/up"
head -c "$N" /dev/urandom >"$T_TMP/down"

# Per cipher: SP spliced's server port, CP spliced's client (a SOCKS5 front), RP the peer's
# server that spliced's client goes to, PW the password. The caller fills them, then
# ss_sections appends to srv and cli.
declare -A SP CP RP PW
srv= cli=

# ss_sections I METHOD: spliced's server inbound sI and client inbound cI -> outbound oI.
ss_sections() {
	local i=$1 m=$2
	srv+="[inbound s$i]
type = shadowsocks
listen = 127.0.0.1:${SP[$m]}
method = $m
password = ${PW[$m]}
"
	cli+="[inbound c$i]
type = socks5
listen = 127.0.0.1:${CP[$m]}
outbound = o$i
[outbound o$i]
type = shadowsocks
server = 127.0.0.1:${RP[$m]}
method = $m
password = ${PW[$m]}
"
}

# ss_transfer NAME SOCKS-PORT: 64 MiB up, then 64 MiB down, through the SOCKS5 port. Neither
# peer half-closes (ss-libev closes both ways on an EOF from either side), so the transfer ends
# by byte count: the client's 64 MiB, then the target's 64 MiB, then the client closes.
ss_transfer() {
	local name=$1 port=$2 t0=$SECONDS rc
	XFER_IN=$T_TMP/down XFER_OUT=$T_TMP/got-up
	if ! xfer_server T -- 127.0.0.1 0 --once --no-half-close --after-eof --expect "$N"; then
		fail "$name" "target did not start"
		return
	fi
	timeout 120 "$XFER" connect --no-half-close --expect "$N" --socks5 127.0.0.1:"$port" 127.0.0.1 "$T_PORT" \
		<"$T_TMP/up" >"$T_TMP/got-down" 2>"$T_TMP/cli.err"
	rc=$?
	wait_pid "$T_PID" 10
	if [ $rc -eq 0 ] && cmp -s "$T_TMP/up" "$T_TMP/got-up" && cmp -s "$T_TMP/down" "$T_TMP/got-down"; then
		pass "$name"
		echo "# $name: 2 x 64 MiB in $((SECONDS - t0)) s"
	else
		fail "$name" "client exit $rc; up $(stat -c %s "$T_TMP/got-up") down $(stat -c %s "$T_TMP/got-down") bytes; $(tr '\n' ' ' <"$T_TMP/cli.err") target: $(tr '\n' ' ' <"$T_ERR")"
	fi
	XFER_IN=/dev/null XFER_OUT=/dev/null
}
