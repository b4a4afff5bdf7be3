"""Access log (Combined Log Format and JSON lines) checked field by field, escaping of hostile
input, stdout, the error log and its levels, SIGUSR1 reopening, whole lines under load."""

import os
import re
import signal
import socket
import threading
import time

from lib.server import ConfServer, Conn, T, fixture_tree, free_port, get, req, wait_until
from lib.ops import LogFile, logged_server, parse_clf, parse_json_line, short, unescape_clf


def _check_time(ts):
    assert abs(ts - time.time()) < T(10) + 2, "log time %s is not now (%s)" % (ts, time.time())


# ---- Combined Log Format -----------------------------------------------------------------------

def test_clf_fields(tmpdir):
    s, log = logged_server(tmpdir)
    files = s.tree.files
    exchanges = []          # (request bytes, method, response)
    with Conn(s) as c:
        def do(method, target, headers=None, version="HTTP/1.1"):
            c.send(req(method, target, headers, version))
            r = c.read_response(method)
            exchanges.append((method, target, version, headers or {}, r))
            return r
        do("GET", "/small.html", {"Referer": "http://ref.test/page?a=1",
                                  "User-Agent": "Mozilla/5.0 (X11; Linux) Test/1.0"})
        do("GET", "/kib.txt?x=1&y=%20z")
        do("HEAD", "/kib.txt")
        do("GET", "/missing.html")
        do("GET", "/kib.txt", {"Range": "bytes=10-19"})
        etag = exchanges[1][4].header("ETag")
        do("GET", "/kib.txt", {"If-None-Match": etag})
        do("GET", "/empty.txt")
        do("OPTIONS", "/small.html")
        do("GET", "/big.bin")
        do("GET", "/sub")
        do("GET", "/one.txt", {"Connection": "close"}, version="HTTP/1.0")
    lines = log.wait_lines(len(exchanges), settle=0.1)
    assert len(lines) == len(exchanges), lines
    for line, (method, target, version, headers, r) in zip(lines, exchanges):
        d = parse_clf(line)
        assert d["addr"] == "127.0.0.1", line
        assert d["user"] == "-", line
        _check_time(d["timestamp"])
        assert d["request"] == "%s %s %s" % (method, target, version), line
        assert int(d["status"]) == r.status, (line, r.status)
        if method == "HEAD" or len(r.body) == 0:
            assert d["bytes"] == "-", (line, len(r.body))
        else:
            assert d["bytes"] == str(len(r.body)), (line, len(r.body))
        assert d["referer"] == headers.get("Referer", "-"), line
        assert d["ua"] == headers.get("User-Agent", "-"), line
    st = [int(parse_clf(l)["status"]) for l in lines]
    assert st == [200, 200, 200, 404, 206, 304, 200, 204, 200, 301, 200], st
    assert parse_clf(lines[8])["bytes"] == str(len(files["/big.bin"]))
    assert parse_clf(lines[4])["bytes"] == "10"


def test_clf_ipv6_client_address(tmpdir):
    try:
        with socket.socket(socket.AF_INET6) as t:
            t.bind(("::1", 0))
    except OSError:
        return   # no IPv6 loopback here
    s, log = logged_server(tmpdir, listen=("[::1]:0",))
    assert get(s, "/one.txt").status == 200
    d = parse_clf(log.wait_lines(1)[0])
    assert d["addr"] == "::1", d


def test_clf_head_logs_no_bytes(tmpdir):
    s, log = logged_server(tmpdir)
    r = get(s, "/big.bin", method="HEAD")
    assert r.status == 200 and int(r.header("Content-Length")) > 0
    d = parse_clf(log.wait_lines(1)[0])
    assert d["request"] == "HEAD /big.bin HTTP/1.1" and d["bytes"] == "-", d


