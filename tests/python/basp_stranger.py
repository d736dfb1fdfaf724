"""A stranger to a troupe port who speaks CAF 0.17's BASP handshake (no token: CAF's own
handshake asks for none), then misbehaves in one of two ways:
    basp_stranger.py forged PORT
        sends one message frame whose message id claims a CAF stream, addressed to actor 7 (the
        published gatekeeper): before troupe closed such frames, CAF's mailbox read stream
        content the message did not hold and the coordinator died of a segmentation fault.
        Exits 0 once the port closed the connection.
    basp_stranger.py hold PORT COUNT SECONDS
        opens COUNT connections through the handshake and keeps each alive with heartbeats,
        never joining: they held the coordinator's descriptors for ever. Exits 0 when the port
        closed every one of them within SECONDS.
"""
import os
import socket
import struct
import sys
import time

HEADER = ">BBBBIQQQ"  # operation, padding, padding, flags, payload_len, operation_data, src, dst
HEARTBEAT = struct.pack(HEADER, 6, 0, 0, 0, 0, 0, 0, 0)


def read_exactly(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def through_handshake(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    header = read_exactly(s, 32)  # the server's handshake, then its payload
    read_exactly(s, struct.unpack(HEADER, header)[4])
    # A node id as CAF 0.17 writes one (its type tag, a process id and a 20-byte host id).
    node = bytes.fromhex("00003e9aab9bac79") + struct.pack(">I", os.getpid()) + os.urandom(20)
    s.sendall(struct.pack(HEADER, 1, 0, 0, 0, len(node), 3, 0, 0) + node)  # client handshake
    return s


def closed(s):
    try:
        s.setblocking(False)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def forged(port):
    s = through_handshake(port)
    downstream = 3 << 60  # a message id in the downstream category
    payload = bytes.fromhex("0000000000000001")
    s.sendall(struct.pack(HEADER, 2, 0, 0, 2, len(payload), downstream | 0x13, 0, 7) + payload)
    deadline = time.time() + 10
    while time.time() < deadline:
        if closed(s):
            return 0
        time.sleep(0.1)
    return "the connection stayed open after a forged stream frame"


def hold(port, count, seconds):
    socks = []
    for _ in range(count):
        try:
            socks.append(through_handshake(port))
        except OSError:  # refused at once: too many already pending
            pass
    deadline = time.time() + seconds
    while time.time() < deadline and socks:
        time.sleep(1)
        alive = []
        for s in socks:
            if closed(s):
                s.close()
                continue
            try:
                s.sendall(HEARTBEAT)
                alive.append(s)
            except OSError:
                s.close()
        socks = alive
    if socks:
        return f"{len(socks)} of {count} connections still open after {seconds} s"
    return 0


if sys.argv[1] == "forged":
    sys.exit(forged(int(sys.argv[2])))
sys.exit(hold(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
