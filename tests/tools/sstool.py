#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""sstool: an independent Shadowsocks TCP encoder/decoder for the tests (test-only).

Written from the specs (shadowsocks-org aead.md for SIP004/SIP007, sip022.md,
sip023.md), not from spliced's code: python3-cryptography for AES-GCM,
ChaCha20-Poly1305, HKDF-SHA1 and AES blocks, python3-nacl for
XChaCha20-Poly1305, and Debian's b3sum for BLAKE3. No Debian peer speaks
Shadowsocks 2022, so this is what checks spliced's 2022 framing from outside.

  sstool.py client HOST PORT -m METHOD -k KEY -t HOST:PORT [options]
      one request to a Shadowsocks server: sends the payload (--send FILE or
      --send-len N of a fixed pattern) in the first flight, reads the
      response, prints "OK got N bytes" when the response is valid and
      (with --expect-echo) equals what was sent.
  sstool.py server HOST PORT -m METHOD -k KEY [--users FILE] [-t HOST:PORT]
      one connection from a Shadowsocks client: decodes its request (checks
      the target with -t), then echoes the payload back as a response
      stream; prints "OK echoed N bytes".
  sstool.py vector -m METHOD -k KEY --salt HEX [...] : a request stream with
      a fixed salt (and timestamp) as hex, for unit-test vectors.
  sstool.py probe HOST PORT --lengths A-B --timeout S : garbage of every
      length A..B on as many connections at once; checks that none gets a
      byte back and each ends with a FIN at S seconds (+-10%).
  sstool.py flight ... --save FILE / --replay FILE : record a client's first
      flight, then replay it (a replay must be refused).

