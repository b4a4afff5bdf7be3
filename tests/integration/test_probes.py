"""Kubernetes-style probes and drain_delay: /livez, /readyz beside /healthz; after
SIGTERM with drain_delay the server keeps serving while it reports not-ready, then drains."""

import os
import signal
import subprocess
import time

import pytest

from lib.procs import status_json
from lib.server import ConfServer, Conn, T, binary, get, req, wait_until, write_config


def _site(tmpdir):
    root = os.path.join(tmpdir, "root")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<!doctype html><title>t</title><p>probes\n")
    return root


def _server(tmpdir, lines=()):
    root = _site(tmpdir)
    return ConfServer(tmpdir, ["root %s" % root] + list(lines), root=root)


def test_probes_while_serving(tmpdir):
    srv = _server(tmpdir)
    try:
        for path, body in (("/livez", b"alive\n"), ("/readyz", b"ready\n"), ("/healthz", b"ok\n")):
            r = get(srv, path)
            assert r.status == 200 and r.body == body, (path, r)
            assert r.header("Cache-Control") == "no-store", (path, body, r)
            assert r.header("Content-Type") == "text/plain; charset=utf-8", (path, body, r)
            assert get(srv, path, method="HEAD").status == 200
            assert get(srv, path, method="POST").status == 405
            assert get(srv, path + "x").status == 404, "only the exact path is a probe"
        j = status_json(srv)
        assert j["ready"] is True and j["draining"] is False, j
    finally:
        srv.stop()


def test_a_site_can_replace_a_probe_location(tmpdir):
    root = _site(tmpdir)
    with open(os.path.join(root, "readyz"), "w") as f:
        f.write("my own\n")
    srv = _server(tmpdir, ["location /readyz {", "    handler static", "}"])
    try:
        assert get(srv, "/readyz").body == b"my own\n"
        assert get(srv, "/livez").body == b"alive\n"
    finally:
        srv.stop()


def test_drain_delay_keeps_serving_while_not_ready(tmpdir):
    # A delay longer than the test: the second SIGTERM ends it, so nothing here depends on time.
    srv = _server(tmpdir, ["drain_delay 1h"])
    try:
        before = Conn(srv)
        before.send(req("GET", "/index.html"))
        assert before.read_response().status == 200
        srv.signal(signal.SIGTERM)
        assert wait_until(lambda: "not ready, still serving" in srv.stderr, 10), srv.stderr
        # not ready, alive, health failing; but a new connection is still accepted and served
        r = get(srv, "/readyz")
        assert r.status == 503 and r.body == b"stopping\n", r
        assert get(srv, "/livez").status == 200
        r = get(srv, "/healthz")
        assert r.status == 503 and r.body == b"draining\n", r
        with Conn(srv) as c:
            c.send(req("GET", "/index.html"))
            r = c.read_response()
            assert r.status == 200 and not r.has_token("Connection", "close"), r
            c.send(req("GET", "/index.html"))       # keep-alive goes on
            assert c.read_response().status == 200
        # the connection opened before SIGTERM keeps working too
        before.send(req("GET", "/index.html"))
        r = before.read_response()
        assert r.status == 200 and not r.has_token("Connection", "close"), r
        j = status_json(srv)
        assert j["ready"] is False and j["draining"] is False, j
        assert "draining:" not in srv.stderr, srv.stderr
        # a second signal skips the rest of the delay: the drain closes the idle connection
        srv.signal(signal.SIGTERM)
        assert wait_until(lambda: "draining: stopped accepting" in srv.stderr, 10), srv.stderr
        assert before.wait_closed(T(5)), "idle keep-alive connection not closed by the drain"
        before.close()
        assert srv.wait(T(10)) == 0, srv.stderr
    finally:
        srv.stop()


def test_drain_delay_ends_by_itself(tmpdir):
    srv = _server(tmpdir, ["drain_delay 1s"])
    try:
        t0 = time.monotonic()
        srv.signal(signal.SIGINT)
        assert wait_until(lambda: "draining: stopped accepting" in srv.stderr, 15), srv.stderr
        waited = time.monotonic() - t0
        # The server's timers run on the coarse monotonic clock, which may lag by one kernel
        # tick (at most 10 ms): the delay it keeps can look that much short from here.
        assert waited >= 1.0 - 0.010, "drained %.3f s after SIGINT, before drain_delay 1s" % waited
        log = srv.stderr
        assert log.index("SIGINT received") < log.index("drain_delay over") < \
            log.index("draining: stopped accepting"), log
        assert srv.wait(T(10)) == 0, srv.stderr
    finally:
        srv.stop()


def test_drain_delay_bad_value_is_a_config_error(tmpdir):
    conf = write_config(tmpdir, ["# probes", "drain_delay soon"], "bad.conf")
    p = subprocess.run([binary(), "-t", "-c", conf], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p
    assert p.stderr.startswith(conf + ":2: invalid value 'soon' for 'drain_delay'"), p.stderr


# ---- lfhttpd --probe URL: the health check of an image without a shell ----------------------

def _probe(url, timeout=30):
    return subprocess.run([binary(), "--probe", url], capture_output=True, text=True,
                          timeout=timeout)


def test_probe_flag_exit_status_follows_the_answer(tmpdir):
    srv = _server(tmpdir, ["drain_delay 1h"])
    os.makedirs(os.path.join(tmpdir, "root", "sub"))
    base = "http://127.0.0.1:%d" % srv.port
    try:
        p = _probe(base + "/readyz")
        assert p.returncode == 0 and p.stdout == base + "/readyz: 200 OK\n", p
        p = _probe(base + "/sub")                       # a redirect counts as healthy
        assert p.returncode == 0 and "301 Moved Permanently" in p.stdout, p
        p = _probe(base + "/missing?x=1")
        assert p.returncode == 1 and "404 Not Found" in p.stderr, p
        srv.signal(signal.SIGTERM)
        assert wait_until(lambda: "not ready, still serving" in srv.stderr, 10), srv.stderr
        p = _probe(base + "/readyz")
        assert p.returncode == 1 and "503 Service Unavailable" in p.stderr, p
        assert _probe(base + "/livez").returncode == 0
    finally:
        srv.stop()
    p = _probe(base + "/livez")                         # nobody listens any more
    assert p.returncode == 1 and "connect: Connection refused" in p.stderr, p


def test_probe_flag_gives_up_on_a_silent_server():
    import socket
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    try:
        url = "http://127.0.0.1:%d/readyz" % ls.getsockname()[1]
        t0 = time.monotonic()
        p = _probe(url)
        assert p.returncode == 1 and "no response within 5 s" in p.stderr, p
        assert time.monotonic() - t0 >= 5.0, "gave up before its 5 s"
    finally:
        ls.close()


@pytest.mark.parametrize("url,why", [
    ("ftp://x/", "only http:// URLs"), ("http://h:0/", "expected http://"),
    ("http://h:99999/", "expected http://"), ("http:///x", "expected http://"),
    ("http://h/a b", "plain request-target"), ("http://h/#f", "fragment")])
def test_probe_flag_bad_url(url, why):
    p = _probe(url)
    assert p.returncode == 2 and why in p.stderr, (url, p)


@pytest.mark.parametrize("argv", [["--probe"], ["--probe", "http://h/", "--threads", "2"],
                                  ["--probe="]])
def test_probe_flag_usage_errors(argv):
    p = subprocess.run([binary()] + argv, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "--probe takes one URL" in p.stderr, (argv, p)
