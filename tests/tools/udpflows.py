#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Many UDP client endpoints at once, for the session tests of front ends keyed by endpoint.

udpflows.py echo HOST PORT
    A UDP echo server that appends the sender's port (2 octets, network order) to each
    reply, so a client learns which source port (which relay session) carried it.

udpflows.py client HOST PORT N
    Opens N UDP sockets (N client endpoints), sends one datagram from each to HOST:PORT (at
    most 256 unanswered, each resent after 1 s, 5 tries) and records the port the echo saw.
    Prints "held H" (H: sockets answered), then reads commands from stdin, one a line:
      ask A B   one more datagram from sockets A..B-1; prints "same S of T": T answered,
                S of them carried by the same source port as their first (the same session)
      new K     K more sockets, one datagram each; prints "new E" (E answered)
      late A B  prints "late L of T": L of sockets A..B-1 needed a resend for their first
                answer, so their session may have begun (or been touched) after later
                sockets' and an idlest-first eviction may rightly have spared it
    and exits when stdin closes.
"""
import os, resource, select, socket, struct, sys, time


def echo(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((host, port))
    print("ready", flush=True)
    while True:
        d, a = s.recvfrom(2048)
        s.sendto(d + struct.pack(">H", a[1]), a)


def send(s, p, dst):
    try:
        s.sendto(p, dst)
    except OSError:
        pass  # a full buffer: the resend after 1 s tries again


class Flows:
    def __init__(self, dst):
        self.dst = dst
        self.socks = []
        self.port = []  # what the echo saw for each socket's first datagram (None: no answer)
        self.late = []  # the first answer needed a resend
        self.ep = select.epoll()

    def open(self, k):
        for _ in range(k):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setblocking(False)
            s.bind(("0.0.0.0", 0))
            self.socks.append(s)
            self.port.append(None)
            self.late.append(False)

    def ask(self, idx):
        """One datagram from each socket in idx: ({index: port the echo saw}, {indexes resent})."""
        todo, seen, busy, by_fd, resent = list(idx), {}, {}, {}, set()
        todo.reverse()
        while todo or busy:
            now = time.monotonic()
            while todo and len(busy) < 256:
                i = todo.pop()
                s = self.socks[i]
                p = os.urandom(8)
                busy[i] = [p, now, 1]
                by_fd[s.fileno()] = i
                self.ep.register(s.fileno(), select.EPOLLIN)
                send(s, p, self.dst)
            for fd, _ in self.ep.poll(0.2):
                i = by_fd[fd]
                try:
                    d = self.socks[i].recv(2048)
                except BlockingIOError:
                    continue
                if i in busy and d[:8] == busy[i][0] and len(d) == 10:
                    seen[i] = struct.unpack(">H", d[8:])[0]
                    del busy[i]
                    self.ep.unregister(fd)
            now = time.monotonic()
            for i, b in list(busy.items()):
                if now - b[1] < 1:
                    continue
                if b[2] == 5:
                    del busy[i]
                    self.ep.unregister(self.socks[i].fileno())
                    continue
                b[1], b[2] = now, b[2] + 1
                resent.add(i)
                send(self.socks[i], b[0], self.dst)
        return seen, resent

    def first(self, k):
        """k new sockets, one datagram each; records their ports and which needed a resend."""
        start = len(self.socks)
        self.open(k)
        seen, resent = self.ask(range(start, len(self.socks)))
        for i, p in seen.items():
            self.port[i] = p
        for i in resent:
            self.late[i] = True
        return len(seen)


def client(host, port, n):
    want = n * 2 + 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    f = Flows((host, port))
    print("held %d" % f.first(n), flush=True)
    for line in sys.stdin:
        w = line.split()
        if w and w[0] == "ask":
            a, b = int(w[1]), int(w[2])
            seen, _ = f.ask(range(a, b))
            same = sum(1 for i, p in seen.items() if p == f.port[i])
            print("same %d of %d" % (same, len(seen)), flush=True)
        elif w and w[0] == "new":
            print("new %d" % f.first(int(w[1])), flush=True)
        elif w and w[0] == "late":
            a, b = int(w[1]), int(w[2])
            print("late %d of %d" % (sum(f.late[a:b]), b - a), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "echo":
        echo(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "client":
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
