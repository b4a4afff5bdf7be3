"""Compression of streamed responses (`compress_dynamic on`, compress/compress_stream.c): CGI
output and the test endpoints' streams, gzip or zstd as the client's Accept-Encoding prefers,
byte-identical once decoded; flushed piece by piece; Vary on every eligible response; a strong
ETag made weak; HEAD like GET; HTTP/1.0 close-delimited; what is never compressed; the bound
on contexts held at once (compress_dynamic_max); counters in /server-status and /metrics; the
context freed when the client leaves mid-stream."""

import json
import os
import socket
import time
import zlib

import pytest

from lib.decode import decode
from lib.server import ConfServer, Conn, T, get, req, wait_until
from lib.static import check_config

SH = "#!/bin/sh\n"
# ~190 KB of compressible HTML in several pipe reads, so the body crosses many pieces.
PAGE_SCRIPT = (SH + "printf 'Content-Type: text/html; charset=utf-8\\n%s\\n'\n"
               "seq 1 12000 | sed 's/.*/<p>row & of the dynamic page<\\/p>/'\n")


def page_body():
    return b"".join(b"<p>row %d of the dynamic page</p>\n" % i for i in range(1, 12001))


def dynamic_server(tmpdir, conf="compress_dynamic on\n", extra_scripts=None):
    www = os.path.join(tmpdir, "www")
    cgi = os.path.join(www, "cgi-bin")
    os.makedirs(cgi)
    os.chmod(tmpdir, 0o755)
    flag = os.path.join(tmpdir, "go")
    scripts = {
        "page": PAGE_SCRIPT % "",
        "etag": PAGE_SCRIPT % 'ETag: "v1"\\nVary: Cookie\\n',
        "binary": SH + "printf 'Content-Type: application/octet-stream\\n\\n'\n"
                       "seq 1 12000\n",
        "coded": SH + "printf 'Content-Type: text/html\\nContent-Encoding: gzip\\n\\n'\n"
                      "printf 'already coded bytes, passed as they are'\n",
        "error": SH + "printf 'Status: 500 Broken\\nContent-Type: text/html\\n\\n'\n"
                      "seq 1 3000\n",
        "notfound": SH + "printf 'Status: 404 Not Found\\nContent-Type: text/html\\n\\n'\n"
                         "seq 1 3000\n",
        "short": SH + "printf 'Content-Type: text/html\\nContent-Length: 12\\n\\n'\n"
                      "printf 'short body\\n\\n'\n",
        "long-cl": SH + "printf 'Content-Type: text/plain\\nContent-Length: 48894\\n\\n'\n"
                        "seq 1 9000\n",
        # the first part, then nothing until the test creates the flag (bounded: 60 s)
        "waits": SH + "printf 'Content-Type: text/plain\\n\\n'\n"
                      "echo first-part-of-the-stream\n"
                      "i=0; while [ ! -e %s ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n"
                      "echo second-part\n" % flag,
        "endless": SH + "printf 'Content-Type: text/plain\\n\\n'\n"
                        "exec yes 'an endless compressible line of text'\n",
    }
    scripts.update(extra_scripts or {})
    for name, text in scripts.items():
        p = os.path.join(cgi, name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o755)
    conf = conf + "test_endpoints /_test/\nlocation /cgi-bin/ {\n    handler cgi\n}\n"
    s = ConfServer(tmpdir, conf, root=www)
    s.flag = flag
    return s


def fetch(s, path, accept=None, method="GET", version="HTTP/1.1"):
    h = {} if accept is None else {"Accept-Encoding": accept}
    return get(s, path, method, headers=h, version=version)


def decoded(r):
    coding = r.header("Content-Encoding")
    assert coding in (None, "gzip", "zstd"), r
    return decode(coding, r.body)


def status_json(s):
    return json.loads(get(s, "/server-status?json").body)["compress"]["dynamic"]


@pytest.fixture(scope="module")
def page_srv(shared_server):
    """One server (compress_dynamic on) for the cases that only ask it something."""
    return shared_server(dynamic_server)


