#!/usr/bin/env python3
"""Write calls per request with the access log off, on, and buffered: load-independent.

Starts build/lfhttpd (BUILD) under `strace -f -c` (only write, writev and sendmsg are traced),
sends REQUESTS requests (default 20,000) one after the other over one keep-alive connection,
stops the server with SIGTERM (a drain, so buffers are written) and prints, per configuration,
the calls per request strace counted and the lines the log holds. Counts, not times: the
result does not depend on the machine's load.

    python3 bench/log_writes.py [REQUESTS]"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", os.path.join(REPO, "build"))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
CONFIGS = [("log off", []),
           ("log on", ["access_log {log}"]),
           ("log on, access_log_buffer 64k", ["access_log {log}", "access_log_buffer 64k"])]


def run(name, lines, tmp):
    log = os.path.join(tmp, "access.log")
    if os.path.exists(log):
        os.unlink(log)
    conf = os.path.join(tmp, "bench.conf")
    with open(conf, "w") as f:
        f.write("root %s\nthreads 2\nuser root\n" % os.path.join(REPO, "www"))
        f.write("\n".join(l.format(log=log) for l in lines) + "\n")
    out = os.path.join(tmp, "strace.out")
    p = subprocess.Popen(["strace", "-f", "-c", "-o", out, "-e", "trace=write,writev,sendmsg",
                          os.path.join(BUILD, "lfhttpd"), "--config", conf,
                          "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE)
    port = None
    deadline = time.monotonic() + 30
    buf = b""
    while port is None and time.monotonic() < deadline:
        buf += p.stderr.read1(4096)
        m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", buf)
        port = int(m.group(1)) if m else None
    assert port, buf.decode(errors="replace")
    s = socket.create_connection(("127.0.0.1", port))
    request = b"GET /nothing-here HTTP/1.1\r\nHost: localhost\r\n\r\n"
    for _ in range(N):
        s.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(65536)
            assert chunk, "connection closed"
            head += chunk
        h, _, body = head.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", h).group(1))
        while len(body) < length:
            body += s.recv(65536)
    s.close()
    server = int(open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()[0])
    os.kill(server, signal.SIGTERM)   # the server, not strace: strace ends when it has exited
    p.wait(timeout=60)
    p.stderr.read()
    calls = {}
    for row in open(out):
        f = row.split()
        if f and f[-1] in ("write", "writev", "sendmsg"):
            calls[f[-1]] = int(f[3])  # % time, seconds, usecs/call, calls, [errors,] syscall
    nlines = sum(1 for _ in open(log)) if os.path.exists(log) else 0
    print("| %s | %s | %.4f | %d |" % (
        name, " ".join("%s %.4f" % (k, calls.get(k, 0) / N) for k in ("write", "writev", "sendmsg")),
        (calls.get("write", 0) + calls.get("writev", 0)) / N, nlines), flush=True)


def main():
    tmp = tempfile.mkdtemp(prefix="log-writes-")
    try:
        print("%d requests (404, keep-alive, one connection), 2 threads" % N)
        print("| configuration | calls per request | write+writev per request | lines in the log |")
        print("|---|---|---:|---:|")
        for name, lines in CONFIGS:
            run(name, lines, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
