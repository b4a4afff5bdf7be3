"""Byte ranges (RFC 9110 14): single ranges, suffixes, 416, If-Range, multipart/byteranges,
large files (sendfile from an offset), HEAD, curl -r."""

import os
import re
import tempfile

import pytest

from lib.server import BIG_SIZE, Conn, curl, get, imf, req, sha256
from lib.static import OLD, parse_multipart, part_ranges


def rng(srv, path, spec, method="GET", extra=None):
    h = {"Range": spec}
    h.update(extra or {})
    return get(srv, path, method, headers=h)


def check_206(r, data, first, last):
    assert r.status == 206, (r.status, r.headers)
    assert r.header("Content-Range") == "bytes %d-%d/%d" % (first, last, len(data)), \
        r.header("Content-Range")
    assert r.header("Content-Length") == str(last - first + 1), r.headers
    assert r.body == data[first:last + 1], (len(r.body), first, last)


def test_accept_ranges_advertised(srv):
    for path in ["/kib.txt", "/big.bin", "/small.html", "/sub/"]:
        r = get(srv, path)
        assert r.status == 200 and r.header("Accept-Ranges") == "bytes", (path, r.headers)


def test_single_ranges(srv):
    data = srv.files["/kib.txt"]
    n = len(data)
    cases = [("bytes=0-0", 0, 0), ("bytes=0-1", 0, 1), ("bytes=10-19", 10, 19),
             ("bytes=1000-", 1000, n - 1), ("bytes=0-", 0, n - 1), ("bytes=-1", n - 1, n - 1),
             ("bytes=-100", n - 100, n - 1), ("bytes=-5000", 0, n - 1),
             ("bytes=1000-99999", 1000, n - 1), ("bytes=1023-1023", 1023, 1023),
             ("bytes= 5 - 9 ", 5, 9), ("BYTES=5-9", 5, 9)]
    with Conn(srv) as c:
        for spec, a, b in cases:
            c.send(req("GET", "/kib.txt", {"Range": spec}))
            r = c.read_response()
            check_206(r, data, a, b)
            assert r.header("ETag") and r.header("Last-Modified"), r.headers


def test_safari_probe_exact(srv):
    # Safari asks for "bytes=0-1" before playing media: exactly two bytes, exact Content-Range.
    for path in ["/big.bin", "/kib.txt", "/small.html"]:
        data = srv.files[path]
        check_206(rng(srv, path, "bytes=0-1"), data, 0, 1)
    check_206(rng(srv, "/one.txt", "bytes=0-1"), b"1", 0, 0)


@pytest.mark.parametrize("path,spec", [
    ("/kib.txt", "bytes=1024-"), ("/kib.txt", "bytes=5000-6000"), ("/kib.txt", "bytes=-0"),
    ("/one.txt", "bytes=1-"), ("/kib.txt", "bytes=2000-3000, 4000-"), ("/empty.txt", "bytes=0-"),
    ("/empty.txt", "bytes=-10")])
def test_unsatisfiable_416(shared_srv, path, spec):
    r = rng(shared_srv, path, spec)
    assert r.status == 416, (path, spec, r.status)
    assert r.header("Content-Range") == "bytes */%d" % len(shared_srv.files[path]), \
        (path, spec, r.header("Content-Range"))


@pytest.mark.parametrize("spec", ["bytes=5-1", "bytes=abc", "bytes=", "bytes=-", "items=0-5",
                                  "bytes 0-5", "bytes=0-5;x", "bytes=1-2-3"])
def test_invalid_range_ignored(shared_srv, spec):
    # Syntactically invalid or other units: the Range header is ignored (200, whole file).
    data = shared_srv.files["/kib.txt"]
    r = rng(shared_srv, "/kib.txt", spec)
    assert r.status == 200 and r.body == data, (spec, r.status)


def test_if_range(srv):
    data = srv.files["/kib.txt"]
    r = get(srv, "/kib.txt")
    etag, lm = r.header("ETag"), r.header("Last-Modified")
    check_206(rng(srv, "/kib.txt", "bytes=10-20", extra={"If-Range": etag}), data, 10, 20)
    check_206(rng(srv, "/kib.txt", "bytes=10-20", extra={"If-Range": lm}), data, 10, 20)


@pytest.mark.parametrize("value", ["stale", "weak", "older", "newer", "garbage"])
def test_if_range_that_does_not_match_is_the_whole_200(shared_srv, value):
    # Stale entity-tag, a weak tag (never usable in If-Range), another date: the whole 200.
    data = shared_srv.files["/kib.txt"]
    etag = get(shared_srv, "/kib.txt").header("ETag")
    v = {"stale": '"stale"', "weak": "W/" + etag, "older": imf(OLD - 10),
         "newer": imf(OLD + 10), "garbage": "garbage"}[value]
    r = rng(shared_srv, "/kib.txt", "bytes=10-20", extra={"If-Range": v})
    assert r.status == 200 and r.body == data, (v, r.status)
    assert r.header("Content-Range") is None, (v, r.headers)


def test_multipart_byteranges(srv):
    data = srv.files["/kib.txt"]
    r = rng(srv, "/kib.txt", "bytes=0-9, 100-199, 1000-")
    assert r.status == 206, r.status
    assert r.header("Content-Range") is None, "multipart responses have no top Content-Range"
    assert r.header("Content-Length") == str(len(r.body))
    parts = parse_multipart(r)
    assert part_ranges(parts) == [(0, 9, 1024), (100, 199, 1024), (1000, 1023, 1024)], \
        part_ranges(parts)
    for h, body in parts:
        a, b, _ = [int(x) for x in re.findall(r"\d+", h["content-range"])]
        assert body == data[a:b + 1]
        assert h["content-type"].startswith("text/plain"), h