def test_cgi_identity_body_says_vary(page_srv):
    ident = fetch(page_srv, "/cgi-bin/page")
    assert ident.status == 200 and ident.body == page_body()
    assert ident.header("Content-Encoding") is None
    assert ident.header("Vary") == "Accept-Encoding"  # eligible: caches must know


@pytest.mark.parametrize("accept,coding", [
    ("gzip", "gzip"), ("zstd", "zstd"), ("gzip, zstd", "zstd"),
    ("gzip;q=1, zstd;q=0.5", "gzip"), ("x-gzip", "gzip"),
    ("gzip, deflate, br, zstd", "zstd"), ("*", "zstd")])
def test_cgi_gzip_and_zstd_decode_to_the_identity_body(page_srv, accept, coding):
    want = page_body()
    r = fetch(page_srv, "/cgi-bin/page", accept)
    assert r.status == 200, (accept, r)
    assert r.header("Content-Encoding") == coding, (accept, r)
    assert r.header("Transfer-Encoding") == "chunked" and r.header("Content-Length") is None, \
        (accept, r.headers)
    assert r.header("Vary") == "Accept-Encoding", (accept, r.headers)
    assert len(r.body) < len(want) // 4, (accept, len(r.body))
    assert decoded(r) == want, accept


@pytest.mark.parametrize("accept", [
    "br", "identity", "gzip;q=0, zstd;q=0", "deflate", "gzip;q=0.5, identity"])
def test_cgi_identity_when_no_coding_is_acceptable(page_srv, accept):
    r = fetch(page_srv, "/cgi-bin/page", accept)
    assert r.header("Content-Encoding") is None and r.body == page_body(), (accept, r)
    assert r.header("Vary") == "Accept-Encoding", (accept, r.headers)


def test_off_by_default(tmpdir):
    with dynamic_server(tmpdir, conf="") as s:
        r = fetch(s, "/cgi-bin/page", "gzip, zstd")
        assert r.status == 200 and r.header("Content-Encoding") is None
        assert r.header("Vary") is None and r.body == page_body()


def test_per_location(tmpdir):
    conf = "location /cgi-bin/z/ {\n    handler cgi\n    compress_dynamic on\n}\n"
    with dynamic_server(tmpdir, conf=conf) as s:
        os.makedirs(os.path.join(s.root, "cgi-bin", "z"))
        os.link(os.path.join(s.root, "cgi-bin", "page"), os.path.join(s.root, "cgi-bin", "z", "page"))
        assert fetch(s, "/cgi-bin/page", "gzip").header("Content-Encoding") is None
        r = fetch(s, "/cgi-bin/z/page", "gzip")
        assert r.header("Content-Encoding") == "gzip" and decoded(r) == page_body()


def test_what_is_never_compressed(tmpdir):
    with dynamic_server(tmpdir) as s:
        r = fetch(s, "/cgi-bin/binary", "gzip")   # a type outside compress_types
        assert r.header("Content-Encoding") is None and r.header("Vary") is None
        assert r.body.startswith(b"1\n2\n3\n")
        r = fetch(s, "/cgi-bin/coded", "gzip")    # the script coded it itself
        assert r.header_all("Content-Encoding") == ["gzip"]
        assert r.body == b"already coded bytes, passed as they are"
        r = fetch(s, "/cgi-bin/error", "gzip")    # a 500 (only 200, 403 and 404 are)
        assert r.status == 500 and r.header("Content-Encoding") is None
        r = fetch(s, "/cgi-bin/short", "gzip")    # known to be below compress_min_size
        assert r.header("Content-Encoding") is None and r.body == b"short body\n\n"
        assert r.header("Content-Length") == "12"
        r = fetch(s, "/cgi-bin/long-cl", "gzip")  # a known length above it: compressed
        assert r.header("Content-Encoding") == "gzip" and r.header("Content-Length") is None
        assert decoded(r) == b"".join(b"%d\n" % i for i in range(1, 9001))
        r = fetch(s, "/cgi-bin/notfound", "gzip")  # a 404 is, as with nginx's gzip
        assert r.status == 404 and r.header("Content-Encoding") == "gzip"
        assert decoded(r) == b"".join(b"%d\n" % i for i in range(1, 3001))


