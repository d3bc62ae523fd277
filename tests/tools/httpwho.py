#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""httpwho.py ADDR PORT: an HTTP server that answers every GET with the address it was connected from.

For tests that tell outbounds apart by their source address (bind-address, per-user routes).
Threaded, so held connections do not stall the next one; IPv6 when ADDR has a ':'.
"""
import http.server, socket, socketserver, sys


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = self.client_address[0].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    address_family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET


S((sys.argv[1], int(sys.argv[2])), H).serve_forever()
