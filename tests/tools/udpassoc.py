#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A SOCKS5 UDP ASSOCIATE client for the tests (RFC 1928 section 7), written from the RFC.

udpassoc.py PROXY-HOST PROXY-PORT CMD... [--user U --pass P] [--declare] [--fwd]
(--fwd: hev-socks5's FWD UDP (CMD 5) instead: each datagram is a frame on the TCP connection,
DATLEN(2) HDRLEN(1) = 3 + address length, ATYP ADDR PORT, DATA; only echo and raw apply.)
(--declare: the request names the UDP socket's own address and port; without it 0.0.0.0:0,
so the relay takes the port of the first datagram from the client's address.)
Commands, run in order on one association; each prints one line:
  echo HOST PORT SIZE       send SIZE random bytes to HOST:PORT, wait for the echo,
                            print "echo SIZE ok SRC" (SRC: the reply header's address) or "echo SIZE lost"
  raw HEX                   send these bytes as a whole datagram, print "raw sent"
  quiet SECONDS             print "quiet ok" if nothing arrives for SECONDS, else "quiet got N"
  foreign HOST PORT         send a valid echo request from another socket, print "foreign ok"
                            if neither socket hears back within 0.5 s
  close                     close the TCP connection, print "closed"
  tcp-eof SECONDS           print "tcp-eof" if spliced ends the TCP connection within SECONDS, else "tcp-open"
  after-close HOST PORT     send an echo request now, print "after-close lost" or "after-close answered"
First line: "assoc BND-HOST BND-PORT" or "rep N" (and exit 2) when refused.
"""
import ipaddress, os, socket, struct, sys

def addr_field(host, port):
    try:
        ip = ipaddress.ip_address(host)
        if ip.version == 4:
            return b"\x01" + ip.packed + struct.pack(">H", port)
        return b"\x04" + ip.packed + struct.pack(">H", port)
    except ValueError:
        h = host.encode()
        return b"\x03" + bytes([len(h)]) + h + struct.pack(">H", port)

def parse_addr(b):
    if b[0] == 1:
        return str(ipaddress.ip_address(b[1:5])), struct.unpack(">H", b[5:7])[0], 7
    if b[0] == 4:
        return str(ipaddress.ip_address(b[1:17])), struct.unpack(">H", b[17:19])[0], 19
    n = b[1]
    return b[2:2 + n].decode(), struct.unpack(">H", b[2 + n:4 + n])[0], 4 + n

def recv_exact(s, n):
    d = b""
    while len(d) < n:
        c = s.recv(n - len(d))
        if not c:
            raise EOFError
        d += c
    return d

def fwd_cmds(t, cmds):
    """UDP-in-TCP: frames written from the format's description."""
    t.settimeout(2)
    i = 0
    while i < len(cmds):
        c = cmds[i]
        if c == "echo":
            host, port, size = cmds[i + 1], int(cmds[i + 2]), int(cmds[i + 3]); i += 4
            data = os.urandom(size)
            a = addr_field(host, port)
            t.sendall(struct.pack(">HB", size, 3 + len(a)) + a + data)
            try:
                datlen, hdrlen = struct.unpack(">HB", recv_exact(t, 3))
                rest = recv_exact(t, hdrlen - 3 + datlen)
                h, p, n = parse_addr(rest)
                ok = n == hdrlen - 3 and rest[n:] == data
                print("echo %d %s %s:%d" % (size, "ok" if ok else "corrupt", h, p), flush=True)
            except (socket.timeout, EOFError):
                print("echo %d lost" % size, flush=True)
        elif c == "raw":
            t.sendall(bytes.fromhex(cmds[i + 1])); i += 2
            print("raw sent", flush=True)
        elif c == "eof":
            i += 1
            t.settimeout(3)
            try:
                print("eof" if t.recv(1) == b"" else "data", flush=True)
            except (socket.timeout, ConnectionResetError):
                print("eof" if c else "timeout", flush=True)
        else:
            print("unknown command %s" % c); sys.exit(2)

def main():
    args = sys.argv[1:]
    user = pw = None
    if "--user" in args:
        i = args.index("--user"); user = args[i + 1]; del args[i:i + 2]
    if "--pass" in args:
        i = args.index("--pass"); pw = args[i + 1]; del args[i:i + 2]
    declare = "--declare" in args
    if declare:
        args.remove("--declare")
    fwd = "--fwd" in args
    if fwd:
        args.remove("--fwd")
    phost, pport, cmds = args[0], int(args[1]), args[2:]
    fam = socket.AF_INET6 if ":" in phost else socket.AF_INET
    t = socket.socket(fam, socket.SOCK_STREAM)
    t.settimeout(5)
    t.connect((phost, pport))
    t.sendall(b"\x05\x01" + (b"\x02" if user else b"\x00"))
    m = recv_exact(t, 2)
    if user:
        if m[1] != 2:
            print("method %d" % m[1]); sys.exit(2)
        t.sendall(b"\x01" + bytes([len(user)]) + user.encode() + bytes([len(pw)]) + pw.encode())
        if recv_exact(t, 2)[1] != 0:
            print("auth refused"); sys.exit(2)
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0" if fam == socket.AF_INET else "::", 0))
    if declare:
        dh, dp = u.getsockname()[:2]
    else:
        dh, dp = ("0.0.0.0" if fam == socket.AF_INET else "::"), 0
    t.sendall((b"\x05\x05\x00" if fwd else b"\x05\x03\x00") + addr_field(dh, dp))
    r = recv_exact(t, 4)
    if r[1] != 0:
        print("rep %d" % r[1]); sys.exit(2)
    rest = recv_exact(t, 6 if r[3] == 1 else 18)
    bhost, bport, _ = parse_addr(bytes([r[3]]) + rest)
    print("assoc %s %d" % (bhost, bport), flush=True)
    relay = (bhost, bport)
    u.settimeout(2)
    if fwd:
        return fwd_cmds(t, cmds)
    i = 0
    while i < len(cmds):
        c = cmds[i]
        if c == "echo":
            host, port, size = cmds[i + 1], int(cmds[i + 2]), int(cmds[i + 3]); i += 4
            data = os.urandom(size)
            try:
                u.sendto(b"\x00\x00\x00" + addr_field(host, port) + data, relay)
                d, _ = u.recvfrom(70000)
                h, p, n = parse_addr(d[3:])
                ok = d[:3] == b"\x00\x00\x00" and d[3 + n:] == data
                print("echo %d %s %s:%d" % (size, "ok" if ok else "corrupt", h, p), flush=True)
            except (socket.timeout, OSError):
                print("echo %d lost" % size, flush=True)
        elif c == "raw":
            u.sendto(bytes.fromhex(cmds[i + 1]), relay); i += 2
            print("raw sent", flush=True)
        elif c == "quiet":
            secs = float(cmds[i + 1]); i += 2
            u.settimeout(secs)
            try:
                d, _ = u.recvfrom(70000)
                print("quiet got %d" % len(d), flush=True)
            except socket.timeout:
                print("quiet ok", flush=True)
            u.settimeout(2)
        elif c == "foreign":
            host, port = cmds[i + 1], int(cmds[i + 2]); i += 3
            f = socket.socket(fam, socket.SOCK_DGRAM)
            f.bind(("0.0.0.0" if fam == socket.AF_INET else "::", 0))
            f.settimeout(0.5)
            f.sendto(b"\x00\x00\x00" + addr_field(host, port) + b"x", relay)
            heard = 0
            for s in (f, u):
                s.settimeout(0.5)
                try:
                    s.recvfrom(70000); heard += 1
                except socket.timeout:
                    pass
            u.settimeout(2)
            print("foreign %s" % ("ok" if heard == 0 else "answered"), flush=True)
        elif c == "close":
            t.close(); i += 1
            print("closed", flush=True)
        elif c == "tcp-eof":
            secs = float(cmds[i + 1]); i += 2
            t.settimeout(secs)
            try:
                print("tcp-eof" if t.recv(1) == b"" else "tcp-data", flush=True)
            except socket.timeout:
                print("tcp-open", flush=True)
            except ConnectionResetError:
                print("tcp-eof", flush=True)
        elif c == "after-close":
            host, port = cmds[i + 1], int(cmds[i + 2]); i += 3
            u.settimeout(1)
            try:
                u.sendto(b"\x00\x00\x00" + addr_field(host, port) + b"late", relay)
                u.recvfrom(70000)
                print("after-close answered", flush=True)
            except (socket.timeout, ConnectionRefusedError):
                print("after-close lost", flush=True)
        else:
            print("unknown command %s" % c); sys.exit(2)

main()