def test_strong_etag_weakened_and_vary_kept(tmpdir):
    with dynamic_server(tmpdir) as s:
        r = fetch(s, "/cgi-bin/etag", "gzip")
        assert r.header("Content-Encoding") == "gzip"
        assert r.header("ETag") == 'W/"v1"'
        assert r.header_all("Vary") == ["Cookie", "Accept-Encoding"]
        assert decoded(r) == page_body()
        r = fetch(s, "/cgi-bin/etag")
        assert r.header("ETag") == '"v1"' and r.header_all("Vary") == ["Cookie", "Accept-Encoding"]


def test_head_has_the_head_of_get(tmpdir):
    with dynamic_server(tmpdir) as s:
        h = fetch(s, "/cgi-bin/etag", "gzip", method="HEAD")
        g = fetch(s, "/cgi-bin/etag", "gzip")
        assert h.status == 200 and h.body == b""
        for name in ("Content-Encoding", "ETag", "Content-Type", "Content-Length"):
            assert h.header(name) == g.header(name), name
        assert h.header_all("Vary") == g.header_all("Vary")


def test_http10_close_delimited(tmpdir):
    with dynamic_server(tmpdir) as s:
        r = fetch(s, "/cgi-bin/page", "gzip", version="HTTP/1.0")
        assert r.header("Content-Encoding") == "gzip" and r.header("Transfer-Encoding") is None
        assert r.header("Connection") == "close"
        assert decoded(r) == page_body()


def test_keepalive_across_compressed_responses(tmpdir):
    with dynamic_server(tmpdir) as s:
        c = Conn(s)
        for accept in ("gzip", "zstd", None, "gzip"):
            h = {} if accept is None else {"Accept-Encoding": accept}
            c.send(req("GET", "/cgi-bin/page", h))
            r = c.read_response()
            assert r.status == 200 and decoded(r) == page_body(), accept
        c.close()


def _read_some(sock, deadline):
    sock.settimeout(max(0.05, deadline - time.monotonic()))
    try:
        return sock.recv(65536)
    except socket.timeout:
        return b""


def test_each_piece_is_flushed(tmpdir):
    """The script's first line reaches the client, decodable, while the script still runs."""
    with dynamic_server(tmpdir) as s:
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=T(10))
        sock.sendall(req("GET", "/cgi-bin/waits", {"Accept-Encoding": "gzip"}))
        deadline = time.monotonic() + T(20)  # from the request's last byte
        got, text = b"", b""
        d = zlib.decompressobj(wbits=31)
        while b"first-part-of-the-stream" not in text and time.monotonic() < deadline:
            got += _read_some(sock, deadline)
            head, sep, body = got.partition(b"\r\n\r\n")
            if not sep:
                continue
            assert b"content-encoding: gzip" in head.lower(), head
            # decode the complete chunks received so far
            text, rest = b"", body
            d = zlib.decompressobj(wbits=31)
            while b"\r\n" in rest:
                size_line, _, after = rest.partition(b"\r\n")
                n = int(size_line, 16)
                if n == 0 or len(after) < n + 2:
                    break
                text += d.decompress(after[:n])
                rest = after[n + 2:]
        assert b"first-part-of-the-stream" in text, got
        assert b"second-part" not in text
        open(s.flag, "w").close()
        deadline = time.monotonic() + T(20)
        while not got.endswith(b"0\r\n\r\n") and time.monotonic() < deadline:
            got += _read_some(sock, deadline)
        sock.close()
        body = got.partition(b"\r\n\r\n")[2]
        plain, rest = b"", body
        while True:
            size_line, _, after = rest.partition(b"\r\n")
            n = int(size_line, 16)
            if n == 0:
                break
            plain += after[:n]
            rest = after[n + 2:]
        assert zlib.decompress(plain, wbits=31) == b"first-part-of-the-stream\nsecond-part\n"


