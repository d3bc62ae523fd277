# SPDX-License-Identifier: MIT
# type = tun, the life of flows and of what spliced installs: ICMP echo answered locally; an
# idle TCP flow outlives udp-timeout; malformed packets counted and dropped while a transfer
# goes on unharmed; 100,000 connect/close cycles leave no NAT entry once the (test-shortened,
# flow-linger = 1s) linger is over; a SYN flood past max-flows gets RSTs and grows nothing;
# routes, rules and the device gone after a stop, and after a SIGKILL once spliced starts again.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 ping
need_root || finish
. "$T_TOP/tests/tun-lib.sh"
CONNHOLD=$T_BUILD/tests/tools/connhold
CPS=$T_BUILD/tests/tools/cps
TUNPKT="python3 $T_TOP/tests/tools/tunpkt.py"

tun_topology || { fail setup "namespaces"; finish; }
EP=7000 # echo ports EP..EP+7 on both targets
targets4=() targets6=()
for i in $(seq 0 7); do targets4+=("$T4:$((EP + i))"); targets6+=("[$T6]:$((EP + i))"); done
ip netns exec "$H" "$CONNHOLD" serve -q "${targets4[@]}" "${targets6[@]}" >"$T_TMP/echo.log" 2>&1 &
on_cleanup_pid $!
wait_port $T4 $EP 10 "$H" || { fail setup "echo server"; finish; }

conf="[main]
workers = 2
udp-timeout = 2s
[inbound t]
type = tun
auto-route = on
flow-linger = 1s
"
SPLICED_NETNS=$G start_spliced "$conf" || { fail setup "spliced"; finish; }
PID=$SPLICED_PID LOG=$SPLICED_LOG
wait_tun "$G" tun0 || fail setup "no tun0"

# --- ICMP echo: answered by spliced itself (H never sees it: it has no route back to G's TUN
# address), both families.
out=$(ip netns exec "$G" ping -c 3 -i 0.2 -W 2 $T4 2>&1)
if grep -q " 0% packet loss" <<<"$out"; then pass icmp-echo-v4; else fail icmp-echo-v4 "$(tail -n 2 <<<"$out")"; fi
out=$(ip netns exec "$G" ping -6 -c 3 -i 0.2 -W 2 $T6 2>&1)
if grep -q " 0% packet loss" <<<"$out"; then pass icmp-echo-v6; else fail icmp-echo-v6 "$(tail -n 2 <<<"$out")"; fi
s=$(tun_stats "$PID" "$LOG")
n=$(tun_field icmp_echo "$s")
if [ "${n:-0}" -ge 6 ]; then pass icmp-echo-counted; else fail icmp-echo-counted "icmp_echo=$n"; fi

# --- A target that refuses: the app's connection (established by the kernel before the
# outbound was tried) is reset, as a refused connect would have told it.
out=$(timeout 15 ip netns exec "$G" "$T_BUILD/tests/tools/xfer" connect $T4 9 </dev/null 2>&1)
rc=$?
# (the RST may come before xfer has looked at its connect's result: then that is what failed)
if { [ $rc -eq 3 ] && grep -q 'END=reset' <<<"$out"; } ||
	{ [ $rc -eq 2 ] && grep -q 'Connection reset by peer' <<<"$out"; }; then pass refused-target-resets
else fail refused-target-resets "exit $rc: $(tr '\n' ' ' <<<"$out")"; fi

# --- An idle TCP flow outlives udp-timeout (2 s) and any NAT timeout: its entry lives as long
# as its connection.
exec 5> >(ip netns exec "$G" "$CONNHOLD" -t "$T4:$EP" -w 10000 hold >"$T_TMP/hold.out" 2>&1)
HOLD_PID=$!
on_cleanup_pid $HOLD_PID
echo "open 1" >&5
echo "ping" >&5
sleep 5
echo "ping" >&5
echo "check" >&5
for i in $(seq 100); do [ "$(wc -l <"$T_TMP/hold.out")" -ge 4 ] && break; sleep 0.1; done
if [ "$(sed -n 3p "$T_TMP/hold.out")" = "ping ok 1 bad 0" ]; then pass idle-flow-outlives-udp-timeout
else fail idle-flow-outlives-udp-timeout "$(tr '\n' '|' <"$T_TMP/hold.out")"; fi
echo quit >&5
exec 5>&-

# --- Malformed packets, straight onto the TUN (AF_PACKET), while 64 MiB go through it: each
# kind dropped and counted, the transfer byte-exact.
head -c $((64 * 1024 * 1024)) /dev/urandom >"$T_TMP/data"
want=$(sha "$T_TMP/data")
rm -f "$T_TMP/pf"
ip netns exec "$H" "$T_BUILD/tests/tools/xfer" listen $T4 $((EP + 100)) --once --no-half-close --port-file "$T_TMP/pf" \
	</dev/null >"$T_TMP/got" 2>"$T_TMP/srv.err" &