KEY is the password (AEAD) or a base64 PSK, for 2022 clients a list
"iPSK:...:uPSK". Exit 0 only when everything checked out.
"""
import argparse
import base64
import hashlib
import os
import selectors
import socket
import struct
import subprocess
import sys
import time

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

# name: (key length = salt length, cipher, 2022?)
METHODS = {
    "aes-128-gcm": (16, "aesgcm", False),
    "aes-256-gcm": (32, "aesgcm", False),
    "chacha20-ietf-poly1305": (32, "chacha", False),
    "xchacha20-ietf-poly1305": (32, "xchacha", False),
    "2022-blake3-aes-128-gcm": (16, "aesgcm", True),
    "2022-blake3-aes-256-gcm": (32, "aesgcm", True),
    "2022-blake3-chacha20-poly1305": (32, "chacha", True),
}
TAG = 16


def b3(args, data):
    return bytes.fromhex(subprocess.run(["b3sum", "--no-names"] + args, input=data,
                                        capture_output=True, check=True).stdout.split()[0].decode())


def derive_key(context, material, n):
    return b3(["--derive-key", context, "-l", str(n)], material)


def blake3_hash(data, n):
    return b3(["-l", str(n)], data)


def evp_bytes_to_key(password, n):
    # OpenSSL EVP_BytesToKey(MD5, no salt, 1 iteration), as aead.md says.
    out, d = b"", b""
    while len(out) < n:
        d = hashlib.md5(d + password).digest()
        out += d
    return out[:n]


class Aead:
    """One direction of a stream: a subkey and the little-endian counter nonce."""

    def __init__(self, kind, key):
        self.kind, self.key, self.n = kind, key, 0
        self.nlen = 24 if kind == "xchacha" else 12
        if kind == "aesgcm":
            self.c = AESGCM(key)
        elif kind == "chacha":
            self.c = ChaCha20Poly1305(key)

    def _nonce(self):
        nonce = self.n.to_bytes(self.nlen, "little")
        self.n += 1
        return nonce

    def seal(self, pt):
        nonce = self._nonce()
        if self.kind == "xchacha":
            from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_encrypt as enc
            return enc(pt, None, nonce, self.key)
        return self.c.encrypt(nonce, pt, None)

    def open(self, ct):
        nonce = self._nonce()
        if self.kind == "xchacha":
            from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_decrypt as dec
            return dec(ct, None, nonce, self.key)
        return self.c.decrypt(nonce, ct, None)


class Method:
    def __init__(self, name, key_text):
        self.name = name
        self.klen, self.kind, self.v2022 = METHODS[name]
        if self.v2022:
            keys = [base64.b64decode(k, validate=True) for k in key_text.split(":")]
            assert all(len(k) == self.klen for k in keys), "PSK of the wrong length"
            self.ipsks, self.key = keys[:-1], keys[-1]
        else:
            self.ipsks, self.key = [], evp_bytes_to_key(key_text.encode(), self.klen)

    def subkey(self, key, salt):
        if self.v2022:  # sip022.md 2.2
            return derive_key("shadowsocks 2022 session subkey", key + salt, self.klen)
        # aead.md: HKDF_SHA1(key, salt, "ss-subkey")
        return HKDF(hashes.SHA1(), self.klen, salt, b"ss-subkey").derive(key)

    def aead(self, key, salt):
        return Aead(self.kind, self.subkey(key, salt))


def socks_addr(target):
    host, port = target.rsplit(":", 1)
    host = host.strip("[]")
    for fam, atyp in ((socket.AF_INET, 1), (socket.AF_INET6, 4)):
        try:
            return bytes([atyp]) + socket.inet_pton(fam, host) + struct.pack(">H", int(port))
        except OSError:
            pass
    return bytes([3, len(host)]) + host.encode() + struct.pack(">H", int(port))


def parse_addr(b):
    if b[0] == 1:
        n = 1 + 4 + 2
        host = socket.inet_ntop(socket.AF_INET, b[1:5])
    elif b[0] == 4:
        n = 1 + 16 + 2
        host = "[" + socket.inet_ntop(socket.AF_INET6, b[1:17]) + "]"
    elif b[0] == 3:
        n = 2 + b[1] + 2
        host = b[2:2 + b[1]].decode()
    else:
        raise ValueError("bad ATYP %d" % b[0])
    return "%s:%d" % (host, struct.unpack(">H", b[n - 2:n])[0]), n


def chunks(a, data, limit):
    """Length and payload chunks (aead.md, sip022.md 3.1.2)."""
    out = []
    for i in range(0, len(data), limit):
        piece = data[i:i + limit]
        out += [a.seal(struct.pack(">H", len(piece))), a.seal(piece)]
    return b"".join(out)


def request(m, target, payload, salt=None, ts=None, pad=None, first=None, addr_chunk=0x3FFF):
    """A client's first flight and the AEAD it continues with."""
    salt = salt if salt is not None else os.urandom(m.klen)
    a = m.aead(m.key, salt)
    if not m.v2022:
        first = payload[:0x3FFF] if first is None else first
        out = salt + chunks(a, socks_addr(target), addr_chunk) + chunks(a, first, 0x3FFF)
        return out, a, salt, len(first)
    # sip023.md: one identity header per iPSK, between the salt and the chunks
    eih = b""
    for i, ipsk in enumerate(m.ipsks):
        nxt = m.ipsks[i + 1] if i + 1 < len(m.ipsks) else m.key
        isk = derive_key("shadowsocks 2022 identity subkey", ipsk + salt, m.klen)
        enc = Cipher(algorithms.AES(isk), modes.ECB()).encryptor()
        eih += enc.update(blake3_hash(nxt, 16)) + enc.finalize()
    # as much as the variable header holds (its length is 16 bits); padding only when short
    first = payload[:0xFFFF - len(socks_addr(target)) - 2] if first is None else first
    # sip022.md 3.1.4: pad when there is little or no payload (--pad: how much then)
    if len(first) >= 900:
        pad = 0
    elif pad is None:
        pad = 1 + os.urandom(1)[0] % 200
    var = socks_addr(target) + struct.pack(">H", pad) + bytes(pad) + first
    ts = int(time.time()) if ts is None else ts
    fixed = bytes([0]) + struct.pack(">QH", ts, len(var))
    return salt + eih + a.seal(fixed) + a.seal(var), a, salt, len(first)


