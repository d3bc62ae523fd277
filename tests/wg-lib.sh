# SPDX-License-Identifier: MIT
# WireGuard test helpers (tests/integration/wireguard.sh, tests/interop/wireguard-go.sh, bench/wireguard):
# keys, configs, starting spliced/wireguard-go inside a namespace, byte-exact transfers, floods.
# Source after tests/lib.sh.
# shellcheck shell=bash

WG_PY=$T_TMP/wgtool.py
cat >"$WG_PY" <<'PY'
import os, socket, sys, time

def addr_family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET

def sink(host, port, out, timeout):
    s = socket.socket(addr_family(host), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(1)
    s.settimeout(float(timeout))
    with open(out + ".ready", "w") as r:
        r.write("1")
    c, _ = s.accept()
    c.settimeout(float(timeout))
    with open(out, "wb") as f:
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            f.write(b)

def send(host, port, path, rate_mbps, timeout):
    rate = float(rate_mbps) * 1e6 / 8 if float(rate_mbps) > 0 else 0
    deadline = time.time() + float(timeout)
    while True:
        try:
            c = socket.create_connection((host, int(port)), timeout=float(timeout))
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    start, sent = time.time(), 0
    with open(path, "rb") as f:
        while True:
            b = f.read(65536)
            if not b:
                break
            c.sendall(b)
            sent += len(b)
            if rate:
                ahead = sent / rate - (time.time() - start)
                if ahead > 0:
                    time.sleep(ahead)
    c.shutdown(socket.SHUT_WR)
    c.recv(1)
    c.close()

def flood(host, port, count, kind):
    # Bogus handshake initiations: right type and length, random rest (MAC1 cannot match).
    s = socket.socket(addr_family(host), socket.SOCK_DGRAM)
    for i in range(int(count)):
        if kind == "init":
            pkt = b"\x01\x00\x00\x00" + os.urandom(144)
        elif kind == "short":
            pkt = b"\x04\x00\x00\x00" + os.urandom(8)
        elif kind == "data":
            pkt = b"\x04\x00\x00\x00" + os.urandom(60)
        elif kind == "type":
            pkt = b"\x09\x00\x00\x00" + os.urandom(60)
        else:
            pkt = b"\x01\x00\x00\x00" + os.urandom(200)
        try:
            s.sendto(pkt, (host, int(port)))
        except OSError:
            time.sleep(0.001)

cmd = sys.argv[1]
if cmd == "sink":
    sink(*sys.argv[2:6])
elif cmd == "send":
    send(*sys.argv[2:7])
elif cmd == "flood":
    flood(*sys.argv[2:6])
PY

# wg_keypair VAR: VAR_PRIV and VAR_PUB from Debian's wg(8).
wg_keypair() {
	local priv
	priv=$(wg genkey)
	printf -v "${1}_PRIV" %s "$priv"
	printf -v "${1}_PUB" %s "$(printf '%s\n' "$priv" | wg pubkey)"
}

# wg_wait_sock NAME [SECONDS]: wait until /var/run/wireguard/NAME.sock answers.
wg_wait_sock() {
	local i
	for i in $(seq $((${2:-10} * 20))); do
		[ -S "/var/run/wireguard/$1.sock" ] && wg show "$1" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

# start_swg VAR NS CONF NAME [ARGS...]: run `spliced wg up CONF --name NAME --foreground`
# inside NS; sets VAR_PID, VAR_LOG. Returns 1 (printing the log) if it does not come up.
start_swg() {
	local var=$1 ns=$2 conf=$3 name=$4 log pid
	shift 4
	log=$T_TMP/$name.log
	ip netns exec "$ns" "$SPLICED_BIN" wg up "$conf" --name "$name" --foreground "$@" 2>"$log" &
	pid=$!
	on_cleanup_pid "$pid"
	on_cleanup_file "/var/run/wireguard/$name.sock"
	T_LOGS+=("$log")
	printf -v "${var}_PID" %s "$pid"
	printf -v "${var}_LOG" %s "$log"
	if ! wg_wait_sock "$name" 10 || ! kill -0 "$pid" 2>/dev/null; then
		echo "# spliced wg up $conf did not come up:"
		tail -n 20 "$log" | sed 's/^/#   /'
		return 1
	fi
}

# start_wggo VAR NS NAME: wireguard-go in the foreground inside NS; sets VAR_PID, VAR_LOG.
start_wggo() {
	local var=$1 ns=$2 name=$3 log pid
	log=$T_TMP/$name.log
	ip netns exec "$ns" env LOG_LEVEL=error wireguard-go -f "$name" >"$log" 2>&1 &
	pid=$!
	on_cleanup_pid "$pid"
	on_cleanup_file "/var/run/wireguard/$name.sock"
	T_LOGS+=("$log")
	printf -v "${var}_PID" %s "$pid"
	printf -v "${var}_LOG" %s "$log"
	wg_wait_sock "$name" 10
}

# wg_stat PID LOG KEY: ask the spliced device for its counters (SIGUSR1) and print KEY's value.
wg_stat() {
	local pid=$1 log=$2 key=$3 before i
	before=$(grep -c ' stats: ' "$log")
	kill -USR1 "$pid"
	for i in $(seq 40); do
		[ "$(grep -c ' stats: ' "$log")" -gt "$before" ] && break
		sleep 0.05
	done
	grep ' stats: ' "$log" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$key=//p"
}

# wg_transfer CASE NS_FROM NS_TO HOST PORT FILE [RATE_MBPS] [TIMEOUT]: send FILE from NS_FROM to
# a sink in NS_TO listening on HOST:PORT; PASS when the sha256 matches at both ends.
wg_transfer() {
	local name=$1 from=$2 to=$3 host=$4 port=$5 file=$6 rate=${7:-0} tmo=${8:-60}
	local out=$T_TMP/recv.$RANDOM spid h=${4#[}
	h=${h%]}
	rm -f "$out" "$out.ready"
	ip netns exec "$to" python3 "$WG_PY" sink "$h" "$port" "$out" "$tmo" &
	spid=$!
	on_cleanup_pid "$spid"
	wait_file "$out.ready" 10 || { fail "$name" "sink did not start"; return 1; }
	if ! timeout "$tmo" ip netns exec "$from" python3 "$WG_PY" send "$h" "$port" "$file" "$rate" "$tmo"; then
		fail "$name" "sender failed"
		kill "$spid" 2>/dev/null
		return 1
	fi
	wait_pid "$spid" 20 >/dev/null
	if [ -f "$out" ] && [ "$(sha "$out")" == "$(sha "$file")" ]; then
		pass "$name"
		rm -f "$out"
		return 0
	fi
	fail "$name" "sha256 differs: sent $(stat -c %s "$file") bytes, received $(stat -c %s "$out" 2>/dev/null || echo 0)"
	return 1
}

# wg_wait_listen NS PORT: wait (up to 5 s) until a TCP socket listens on PORT inside NS, without
# connecting to it (iperf3 -s -1 would take a probe for its only client).
wg_wait_listen() {
	local i
	for i in $(seq 100); do
		[ -n "$(ip netns exec "$1" ss -Htln "( sport = :$2 )" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}
