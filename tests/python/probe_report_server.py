#!/usr/bin/python3
"""Probes a running `troupe report --serve` as a hostile client would (issue 39, rows 4 and 6)
and exits non-zero naming each bound that did not hold: slow clients (slowloris: a header line
every 2 s on 8 connections) must not stall other requests and must be cut after the head time
bound; a 1 MiB header is answered 431; a body (a POST, or a GET announcing 6 GB) is refused
unread; one address gets at most its connection cap; the pages still answer afterwards.
  probe_report_server.py URL SERVER_PID
"""
import re
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

url, server_pid = sys.argv[1], int(sys.argv[2])
host, port = re.match(r"http://([^:/]+):(\d+)/", url).groups()
port = int(port)
problems = []


def get(path="/"):
    """(status, seconds) of one GET."""
    start = time.time()
    try:
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=5) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except Exception as e:  # a timeout or a refused connection
        status = repr(e)
    return status, time.time() - start


def first_line(s):
    try:
        return s.recv(200).split(b"\r\n")[0].decode()
    except Exception as e:
        return repr(e)


def rss_kb():
    with open(f"/proc/{server_pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


if get()[0] != 200:
    problems.append(f"the page does not answer before the probes: {get()}")
rss_before = rss_kb()

# Slowloris: 8 connections, a header line every 2 s, never ending their heads.
stop = threading.Event()
slow = []


def drip(s):
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        while not stop.is_set():
            time.sleep(2)
            s.sendall(b"X-Drip: 1\r\n")
    except OSError:
        pass


for _ in range(8):
    s = socket.create_connection((host, port))
    slow.append(s)
    threading.Thread(target=drip, args=(s,), daemon=True).start()
time.sleep(3)
during = [get() for _ in range(3)]
if any(status != 200 or seconds > 2 for status, seconds in during):
    problems.append(f"requests during slowloris: {during}")
time.sleep(9)  # past the 10 s head bound
cut = 0
for s in slow:
    s.settimeout(0.5)
    try:
        cut += s.recv(100) == b""
    except (ConnectionResetError, BrokenPipeError):
        cut += 1
    except socket.timeout:
        pass
stop.set()
if cut != len(slow):
    problems.append(f"{len(slow) - cut} of {len(slow)} slow connections still open after 12 s")

# A 1 MiB header.
s = socket.create_connection((host, port))
s.settimeout(5)
try:
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
except OSError:
    pass  # the server may close before it all went
answer = first_line(s)
if " 431 " not in answer:
    problems.append(f"a 1 MiB header: {answer}")

# Bodies: refused unread.
for request in (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6000000000\r\n\r\n",
                b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 6000000000\r\n\r\n"):
    s = socket.create_connection((host, port))
    s.settimeout(5)
    s.sendall(request + b"a" * 100000)
    answer = first_line(s)
    if " 405 " not in answer and " 413 " not in answer:
        problems.append(f"{request.split(b' ')[0].decode()} with a 6 GB body: {answer}")

# One address holds at most its cap of connections.
held = []
for _ in range(40):
    try:
        held.append(socket.create_connection((host, port), timeout=2))
    except OSError:
        break
time.sleep(0.5)
open_ones = 0
for s in held:
    s.settimeout(0.2)
    try:
        open_ones += s.recv(10) != b""
    except socket.timeout:
        open_ones += 1
    except OSError:
        pass
for s in held:
    s.close()
if open_ones > 16:
    problems.append(f"{open_ones} idle connections from one address kept open (cap 16)")

time.sleep(0.5)
after = [get(), get("/version"), get("/../etc/passwd")]
if [a[0] for a in after] != [200, 200, 404]:
    problems.append(f"after the probes: {after}")
grown = rss_kb() - rss_before
if grown > 64 << 10:
    problems.append(f"the server grew by {grown} KB")

for p in problems:
    print("FAIL:", p)
print(f"probe_report_server: {len(problems)} problem(s); slow connections cut {cut}/8, "
      f"idle ones kept {open_ones}/40, server growth {grown} KB")
sys.exit(1 if problems else 0)
