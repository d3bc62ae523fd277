# SPDX-License-Identifier: MIT
# type = tun: a guest namespace whose default route is spliced's TUN (auto-route), a host
# namespace with the servers (HTTP, byte sinks and sources, dante-server and a second spliced as
# SOCKS5 servers). curl and byte-exact transfers both ways through direct, spliced's socks5 and
# dante, IPv4 and IPv6; 1 GiB both ways per family; 2,000 concurrent flows; iperf3 -P 4.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3 danted iperf3
need_root || finish
. "$T_TOP/tests/tun-lib.sh"

SIZE=$((${TUN_MIB:-1024} * 1024 * 1024))
SMALL=$((64 * 1024 * 1024))
if command -v openssl >/dev/null; then
	hash_stdin() { openssl dgst -sha256 -r | cut -d' ' -f1; }
else
	hash_stdin() { sha256sum | cut -d' ' -f1; }
fi

# --- the topology (tests/tun-lib.sh): G (spliced, its TUN, the apps) -- veth -- H (servers).
tun_topology || { fail setup "namespaces"; finish; }

# --- H: an HTTP server, dante, a spliced SOCKS5 server.
www=$T_TMP/www
mkdir -p "$www"
head -c $((8 * 1024 * 1024)) /dev/urandom >"$www/blob"
http_server HTTP "$www" :: "" "$H" || { fail setup "http server"; finish; }
PD=$(free_port)
cat >"$T_TMP/danted.conf" <<CONF
logoutput: stderr
internal: 10.99.0.1 port = $PD
internal: fd99::1 port = $PD
external: $VH
socksmethod: none
clientmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
	from: 0.0.0.0/0 to: 0.0.0.0/0
}
socks pass {
	from: 0.0.0.0/0 to: 0.0.0.0/0
	command: connect
}
socks pass {
	from: 0.0.0.0/0 to: ::/0
	command: connect
}
CONF
ip netns exec "$H" danted -f "$T_TMP/danted.conf" -p "$T_TMP/danted.pid" 2>"$T_TMP/danted.log" &
on_cleanup_pid $!
T_LOGS+=("$T_TMP/danted.log")
wait_port 10.99.0.1 "$PD" 10 "$H" || { fail setup "danted did not listen"; finish; }
PS=$(free_port)
SPLICED_NETNS=$H start_spliced "
[main]
workers = 2
[inbound socks]
type = socks5
listen = 10.99.0.1:$PS
" || { fail setup "spliced socks5 server"; finish; }
SERVER_PID=$SPLICED_PID

# --- G: spliced with the TUN; the outbound is chosen by the target's port.
P_DIRECT=5001 P_SPLICED=5002 P_DANTE=5003
SPLICED_NETNS=$G start_spliced "
[main]
workers = 2
[inbound t]
type = tun
auto-route = on
[outbound spliced]
type = socks5
server = 10.99.0.1:$PS
[outbound dante]
type = socks5
server = 10.99.0.1:$PD
[route]
rule = port $P_SPLICED -> spliced
rule = port $P_DANTE -> dante
rule = port $((P_SPLICED + 100)) -> spliced
rule = port $((P_DANTE + 100)) -> dante
default = direct
" || { fail setup "spliced with a tun inbound"; finish; }
TUN_PID=$SPLICED_PID
TUN_LOG=$SPLICED_LOG
TUN_CONF=$SPLICED_CONF
wait_tun "$G" tun0 || fail setup "no tun0"


# The path: G's route to the targets is the TUN; spliced's marked sockets use the veth.
r=$(ip -n "$G" route get $T4 2>&1)
if grep -q "dev tun0" <<<"$r"; then pass path/app-route-is-tun; else fail path/app-route-is-tun "$r"; fi
r=$(ip -n "$G" route get $T4 mark 0x5370 2>&1)
if grep -q "dev $VG" <<<"$r"; then pass path/marked-route-is-veth; else fail path/marked-route-is-veth "$r"; fi
r=$(ip -n "$G" -6 route get $T6 2>&1)
if grep -q "dev tun0" <<<"$r"; then pass path/app-route-is-tun-v6; else fail path/app-route-is-tun-v6 "$r"; fi

# The TUN's listeners (one per worker, bound to tun0) use cubic whatever the system's default
# (tun_dev.c: no pacing timer per accepted socket), where the kernel has cubic.
if grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control; then
	r=$(ss -N "$G" -Htlni | grep -A1 '%tun0:')
	n=$(grep -c '%tun0:' <<<"$r")
	if [ "$n" -eq 2 ] && [ "$(grep -cw cubic <<<"$r")" -eq 2 ]; then pass listeners-cubic
	else fail listeners-cubic "$r"; fi
else
	skip listeners-cubic "this kernel offers no cubic: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
fi