def test_clf_parse_errors_are_logged(tmpdir):
    s, log = logged_server(tmpdir)
    bad = [b"garbage\r\n\r\n",
           b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
           b"GET / HTTP/1.1\r\nUser-Agent: a\x01b\r\nHost: x\r\n\r\n",
           b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"]
    resps = []
    for data in bad:
        with Conn(s) as c:
            c.send(data)
            resps.append(c.read_response())
    assert all(400 <= r.status < 500 for r in resps), [r.status for r in resps]
    lines = log.wait_lines(len(bad), settle=0.1)
    assert len(lines) == len(bad), lines
    got = sorted((int(parse_clf(l)["status"]), parse_clf(l)["bytes"]) for l in lines)
    want = sorted((r.status, str(len(r.body)) if r.body else "-") for r in resps)
    assert got == want, (got, want, lines)
    for l in lines:
        d = parse_clf(l)
        assert d["addr"] == "127.0.0.1"
        _check_time(d["timestamp"])


def test_clf_hostile_input_escaped(tmpdir):
    s, log = logged_server(tmpdir)
    ua = b'evil "quoted" \\back\\slash\ttab \xe9\xff\xc3\x28 <script> \' end'
    ref = b'http://x/"\\\x80'
    target = '/a"b?q="x"&r=\\'
    with Conn(s) as c:
        c.send(req("GET", "/small.html").replace(
            b"\r\n\r\n", b"\r\nUser-Agent: " + ua + b"\r\nReferer: " + ref + b"\r\n\r\n"))
        assert c.read_response().status == 200
        c.send(req("GET", target))
        assert c.read_response().status == 404
    lines = log.wait_lines(2, settle=0.1)
    assert len(lines) == 2, lines
    for l in lines:
        assert "\t" not in l and all(0x20 <= ord(ch) < 0x7f for ch in l), \
            "unescaped byte in %r" % l
    d = parse_clf(lines[0])
    assert unescape_clf(d["ua"]) == ua, d["ua"]
    assert unescape_clf(d["referer"]) == ref, d["referer"]
    d = parse_clf(lines[1])
    assert unescape_clf(d["request"]) == ("GET %s HTTP/1.1" % target).encode(), d["request"]


def test_clf_long_hostile_user_agent_stays_parseable(tmpdir):
    # Escaping multiplies the length (one byte -> \xHH); a long hostile field must still
    # leave a complete, parseable line (the field may be shortened, the line never cut).
    s, log = logged_server(tmpdir)
    ua = b"\xff" * 6000
    ref = b'"' * 3000
    with Conn(s) as c:
        c.send(req("GET", "/one.txt").replace(
            b"\r\n\r\n", b"\r\nUser-Agent: " + ua + b"\r\nReferer: " + ref + b"\r\n\r\n"))
        assert c.read_response().status == 200
        c.send(req("GET", "/one.txt", {"User-Agent": "next"}))
        assert c.read_response().status == 200
    lines = log.wait_lines(2, settle=0.1)
    assert len(lines) == 2, [short(l) for l in lines]
    d = parse_clf(lines[0])
    assert d["status"] == "200" and d["bytes"] == "1", d
    assert ua.startswith(unescape_clf(d["ua"])), "user agent field altered"
    assert parse_clf(lines[1])["ua"] == "next"


# ---- JSON lines ---------------------------------------------------------------------------------

JSON_FIELDS = {"time", "remote_addr", "remote_user", "method", "uri", "protocol", "host",
               "status", "bytes", "referer", "user_agent"}


def test_json_fields(tmpdir):
    s, log = logged_server(tmpdir, fmt="json")
    sent = []
    with Conn(s) as c:
        for method, target, headers in (
                ("GET", "/small.html?x=1", {"Referer": "http://r.test/", "User-Agent": "UA/1"}),
                ("HEAD", "/kib.txt", {}),
                ("GET", "/nope", {"Host": "Example.TEST:8080"}),
                ("GET", "/kib.txt", {"Range": "bytes=0-9"})):
            c.send(req(method, target, headers))
            sent.append((method, target, headers, c.read_response(method)))
    lines = log.wait_lines(len(sent), settle=0.1)
    assert len(lines) == len(sent), lines
    for line, (method, target, headers, r) in zip(lines, sent):
        o = parse_json_line(line)
        assert JSON_FIELDS <= set(o), "missing fields %s in %r" % (JSON_FIELDS - set(o), line)
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$", o["time"]), o
        t = time.mktime(time.strptime(o["time"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        _check_time(t)
        assert o["remote_addr"] == "127.0.0.1", o
        assert o["remote_user"] in ("", None, "-"), o
        assert o["method"] == method and o["uri"] == target and o["protocol"] == "HTTP/1.1", o
        assert o["host"] == headers.get("Host", "localhost"), o
        assert o["status"] == r.status and isinstance(o["status"], int), o
        assert o["bytes"] == (0 if method == "HEAD" else len(r.body)), (o, len(r.body))
        assert o["referer"] in (headers.get("Referer"),) or (
            "Referer" not in headers and o["referer"] in ("", None, "-")), o
        assert o["user_agent"] in (headers.get("User-Agent"),) or (
            "User-Agent" not in headers and o["user_agent"] in ("", None, "-")), o
    assert [parse_json_line(l)["status"] for l in lines] == [200, 200, 404, 206]


def test_json_hostile_input_escaped(tmpdir):
    s, log = logged_server(tmpdir, fmt="json")
    ua = b'evil "quoted" \\back\\slash\ttab \xe9\xff\xc3\x28 \xe2\x82\xac </script> end'
    target = '/a"b?q="x"&r=\\'
    with Conn(s) as c:
        c.send(req("GET", "/small.html").replace(
            b"\r\n\r\n", b"\r\nUser-Agent: " + ua + b"\r\nReferer: \"\\\r\n\r\n"))
        assert c.read_response().status == 200
        c.send(req("GET", target))
        assert c.read_response().status == 404
    for data in (b'GET / HTTP/1.1\r\nHost: a"b\\c\r\n\r\n', b"\x16\x03\x01garbage\r\n\r\n"):
        with Conn(s) as c:
            c.send(data)
            c.read_response()
    lines = log.wait_lines(4, settle=0.1)
    assert len(lines) == 4, lines
    objs = [parse_json_line(l) for l in lines]
    for l in lines:
        assert all(0x20 <= ord(ch) < 0x7f for ch in l), "raw control/8-bit byte in %r" % l
    # (lines of different connections may be written in any order)
    o = [o for o in objs if o["uri"] == "/small.html"][0]
    # Bytes >= 0x80 are written as \u00XX: each maps back to one byte of the request.
    assert o["user_agent"].encode("latin-1") == ua, o["user_agent"]
    assert o["referer"] == '"\\', o["referer"]
    o = [o for o in objs if o["uri"] == target]
    assert len(o) == 1 and o[0]["status"] == 404, objs
    # A Host with '"' or '\\' is not a valid reg-name (RFC 3986): refused with 400 before any
    # handler, and logged as a request that failed to parse, like the TLS garbage.
    assert not [o for o in objs if o["host"] == 'a"b\\c'], objs
    assert len([o for o in objs if o["status"] == 400]) >= 2, objs


def test_json_long_hostile_user_agent_stays_parseable(tmpdir):
    s, log = logged_server(tmpdir, fmt="json")
    ua = b"\xff" * 6000
    with Conn(s) as c:
        c.send(req("GET", "/one.txt").replace(b"\r\n\r\n", b"\r\nUser-Agent: " + ua + b"\r\n\r\n"))
        assert c.read_response().status == 200
        c.send(req("GET", "/one.txt", {"User-Agent": "next"}))
        assert c.read_response().status == 200
    lines = log.wait_lines(2, settle=0.1)
    assert len(lines) == 2, [short(l) for l in lines]
    o = parse_json_line(lines[0])
    assert o["status"] == 200 and o["bytes"] == 1, o
    assert ua.startswith(o["user_agent"].encode("latin-1"))
    assert parse_json_line(lines[1])["user_agent"] == "next"


def test_json_parse_error_logged(tmpdir):
    s, log = logged_server(tmpdir, fmt="json")
    with Conn(s) as c:
        c.send(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")   # a TLS ClientHello
        r = c.read_response()
    assert r.status == 400
    o = parse_json_line(log.wait_lines(1)[0])
    assert o["status"] == 400 and o["remote_addr"] == "127.0.0.1", o
    assert o["bytes"] == len(r.body), o


# ---- destinations -------------------------------------------------------------------------------

def test_access_log_stdout(tmpdir):
    tree = fixture_tree(tmpdir)
    s = ConfServer(tmpdir, "root %s\naccess_log stdout\n" % tree.root)
    assert get(s, "/one.txt", headers={"User-Agent": "to-stdout"}).status == 200
    assert get(s, "/missing").status == 404
    wait_until(lambda: s.stdout.count("\n") >= 2, what="two lines on stdout")
    lines = s.stdout.splitlines()
    assert len(lines) == 2, lines
    # (lines of different connections may be written in any order)
    d = sorted((parse_clf(l) for l in lines), key=lambda d: d["status"])
    assert d[0]["request"] == "GET /one.txt HTTP/1.1" and d[0]["ua"] == "to-stdout", d
    assert d[1]["status"] == "404" and d[1]["request"] == "GET /missing HTTP/1.1", d
    assert "GET /one.txt" not in s.stderr, "access log lines on stderr"


def test_access_log_off_by_default(tmpdir):
    tree = fixture_tree(tmpdir)
    s = ConfServer(tmpdir, "root %s\n" % tree.root)
    assert get(s, "/one.txt").status == 200
    time.sleep(0.2)
    assert "GET /one.txt" not in s.stdout + s.stderr


def test_error_log_file_receives_notices(tmpdir):
    tree = fixture_tree(tmpdir)
    elog = os.path.join(tmpdir, "error.log")
    s = ConfServer(tmpdir, "root %s\nerror_log %s\n" % (tree.root, elog), error_log=elog)
    assert get(s, "/one.txt").status == 200
    text = open(elog).read()
    assert "listening on http://127.0.0.1:%d" % s.port in text, text
    for line in text.splitlines():
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z? \[(error|warn|notice|info|debug)\] "
                        r"\S", line), "unexpected error-log line %r" % line
    assert "listening on" not in s.stderr, s.stderr
    assert s.stop() == 0
    text = open(elog).read()
    assert re.search(r"\[notice\].*SIGTERM", text), text


def test_log_level_filters(tmpdir):
    tree = fixture_tree(tmpdir)
    for level, want, unwanted in (("warn", ["[warn]"], ["[notice]", "[info]"]),
                                  ("error", [], ["[warn]", "[notice]"]),
                                  ("debug", ["[notice]"], [])):
        port = free_port()
        s = ConfServer(tmpdir, "root %s\nlog_level %s\nlisten 127.0.0.1:%d\n"
                       % (tree.root, level, port), listen=(), known_port=port)
        assert get(s, "/one.txt").status == 200, (level, want, unwanted)
        assert s.stop() == 0, (level, want, unwanted)
        for w in want:
            assert w in s.stderr, (level, s.stderr)
        for u in unwanted:
            assert u not in s.stderr, (level, u, s.stderr)


# ---- SIGUSR1 -----------------------------------------------------------------------------------

def test_sigusr1_reopens_logs_after_rename(tmpdir):
    tree = fixture_tree(tmpdir)
    alog, elog = os.path.join(tmpdir, "access.log"), os.path.join(tmpdir, "error.log")
    s = ConfServer(tmpdir, "root %s\naccess_log %s\nerror_log %s\n" % (tree.root, alog, elog),
                   error_log=elog)
    with Conn(s) as keep:          # a keep-alive connection that spans the rotation
        keep.send(req("GET", "/one.txt", {"User-Agent": "before-1"}))
        assert keep.read_response().status == 200
        for i in (2, 3):
            assert get(s, "/one.txt", headers={"User-Agent": "before-%d" % i}).status == 200
        LogFile(alog).wait_lines(3)
        os.rename(alog, alog + ".1")
        os.rename(elog, elog + ".1")
        s.signal(signal.SIGUSR1)
        wait_until(lambda: os.path.exists(elog) and "reopen" in open(elog).read(),
                   what="the reopen notice in the new error log")
        assert os.path.exists(alog), "access log not recreated at the configured path"
        keep.send(req("GET", "/one.txt", {"User-Agent": "after-1"}))
        assert keep.read_response().status == 200
        assert get(s, "/small.html", headers={"User-Agent": "after-2"}).status == 200
    new = LogFile(alog).wait_lines(2, settle=0.1)
    old = LogFile(alog + ".1").lines()
    assert sorted(parse_clf(l)["ua"] for l in old) == ["before-1", "before-2", "before-3"], old
    assert sorted(parse_clf(l)["ua"] for l in new) == ["after-1", "after-2"], new
    assert "listening on" in open(elog + ".1").read()
    # A second SIGUSR1 without a rename keeps appending to the same file.
    s.signal(signal.SIGUSR1)
    wait_until(lambda: open(elog).read().count("reopen") >= 2, what="the second reopen notice")
    assert get(s, "/one.txt", headers={"User-Agent": "after-3"}).status == 200
    new = LogFile(alog).wait_lines(3)
    assert [parse_clf(l)["ua"] for l in new][-1] == "after-3"
    assert s.stop() == 0


def test_sigusr1_with_stdout_log_keeps_serving(tmpdir):
    tree = fixture_tree(tmpdir)
    s = ConfServer(tmpdir, "root %s\naccess_log stdout\n" % tree.root)
    assert get(s, "/one.txt").status == 200
    s.signal(signal.SIGUSR1)
    wait_until(lambda: "reopen" in s.stderr, what="the reopen notice")
    assert get(s, "/one.txt").status == 200
    wait_until(lambda: s.stdout.count("\n") == 2, what="two lines on stdout")


def test_sigusr1_reopen_failure_keeps_serving(tmpdir):
    # The log's directory disappears: reopening fails, that is logged, serving goes on.
    tree = fixture_tree(tmpdir)
    d = os.path.join(tmpdir, "logs")
    os.makedirs(d)
    alog = os.path.join(d, "access.log")
    s = ConfServer(tmpdir, "root %s\naccess_log %s\n" % (tree.root, alog))
    assert get(s, "/one.txt").status == 200
    LogFile(alog).wait_lines(1)
    os.rename(d, d + ".old")
    s.signal(signal.SIGUSR1)
    wait_until(lambda: "[error]" in s.stderr, what="an error about the failed reopen")
    assert get(s, "/one.txt").status == 200
    assert s.alive()


# ---- whole lines under load ---------------------------------------------------------------------

def _load(s, n_threads, n_req, ua_len=2000):
    errors = []

    def work(k):
        try:
            c = Conn(s, timeout=30)
            try:
                for i in range(n_req):
                    ua = "t%02d-r%04d-" % (k, i) + chr(ord("a") + k % 26) * ua_len
                    c.send(req("GET", "/kib.txt?t=%d&i=%d" % (k, i), {"User-Agent": ua}))
                    r = c.read_response()
                    if r.status != 200:
                        errors.append((k, i, r.status))
            finally:
                c.sock.close()
        except Exception as e:
            errors.append((k, repr(e)))

    ts = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(T(120))
    assert not any(t.is_alive() for t in ts), "load threads did not finish"
    assert not errors, errors[:5]


def test_no_torn_lines_under_load_clf(tmpdir):
    n_threads, n_req = 8, 300
    s, log = logged_server(tmpdir, threads=4)
    _load(s, n_threads, n_req)
    lines = log.wait_lines(n_threads * n_req, timeout=30, settle=0.2)
    assert len(lines) == n_threads * n_req, len(lines)
    seen = set()
    for l in lines:
        d = parse_clf(l)
        m = re.match(r"^t(\d\d)-r(\d{4})-([a-z])+$", d["ua"])
        assert m and len(d["ua"]) == 2000 + 10, "torn user agent in %r" % l[:200]
        k, i = int(m.group(1)), int(m.group(2))
        assert d["ua"][10:] == chr(ord("a") + k % 26) * 2000, "mixed lines: %r" % l[:200]
        assert d["request"] == "GET /kib.txt?t=%d&i=%d HTTP/1.1" % (k, i), l[:200]
        assert d["status"] == "200" and d["bytes"] == "1024"
        seen.add((k, i))
    assert len(seen) == n_threads * n_req


def test_no_torn_lines_under_load_json(tmpdir):
    n_threads, n_req = 8, 150
    s, log = logged_server(tmpdir, fmt="json", threads=4)
    _load(s, n_threads, n_req)
    lines = log.wait_lines(n_threads * n_req, timeout=30, settle=0.2)
    assert len(lines) == n_threads * n_req, len(lines)
    seen = set()
    for l in lines:
        o = parse_json_line(l)
        m = re.match(r"^t(\d\d)-r(\d{4})-", o["user_agent"])
        assert m, l[:200]
        k, i = int(m.group(1)), int(m.group(2))
        assert o["user_agent"][10:] == chr(ord("a") + k % 26) * 2000
        assert o["uri"] == "/kib.txt?t=%d&i=%d" % (k, i)
        seen.add((k, i))
    assert len(seen) == n_threads * n_req
