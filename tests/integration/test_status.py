"""Built-in handlers: /healthz, /server-status (HTML and ?json), /metrics."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from lib.browser import run_chromium
from lib.server import ConfServer, Conn, SCALE, Server, T, concurrency, get, raw_bytes, req
from lib.procs import status_json

THREADS = 3


def root_of(tmpdir):
    root = os.path.join(tmpdir, "root")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<!doctype html><title>t</title><p>" + "x" * 1000 + "\n")
    return root


def metrics_of(text):
    """Parse Prometheus text format strictly enough: {(name, labels): value}."""
    samples = {}
    typed = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert kind in ("counter", "gauge", "histogram"), line
            typed.add(name)
            if kind == "histogram":
                typed.update(name + s for s in ("_bucket", "_sum", "_count"))
            continue
        if line.startswith("# HELP ") or not line:
            continue
        m = re.match(r'^([a-z_][a-z0-9_]*)(\{[a-z_]+="[^"]*"(?:,[a-z_]+="[^"]*")*\})? '
                     r'([0-9]+(?:\.[0-9]+)?)$', line)
        assert m, "not a sample line: %r" % line
        assert m.group(1) in typed, "sample before its TYPE: %r" % line
        samples[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return samples


def test_health(tmpdir):
    srv = Server(root=root_of(tmpdir))
    r = get(srv, "/healthz")
    assert r.status == 200 and r.body == b"ok\n" and r.header("Cache-Control") == "no-store"
    assert get(srv, "/healthz", method="HEAD").status == 200
    assert get(srv, "/healthz", method="POST").status == 405
    assert get(srv, "/healthzz").status == 404
    # While draining: 503. A connection in the middle of a request survives the start of the
    # drain (idle ones are closed), so it can ask.
    with Conn(srv) as c:
        c.send(b"GET /healthz HTTP/1.1\r\n")
        time.sleep(0.1)
        srv.signal(signal.SIGTERM)
        time.sleep(0.2)
        c.send(b"Host: x\r\n\r\n")
        r = c.read_response()
    assert r.status == 503 and r.body == b"draining\n"
    assert srv.wait(T(5)) == 0


def test_status_json_consistent_with_load(tmpdir):
    srv = Server(root=root_of(tmpdir), threads=THREADS)
    before = status_json(srv)
    assert before["server"] == "lfhttpd" and before["draining"] is False
    pool = before["pool"]
    threads = THREADS + (concurrency() == "half-sync-half-async")   # + the reactor
    assert pool["threads"] == threads
    assert pool["leading"] + pool["processing"] + pool["following"] == threads
    assert pool["processing"] >= 1          # the thread answering this request
    assert len(before["workers"]) == threads
    n, body_bytes = 100, 0
    with Conn(srv) as c:
        for i in range(n):
            c.send(req("GET", "/index.html" if i % 2 else "/nope"))
            r = c.read_response()
            body_bytes += len(r.body)
    idle = [Conn(srv) for _ in range(5)]
    for c in idle:
        c.send(req("GET", "/index.html"))
        c.read_response()
    time.sleep(0.1)
    after = status_json(srv)
    for c in idle:
        c.close()
    assert after["requests"] - before["requests"] >= n + 5
    assert after["bytes_sent"] - before["bytes_sent"] >= body_bytes
    assert after["accepted"] - before["accepted"] >= 6
    assert after["pool"]["events"] > before["pool"]["events"]
    assert after["pool"]["concurrency"] == concurrency()
    if concurrency() != "half-sync-half-async":
        # a leader promotes at most one follower per wait (the reactor hands off every event)
        assert after["pool"]["waits"] >= after["pool"]["promotions"]
    assert after["pool"]["promotions"] + after["pool"]["no_follower"] >= \
        before["pool"]["promotions"] + before["pool"]["no_follower"] + n
    conns = after["connections"]
    assert conns["idle"] >= 5 and conns["active"] >= 1
    assert conns["open"] == sum(conns[k] for k in conns if k != "open")
    assert after["uptime"] >= 0 and after["file_cache"]["hits"] >= 40
    assert sum(w["requests"] for w in after["workers"]) == after["requests"]
    assert sum(w["events"] for w in after["workers"]) == after["pool"]["events"]


def test_metrics(tmpdir):
    srv = Server(root=root_of(tmpdir), threads=THREADS)
    r = get(srv, "/metrics")
    assert r.status == 200 and r.header("Content-Type").startswith("text/plain; version=0.0.4")
    m0 = metrics_of(r.body.decode())
    for _ in range(100):
        get(srv, "/index.html")
    m1 = metrics_of(get(srv, "/metrics").body.decode())
    assert m1[("lfhttpd_requests_total", "")] - m0[("lfhttpd_requests_total", "")] >= 100
    assert m1[("lfhttpd_bytes_sent_total", "")] - m0[("lfhttpd_bytes_sent_total", "")] >= 100000
    roles = [m1[("lfhttpd_threads", '{role="%s"}' % r)] for r in ("leading", "processing", "following")]
    reactor = concurrency() == "half-sync-half-async"   # the reactor is a thread of the pool
    assert sum(roles) == THREADS + reactor and roles[1] >= 1
    assert m1[("lfhttpd_concurrency_info", '{concurrency="%s"}' % concurrency())] == 1
    for state in ("reading", "writing", "idle", "handler", "closing", "active"):
        assert ("lfhttpd_connections", '{state="%s"}' % state) in m1
    for name in ("lfhttpd_pool_promotions_total", "lfhttpd_pool_no_follower_total",
                 "lfhttpd_pool_events_total", "lfhttpd_cgi_running", "lfhttpd_uptime_seconds",
                 "lfhttpd_file_cache_hits_total", "lfhttpd_connections_accepted_total"):
        assert (name, "") in m1, name
    assert m1[("lfhttpd_connections_accepted_total", "")] >= 101
    j = status_json(srv)
    assert j["requests"] >= m1[("lfhttpd_requests_total", "")]


def test_status_page_html(tmpdir):
    srv = Server(root=root_of(tmpdir))
    r = get(srv, "/server-status")
    assert r.status == 200 and r.header("Content-Type") == "text/html; charset=utf-8"
    csp = r.header("Content-Security-Policy")
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp
    html = r.body.decode()
    assert "<svg" in html and "?json" in html
    assert not re.search(r'(src|href)="(https?:)?//', html), "external resources"
    assert get(srv, "/server-status/").status == 200
    assert get(srv, "/server-statusx").status == 404


def test_allow_list(tmpdir):
    root = root_of(tmpdir)
    srv = ConfServer(tmpdir, ["root %s" % root, "status_allow 10.0.0.0/8 2001:db8::/32"], root=root)
    for path in ("/server-status", "/server-status?json", "/metrics"):
        assert get(srv, path).status == 403, path
    assert get(srv, "/healthz").status == 200     # health is for everyone
    srv.stop()
    srv = ConfServer(tmpdir, ["root %s" % root, "status_allow none"], root=root)
    assert get(srv, "/metrics").status == 403
    srv.stop()
    # the default: loopback, IPv4 and IPv6
    try:
        s6 = socket.socket(socket.AF_INET6)
        s6.bind(("::1", 0))
        s6.close()
        has_v6 = True
    except OSError:
        has_v6 = False
    listen = ["127.0.0.1:0"] + (["[::1]:0"] if has_v6 else [])
    srv = Server(root=root, listen=listen)
    for i in range(len(listen)):
        assert get(srv.addr(i), "/metrics").status == 200, listen[i]


def test_site_location_overrides_builtin(tmpdir):
    root = root_of(tmpdir)
    os.makedirs(os.path.join(root, "metrics"))
    with open(os.path.join(root, "metrics", "index.html"), "w") as f:
        f.write("my own metrics page\n")
    srv = ConfServer(tmpdir, ["root %s" % root, "location /metrics {", "    handler static", "}"], root=root)
    r = get(srv, "/metrics/")
    assert r.status == 200 and r.body == b"my own metrics page\n"
    assert get(srv, "/healthz").status == 200


# Two runs of a browser, each bounded by its own T(90): on a loaded machine they need more
# than the default minute between them (scaled for sanitizer builds like the default).
@pytest.mark.timeout(200)
def test_status_page_in_headless_chromium(tmpdir):
    srv = Server(root=root_of(tmpdir), threads=THREADS)
    for _ in range(20):
        get(srv, "/index.html")
    url = "http://127.0.0.1:%d/server-status" % srv.port
    shot = os.path.join(tmpdir, "server-status.png")
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmpdir)
    rc, out, err = run_chromium(url, profile, ["--screenshot=" + shot])
    assert rc == 0, "chromium exited %d:\n%s" % (rc, err[-2000:])
    console = [l for l in err.splitlines() if "CONSOLE" in l]
    assert not console, "console messages:\n" + "\n".join(console)
    with open(shot, "rb") as f:
        png = f.read()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10000, len(png)
    # The page's script ran and polled ?json more than once.
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmpdir)
    rc, dom, err = run_chromium(url, profile, ["--dump-dom"])
    assert rc == 0, err[-2000:]
    console = [l for l in err.splitlines() if "CONSOLE" in l]
    assert not console, "console messages:\n" + "\n".join(console)
    m = re.search(r'data-updates="(\d+)"', dom)
    assert m and int(m.group(1)) >= 2, "the page did not refresh itself: %r" % (m and m.group(0))
    assert re.search(r'<span id="state"[^>]*>live</span>', dom), dom[:500]
    assert re.search(r'id="p-threads">%d<' % (THREADS + (concurrency() == "half-sync-half-async")),
                     dom)
    assert re.search(r'id="p-concurrency">%s<' % concurrency(), dom)
    assert re.search(r'<polyline id="line-rps"[^>]* points="0\.0,', dom), "no chart drawn"
    assert 'id="k-req">-<' not in dom
    # keep the screenshot next to the test output when asked to
    keep = os.environ.get("LFHTTPD_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
