"""The httpbin-like test endpoints (`test_endpoints` / --test-endpoints)."""

import json
import os
import selectors
import signal
import socket
import threading
import time

import pytest

from lib.server import SCALE, ConfServer, Conn, Server, T, get, raw, raw_bytes, req
from lib.procs import rss_kib

PATTERN = b"lfhttpd test bytes 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEF\n"


def start(tmpdir, threads=2, prefix="/_test/"):
    os.makedirs(os.path.join(tmpdir, "root"), exist_ok=True)
    with open(os.path.join(tmpdir, "root", "index.html"), "w") as f:
        f.write("<!doctype html><title>x</title>\n")
    return Server(root=os.path.join(tmpdir, "root"), args=["--test-endpoints", prefix],
                  threads=threads)


@pytest.fixture(scope="module")
def endpoints_srv(shared_server):
    """One server for the cases that only ask it something."""
    return shared_server(start)


def expected_bytes(n):
    reps = n // len(PATTERN) + 1
    return (PATTERN * reps)[:n]


def test_off_by_default_and_index(tmpdir):
    os.makedirs(os.path.join(tmpdir, "root"))
    plain = Server(root=os.path.join(tmpdir, "root"))
    assert get(plain, "/_test/bytes/10").status == 404
    plain.stop()
    srv = start(tmpdir)
    r = get(srv, "/_test/")
    assert r.status == 200 and b"bytes/N" in r.body, r
    assert get(srv, "/_test/nope").status == 404
    assert get(srv, "/_test/bytes").status == 404          # needs an argument
    assert get(srv, "/_test/bytes/1/2").status == 400
    assert get(srv, "/_test/echo/x").status == 404
    assert get(srv, "/_test/bytes/10", method="DELETE").status == 405


def test_prefix_from_config_file(tmpdir):
    root = os.path.join(tmpdir, "root")
    os.makedirs(root)
    srv = ConfServer(tmpdir, "test_endpoints /t/\n", root=root)
    assert get(srv, "/t/bytes/3").body == b"lfh"
    assert get(srv, "/_test/bytes/3").status == 404


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 65536, 1000000])
def test_bytes(endpoints_srv, n):
    r = get(endpoints_srv, "/_test/bytes/%d" % n)
    assert r.status == 200, (n, r)
    assert r.header("Content-Length") == str(n), (n, r.headers)
    assert r.header("Content-Type") == "application/octet-stream", (n, r.headers)
    assert r.body == expected_bytes(n), n


def test_bytes_head(endpoints_srv):
    r = get(endpoints_srv, "/_test/bytes/5000", method="HEAD")
    assert r.status == 200 and r.header("Content-Length") == "5000" and r.body == b""


@pytest.mark.parametrize("bad", ["104857601", "abc", "-1", "1e3", "99999999999999999999999"])
def test_bad_byte_counts_400(endpoints_srv, bad):
    r = get(endpoints_srv, "/_test/bytes/" + bad)
    assert r.status == 400, (bad, r)
    json.loads(r.body)


def test_bytes_on_one_keepalive_connection(endpoints_srv):
    # several on one keep-alive connection, the largest allowed one in between
    with Conn(endpoints_srv, timeout=60) as c:
        c.send(req("GET", "/_test/bytes/10"))
        assert c.read_response().body == expected_bytes(10)
        c.send(req("GET", "/_test/bytes/104857600"))
        r = c.read_response()
        assert len(r.body) == 104857600
        assert r.body[:64] == PATTERN and r.body[-64:] == expected_bytes(104857600)[-64:]
        c.send(req("GET", "/_test/bytes/7"))
        assert c.read_response().body == expected_bytes(7)


def test_bytes_to_a_slow_reader_uses_no_memory(tmpdir):
    srv = start(tmpdir)
    before = rss_kib(srv.proc.pid)
    n = 40 * 1024 * 1024
    with Conn(srv, timeout=60, rcvbuf=16384) as c:
        c.send(req("GET", "/_test/bytes/%d" % n))
        while len(c.buf) < 200000:
            assert c._fill(8192)
            time.sleep(0.001)
        time.sleep(0.3)
        during = rss_kib(srv.proc.pid)
        r = c.read_response()
    assert len(r.body) == n
    assert during - before < 8 * 1024, "RSS grew by %d KiB while streaming" % (during - before)


