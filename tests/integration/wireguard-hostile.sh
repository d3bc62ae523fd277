#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hostile local input against `spliced wg up` (ASan build): maximal UDP GSO trains queued while
# the device is stopped (review H1), floods of junk that must not take the device lock exclusive
# (M2), a UAPI client that drips bytes (L10), and a pre-existing TUN of the same name (L11).
# docs/wireguard-security.md says what each case defends.
. "$(dirname "$0")/../lib.sh"
need ip wg python3 sha256sum
need_root wireguard || { finish; }
. "$T_TOP/tests/wg-lib.sh"

HOSTILE_PY=$T_TMP/hostile.py
cat >"$HOSTILE_PY" <<'PY'
import os, socket, sys, time

UDP_SEGMENT = 103

def trains(host, port, sizes, per_size):
    # Maximal GSO trains: 128 datagrams each (the kernel's UDP_MAX_SEGMENTS), of every size in
    # sizes, the content chosen to reach each refusal: random bytes, and where the size fits,
    # data for no session, handshakes with a wrong MAC1, cookie replies for nobody.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    sent = 0
    for size in sizes:
        kinds = [b""]
        if size >= 32: kinds.append(b"\x04\x00\x00\x00")
        if size == 148: kinds.append(b"\x01\x00\x00\x00")
        if size == 92: kinds.append(b"\x02\x00\x00\x00")
        if size == 64: kinds.append(b"\x03\x00\x00\x00")
        s.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, size)
        for i in range(per_size):
            head = kinds[i % len(kinds)]
            seg = (head + os.urandom(size))[:size]
            s.sendto(seg * 128, (host, port))
            sent += 1
    print(sent)

