# SPDX-License-Identifier: MIT
# TUN inbound test helpers (tests/integration/tun*.sh): the guest/host topology and counters.
# Source after tests/lib.sh.
# shellcheck shell=bash

# tun_topology: a guest namespace G (spliced, its TUN, the apps) linked by a veth pair to a
# host namespace H (the servers), IPv4 10.99.0.2 -- 10.99.0.1 and IPv6 fd99::2 -- fd99::1.
# The targets live on H's loopback, T4=203.0.113.1 and T6=2001:db8::1: G reaches them only
# through its default route, which auto-route points into the TUN, while spliced's own
# (marked) sockets take the main table's default route over the veth. Sets G H VG VH T4 T6.
tun_topology() {
	netns_new G && netns_new H || return 1
	netns_veth "$G" 10.99.0.2/24 "$H" 10.99.0.1/24 || return 1
	VG=$(ip -n "$G" -o link show type veth | awk -F': ' '{print $2}' | cut -d@ -f1)
	VH=$(ip -n "$H" -o link show type veth | awk -F': ' '{print $2}' | cut -d@ -f1)
	ip -n "$G" addr add fd99::2/64 dev "$VG" nodad &&
		ip -n "$H" addr add fd99::1/64 dev "$VH" nodad &&
		ip -n "$G" route add default via 10.99.0.1 &&
		ip -n "$G" -6 route add default via fd99::1 &&
		ip -n "$H" addr add 203.0.113.1/32 dev lo &&
		ip -n "$H" addr add 2001:db8::1/128 dev lo || return 1
	T4=203.0.113.1
	T6=2001:db8::1
}

# wait_tun NS DEV: until the device exists (spliced made it).
wait_tun() {
	local i
	for i in $(seq 100); do ip -n "$1" link show "$2" >/dev/null 2>&1 && return 0; sleep 0.05; done
	return 1
}

# tun_stats PID LOG [NAME]: spliced's current "stats: tun NAME:" line (asks with SIGUSR1).
tun_stats() {
	local pid=$1 log=$2 name=${3:-t} n i
	n=$(grep -c "stats: tun $name:" "$log")
	kill -USR1 "$pid" 2>/dev/null
	for i in $(seq 100); do
		[ "$(grep -c "stats: tun $name:" "$log")" -gt "$n" ] && break
		sleep 0.02
	done
	grep "stats: tun $name:" "$log" | tail -n 1
}

# tun_field NAME LINE: the value of counter NAME in a stats line.
tun_field() { grep -o " $1=[0-9]*" <<<"$2" | grep -o '[0-9]*$'; }

# tagged_left NS: spliced's rules and routes (protocol 83) still in NS, one per line.
tagged_left() {
	{
		ip -n "$1" -4 rule show
		ip -n "$1" -6 rule show
		ip -n "$1" -4 route show table all
		ip -n "$1" -6 route show table all
	} 2>/dev/null | grep -E 'proto (83|0x53)\b'
}