@pytest.mark.parametrize("code", [200, 201, 204, 304, 400, 404, 405, 418, 500, 503, 599])
def test_status_codes(endpoints_srv, code):
    r = get(endpoints_srv, "/_test/status/%d" % code)
    assert r.status == code, (code, r)
    if code in (204, 304):
        assert r.body == b"", (code, r.body)
    else:
        assert r.body.startswith(b"%d " % code), (code, r.body)
    if code == 405:
        assert r.header("Allow"), r.headers


@pytest.mark.parametrize("bad", ["100", "199", "600", "2000", "x", ""])
def test_bad_status_codes_400(endpoints_srv, bad):
    r = get(endpoints_srv, "/_test/status/" + bad)
    assert r.status == 400, (bad, r)


def test_echo(tmpdir):
    srv = start(tmpdir)
    r = get(srv, "/_test/echo?a=1&b=%22x%22",
            headers=[("X-Quote", 'say "hi" \\ there'), ("X-Utf8", "h\u00e9".encode().decode("latin-1"))])
    assert r.status == 200 and r.header("Content-Type") == "application/json"
    d = json.loads(r.body)
    assert d["method"] == "GET" and d["target"] == "/_test/echo?a=1&b=%22x%22"
    assert d["path"] == "/_test/echo" and d["query"] == "a=1&b=%22x%22"
    assert d["version"] == "HTTP/1.1" and d["remote_addr"] == "127.0.0.1"
    hs = dict((k.lower(), v) for k, v in d["headers"])
    assert hs["x-quote"] == 'say "hi" \\ there'
    assert hs["x-utf8"].encode("latin-1") == "h\u00e9".encode()
    assert d["body"] == "" and d["body_length"] == 0

    body = bytes(range(256)) * 4
    r = raw(srv, req("POST", "/_test/echo", body=body))
    d = json.loads(r.body)
    assert d["method"] == "POST" and d["body_length"] == len(body)
    assert d["body"].encode("latin-1") == body

    chunked = b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
    r = raw(srv, req("PUT", "/_test/echo", headers=[("Transfer-Encoding", "chunked")]) + chunked)
    d = json.loads(r.body)
    assert d["method"] == "PUT" and d["body"] == "hello, world", d

    big = b"x" * (64 * 1024 + 1)
    r = raw(srv, req("POST", "/_test/echo", body=big))
    assert r.status == 413
    chunked_big = b"%x\r\n" % len(big) + big + b"\r\n0\r\n\r\n"
    r = raw(srv, req("POST", "/_test/echo", headers=[("Transfer-Encoding", "chunked")])
            + chunked_big)
    assert r.status == 413

    # the connection stays usable after a streamed echo
    with Conn(srv) as c:
        c.send(req("POST", "/_test/echo", body=b"one") + req("GET", "/_test/echo?two"))
        a, b = c.read_responses(2)
        assert json.loads(a.body)["body"] == "one" and json.loads(b.body)["query"] == "two"


def test_delay(tmpdir):
    srv = start(tmpdir)
    t0 = time.monotonic()
    r = get(srv, "/_test/delay/300")
    dt = time.monotonic() - t0
    assert r.status == 200 and json.loads(r.body) == {"delay_ms": 300}
    assert 0.29 <= dt < T(1.5), dt
    assert get(srv, "/_test/delay/abc").status == 400
    r = get(srv, "/_test/delay/0")
    assert r.status == 200
    # HEAD and keep-alive after a delayed answer
    with Conn(srv) as c:
        c.send(req("HEAD", "/_test/delay/50") + req("GET", "/_test/bytes/3"))
        a = c.read_response("HEAD")
        b = c.read_response()
        assert a.status == 200 and a.body == b"" and b.body == b"lfh"