class Reader:
    def __init__(self, sock, timeout):
        self.s, self.b, self.off = sock, bytearray(), 0
        self.s.settimeout(timeout)

    @property
    def buf(self):
        return len(self.b) - self.off

    def need(self, n):
        while len(self.b) - self.off < n:
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError("EOF after %d of %d bytes" % (len(self.b) - self.off, n))
            self.b += d
        out = bytes(self.b[self.off:self.off + n])
        self.off += n
        if self.off > 1 << 20:
            del self.b[:self.off]
            self.off = 0
        return out


def read_chunks(m, a, r, first_len=None, want=None):
    """Payload chunks until EOF (or want bytes): the stream's plaintext."""
    got, n = [], 0
    length = first_len
    while want is None or n < want:
        if length is None:
            try:
                length = struct.unpack(">H", a.open(r.need(2 + TAG)))[0]
            except EOFError:
                if r.buf:
                    raise
                break
            if not m.v2022 and not 0 < length <= 0x3FFF:
                raise ValueError("bad AEAD chunk length %d" % length)
        got.append(a.open(r.need(length + TAG)))
        n += len(got[-1])
        length = None
    return b"".join(got)


def payload_of(args):
    if args.send:
        with open(args.send, "rb") as f:
            return f.read()
    return bytes((i * 7 + 3) & 0xFF for i in range(int(args.send_len)))


def cmd_client(args):
    """One request per --send-len value (a comma list): one line each."""
    rc = 0
    for n in str(args.send_len).split(","):
        args.send_len = int(n)
        rc = max(rc, client_once(args))
        sys.stdout.flush()
    return rc


def client_once(args):
    m = Method(args.method, args.key)
    data = payload_of(args)
    first, a, salt, used = request(m, args.target, data,
                                   ts=int(time.time()) + args.ts_offset, pad=args.pad,
                                   first=b"" if args.empty_first else None,
                                   addr_chunk=args.addr_chunk)
    s = socket.create_connection((args.host, args.port), timeout=args.timeout)
    s.sendall(first + chunks(a, data[used:], 0xFFFF if m.v2022 else 0x3FFF))
    if args.save:
        with open(args.save, "wb") as f:
            f.write(first)
    r = Reader(s, args.timeout)
    try:
        rsalt = r.need(m.klen)
    except (EOFError, socket.timeout) as e:
        print("NO-RESPONSE %s" % e)
        return 3
    ra = m.aead(m.key, rsalt)
    first_len = None
    if m.v2022:  # sip022.md 3.1.3: type 1, timestamp, request salt, length
        hdr = ra.open(r.need(1 + 8 + m.klen + 2 + TAG))
        typ, ts = hdr[0], struct.unpack(">Q", hdr[1:9])[0]
        if typ != 1:
            raise ValueError("response type %d" % typ)
        if abs(ts - time.time()) > 30:
            raise ValueError("response timestamp %d s off" % (ts - time.time()))
        if hdr[9:9 + m.klen] != salt:
            raise ValueError("the response does not echo the request salt")
        first_len = struct.unpack(">H", hdr[9 + m.klen:])[0]
    got = read_chunks(m, ra, r, first_len, len(data) if args.expect_echo else None)
    s.close()
    if args.expect_echo and got != data:
        print("MISMATCH got %d bytes, sent %d" % (len(got), len(data)))
        return 1
    print("OK got %d bytes" % len(got))
    return 0


def load_users(path, klen):
    users = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, key = line.replace(":", " ", 1).split(None, 1)
                k = base64.b64decode(key.strip(), validate=True)
                users[blake3_hash(k, 16)] = (name, k)
    return users