def test_test_endpoint_streams(tmpdir):
    conf = "compress_dynamic on\ncompress_types application/x-ndjson text/*\n"
    with dynamic_server(tmpdir, conf=conf) as s:
        r = fetch(s, "/_test/stream/40", "zstd")
        assert r.status == 200 and r.header("Content-Encoding") == "zstd"
        lines = decoded(r).splitlines()
        assert len(lines) == 40 and [json.loads(x)["id"] for x in lines] == list(range(40))
        r = fetch(s, "/_test/stream/40")
        assert r.header("Content-Encoding") is None and len(r.body.splitlines()) == 40


def test_contexts_bounded_by_compress_dynamic_max(tmpdir):
    with dynamic_server(tmpdir, conf="compress_dynamic on\ncompress_dynamic_max 1\n") as s:
        held = Conn(s)
        held.send(req("GET", "/cgi-bin/waits", {"Accept-Encoding": "gzip"}))
        assert wait_until(lambda: status_json(s)["active"] == 1, T(20))
        r = fetch(s, "/cgi-bin/page", "gzip")   # the one context is taken: identity
        assert r.status == 200 and r.header("Content-Encoding") is None
        assert r.header("Vary") == "Accept-Encoding" and r.body == page_body()
        assert status_json(s)["busy"] == 1
        open(s.flag, "w").close()
        r = held.read_response()
        assert r.header("Content-Encoding") == "gzip"
        assert decoded(r) == b"first-part-of-the-stream\nsecond-part\n"
        held.close()
        assert wait_until(lambda: status_json(s)["active"] == 0, T(20))
        assert fetch(s, "/cgi-bin/page", "gzip").header("Content-Encoding") == "gzip"
    zero = os.path.join(tmpdir, "zero")
    os.makedirs(zero)
    with dynamic_server(zero, conf="compress_dynamic on\ncompress_dynamic_max 0\n") as s:
        assert fetch(s, "/cgi-bin/page", "gzip").header("Content-Encoding") is None


def test_counters_and_a_client_leaving_mid_stream(tmpdir):
    with dynamic_server(tmpdir) as s:
        before = status_json(s)
        r = fetch(s, "/cgi-bin/page", "gzip")
        fetch(s, "/cgi-bin/page", "zstd")
        after = status_json(s)
        assert after["made"]["gzip"] == before["made"]["gzip"] + 1
        assert after["made"]["zstd"] == before["made"]["zstd"] + 1
        assert after["bytes_in"] - before["bytes_in"] == 2 * len(page_body())
        assert after["bytes_out"] - before["bytes_out"] >= len(r.body) - 64
        metrics = get(s, "/metrics").body.decode()
        assert 'lfhttpd_compress_dynamic_responses_total{coding="gzip"} %d' % after["made"]["gzip"] \
            in metrics
        # the context is freed with the exchange, just after its last bytes went out
        assert wait_until(lambda: "lfhttpd_compress_dynamic_active 0"
                          in get(s, "/metrics").body.decode(), T(20))
        # an endless compressed stream, abandoned: its context goes with the connection
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=T(10))
        sock.sendall(req("GET", "/cgi-bin/endless", {"Accept-Encoding": "zstd"}))
        assert wait_until(lambda: status_json(s)["active"] == 1, T(20))
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.close()
        assert wait_until(lambda: status_json(s)["active"] == 0, T(30))
        assert fetch(s, "/cgi-bin/page", "gzip").header("Content-Encoding") == "gzip"


def test_directive_errors(tmpdir):
    os.makedirs(os.path.join(tmpdir, "www"))
    rc, err, path = check_config(tmpdir, "compress_dynamic maybe\n")
    assert rc != 0 and "%s:1:" % path in err and "compress_dynamic" in err, err
    rc, err, path = check_config(tmpdir, "location / {\n    compress_dynamic_max 3\n}\n")
    assert rc != 0 and "%s:2:" % path in err, err
    rc, err, path = check_config(tmpdir, "compress_dynamic_max lots\n")
    assert rc != 0 and "%s:1:" % path in err, err
    rc, err, _ = check_config(tmpdir, "compress_dynamic on\ncompress_dynamic_max 8\n"
                                      "location /x/ {\n    compress_dynamic off\n}\n")
    assert rc == 0, err