spid=$!
on_cleanup_pid $spid
wait_file "$T_TMP/pf" 10
s0=$(tun_stats "$PID" "$LOG")
timeout 60 ip netns exec "$G" "$T_BUILD/tests/tools/xfer" connect $T4 $((EP + 100)) <"$T_TMP/data" >/dev/null 2>"$T_TMP/cli.err" &
cpid=$!
sent=$(ip netns exec "$G" $TUNPKT garbage tun0 198.18.0.1 $T4 fdfe:5370::1 $T6 200 2>&1)
wait "$cpid"
crc=$?
wait_pid $spid 20
s1=$(tun_stats "$PID" "$LOG")
if [ $crc -eq 0 ] && [ "$(sha "$T_TMP/got")" = "$want" ]; then pass malformed/transfer-unharmed
else fail malformed/transfer-unharmed "client exit $crc: $(tr '\n' ' ' <"$T_TMP/cli.err")"; fi
for kind in truncated version length options fragment no_flow; do
	n=$(grep -o "$kind=[0-9]*" <<<"$sent" | cut -d= -f2)
	got=$(($(tun_field drop_$kind "$s1") - $(tun_field drop_$kind "$s0")))
	if [ -n "$n" ] && [ "$got" -ge "$n" ]; then pass "malformed/drop_$kind"
	else fail "malformed/drop_$kind" "sent ${n:-?}, counted $got ($sent)"; fi
done
if kill -0 "$PID" 2>/dev/null; then pass malformed/alive; else fail malformed/alive; fi

# --- 100,000 connect/close cycles (8 echo ports, so the apps' TIME_WAIT tuples do not run
# out): then, once flow-linger (1 s, shortened for the test; 60 s by default) is over, no NAT
# entry is left.
tflags=()
for t in "${targets4[@]}"; do tflags+=(-t "$t"); done
out=$(timeout 240 ip netns exec "$G" "$CPS" "${tflags[@]}" -j 4 -c 8 -n 100000 -d 200 2>&1)
echo "# $out"
conns=$(grep -o 'conns [0-9]*' <<<"$out" | grep -o '[0-9]*$')
errs=$(grep -o 'errors [0-9]*' <<<"$out" | grep -o '[0-9]*$')
if [ $((${conns:-0} + ${errs:-0})) -ge 100000 ] && [ "${errs:-1}" -le 10 ]; then pass cycles/100000
else fail cycles/100000 "$out"; fi
sleep 3
s=$(tun_stats "$PID" "$LOG")
expect_eq cycles/nat-entries-after-linger "$(tun_field nat_entries "$s")" 0
echo "# after the cycles: $(grep -oE ' (nat_entries|rst_full|drop_no_flow)=[0-9]*' <<<"$s" | tr '\n' ' ')"

# --- A stop removes everything: rules, routes, the device; the sysctl back to 0.
stop_spliced "$PID"
expect_eq stop/exit-status $? 0
expect_eq stop/nothing-tagged-left "$(tagged_left "$G")" ""
if ip -n "$G" link show tun0 >/dev/null 2>&1; then fail stop/device-gone; else pass stop/device-gone; fi
expect_eq stop/src_valid_mark-restored "$(ip netns exec "$G" cat /proc/sys/net/ipv4/conf/all/src_valid_mark)" 0

# --- max-flows 64, under the ASan build: 64 apps get in, the 65th is refused at once (a RST,
# not a timeout); a flood of 2,000 SYNs from random ports grows neither the table nor the
# descriptors.
use_asan_spliced
SPLICED_NETNS=$G start_spliced "$conf
max-flows = 64
" || { fail setup "spliced (max-flows 64)"; finish; }
PID=$SPLICED_PID LOG=$SPLICED_LOG
wait_tun "$G" tun0
fds0=$(fd_count "$PID")
exec 5> >(ip netns exec "$G" "$CONNHOLD" -t "$T4:$EP" -w 20000 hold >"$T_TMP/hold2.out" 2>&1)
on_cleanup_pid $!
echo "open 64" >&5
echo "open 1" >&5
echo "ping" >&5
for i in $(seq 150); do [ "$(wc -l <"$T_TMP/hold2.out")" -ge 3 ] && break; sleep 0.1; done
expect_eq full/64-open "$(sed -n 1p "$T_TMP/hold2.out")" "opened 64 failed 0"
if grep -q "^opened 0 failed 1.*refused" <<<"$(sed -n 2p "$T_TMP/hold2.out")"; then pass full/65th-refused
else fail full/65th-refused "$(sed -n 2p "$T_TMP/hold2.out")"; fi
expect_eq full/64-still-relay "$(sed -n 3p "$T_TMP/hold2.out")" "ping ok 64 bad 0"
ip netns exec "$G" $TUNPKT synflood $T4 20000-60000 2000 >/dev/null
sleep 1
s=$(tun_stats "$PID" "$LOG")
n=$(tun_field nat_entries "$s")
if [ "$n" -le 64 ]; then pass flood/table-capped; else fail flood/table-capped "nat_entries=$n"; fi
n=$(tun_field rst_full "$s")
if [ "$n" -ge 1900 ]; then pass flood/rst-counted; else fail flood/rst-counted "rst_full=$n"; fi
fds1=$(fd_count "$PID")
if [ "$fds1" -le $((fds0 + 64 * 2 + 8)) ]; then pass flood/descriptors-bounded
else fail flood/descriptors-bounded "$fds0 before, $fds1 now: $(fd_kinds "$PID")"; fi
echo quit >&5
exec 5>&-

