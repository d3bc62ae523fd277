#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""GET /metrics from spliced N times, one connection each, and check every answer.

scrape.py HOST PORT N OUT
Each answer must be 200 with the text format's Content-Type and a body whose every line is a
comment or "name{labels} value"; the last body goes to OUT. Prints "ok N" or the first problem
(exit 1).
"""
import re, socket, sys

SAMPLE = re.compile(rb'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [0-9]+$')


def get(host, port):
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: spliced\r\nUser-Agent: scrape.py\r\n\r\n")
    buf = b""
    while True:
        d = s.recv(1 << 16)
        if not d:
            break
        buf += d
    s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    if not lines[0].startswith(b"HTTP/1.1 200 "):
        raise ValueError("status line %r" % lines[0])
    hdr = {k.strip().lower(): v.strip() for k, _, v in (l.partition(b":") for l in lines[1:])}
    if hdr.get(b"content-type") != b"text/plain; version=0.0.4; charset=utf-8":
        raise ValueError("content-type %r" % hdr.get(b"content-type"))
    if int(hdr.get(b"content-length", b"-1")) != len(body):
        raise ValueError("content-length %r, body %d" % (hdr.get(b"content-length"), len(body)))
    for l in body.split(b"\n")[:-1]:
        if not l.startswith(b"#") and not SAMPLE.match(l):
            raise ValueError("line %r" % l)
    return body


def main():
    host, port, n, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    body = b""
    for i in range(n):
        try:
            body = get(host, port)
        except Exception as e:  # noqa: BLE001 - any failure is the answer
            print("scrape %d failed: %s" % (i + 1, e))
            sys.exit(1)
    with open(out, "wb") as f:
        f.write(body)
    print("ok", n)


main()