def cmd_server(args):
    m = Method(args.method, args.key)
    users = load_users(args.users, m.klen) if args.users else None
    ls = socket.create_server((args.host, args.port))
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % ls.getsockname()[1])
        os.rename(args.port_file + ".tmp", args.port_file)
    ls.settimeout(args.timeout)
    s, _ = ls.accept()
    r = Reader(s, args.timeout)
    salt = r.need(m.klen)
    key, who = m.key, None
    if m.v2022 and users is not None:
        isk = derive_key("shadowsocks 2022 identity subkey", m.key + salt, m.klen)
        dec = Cipher(algorithms.AES(isk), modes.ECB()).decryptor()
        uid = dec.update(r.need(16)) + dec.finalize()
        if uid not in users:
            raise ValueError("identity header of no known user")
        who, key = users[uid]
    a = m.aead(key, salt)
    if m.v2022:
        fixed = a.open(r.need(11 + TAG))
        ts = struct.unpack(">Q", fixed[1:9])[0]
        if fixed[0] != 0 or abs(ts - time.time()) > 30:
            raise ValueError("bad request header type %d or timestamp %d" % (fixed[0], ts))
        var = a.open(r.need(struct.unpack(">H", fixed[9:])[0] + TAG))
        target, n = parse_addr(var)
        pad = struct.unpack(">H", var[n:n + 2])[0]
        first = var[n + 2 + pad:]
        if not first and not pad:
            raise ValueError("neither payload nor padding")
    else:
        addr = read_chunks(m, a, r, None, 1)
        while True:  # the address may span chunks
            try:
                target, n = parse_addr(addr)
                if len(addr) >= n:
                    break
            except (IndexError, struct.error, UnicodeDecodeError):
                pass
            addr += read_chunks(m, a, r, None, 1)
        first = addr[n:]
    if args.target and target != args.target:
        raise ValueError("target %s, expected %s" % (target, args.target))
    want = args.expect_len
    data = first + read_chunks(m, a, r, None, None if want is None else want - len(first))
    s.sendall(response(m, key, os.urandom(m.klen), salt, data, int(time.time())))
    s.shutdown(socket.SHUT_WR)
    r.s.settimeout(args.timeout)
    while s.recv(65536):
        pass
    s.close()
    print("OK echoed %d bytes target %s%s" % (len(data), target, " user " + who if who else ""))
    return 0


def response(m, key, rsalt, req_salt, data, ts):
    """A server's response stream (aead.md; sip022.md 3.1.3: the header is the first length)."""
    ra = m.aead(key, rsalt)
    if not m.v2022:
        return rsalt + chunks(ra, data, 0x3FFF)
    head, rest = data[:0xFFFF], data[0xFFFF:]
    hdr = bytes([1]) + struct.pack(">Q", ts) + req_salt + struct.pack(">H", len(head))
    return rsalt + ra.seal(hdr) + ra.seal(head) + chunks(ra, rest, 0xFFFF)


def cmd_vector(args):
    m = Method(args.method, args.key)
    data = payload_of(args)
    if args.response:
        print(response(m, m.key, bytes.fromhex(args.salt), bytes.fromhex(args.response), data,
                       args.ts).hex())
        return 0
    out, a, salt, used = request(m, args.target, data, salt=bytes.fromhex(args.salt),
                                 ts=args.ts, pad=args.pad)
    out += chunks(a, data[used:], 0xFFFF if m.v2022 else 0x3FFF)
    print(out.hex())
    return 0