# --- SIGKILL: the device goes with the process, the rules stay; the next start removes them
# and installs its own; its stop leaves nothing.
kill -KILL "$PID"
wait "$PID" 2>/dev/null
# The device (and the routes through it) goes when the kernel releases the last queue, which
# can trail the reaping: count what is left only once it is gone.
for _ in $(seq 100); do ip -n "$G" link show tun0 >/dev/null 2>&1 || break; sleep 0.05; done
left=$(tagged_left "$G" | grep -c .)
if [ "$left" -ge 4 ]; then pass sigkill/rules-left-behind; else fail sigkill/rules-left-behind "$(tagged_left "$G")"; fi
SPLICED_NETNS=$G start_spliced "$conf" || { fail setup "spliced after SIGKILL"; finish; }
PID=$SPLICED_PID LOG=$SPLICED_LOG
wait_tun "$G" tun0
if grep -q "removed $left rules and routes an earlier run left" "$LOG"; then pass sigkill/restart-removes-leftovers
else fail sigkill/restart-removes-leftovers "$(grep removed "$LOG")"; fi
expect_eq sigkill/one-set-of-rules "$(tagged_left "$G" | grep -c 'fwmark')" 2
stop_spliced "$PID"
expect_eq sigkill/nothing-left-after-stop "$(tagged_left "$G")" ""
expect_clean_log clean-log "$LOG"

# --- netns mode: spliced runs in H, its TUN in a namespace N that has nothing else (no
# veth, no rules, no marks): N's apps reach H's targets only through it.
netns_new N || { fail setup "namespace N"; finish; }
SPLICED_NETNS=$H start_spliced "[main]
workers = 2
[inbound t]
type = tun
netns = $N
auto-route = on
" || { fail setup "spliced with netns"; finish; }
PID=$SPLICED_PID LOG=$SPLICED_LOG
wait_tun "$N" tun0 || fail netns/device-in-namespace "$(ip -n "$N" link)"
r=$(ip -n "$N" route get $T4 2>&1)
if grep -q "dev tun0" <<<"$r"; then pass netns/default-route; else fail netns/default-route "$r"; fi
for t in $T4 $T6; do
	head -c $((4 * 1024 * 1024)) /dev/urandom >"$T_TMP/d4"
	rm -f "$T_TMP/pf"
	ip netns exec "$H" "$T_BUILD/tests/tools/xfer" listen "$t" $((EP + 200)) --once --port-file "$T_TMP/pf" \
		<"$T_TMP/d4" >/dev/null 2>"$T_TMP/srv.err" &
	on_cleanup_pid $!
	wait_file "$T_TMP/pf" 10
	got=$(timeout 30 ip netns exec "$N" "$T_BUILD/tests/tools/xfer" connect --no-half-close "$t" $((EP + 200)) </dev/null 2>/dev/null | sha256sum | cut -d' ' -f1)
	expect_eq "netns/download-$t" "$got" "$(sha "$T_TMP/d4")" "sha256"
done
out=$(ip netns exec "$N" ping -c 2 -i 0.2 -W 2 $T4 2>&1)
if grep -q " 0% packet loss" <<<"$out"; then pass netns/icmp-echo; else fail netns/icmp-echo "$(tail -n 2 <<<"$out")"; fi
stop_spliced "$PID"
expect_eq netns/exit-status $? 0
if ip -n "$N" link show tun0 >/dev/null 2>&1; then fail netns/device-gone; else pass netns/device-gone; fi
expect_eq netns/nothing-tagged-left "$(tagged_left "$N")$(tagged_left "$H")" ""
finish
