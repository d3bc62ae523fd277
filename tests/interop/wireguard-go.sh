#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# spliced's userspace WireGuard against Debian's wireguard-go, in both roles: spliced initiates,
# then wireguard-go initiates. Ping, iperf3 both ways, byte-exact transfers both ways, wg show.
. "$(dirname "$0")/../lib.sh"
T_NAME=interop/wireguard-go
need ip wg wireguard-go iperf3 python3 sha256sum ping
need_root wireguard-go || { finish; }
. "$T_TOP/tests/wg-lib.sh"
if ! "$SPLICED_BIN" wg --help >/dev/null 2>&1; then
	fail cli/wg-help "$SPLICED_BIN has no 'wg' command"
	finish
fi

netns_new S || { fail setup/netns; finish; }   # spliced
netns_new G || { fail setup/netns; finish; }   # wireguard-go
netns_veth "$S" 192.168.242.1/24 "$G" 192.168.242.2/24 || { fail setup/veth; finish; }
head -c 32M /dev/urandom >"$T_TMP/blob"

# run_role ROLE: ROLE=spliced-initiates gives only spliced the endpoint; wggo-initiates the reverse.
run_role() {
	local role=$1 ns=$2 ng=$3 port_s=$4 port_g=$5
	wg_keypair KS
	wg_keypair KG
	local psk
	psk=$(wg genpsk)
	{
		printf '[Interface]\nPrivateKey = %s\nListenPort = %s\nAddress = 10.78.0.1/24, fd78::1/64\n\n' "$KS_PRIV" "$port_s"
		printf '[Peer]\nPublicKey = %s\nPresharedKey = %s\nAllowedIPs = 10.78.0.2/32, fd78::2/128\n' "$KG_PUB" "$psk"
		[ "$role" == spliced-initiates ] && printf 'Endpoint = 192.168.242.2:%s\n' "$port_g"
	} >"$T_TMP/s.conf"
	start_wggo WG "$G" "$ng" || { fail "$role/setup-wireguard-go"; return; }
	printf '%s\n' "$KG_PRIV" >"$T_TMP/g.key"
	printf '%s\n' "$psk" >"$T_TMP/g.psk"
	local ep=()
	[ "$role" == wggo-initiates ] && ep=(endpoint "192.168.242.1:$port_s" persistent-keepalive 25)
	ip netns exec "$G" wg set "$ng" private-key "$T_TMP/g.key" listen-port "$port_g" \
		peer "$KS_PUB" preshared-key "$T_TMP/g.psk" allowed-ips 10.78.0.1/32,fd78::1/128 "${ep[@]}"
	ip -n "$G" addr add 10.78.0.2/24 dev "$ng"
	ip -n "$G" addr add fd78::2/64 dev "$ng" nodad
	ip -n "$G" link set "$ng" mtu 1420 up
	start_swg DS "$S" "$T_TMP/s.conf" "$ns" || { fail "$role/setup-spliced"; return; }

	# the initiator pings first, so the handshake goes the intended way
	if [ "$role" == spliced-initiates ]; then
		check "$role/ping-v4" ip netns exec "$S" ping -c 3 -i 0.2 -w 15 10.78.0.2
		check "$role/ping-v4-back" ip netns exec "$G" ping -c 2 -i 0.2 -W 3 10.78.0.1
	else
		check "$role/ping-v4" ip netns exec "$G" ping -c 3 -i 0.2 -w 15 10.78.0.1
		check "$role/ping-v4-back" ip netns exec "$S" ping -c 2 -i 0.2 -W 3 10.78.0.2
	fi
	check "$role/ping-v6" ip netns exec "$S" ping -6 -c 2 -i 0.2 -W 3 fd78::2

	wg_transfer "$role/xfer-spliced-to-wggo" "$S" "$G" 10.78.0.2 5101 "$T_TMP/blob"
	wg_transfer "$role/xfer-wggo-to-spliced" "$G" "$S" 10.78.0.1 5102 "$T_TMP/blob"

	local out bps dir port
	for dir in fwd -R; do
		# a fresh one-shot server on its own port for each direction
		port=5201
		[ "$dir" == -R ] && port=5202
		ip netns exec "$G" iperf3 -s -1 -p $port -B 10.78.0.2 >/dev/null 2>&1 &
		on_cleanup_pid $!
		wg_wait_listen "$G" $port
		if out=$(ip netns exec "$S" timeout 20 iperf3 -c 10.78.0.2 -p $port -t 3 ${dir/fwd/} -J 2>&1); then
			bps=$(python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))' <<<"$out" 2>/dev/null)
			if [ "${bps:-0}" -gt 10000000 ]; then pass "$role/iperf3-$dir ($((bps / 1000000)) Mbit/s)"; else fail "$role/iperf3-$dir" "bps=$bps"; fi
		else
			fail "$role/iperf3-$dir" "$(tail -n 3 <<<"$out")"
		fi
	done

	# wg show on both sides: a recent handshake and traffic counted
	local line now
	now=$(date +%s)
	line=$(ip netns exec "$S" wg show "$ns" dump | grep "^$KG_PUB")
	if [ "$(cut -f5 <<<"$line")" -gt $((now - 120)) ] && [ "$(cut -f6 <<<"$line")" -gt 30000000 ] && [ "$(cut -f7 <<<"$line")" -gt 30000000 ]; then
		pass "$role/wg-show-spliced"; else fail "$role/wg-show-spliced" "$line"; fi
	line=$(ip netns exec "$G" wg show "$ng" dump | grep "^$KS_PUB")
	if [ "$(cut -f5 <<<"$line")" -gt $((now - 120)) ]; then pass "$role/wg-show-wireguard-go"; else fail "$role/wg-show-wireguard-go" "$line"; fi

	stop_spliced "$DS_PID" >/dev/null
	kill "$WG_PID" 2>/dev/null
	wait_pid "$WG_PID" 5 >/dev/null
	ip -n "$G" link del "$ng" 2>/dev/null
}

run_role spliced-initiates "sgi$$" "ggi$$" 51901 51902
run_role wggo-initiates "sgr$$" "ggr$$" 51903 51904
finish