# --- curl, both families.
want=$(sha "$www/blob")
for t in "$T4" "[$T6]"; do
	got=$(ip netns exec "$G" curl -sS --max-time 20 "http://$t:$HTTP_PORT/blob" | hash_stdin)
	expect_eq "curl/$t" "$got" "$want" "sha256"
done

# xfer_case NAME HOST PORT BYTES FILE: upload then download of FILE's first BYTES through the
# TUN to HOST:PORT (a sink or source in H), sha256 at both ends.
xfer_case() {
	local name=$1 host=$2 port=$3 bytes=$4 file=$5 want got crc src sent
	want=$(head -c "$bytes" "$file" | hash_stdin)
	# upload: G sends, H hashes
	rm -f "$T_TMP/pf"
	ip netns exec "$H" "$XFER" listen "$host" "$port" --once --no-half-close --port-file "$T_TMP/pf" \
		</dev/null 2>"$T_TMP/srv.err" | hash_stdin >"$T_TMP/srv.sha" &
	local spid=$!
	on_cleanup_pid $spid
	wait_file "$T_TMP/pf" 10 || { fail "$name-upload" "sink did not start: $(cat "$T_TMP/srv.err")"; return; }
	head -c "$bytes" "$file" | timeout 180 ip netns exec "$G" "$XFER" connect "$host" "$port" >/dev/null 2>"$T_TMP/cli.err"
	crc=$?
	wait_pid $spid 30
	got=$(cat "$T_TMP/srv.sha")
	sent=$(grep -o 'SENT=[0-9]*' "$T_TMP/cli.err")
	if [ $crc -eq 0 ] && [ "$sent" = "SENT=$bytes" ] && [ "$got" = "$want" ]; then pass "$name-upload"
	else fail "$name-upload" "client exit $crc ($sent), sha ${got:0:16} want ${want:0:16}: $(tr '\n' ' ' <"$T_TMP/cli.err") $(tr '\n' ' ' <"$T_TMP/srv.err")"; fi
	# download: H sends, G hashes
	rm -f "$T_TMP/pf"
	head -c "$bytes" "$file" | ip netns exec "$H" "$XFER" listen "$host" "$port" --once --port-file "$T_TMP/pf" \
		>/dev/null 2>"$T_TMP/srv.err" &
	spid=$!
	on_cleanup_pid $spid
	wait_file "$T_TMP/pf" 10 || { fail "$name-download" "source did not start: $(cat "$T_TMP/srv.err")"; return; }
	got=$({
		timeout 180 ip netns exec "$G" "$XFER" connect --no-half-close "$host" "$port" </dev/null 2>"$T_TMP/cli.err"
		echo $? >"$T_TMP/crc"
	} | hash_stdin)
	crc=$(cat "$T_TMP/crc")
	wait_pid $spid 30
	src=$?
	if [ "$crc" -eq 0 ] && [ $src -eq 0 ] && [ "$got" = "$want" ]; then pass "$name-download"
	else fail "$name-download" "client exit $crc, source exit $src, sha ${got:0:16} want ${want:0:16}: $(tr '\n' ' ' <"$T_TMP/cli.err") $(tr '\n' ' ' <"$T_TMP/srv.err")"; fi
}

# The data: AES-CTR keystream in RAM, made once.
dir=/dev/shm
[ "$(df --output=avail -k /dev/shm 2>/dev/null | tail -n 1)" -gt $((SIZE / 1024 + 262144)) ] 2>/dev/null || dir=$T_TMP
data=$dir/spl-tun-$$.bin
on_cleanup_file "$data"
openssl enc -aes-128-ctr -pass pass:spliced-$$ -nosalt -pbkdf2 </dev/zero 2>/dev/null | head -c "$SIZE" >"$data"

# 64 MiB through each outbound, both families; then 1 GiB both ways per family via spliced's
# socks5 server (the seed topology's shape).
for fam in 4 6; do
	host=$T4
	[ $fam = 6 ] && host=$T6
	xfer_case "xfer-v$fam-direct" "$host" $P_DIRECT $SMALL "$data"
	xfer_case "xfer-v$fam-socks5-spliced" "$host" $P_SPLICED $SMALL "$data"
	xfer_case "xfer-v$fam-socks5-dante" "$host" $P_DANTE $SMALL "$data"
done
for fam in 4 6; do
	host=$T4
	[ $fam = 6 ] && host=$T6
	t0=$(date +%s%N)
	xfer_case "xfer-v$fam-1GiB-socks5-spliced" "$host" $((P_SPLICED + 100)) "$SIZE" "$data"
	echo "# 1 GiB both ways, IPv$fam: $(( (2 * SIZE / 1000) / (($(date +%s%N) - t0) / 1000000 + 1) )) MB/s (hashing included)"
done

