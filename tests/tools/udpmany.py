#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hold many SOCKS5 UDP associations open at once, for the memory and descriptor tests.

udpmany.py PROXY-HOST PROXY-PORT ECHO-HOST ECHO-PORT N [--fwd]

Opens N associations (UDP ASSOCIATE for 0.0.0.0:0 with a UDP socket each, or with --fwd
hev-socks5's FWD UDP: the datagram framed on the TCP connection), at most 64 handshakes in
flight, and sends one 16-byte datagram through each to the echo server. Prints
"held H echoed E" once every association has its echo (or nothing moved for 10 s), then
keeps them all open until stdin closes, and prints "closed".
"""
import os, resource, selectors, socket, struct, sys, time

class Assoc:
    def __init__(self, proxy, fwd, dst):
        self.fwd, self.dst = fwd, dst
        self.t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.t.setblocking(False)
        self.t.connect_ex(proxy)
        # Greeting and request in one write: spliced parses from a buffer.
        self.out = b"\x05\x01\x00" + bytes([5, 5 if fwd else 3, 0]) + b"\x01" + bytes(6)
        self.inb = b""
        self.u = None
        self.payload = os.urandom(16)

    def frame(self):
        if self.fwd:
            return struct.pack(">HB", len(self.payload), 3 + len(self.dst)) + self.dst + self.payload
        return b"\x00\x00\x00" + self.dst + self.payload

def main():
    fwd = "--fwd" in sys.argv
    a = [x for x in sys.argv[1:] if x != "--fwd"]
    proxy, ehost, eport, n = (a[0], int(a[1])), a[2], int(a[3]), int(a[4])
    want = 2 * n + 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    dst = b"\x01" + socket.inet_aton(ehost) + struct.pack(">H", eport)
    sel = selectors.DefaultSelector()
    started = busy = echoed = 0
    last = time.monotonic()
    while started < n or busy:
        while started < n and busy < 64:
            s = Assoc(proxy, fwd, dst)
            sel.register(s.t, selectors.EVENT_WRITE, s)
            started += 1
            busy += 1
        ev = sel.select(timeout=1)
        if ev:
            last = time.monotonic()
        elif time.monotonic() - last > 10:
            break
        for key, mask in ev:
            s = key.data
            try:
                if mask & selectors.EVENT_WRITE:
                    s.t.send(s.out)
                    sel.modify(s.t, selectors.EVENT_READ, s)
                    continue
                d = key.fileobj.recv(65536)
                if not d:
                    raise OSError("closed")
                if key.fileobj is s.t:
                    s.inb += d
                if s.u is None:
                    # 05 00, then VER REP RSV ATYP=1 ADDR(4) PORT(2)
                    if len(s.inb) < 12:
                        continue
                    if s.inb[:4] != b"\x05\x00\x05\x00":
                        raise OSError("refused")
                    relay = (socket.inet_ntoa(s.inb[6:10]), struct.unpack(">H", s.inb[10:12])[0])
                    s.inb = s.inb[12:]
                    if fwd:
                        s.u = s.t
                        s.t.setblocking(True)
                        s.t.sendall(s.frame())
                        s.t.setblocking(False)
                    else:
                        s.u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                        s.u.connect(relay)
                        s.u.send(s.frame())
                        sel.unregister(s.t)
                        sel.register(s.u, selectors.EVENT_READ, s)
                    continue
                if (s.inb if fwd else d).endswith(s.payload):
                    sel.unregister(key.fileobj)
                    busy -= 1
                    echoed += 1
                    keep.append(s)
            except OSError:
                try:
                    sel.unregister(key.fileobj)
                except (KeyError, ValueError):
                    pass
                s.t.close()
                busy -= 1
    held = sum(1 for s in keep if s.t.fileno() >= 0)
    print("held %d echoed %d" % (held, echoed), flush=True)
    sys.stdin.read()
    print("closed", flush=True)

keep = []
if __name__ == "__main__":
    main()
