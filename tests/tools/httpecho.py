#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An HTTP/1.1 origin for the forwarding tests: answers every request with a JSON description.

httpecho.py ADDR PORT LOGFILE
Each request's line is appended to LOGFILE as it arrives. The answer (200, Content-Length) is
{"method", "path", "version", "len", "sha256", "client", "headers": {lowercased name: value}}
of the request it got, its body read by Content-Length or chunked framing. HEAD gets the head
only. The request line "GET /close" answers without a length and closes (a close-delimited body).
"""
import hashlib, http.server, json, socket, socketserver, sys


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(n)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def answer(self):
        with open(sys.argv[3], "a") as f:
            f.write(self.requestline + "\n")
        d = self.body()
        info = {"method": self.command, "path": self.path, "version": self.request_version,
                "len": len(d), "sha256": hashlib.sha256(d).hexdigest(),
                "client": self.client_address[0],
                "headers": {k.lower(): v for k, v in self.headers.items()}}
        b = json.dumps(info).encode()
        self.send_response(200)
        if self.path == "/close":
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b)
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(b)

    do_GET = do_POST = do_PUT = do_DELETE = do_OPTIONS = do_PATCH = do_HEAD = answer

    def log_message(self, *a):
        pass


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    address_family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET


S((sys.argv[1], int(sys.argv[2])), H).serve_forever()
