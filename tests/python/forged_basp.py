"""Speaks CAF 0.17's BASP handshake to a troupe port as a stranger would (no token: CAF's own
handshake asks for none), then sends one message frame whose message id claims a CAF stream
category, addressed to actor 7 (the published gatekeeper). Before troupe closed such frames,
CAF's mailbox read stream content the message did not hold and the coordinator died of a
segmentation fault. Exits 0 once the port closed the connection, 1 if it stayed open.
    forged_basp.py PORT
"""
import os
import socket
import struct
import sys

HEADER = ">BBBBIQQQ"  # operation, padding, padding, flags, payload_len, operation_data, src, dst


def read_exactly(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
header = read_exactly(s, 32)  # the server's handshake, then its payload
read_exactly(s, struct.unpack(HEADER, header)[4])
# A node id as CAF 0.17 writes one (its type tag, a process id and a 20-byte host id).
node = bytes.fromhex("00003e9aab9bac79") + struct.pack(">I", os.getpid()) + os.urandom(20)
s.sendall(struct.pack(HEADER, 1, 0, 0, 0, len(node), 3, 0, 0) + node)  # client handshake
downstream = 3 << 60  # a message id in the downstream category
payload = bytes.fromhex("0000000000000001")
s.sendall(struct.pack(HEADER, 2, 0, 0, 2, len(payload), downstream | 0x13, 0, 7) + payload)
try:
    while s.recv(4096):
        pass
except socket.timeout:
    sys.exit("the connection stayed open after a forged stream frame")
except ConnectionError:
    pass
