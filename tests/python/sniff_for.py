"""Counts the packets on a network interface that carry a byte string, for a while.

  sniff_for.py IFACE SECONDS NEEDLE_HEX [READY_FILE]

Reads every frame on IFACE (an AF_PACKET socket: root, and best in a network namespace of the
test's own, where no other traffic passes) for SECONDS or until SIGTERM, and prints how many contain the bytes
NEEDLE_HEX. READY_FILE is created once the socket listens, so that a test starts its traffic
after. A test of what crosses the wire: the socket ring's chunk headers start with a magic that
plain TCP shows and TLS must not.
"""
import signal
import socket
import sys
import time

iface, seconds, needle = sys.argv[1], float(sys.argv[2]), bytes.fromhex(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
s.bind((iface, 0))
s.settimeout(0.2)
if len(sys.argv) > 4:
    open(sys.argv[4], "w").close()
found = frames = 0
end = time.monotonic() + seconds


def stop(*_):
    global end
    end = 0


signal.signal(signal.SIGTERM, stop)
while time.monotonic() < end:
    try:
        frame = s.recv(1 << 17)
    except socket.timeout:
        continue
    frames += 1
    if needle in frame:
        found += 1
print(f"{found} {frames}")
