#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A raw HTTP/1.1 client for the proxy tests: exact bytes out, one response at a time back.

httpraw.py HOST PORT STEP...
  send TEXT     send TEXT with \\r \\n \\t \\\\ and \\xHH escapes decoded
  read          read one response: its head, then Content-Length octets (or to the close when it
                has no length); print "status N", then "body TEXT" (the body, one line)
  eof SECONDS   print "eof" if the proxy closes the connection within SECONDS, else "open"
"""
import socket, sys


def unescape(s):
    return s.encode("latin-1").decode("unicode_escape").encode("latin-1")


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    s = socket.create_connection((host, port), timeout=10)
    buf = b""
    steps = sys.argv[3:]
    i = 0
    while i < len(steps):
        step = steps[i]
        if step == "send":
            s.sendall(unescape(steps[i + 1]))
            i += 2
            continue
        if step == "read":
            while b"\r\n\r\n" not in buf:
                d = s.recv(65536)
                if not d:
                    print("closed")
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            print("status", lines[0].split(b" ")[1].decode())
            length = None
            for l in lines[1:]:
                k, _, v = l.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
                if k.strip().lower() == b"connection":
                    print("connection", v.strip().decode())
            if length is None:
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    buf += d
                body, buf = buf, b""
            else:
                while len(buf) < length:
                    d = s.recv(65536)
                    if not d:
                        break
                    buf += d
                body, buf = buf[:length], buf[length:]
            print("body", body.decode("latin-1").replace("\n", " "))
            i += 1
            continue
        if step == "eof":
            s.settimeout(float(steps[i + 1]))
            try:
                print("eof" if s.recv(1) == b"" else "open")
            except socket.timeout:
                print("open")
            i += 2
            continue
        sys.exit("unknown step " + step)


main()
