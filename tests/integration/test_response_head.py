"""The 200 head of a cached file is precomputed in its cache entry (Content-Type, validators,
Accept-Ranges, the location's headers, Content-Length): it must follow the file and the
configuration exactly as a head built per request would. And pipelined responses, which the
server may gather into one write, must come back byte-correct and in order."""

import os
import re
import signal
import time

from lib.server import ConfServer, Conn, T, free_port, get, req, wait_until
from lib.static import make_root, set_mtime


def _heads_without_date(r):
    return [(k, v) for k, v in r.headers if k.lower() != "date"]


def test_changed_file_gets_new_validators_and_length(tmpdir):
    root = make_root(os.path.join(tmpdir, "www"), {"f.txt": b"one"})
    s = ConfServer(tmpdir, "file_cache_valid 100ms\n", root=root)
    try:
        with Conn(s) as c:
            c.send(req("GET", "/f.txt"))
            a = c.read_response()
            assert a.status == 200 and a.body == b"one"
            assert a.header("Content-Length") == "3"
            # Changed in place (same inode): new size and mtime.
            p = os.path.join(root, "f.txt")
            with open(p, "wb") as f:
                f.write(b"second version")
            set_mtime(p, 1700001000)
            time.sleep(0.1 + T(0.3))
            c.send(req("GET", "/f.txt"))
            b = c.read_response()
            assert b.body == b"second version", b.body
            assert b.header("Content-Length") == str(len(b"second version"))
            assert b.header("ETag") and b.header("ETag") != a.header("ETag")
            assert b.header("Last-Modified") == "Tue, 14 Nov 2023 22:30:00 GMT"
            assert b.header("Last-Modified") != a.header("Last-Modified")
            # HEAD: the same head, no body; exactly one Content-Length.
            c.send(req("HEAD", "/f.txt"))
            h = c.read_response("HEAD")
            assert _heads_without_date(h) == _heads_without_date(b)
            assert len(h.header_all("Content-Length")) == 1
            # The new ETag validates; the old one no longer does.
            c.send(req("GET", "/f.txt", {"If-None-Match": b.header("ETag")}))
            assert c.read_response().status == 304
            c.send(req("GET", "/f.txt", {"If-None-Match": a.header("ETag")}))
            r = c.read_response()
            assert r.status == 200 and r.body == b"second version"
            # A range keeps its own Content-Length (and says which part of which length).
            c.send(req("GET", "/f.txt", {"Range": "bytes=0-5"}))
            r = c.read_response()
            assert r.status == 206 and r.body == b"second"
            assert r.header_all("Content-Length") == ["6"]
            assert r.header("Content-Range") == "bytes 0-5/14"
    finally:
        s.stop()


def test_reload_changes_the_cached_head(tmpdir):
    root = make_root(os.path.join(tmpdir, "www"), {"f.txt": b"hello"})
    conf = os.path.join(tmpdir, "lfhttpd.conf")
    port = free_port()
    base = "listen 127.0.0.1:%d\nroot %s\nfile_cache_valid 60s\n" % (port, root)

    def write(extra):
        with open(conf + ".tmp", "w") as f:
            f.write(base + extra)
        os.rename(conf + ".tmp", conf)

    s = ConfServer(tmpdir, base + 'add_header X-Gen "one"\ncache_control "max-age=10"\n',
                   listen=())
    try:
        with Conn(("127.0.0.1", port)) as c:
            c.send(req("GET", "/f.txt"))
            r = c.read_response()
            assert r.header("X-Gen") == "one" and r.header("Cache-Control") == "max-age=10"
            write('add_header X-Gen "two"\n')
            s.signal(signal.SIGHUP)
            assert wait_until(lambda: "generation 2" in s.stderr, 5), s.stderr
            # The same keep-alive connection, the same (unchanged, long-cached) file.
            c.send(req("GET", "/f.txt"))
            r = c.read_response()
            assert r.body == b"hello"
            assert r.header_all("X-Gen") == ["two"], r.headers
            assert r.header("Cache-Control") is None, r.headers
            c.send(req("HEAD", "/f.txt"))
            r = c.read_response("HEAD")
            assert r.header_all("X-Gen") == ["two"] and r.header("Content-Length") == "5"
    finally:
        s.stop()


