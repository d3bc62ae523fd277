#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A plain UDP client for the tests: no SOCKS of its own (a proxy in front, a TUN, or socksify).

udpping.py HOST PORT SIZE...

For each SIZE, sends SIZE random bytes to HOST:PORT and waits up to 5 s for the echo; prints
"echo SIZE ok" when the reply is those bytes and comes from HOST, "echo SIZE differs (N bytes
from ADDR)" or "echo SIZE lost".
"""
import os, socket, sys

host, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
for n in map(int, sys.argv[3:]):
    data = os.urandom(n)
    s.sendto(data, (host, port))
    try:
        d, a = s.recvfrom(70000)
    except socket.timeout:
        print("echo %d lost" % n, flush=True)
        continue
    ok = d == data and a[0] == host
    print("echo %d %s" % (n, "ok" if ok else "differs (%d bytes from %s)" % (len(d), a[0])), flush=True)