def cmd_probe(args):
    """Garbage of each length on its own connection, all at once; then watch how each ends."""
    lo, hi = (int(x) for x in args.lengths.split("-"))
    sel = selectors.DefaultSelector()
    conns = {}
    t0 = time.monotonic()
    for n in range(lo, hi + 1):
        s = socket.create_connection((args.host, args.port))
        s.setblocking(False)
        s.send(os.urandom(n))
        conns[s] = {"n": n, "t": time.monotonic(), "end": None, "got": 0, "more": False}
        sel.register(s, selectors.EVENT_READ)
    deadline = t0 + args.timeout * 2 + 2
    while any(c["end"] is None for c in conns.values()) and time.monotonic() < deadline:
        now = time.monotonic()
        for s, c in conns.items():
            # Half-way, more garbage: a server that stopped reading would end with a RST.
            if not c["more"] and now - c["t"] > args.timeout / 2 and c["end"] is None:
                try:
                    s.send(os.urandom(512))
                except OSError:
                    pass
                c["more"] = True
        for key, _ in sel.select(0.05):
            s, c = key.fileobj, conns[key.fileobj]
            try:
                d = s.recv(4096)
                if d:
                    c["got"] += len(d)
                    continue
                c["end"] = ("fin", time.monotonic() - c["t"])
            except ConnectionResetError:
                c["end"] = ("rst", time.monotonic() - c["t"])
            except BlockingIOError:
                continue
            sel.unregister(s)
    bad, times = [], []
    for s, c in conns.items():
        end = c["end"] or ("open", None)
        ok = end[0] == "fin" and c["got"] == 0 and abs(end[1] - args.timeout) <= 0.1 * args.timeout
        if end[1] is not None:
            times.append(end[1])
        if not ok:
            bad.append("len %d: %s after %s s, %d bytes back" % (c["n"], end[0], end[1], c["got"]))
        s.close()
    times.sort()
    print("PROBE %d connections, %d bad; close after %.3f..%.3f s (median %.3f)" % (
        len(conns), len(bad), times[0] if times else -1, times[-1] if times else -1,
        times[len(times) // 2] if times else -1))
    for b in bad[:10]:
        print("  " + b)
    return 1 if bad else 0


def cmd_flight(args):
    """Send a recorded first flight (a replay) and report whether anything comes back."""
    with open(args.replay, "rb") as f:
        data = f.read()
    s = socket.create_connection((args.host, args.port), timeout=args.timeout)
    s.sendall(data)
    s.settimeout(args.timeout)
    try:
        d = s.recv(4096)
        print("GOT %d bytes" % len(d) if d else "EOF")
        return 0 if d else 3
    except socket.timeout:
        print("NO-RESPONSE timeout")
        return 3
    except ConnectionResetError:
        print("RST")
        return 4


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("cmd", choices=["client", "server", "vector", "probe", "flight"])
    p.add_argument("host", nargs="?", default="127.0.0.1")
    p.add_argument("port", nargs="?", type=int, default=0)
    p.add_argument("-m", "--method", default="aes-128-gcm")
    p.add_argument("-k", "--key", default="")
    p.add_argument("-t", "--target", default="")
    p.add_argument("--send")
    p.add_argument("--send-len", default="1000", help="bytes; client: a comma list, a request each")
    p.add_argument("--expect-echo", action="store_true")
    p.add_argument("--expect-len", type=int)
    p.add_argument("--empty-first", action="store_true", help="no payload in the first flight")
    p.add_argument("--addr-chunk", type=int, default=0x3FFF,
                   help="AEAD: the target address in chunks of this many bytes")
    p.add_argument("--ts-offset", type=int, default=0)
    p.add_argument("--ts", type=int)
    p.add_argument("--pad", type=int)
    p.add_argument("--salt")
    p.add_argument("--response", metavar="REQUEST_SALT_HEX",
                   help="vector: the server's response stream to that request")
    p.add_argument("--users")
    p.add_argument("--port-file")
    p.add_argument("--save")
    p.add_argument("--replay")
    p.add_argument("--lengths", default="1-600")
    p.add_argument("--timeout", type=float, default=10)
    args = p.parse_args()
    try:
        return {"client": cmd_client, "server": cmd_server, "vector": cmd_vector,
                "probe": cmd_probe, "flight": cmd_flight}[args.cmd](args)
    except Exception as e:  # a failed check is a line, not a traceback
        print("ERROR %s: %s" % (type(e).__name__, e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