def test_multipart_suffix_and_unsatisfiable_parts(srv):
    data = srv.files["/kib.txt"]
    # An unsatisfiable spec among satisfiable ones is dropped.
    r = rng(srv, "/kib.txt", "bytes=0-0,5000-6000,-2")
    parts = parse_multipart(r)
    assert part_ranges(parts) == [(0, 0, 1024), (1022, 1023, 1024)], part_ranges(parts)
    assert [p[1] for p in parts] == [data[0:1], data[1022:]]


def test_overlapping_ranges_coalesced(srv):
    data = srv.files["/kib.txt"]
    # Overlapping ranges are merged: never the same bytes twice.
    r = rng(srv, "/kib.txt", "bytes=0-99,50-149,500-599")
    parts = parse_multipart(r)
    assert part_ranges(parts) == [(0, 149, 1024), (500, 599, 1024)], part_ranges(parts)
    assert parts[0][1] == data[0:150] and parts[1][1] == data[500:600]
    # Everything overlapping into one range: a plain 206 (never multipart for one range).
    r = rng(srv, "/kib.txt", "bytes=0-10,5-20,-1024")
    check_206(r, data, 0, 1023)
    r = rng(srv, "/kib.txt", "bytes=10-20,15-30")
    check_206(r, data, 10, 30)


def test_multipart_parts_in_request_order(srv):
    # RFC 9110 14.6: parts SHOULD come in the order the range-specs were sent (except for
    # ranges coalesced into others). Players asking for the index at the end first rely on it.
    data = srv.files["/kib.txt"]
    r = rng(srv, "/kib.txt", "bytes=900-999,0-9")
    parts = parse_multipart(r)
    assert part_ranges(parts) == [(900, 999, 1024), (0, 9, 1024)], part_ranges(parts)
    assert parts[0][1] == data[900:1000] and parts[1][1] == data[0:10]


def test_big_file_ranges(srv):
    data = srv.files["/big.bin"]
    n = BIG_SIZE
    mid = n // 2 + 12345
    for spec, a, b in [("bytes=%d-%d" % (mid, mid + 100000), mid, mid + 100000),
                       ("bytes=%d-" % (n - 70000), n - 70000, n - 1),
                       ("bytes=-1", n - 1, n - 1),
                       ("bytes=1048576-2097151", 1048576, 2097151),
                       ("bytes=4095-4096", 4095, 4096)]:
        r = rng(srv, "/big.bin", spec)
        assert r.status == 206, (spec, r.status)
        assert r.header("Content-Range") == "bytes %d-%d/%d" % (a, b, n), r.header("Content-Range")
        assert sha256(r.body) == sha256(data[a:b + 1]), spec
    r = rng(srv, "/big.bin", "bytes=0-9,%d-%d,%d-" % (n // 3, n // 3 + 200000, n - 10))
    parts = parse_multipart(r)
    assert part_ranges(parts) == [(0, 9, n), (n // 3, n // 3 + 200000, n), (n - 10, n - 1, n)]
    for (a, b, _), (_, body) in zip(part_ranges(parts), parts):
        assert body == data[a:b + 1], (a, b)


def test_ranges_pipelined_keepalive(srv):
    data = srv.files["/big.bin"]
    specs = ["bytes=0-99", "bytes=2000000-2100000", "bytes=-3", "bytes=5-5,10-10"]
    with Conn(srv) as c:
        c.send(b"".join(req("GET", "/big.bin", {"Range": s}) for s in specs))
        rs = c.read_responses(len(specs))
        check_206(rs[0], data, 0, 99)
        check_206(rs[1], data, 2000000, 2100000)
        check_206(rs[2], data, BIG_SIZE - 3, BIG_SIZE - 1)
        assert [p[1] for p in parse_multipart(rs[3])] == [data[5:6], data[10:11]]


def test_head_with_range_is_200(srv):
    # Range is defined for GET only (RFC 9110 14.2): HEAD ignores it.
    r = rng(srv, "/kib.txt", "bytes=0-9", method="HEAD")
    assert r.status == 200, r.status
    assert r.header("Content-Length") == "1024" and r.body == b""
    with Conn(srv) as c:
        c.send(req("HEAD", "/big.bin", {"Range": "bytes=0-9", "Connection": "close"}))
        r = c.read_response("HEAD")
        assert r.status == 200
        assert c.read_all() == b"", "HEAD response followed by a body"


def test_range_on_directory_index(srv):
    data = srv.files["/sub/index.html"]
    check_206(rng(srv, "/sub/", "bytes=2-6"), data, 2, 6)


def test_curl_range(srv):
    data = srv.files["/big.bin"]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        for spec, a, b in [("0-99", 0, 99), ("1000000-1999999", 1000000, 1999999),
                           ("-500", BIG_SIZE - 500, BIG_SIZE - 1),
                           ("3000000-", 3000000, BIG_SIZE - 1)]:
            p = curl(["-r", spec, "-o", out, "-w", "%{http_code}", srv.url + "/big.bin"])
            assert p.returncode == 0, (spec, a, b, p.stderr)
            assert p.stdout == b"206", (spec, p.stdout)
            assert sha256(open(out, "rb").read()) == sha256(data[a:b + 1]), spec
        # Resume a download (curl -C -): the rest of the file, appended.
        with open(out, "wb") as f:
            f.write(data[:1234567])
        p = curl(["-C", "-", "-o", out, "-w", "%{http_code}", srv.url + "/big.bin"])
        assert p.returncode == 0 and p.stdout == b"206", (p.stdout, p.stderr)
        assert sha256(open(out, "rb").read()) == sha256(data)