def test_pipelined_mixed_responses_in_order(tmpdir):
    big = bytes((i * 7) & 0xFF for i in range(300000))   # not held in memory: sendfile
    files = {"a.html": b"<p>a</p>\n", "b.txt": b"B" * 5000, "big.bin": big,
             "dir/index.html": b"index\n"}
    root = make_root(os.path.join(tmpdir, "www"), files)
    s = ConfServer(tmpdir, "", root=root)
    try:
        etag = get(s, "/a.html").header("ETag")
        plan = [
            ("GET", "/a.html", {}, 200, files["a.html"]),
            ("HEAD", "/b.txt", {}, 200, b""),
            ("GET", "/missing", {}, 404, None),
            ("GET", "/b.txt", {}, 200, files["b.txt"]),
            ("GET", "/a.html", {"If-None-Match": etag}, 304, b""),
            ("GET", "/big.bin", {}, 200, big),
            ("GET", "/a.html", {}, 200, files["a.html"]),
            ("GET", "/b.txt", {"Range": "bytes=10-19"}, 206, b"B" * 10),
            ("GET", "/dir", {}, 301, None),
            ("GET", "/dir/", {}, 200, files["dir/index.html"]),
            ("HEAD", "/big.bin", {}, 200, b""),
            ("GET", "/a.html?x=1", {}, 200, files["a.html"]),
            ("POST", "/a.html", {}, 405, None),
            ("GET", "/b.txt", {}, 200, files["b.txt"]),
            ("GET", "/big.bin", {"Range": "bytes=-5"}, 206, big[-5:]),
            ("GET", "/a.html", {}, 200, files["a.html"]),
        ]
        data = b"".join(req(m, p, h) for m, p, h, _, _ in plan)
        for rounds in range(3):          # cold cache first, then warm
            with Conn(s) as c:
                c.send(data)
                for m, p, h, status, body in plan:
                    r = c.read_response(m)
                    assert r.status == status, (m, p, r)
                    assert len(r.header_all("Content-Length")) == (0 if status == 304 else 1), r
                    if body is not None:
                        assert r.body == body, (m, p, len(r.body))
                    if m == "HEAD":
                        full = {"/b.txt": files["b.txt"], "/big.bin": big}[p]
                        assert r.header("Content-Length") == str(len(full))
                    else:
                        assert r.header("Content-Length") in (None, str(len(r.body))), r
                assert re.match(rb"^$", bytes(c.buf)), bytes(c.buf[:100])
                assert c.is_open(0.2)
    finally:
        s.stop()


def test_pipelined_batch_larger_than_the_gather_with_a_slow_reader(tmpdir):
    # 64 answers of 5000 bytes to one read: more than one gathered write, and a client that
    # reads nothing until it has sent everything fills the socket, so gathered bytes park.
    body = bytes(range(256)) * 19 + b"x" * 136          # 5000 bytes, held in memory
    root = make_root(os.path.join(tmpdir, "www"), {"m.bin": body, "s.txt": b"small\n"})
    s = ConfServer(tmpdir, "", root=root)
    try:
        plan = []
        for i in range(64):
            plan.append(("HEAD" if i % 9 == 4 else "GET", "/s.txt" if i % 5 == 2 else "/m.bin"))
        with Conn(s, rcvbuf=4096) as c:
            c.send(b"".join(req(m, p) for m, p in plan))
            time.sleep(T(0.3))
            for m, p in plan:
                r = c.read_response(m)
                assert r.status == 200, (m, p, r)
                if m == "GET":
                    assert r.body == (body if p == "/m.bin" else b"small\n"), (p, len(r.body))
            c.send(req("GET", "/s.txt"))
            assert c.read_response().body == b"small\n"
    finally:
        s.stop()


def test_pipelined_answers_precede_the_http2_preface_close(tmpdir):
    root = make_root(os.path.join(tmpdir, "www"), {"a.txt": b"aaa"})
    s = ConfServer(tmpdir, "", root=root)
    try:
        with Conn(s) as c:
            c.send(req("GET", "/a.txt") + req("GET", "/a.txt") +
                   b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            assert c.read_response().body == b"aaa"
            assert c.read_response().body == b"aaa"
            assert c.wait_closed(5)
    finally:
        s.stop()