def test_1000_concurrent_delays_on_two_threads(tmpdir):
    """Proof that no thread sleeps: 1,000 delay/1000 requests on a 2-thread pool finish in
    about one delay."""
    srv = start(tmpdir, threads=2)
    n = 1000
    sel = selectors.DefaultSelector()
    socks = []
    for i in range(n):
        s = socket.create_connection((srv.host, srv.port))
        s.setblocking(False)
        socks.append(s)
    request = req("GET", "/_test/delay/1000")
    bufs = {}
    t0 = time.monotonic()
    for s in socks:
        s.send(request)
        sel.register(s, selectors.EVENT_READ)
        bufs[s] = bytearray()
    done = {}
    deadline = t0 + T(15)
    while len(done) < n and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            chunk = s.recv(65536)
            bufs[s] += chunk
            if not chunk or bufs[s].endswith(b"\n") and b"}" in bufs[s]:
                done[s] = time.monotonic() - t0
                sel.unregister(s)
    elapsed = time.monotonic() - t0
    for s in socks:
        s.close()
    assert len(done) == n, "%d of %d answered within %.1fs" % (len(done), n, elapsed)
    ok = sum(1 for s in socks if bufs[s].startswith(b"HTTP/1.1 200") and b'{"delay_ms":1000}' in bufs[s])
    assert ok == n, "%d good answers" % ok
    first, last = min(done.values()), max(done.values())
    assert first >= 0.99, "an answer came after %.3fs, before the delay" % first
    assert last < (3.0 if SCALE == 1 else 3.0 * SCALE), \
        "the last of %d answers came after %.2fs: threads must be waiting" % (n, last)


def _chunks(data):
    """Split a chunked body into its chunks; returns (chunks, rest)."""
    chunks = []
    while True:
        line, _, data = data.partition(b"\r\n")
        size = int(line, 16)
        if size == 0:
            assert data.startswith(b"\r\n"), data[:20]
            return chunks, data[2:]
        chunks.append(data[:size])
        assert data[size:size + 2] == b"\r\n"
        data = data[size + 2:]


def test_stream(tmpdir):
    srv = start(tmpdir)
    data = raw_bytes(srv, req("GET", "/_test/stream/5", headers=[("Connection", "close")]))
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head
    chunks, rest = _chunks(body)
    assert rest == b""
    assert len(chunks) == 5
    for i, ch in enumerate(chunks):
        d = json.loads(ch)
        assert d == {"id": i, "path": "/_test/stream/5"}
    # HTTP/1.0: no chunked encoding, the end of the body is the end of the connection
    data = raw_bytes(srv, req("GET", "/_test/stream/3", version="HTTP/1.0"))
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"chunked" not in head and b"Connection: close" in head
    assert [json.loads(l)["id"] for l in body.splitlines()] == [0, 1, 2]
    # clamped at 1000
    r = get(srv, "/_test/stream/5000")
    assert len(r.body.splitlines()) == 1000
    assert get(srv, "/_test/stream/x").status == 400


def test_drip(tmpdir):
    srv = start(tmpdir)
    with Conn(srv) as c:
        t0 = time.monotonic()
        c.send(req("GET", "/_test/drip?numbytes=5&duration=0.5&code=201"))
        while b"\r\n\r\n" not in c.buf:
            assert c._fill()
        t_head = time.monotonic() - t0
        r = c.read_response()
        total = time.monotonic() - t0
    assert r.status == 201 and r.body == b"*****" and r.header("Content-Length") == "5"
    assert t_head < T(0.3), t_head
    assert 0.35 <= total < T(2), total
    t0 = time.monotonic()
    r = get(srv, "/_test/drip?numbytes=2&duration=0&delay=0.3")
    assert r.body == b"**" and time.monotonic() - t0 >= 0.29
    r = get(srv, "/_test/drip?numbytes=100000&duration=0.2")
    assert r.body == b"*" * 100000
    for bad in ("numbytes=x", "duration=11", "delay=-1", "code=99", "numbytes=2000000"):
        assert get(srv, "/_test/drip?" + bad).status == 400, bad