# --- iperf3 -P 4 through the TUN to dante.
IP=$((P_DANTE + 100))
ip netns exec "$H" iperf3 -s -B $T4 -p $IP >"$T_TMP/iperf-s.log" 2>&1 &
on_cleanup_pid $!
for i in $(seq 50); do ss -N "$H" -Htln "( sport = :$IP )" | grep -q . && break; sleep 0.1; done
out=$(timeout 60 ip netns exec "$G" iperf3 -c $T4 -p $IP -P 4 -t 3 -J 2>&1)
bps=$(jq -r '.end.sum_received.bits_per_second // 0' <<<"$out" 2>/dev/null | cut -d. -f1)
if [ "${bps:-0}" -gt 0 ]; then
	pass iperf3-P4
	echo "# iperf3 -P 4 through the TUN and dante: $((bps / 1000000)) Mbit/s"
else
	fail iperf3-P4 "$(tail -n 5 <<<"$out") server: $(tail -n 5 "$T_TMP/iperf-s.log")"
fi

# --- 2,000 concurrent flows: connhold opens them all through the TUN before any byte moves,
# then each sends 16 KiB and must get exactly those bytes back (an echo server in H).
EP=5009
ip netns exec "$H" "$T_BUILD/tests/tools/connhold" serve -q "$T4:$EP" >"$T_TMP/echo.log" 2>&1 &
on_cleanup_pid $!
wait_port $T4 $EP 10 "$H" || true
out=$(timeout 180 ip netns exec "$G" "$T_BUILD/tests/tools/connhold" -t "$T4:$EP" -w 120000 run -n 2000 -b 16384 2>&1)
if grep -q "^run ok 2000 fail 0" <<<"$out"; then pass flows-2000-concurrent
else fail flows-2000-concurrent "$(tail -n 3 <<<"$out")"; fi

# --- SIGHUP: a reload that keeps the tun inbound as it is applies, and new flows still go
# through the TUN (its device is found again in the new configuration); one that changes it
# is refused as needing a restart, and nothing changes.
tun_hup() { sighup_reload "$TUN_PID" "$TUN_LOG"; }
sed -i 's/^rule = port $P_DANTE -> dante$/rule = port $P_DANTE -> spliced/' "$TUN_CONF"
if tun_hup; then pass reload/kept-tun-applied; else fail reload/kept-tun-applied "$(tail -n 3 "$TUN_LOG")"; fi
xfer_case reload/after-v4 "$T4" $P_DANTE $((4 << 20)) "$data"
got=$(ip netns exec "$G" curl -sS --max-time 20 "http://[$T6]:$HTTP_PORT/blob" | hash_stdin)
expect_eq reload/after-curl-v6 "$got" "$want" "sha256"
cp "$TUN_CONF" "$T_TMP/good.ini"
sed -i 's/^auto-route = on$/auto-route = on\nmtu = 1500/' "$TUN_CONF"
if tun_hup; then fail reload/changed-tun-refused "applied"; else pass reload/changed-tun-refused; fi
grep -qF "[inbound t]: changes a tun inbound, which needs a restart" "$TUN_LOG" && pass reload/changed-tun-logged ||
	fail reload/changed-tun-logged "$(tail -n 3 "$TUN_LOG")"
cp "$T_TMP/good.ini" "$TUN_CONF"
r=$(ip -n "$G" link show tun0 2>&1)
if grep -q "mtu 8500" <<<"$r"; then pass reload/device-unchanged; else fail reload/device-unchanged "$r"; fi

stop_spliced "$TUN_PID"
rc=$?
expect_eq stop-exit-status $rc 0
expect_clean_log clean-log "$TUN_LOG"
if grep -q "stats: tun t:" "$TUN_LOG"; then
	reads=$(grep -o 'stats: tun t: reads=[0-9]*' "$TUN_LOG" | grep -o '[0-9]*$')
	rbytes=$(grep -o ' read_bytes=[0-9]*' "$TUN_LOG" | grep -o '[0-9]*$')
	echo "# mean bytes per TUN read: $((rbytes / (reads + 1)))"
fi
# The listener's packets reach the apps through the ring (tun_queue.c batches them): the two
# 1 GiB downloads alone are >= 32,768 such packets of <= 64 KiB; none of the writes failed,
# and no batch was counted without a write.
st=$(grep 'stats: tun t:' "$TUN_LOG" | tail -n 1)
rw=$(grep -o ' ring_writes=[0-9]*' <<<"$st" | grep -o '[0-9]*$')
rb=$(grep -o ' ring_batches=[0-9]*' <<<"$st" | grep -o '[0-9]*$')
we=$(grep -o ' write_errors=[0-9]*' <<<"$st" | grep -o '[0-9]*$')
if [ "${rw:-0}" -ge 32768 ] && [ "${rb:-0}" -gt 0 ] && [ "${rb:-0}" -le "$rw" ] && [ "${we:-1}" = 0 ]; then
	pass ring-writes
	echo "# packets to apps per ring batch: $(awk -v w="$rw" -v b="$rb" 'BEGIN { printf "%.2f", w / b }')"
else
	fail ring-writes "ring_writes=${rw:-?} ring_batches=${rb:-?} write_errors=${we:-?}"
fi
finish