def flood(host, port, count):
    # Unauthenticated junk, no GSO: 1-byte datagrams, wrong types, bad-MAC1 initiations,
    # cookie replies for no handshake of ours.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pkts = [b"\x00", b"\x09\x00\x00\x00" + os.urandom(60), b"\x01\x00\x00\x00" + os.urandom(144),
            b"\x03\x00\x00\x00" + os.urandom(60)]
    for i in range(count):
        try:
            s.sendto(pkts[0] if i % 4 else pkts[(i // 4) % 4], (host, port))
        except OSError:
            time.sleep(0.001)

def drip(path, secs, out):
    # A UAPI client that never finishes its request: one byte every 0.2 s.
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    start = time.time()
    closed = "never"
    msg = b"set=1\n" + b"x" * 100000
    i = 0
    while time.time() - start < float(secs):
        try:
            c.send(msg[i:i + 1])
            i += 1
        except OSError:
            closed = "%.1f" % (time.time() - start)
            break
        time.sleep(0.2)
    open(out, "w").write(closed)

cmd = sys.argv[1]
if cmd == "trains":
    trains(sys.argv[2], int(sys.argv[3]), [int(x) for x in sys.argv[4].split(",")], int(sys.argv[5]))
elif cmd == "flood":
    flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
elif cmd == "drip":
    drip(sys.argv[2], sys.argv[3], sys.argv[4])
PY

# --- topology: A <-veth-> B; A is the device under test (ASan), B the honest peer ---
netns_new A || { fail setup/netns; finish; }
netns_new B || { fail setup/netns; finish; }
netns_veth "$A" 192.168.242.1/24 "$B" 192.168.242.2/24 || { fail setup/veth; finish; }
wg_keypair KA
wg_keypair KB
NA="sha$$"; NA=${NA:0:15}
NB="shb$$"; NB=${NB:0:15}
cat >"$T_TMP/a.conf" <<C
[Interface]
PrivateKey = $KA_PRIV
ListenPort = 51999
Address = 10.78.0.1/24

[Peer]
PublicKey = $KB_PUB
AllowedIPs = 10.78.0.2/32
C
cat >"$T_TMP/b.conf" <<C
[Interface]
PrivateKey = $KB_PRIV
ListenPort = 51998
Address = 10.78.0.2/24

[Peer]
PublicKey = $KA_PUB
AllowedIPs = 10.78.0.0/24
Endpoint = 192.168.242.1:51999
C
chmod 600 "$T_TMP/a.conf" "$T_TMP/b.conf"
start_swg DB "$B" "$T_TMP/b.conf" "$NB" || { fail setup/spliced-b; finish; }
use_asan_spliced
start_swg DA "$A" "$T_TMP/a.conf" "$NA" || { fail setup/spliced-a; finish; }
check setup/ping ip netns exec "$B" ping -c 2 -i 0.2 -W 3 10.78.0.1
fd0=$(fd_count "$DA_PID")

# --- H1: maximal GSO trains (128 datagrams, 1 to 511 bytes) queued while A is stopped ---
# 13687be wrote past rx_round's 512-entry stack arrays here (ASan: stack-buffer-overflow).
head -c 6M /dev/urandom >"$T_TMP/blob"
wg_transfer gso/transfer-across-the-stop "$B" "$A" 10.78.0.1 5101 "$T_TMP/blob" 24 60 &
xpid=$!
sleep 0.7
r0=$(wg_stat "$DA_PID" "$DA_LOG" gro_runts)
i0=$(wg_stat "$DA_PID" "$DA_LOG" invalid_message)
u0=$(wg_stat "$DA_PID" "$DA_LOG" unknown_index)
kill -STOP "$DA_PID"
sizes=1,2,3,7,15,16,31,32,33,63,64,92,100,148,200,256,400,511
# from the other namespace over the veth (a container's view) and over A's own loopback
nb=$(ip netns exec "$B" python3 "$HOSTILE_PY" trains 192.168.242.1 51999 "$sizes" 3)
na=$(ip netns exec "$A" python3 "$HOSTILE_PY" trains 127.0.0.1 51999 "$sizes" 3)
kill -CONT "$DA_PID"
echo "# sent $nb + $na maximal trains while A was stopped"
wait "$xpid" || T_FAILS=$((T_FAILS + 1))
if kill -0 "$DA_PID" 2>/dev/null; then pass gso/device-survives; else fail gso/device-survives "spliced exited"; fi
r1=$(wg_stat "$DA_PID" "$DA_LOG" gro_runts)
i1=$(wg_stat "$DA_PID" "$DA_LOG" invalid_message)
u1=$(wg_stat "$DA_PID" "$DA_LOG" unknown_index)
echo "# gro_runts +$((r1 - r0)), invalid_message +$((i1 - i0)), unknown_index +$((u1 - u0))"
# a runt train (1..31 bytes) is 128 refusals; some trains may not fit the socket buffer
if [ "$((r1 - r0))" -ge 1280 ] && [ "$((i1 - i0))" -ge 1280 ] && [ "$((u1 - u0))" -ge 1280 ]; then
	pass gso/junk-counted
else fail gso/junk-counted "gro_runts $r0 -> $r1, invalid_message $i0 -> $i1, unknown_index $u0 -> $u1"; fi
expect_clean_log gso/no-sanitizer-report "$DA_LOG"
check gso/still-works ip netns exec "$B" ping -c 2 -i 0.2 -W 3 10.78.0.1

# --- M2: junk is refused under the shared lock; only what passes MAC1 may go exclusive ---
# (13687be took the device lock exclusive for every batch holding anything but data.)
e0=$(wg_stat "$DA_PID" "$DA_LOG" rx_exclusive)
i0=$(wg_stat "$DA_PID" "$DA_LOG" invalid_message)
m0=$(wg_stat "$DA_PID" "$DA_LOG" bad_mac1)
c0=$(wg_stat "$DA_PID" "$DA_LOG" cookie_invalid)
ip netns exec "$B" python3 "$HOSTILE_PY" flood 192.168.242.1 51999 20000
e1=$(wg_stat "$DA_PID" "$DA_LOG" rx_exclusive)
i1=$(wg_stat "$DA_PID" "$DA_LOG" invalid_message)
m1=$(wg_stat "$DA_PID" "$DA_LOG" bad_mac1)
c1=$(wg_stat "$DA_PID" "$DA_LOG" cookie_invalid)
echo "# flood of 20000: rx_exclusive +$((e1 - e0)), invalid_message +$((i1 - i0)), bad_mac1 +$((m1 - m0)), cookie_invalid +$((c1 - c0))"
if [ "$((i1 - i0))" -ge 8000 ] && [ "$((m1 - m0))" -ge 500 ] && [ "$((c1 - c0))" -ge 500 ]; then
	pass flood/junk-counted
else fail flood/junk-counted "invalid_message +$((i1 - i0)), bad_mac1 +$((m1 - m0)), cookie_invalid +$((c1 - c0))"; fi
# nothing in it authenticates; allow a keepalive's worth of unrelated exclusive batches
if [ -z "$e0" ] || [ -z "$e1" ]; then fail flood/lock-stays-shared "no rx_exclusive counter in the stats line"
elif [ "$((e1 - e0))" -le 3 ]; then pass "flood/lock-stays-shared (+$((e1 - e0)))"; else
	fail flood/lock-stays-shared "rx_exclusive $e0 -> $e1 during a junk flood"; fi

# --- L10: a UAPI client that drips bytes gets 2 s in all, then wg(8) is served again ---
# (13687be gave it 2 s per read, so a byte every 0.2 s held the control thread for good.)
ip netns exec "$A" python3 "$HOSTILE_PY" drip "/var/run/wireguard/$NA.sock" 8 "$T_TMP/drip" &
dpid=$!
on_cleanup_pid "$dpid"
sleep 0.3
t0=$(now_ms)
if port=$(ip netns exec "$A" timeout 5 wg show "$NA" listen-port 2>&1) && [ "$port" == 51999 ]; then
	pass "uapi/served-despite-dripping-client ($(($(now_ms) - t0)) ms)"
else fail uapi/served-despite-dripping-client "wg show: $port"; fi
wait_pid "$dpid" 10 >/dev/null
closed=$(cat "$T_TMP/drip" 2>/dev/null)
if [ -n "$closed" ] && [ "$closed" != never ]; then pass "uapi/dripping-client-cut-off (after ${closed}s)"; else
	fail uapi/dripping-client-cut-off "the server kept the dripping client for 8 s"; fi

# --- L11: a TUN of the same name made by somebody else is refused, not joined ---
# (13687be attached to it: its owner could add queues and read the tunnel's plaintext.)
netns_new C || { fail setup/netns-c; finish; }
NC="shc$$"; NC=${NC:0:15}
ip -n "$C" tuntap add dev "$NC" mode tun multi_queue user nobody
out=$(ip netns exec "$C" "$SPLICED_BIN" wg up "$T_TMP/a.conf" --name "$NC" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "$NC: an interface of that name already exists" <<<"$out" && ! grep -q Sanitizer <<<"$out"; then
	pass tun/existing-device-refused
else fail tun/existing-device-refused "rc=$rc: $out"; ip netns exec "$C" "$SPLICED_BIN" wg down "$NC" 2>/dev/null; fi
if [ -z "$(ip -n "$C" -o addr show dev "$NC" 2>&1)" ] && [ ! -e "/var/run/wireguard/$NC.sock" ]; then
	pass tun/existing-device-untouched
else fail tun/existing-device-untouched "$(ip -n "$C" -o addr show dev "$NC" 2>&1)"; fi
ip -n "$C" tuntap del dev "$NC" mode tun multi_queue

expect_eq fd/no-descriptor-growth "$(fd_count "$DA_PID")" "$fd0" "descriptors of the device under test"
stop_spliced "$DA_PID" >/dev/null
expect_clean_log asan/clean-exit "$DA_LOG"
finish