def test_redirect(tmpdir):
    srv = start(tmpdir)
    with Conn(srv) as c:
        path = "/_test/redirect/3"
        seen = []
        for _ in range(5):
            c.send(req("GET", path))
            r = c.read_response()
            seen.append(r.status)
            if r.status != 302:
                break
            path = r.header("Location")
        assert seen == [302, 302, 302, 200], seen
        assert path == "/_test/echo"
    for bad in ("0", "21", "x"):
        assert get(srv, "/_test/redirect/" + bad).status == 400


def test_headers(tmpdir):
    srv = start(tmpdir)
    r = get(srv, "/_test/headers?X-One=1&X-Two=two+words&X-Pct=%41%2F%3D&Content-Type=text/x-y"
                 "&X-Latin=%C3%A9")
    assert r.status == 200
    assert r.header("X-One") == "1" and r.header("X-Two") == "two words"
    assert r.header("X-Pct") == "A/=" and r.header("Content-Type") == "text/x-y"
    assert r.header("X-Latin").encode("latin-1") == "\u00e9".encode()
    assert json.loads(r.body)["X-One"] == "1"


def test_headers_replace_the_endpoints_defaults(tmpdir):
    # A requested header replaces the endpoint's own of the same name: one field each.
    srv = start(tmpdir)
    r = get(srv, "/_test/headers?Cache-Control=max-age%3D60&content-type=text/plain")
    assert r.status == 200
    assert r.header_all("Cache-Control") == ["max-age=60"], r.headers
    assert r.header_all("Content-Type") == ["text/plain"], r.headers
    assert json.loads(r.body) == {"Cache-Control": "max-age=60", "content-type": "text/plain"}
    r = get(srv, "/_test/headers?X-A=1")
    assert r.header_all("Cache-Control") == ["no-store"], r.headers
    assert r.header_all("Content-Type") == ["application/json"], r.headers


def test_headers_hostile_query_strings(tmpdir):
    srv = start(tmpdir)
    hostile = [
        "X-A=1%0d%0aSet-Cookie:%20evil=1",
        "X-A=1%0aSet-Cookie:%20evil=1",
        "X-A=1%0dSet-Cookie:%20evil=1",
        "X-A=%00",
        "X-A=%7f",
        "X-A=a%09b%01",
        "Set-Cookie%3a%20x=1",             # a colon in the name
        "X%20A=1",                          # a space in the name
        "X-A%0d%0aSet-Cookie=1",
        "=novalue",
        "Content-Length=0",
        "transfer-encoding=chunked",
        "Connection=close",
        "Server=evil",
        "Date=never",
        "X-A=%zz",
        "X-A=%4",
        "&".join("X-%d=1" % i for i in range(21)),
        "X-Long=" + "a" * 1100,
        "X" * 70 + "=1",
    ]
    for q in hostile:
        data = raw_bytes(srv, req("GET", "/_test/headers?" + q, headers=[("Connection", "close")]))
        head = data.partition(b"\r\n\r\n")[0]
        assert head.startswith(b"HTTP/1.1 400"), (q, head[:200])
        assert b"evil" not in head and b"Set-Cookie" not in head, (q, head)
        lines = head.split(b"\r\n")
        assert all(b"\r" not in l and b"\n" not in l and b"\0" not in l for l in lines)
    # a tab in a value is fine
    r = get(srv, "/_test/headers?X-Tab=a%09b")
    assert r.status == 200 and r.header("X-Tab") == "a\tb"


def test_client_gone_during_delay_and_drip(tmpdir):
    srv = start(tmpdir)
    for path in ("/_test/delay/300", "/_test/drip?numbytes=10&duration=0.5",
                 "/_test/bytes/50000000"):
        c = Conn(srv)
        c.send(req("GET", path))
        time.sleep(0.05)
        c.close()
    time.sleep(0.8)
    assert get(srv, "/_test/bytes/3").body == b"lfh"
    assert srv.alive()


def test_sigterm_waits_for_a_delayed_answer(tmpdir):
    srv = start(tmpdir)
    with Conn(srv) as c:
        c.send(req("GET", "/_test/delay/500"))
        time.sleep(0.1)
        srv.signal(signal.SIGTERM)
        r = c.read_response()
        assert r.status == 200 and r.header("Connection") == "close"
    assert srv.wait(T(5)) == 0
