#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tunpkt: hand-made packets for a TUN inbound's tests (tests/integration/tun-flows.sh).

  tunpkt.py garbage DEV SRC4 DST4 SRC6 DST6 N
      N rounds of malformed packets sent straight onto DEV through an AF_PACKET socket (the
      kernel queues them to the TUN's reader as they are, no IP layer in between): truncated
      headers, a version of 5, impossible lengths, IPv4 options, IPv4 and IPv6 fragments, an
      IPv6 routing header, a TCP header with a data offset of 3, and an ACK for a flow nobody
      opened. Prints "sent KIND=COUNT ..." (what each counter must have grown by at least).
  tunpkt.py dns SERVER NAME N WANT4 [INFLIGHT]
      N DNS queries (A) for NAME to SERVER:53 (IPv4 or IPv6 literal) over UDP, INFLIGHT
      (default 16) at a time, each retried twice 2 s apart; prints "answered K of N" where an
      answer counts only if it comes from SERVER:53 and holds WANT4, and exits 0 when K == N.
  tunpkt.py synflood DST PORTS N
      N TCP SYNs to DST (IPv4) at random ports of PORTS ("lo-hi") from random source ports,
      through a raw socket: routed like any app's packet (into the TUN).
"""
import random
import socket
import struct
import sys


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip4(src, dst, proto, payload, ihl=5, frag=0, tot=None, ver=4, opts=b""):
    hl = ihl * 4
    tot = hl + len(payload) if tot is None else tot
    h = struct.pack("!BBHHHBBH4s4s", (ver << 4) | ihl, 0, tot, 1, frag, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst)) + opts
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def tcp(sport, dport, flags, seq=1000, ack=0, doff=5):
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, doff << 4, flags, 65535, 0, 0)


def ip6(src, dst, nh, payload):
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nh, 64,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst)) + payload


def garbage(dev, s4, d4, s6, d6, n):
    p4 = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0800))
    p6 = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x86DD))
    sent = {"truncated": 0, "version": 0, "length": 0, "options": 0, "fragment": 0,
            "no_flow": 0}
    good = tcp(40000, 80, 0x02)
    for _ in range(n):
        pk = [
            ("truncated", p4, ip4(s4, d4, 6, good)[:12]),                 # half an IPv4 header
            ("truncated", p4, ip4(s4, d4, 6, good[:10])),                 # half a TCP header
            ("truncated", p4, ip4(s4, d4, 6, good, tot=200)),             # longer than it is
            ("version", p4, ip4(s4, d4, 6, good, ver=5)),
            ("length", p4, ip4(s4, d4, 6, good, ihl=4)),                   # IHL below 5
            ("length", p4, ip4(s4, d4, 6, tcp(40000, 80, 0x02, doff=3))),  # TCP offset 3
            ("options", p4, ip4(s4, d4, 6, good, ihl=6, opts=b"\x01\x01\x01\x00")),
            ("fragment", p4, ip4(s4, d4, 6, good, frag=0x2000)),          # MF
            ("fragment", p4, ip4(s4, d4, 6, good, frag=0x0010)),          # an offset
            ("fragment", p6, ip6(s6, d6, 44, bytes([6, 0, 0, 1, 0, 0, 0, 1]) + good)),
            ("options", p6, ip6(s6, d6, 43, bytes([6, 0, 0, 0, 0, 0, 0, 0]) + good)),
            ("truncated", p6, ip6(s6, d6, 6, good)[:30]),
            ("no_flow", p4, ip4(s4, d4, 6, tcp(random.randint(1024, 65535), 80, 0x10))),
        ]
        for kind, sock, b in pk:
            sock.sendto(b, (dev, 0x0800 if sock is p4 else 0x86DD))
            sent[kind] += 1
    print("sent " + " ".join("%s=%d" % kv for kv in sorted(sent.items())))


def dns_query(qid, name):
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", 1, 1)


def dns(server, name, n, want4, inflight=16):
    import select
    import time
    fam = socket.AF_INET6 if ":" in server else socket.AF_INET
    want = socket.inet_aton(want4)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    pending, done, nxt = {}, set(), 0
    deadline = time.time() + 30 + n / 100
    while len(done) < n and time.time() < deadline:
        while nxt < n and len(pending) < inflight:
            pending[nxt] = (time.time(), 0)
            s.sendto(dns_query(nxt, name), (server, 53))
            nxt += 1
        r, _, _ = select.select([s], [], [], 0.2)
        if r:
            d, a = s.recvfrom(65535)
            qid = struct.unpack("!H", d[:2])[0]
            # only an answer from the address asked counts (what a stub resolver accepts)
            if a[0] == server and a[1] == 53 and qid in pending and want in d:
                del pending[qid]
                done.add(qid)
        now = time.time()
        for qid, (t0, tries) in list(pending.items()):
            if now - t0 > 2:
                if tries >= 2:
                    del pending[qid]
                else:
                    pending[qid] = (now, tries + 1)
                    s.sendto(dns_query(qid, name), (server, 53))
    print("answered %d of %d" % (len(done), n))
    return 0 if len(done) == n else 1


def synflood(dst, ports, n):
    lo, hi = (int(x) for x in ports.split("-"))
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    for _ in range(n):
        dport = random.randint(lo, hi)
        seg = tcp(random.randint(1024, 65535), dport, 0x02, seq=random.getrandbits(32))
        s.sendto(seg, (dst, 0))  # the kernel adds the IP header; the TCP checksum is ours to
        # get right only for the receiver, and the NAT passes what it gets
    print("sent syn=%d" % n)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "garbage" and len(sys.argv) == 8:
        garbage(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7]))
    elif len(sys.argv) in (6, 7) and sys.argv[1] == "dns":
        return dns(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5],
                   int(sys.argv[6]) if len(sys.argv) == 7 else 16)
    elif len(sys.argv) == 5 and sys.argv[1] == "synflood":
        synflood(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
