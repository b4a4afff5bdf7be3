"""Per-client limits: limit_conn_per_ip, limit_req_per_ip, limit_allow,
limit_table_size — applied to the real client address (the TCP peer, a PROXY header's source,
or a trusted proxy's X-Forwarded-For), IPv6 grouped by /64, in a table of bounded size.

Clients are told apart by their source address on loopback: every 127.x.y.z is local on
Linux, so a socket bound to 127.0.0.2 is another client than one bound to 127.0.0.3."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from lib.server import (Conn, ConnectionClosed, REPO, T, fixture_server, fixture_tree, req,
                        wait_until)
from lib.ops import run_lfhttpd, write_file, one_error_line
from lib.procs import rss_kib

ABUSER, OTHER, ALLOWED = "127.0.0.2", "127.0.0.3", "127.0.0.4"


def _get(s, path, source, headers=None, addr=None):
    """One request on a fresh connection from `source`; the response."""
    with Conn(addr or s.addr(), source=source) as c:
        c.send(req("GET", path, headers))
        return c.read_response()


def _stats(s):
    """The server's limits counters, from /server-status?json (asked from 127.0.0.1)."""
    r = _get(s, "/server-status?json", "127.0.0.1")
    assert r.status == 200, r
    return json.loads(r.body)["limits"]


def _metrics(s):
    r = _get(s, "/metrics", "127.0.0.1")
    assert r.status == 200, r
    out = {}
    for line in r.body.decode().splitlines():
        m = re.match(r'^(lfhttpd_limit_[a-z_]+)(\{limit="[a-z]+"\})? ([0-9]+)$', line)
        if m:
            out[m.group(1) + (m.group(2) or "")] = int(m.group(3))
    return out


def _refused(s, source, addr=None):
    """A connection from `source` the server refuses: it answers 429 without serving the
    request and closes. The request goes in one send: the listener accepts once data is
    there (TCP_DEFER_ACCEPT), so the server reads it all before it closes, and the close
    cannot turn into a reset."""
    with Conn(addr or s.addr(), source=source) as c:
        c.send(req("GET", "/one.txt"))
        r = c.read_response()
        assert r.status == 429 and r.header("Retry-After", "").isdigit(), r
        rest = c.read_all()   # until the close (not select(): fds may be past 1024 here)
        assert rest == b"" and c.eof, "refused connection left open: %r" % rest[:200]
    return r


# ---- limit_conn_per_ip (top level: connections) ------------------------------------------------

def test_conn_limit_refuses_abuser_serves_others_and_frees_slot_on_close(tmpdir):
    s = fixture_server(tmpdir, "limit_conn_per_ip 2\nlimit_allow %s\n" % ALLOWED)
    held = []
    try:
        for _ in range(2):   # two kept-alive connections, each known to be accepted
            c = Conn(s, source=ABUSER)
            c.send(req("GET", "/one.txt"))
            assert c.read_response().status == 200
            held.append(c)
        _refused(s, ABUSER)
        # the others at the same time: another client, and one on the allow-list with more
        # connections than the limit
        assert _get(s, "/one.txt", OTHER).status == 200
        allowed = [Conn(s, source=ALLOWED) for _ in range(4)]
        for c in allowed:
            c.send(req("GET", "/one.txt"))
        assert all(c.read_response().status == 200 for c in allowed)
        for c in allowed:
            c.close()
        # the connections still held are served
        held[0].send(req("GET", "/one.txt"))
        assert held[0].read_response().status == 200
        # one closes: its slot comes back once the server has seen the close
        held.pop().close()

        def served_again():
            with Conn(s, source=ABUSER) as c:
                c.send(req("GET", "/one.txt"))
                try:
                    return c.read_response().status == 200
                except (ConnectionClosed, ConnectionResetError):
                    return False
        assert wait_until(served_again, T(5)), "the closed connection's slot never came back"
        st = _stats(s)
        assert st["connections_refused"] >= 1 and st["entries"] >= 1, st
        m = _metrics(s)
        assert m["lfhttpd_limit_connections_refused_total"] == st["connections_refused"], m
    finally:
        for c in held:
            c.close()
        s.stop()
    # logged once for the address, not once per refused connection
    lines = [l for l in s.stderr.splitlines() if "limit_conn_per_ip" in l]
    assert len(lines) == 1 and ABUSER in lines[0], s.stderr


# ---- limit_req_per_ip ---------------------------------------------------------------------------

def test_rate_limit_429_with_retry_after_others_unaffected(tmpdir):
    s = fixture_server(tmpdir,
                       "limit_allow %s\nlocation / {\n    limit_req_per_ip 1r/m burst 5\n}\n"
                       % ALLOWED)
    try:
        # burst 5 at one request a minute: five pass, the sixth within the minute does not
        for i in range(5):
            assert _get(s, "/one.txt", ABUSER).status == 200, i
        for _ in range(3):
            r = _get(s, "/one.txt", ABUSER)
            assert r.status == 429, r
            ra = r.header("Retry-After")
            assert ra is not None and ra.isdigit() and 1 <= int(ra) <= 60, r
        # keep-alive survives a 429
        with Conn(s, source=ABUSER) as c:
            for _ in range(2):
                c.send(req("GET", "/one.txt"))
                assert c.read_response().status == 429
        for i in range(5):
            assert _get(s, "/one.txt", OTHER).status == 200, i
        for i in range(10):
            assert _get(s, "/one.txt", ALLOWED).status == 200, i
        assert _get(s, "/one.txt", OTHER).status == 429
        st = _stats(s)
        assert st["requests_limited_rate"] == 6, st
        m = _metrics(s)
        assert m['lfhttpd_limit_requests_total{limit="req"}'] == 6, m
        assert m["lfhttpd_limit_table_entries"] == st["entries"] >= 2, (m, st)
        assert m["lfhttpd_limit_table_size"] == st["table_size"] >= 1024, (m, st)
    finally:
        s.stop()
    lines = [l for l in s.stderr.splitlines() if "limit_req_per_ip" in l]
    assert len(lines) == 2, s.stderr   # one per limited address
    assert any(ABUSER in l for l in lines) and any(OTHER in l for l in lines), lines


def test_rate_limit_per_location_and_inherited(tmpdir):
    conf = textwrap.dedent("""\
        limit_req_per_ip 1r/m burst 2
        location /sub/ {
            limit_req_per_ip 1r/m burst 4
        }
        location /free/ {
            limit_req_per_ip off
        }
        """)
    s = fixture_server(tmpdir, conf)
    try:
        # the top level's bucket (inherited by the site) is shared by every path outside /sub/
        assert _get(s, "/one.txt", ABUSER).status == 200
        assert _get(s, "/kib.txt", ABUSER).status == 200
        assert _get(s, "/one.txt", ABUSER).status == 429
        # /sub/ has its own bucket
        for i in range(4):
            assert _get(s, "/sub/file.css", ABUSER).status == 200, i
        assert _get(s, "/sub/file.css", ABUSER).status == 429
        # off: never limited
        for i in range(6):
            assert _get(s, "/free/none", ABUSER).status == 404, i
    finally:
        s.stop()


def test_rate_limit_survives_reload(tmpdir):
    s = fixture_server(tmpdir, "location / {\n    limit_req_per_ip 1r/m burst 2\n}\n")
    try:
        for _ in range(2):
            assert _get(s, "/one.txt", ABUSER).status == 200
        assert _get(s, "/one.txt", ABUSER).status == 429
        s.signal(signal.SIGHUP)
        assert wait_until(lambda: "generation 2" in s.stderr, T(5)), s.stderr
        assert _get(s, "/one.txt", ABUSER).status == 429, "a reload reset the client's bucket"
        # a new generation's limits apply to new requests: raise the burst
        with open(s.conf_path) as f:
            text = f.read()
        write_file(s.conf_path, text.replace("burst 2", "burst 10"))
        s.signal(signal.SIGHUP)
        assert wait_until(lambda: "generation 3" in s.stderr, T(5)), s.stderr
        assert _get(s, "/one.txt", ABUSER).status == 200
    finally:
        s.stop()


# ---- limit_conn_per_ip in a location: requests in flight ---------------------------------------

DRIP = "/_test/drip?numbytes=20&duration=10&delay=0"


def test_conn_limit_in_location_counts_requests_in_flight(tmpdir):
    conf = "test_endpoints /_test/\nlocation /_test/ {\n    handler test\n" \
           "    limit_conn_per_ip 1\n}\n"
    s = fixture_server(tmpdir, conf)
    try:
        with Conn(s, source=ABUSER) as c1:
            c1.send(req("GET", DRIP))
            c1._fill()   # the head has come: the request is in flight (its body drips)
            assert c1.buf.startswith(b"HTTP/1.1 200"), c1.buf
            r = _get(s, "/_test/status/200", ABUSER)
            assert r.status == 429 and r.header("Retry-After") == "1", r
            # another location, another client: served
            assert _get(s, "/one.txt", ABUSER).status == 200
            assert _get(s, "/_test/status/200", OTHER).status == 200
        # its response is complete (or the connection gone): the slot comes back
        assert wait_until(lambda: _get(s, "/_test/status/200", ABUSER).status == 200, T(15))
        assert _stats(s)["requests_limited_conn"] >= 1
    finally:
        s.stop()


# ---- the real client: trusted proxies, PROXY protocol, IPv6 /64 ---------------------------------

def test_behind_trusted_proxy_the_forwarded_client_is_limited(tmpdir):
    s = fixture_server(tmpdir, "trusted_proxies 127.0.0.1\nlocation / {\n"
               "    limit_req_per_ip 1r/m burst 3\n}\n")

    def via_proxy(path, client):
        return _get(s, path, "127.0.0.1", [("X-Forwarded-For", client)])
    try:
        for i in range(3):
            assert via_proxy("/one.txt", "203.0.113.9").status == 200, i
        assert via_proxy("/one.txt", "203.0.113.9").status == 429
        # the proxy's other clients are not its fault
        assert via_proxy("/one.txt", "203.0.113.10").status == 200
    finally:
        s.stop()
    assert "203.0.113.9" in s.stderr and "127.0.0.1 is over" not in s.stderr, s.stderr


def test_behind_trusted_proxy_connections_count_per_request(tmpdir):
    """Connections from a trusted proxy are not counted as one client's: the top level's
    limit_conn_per_ip counts each forwarded client's requests in flight instead."""
    os.makedirs(os.path.join(tmpdir, "a"))
    s = fixture_server(os.path.join(tmpdir, "a"), "trusted_proxies 127.0.0.1\nlimit_conn_per_ip 1\n"
               "test_endpoints /_test/\n")
    try:
        with Conn(s, source="127.0.0.1") as c1, Conn(s, source="127.0.0.1") as c2:
            c1.send(req("GET", DRIP, [("X-Forwarded-For", "198.51.100.1")]))
            c1._fill()   # the head has come: the request is in flight (its body drips)
            assert c1.buf.startswith(b"HTTP/1.1 200"), c1.buf
            c2.send(req("GET", "/_test/status/200", [("X-Forwarded-For", "198.51.100.1")]))
            r = c2.read_response()
            assert r.status == 429 and r.header("Retry-After") == "1", r
            c2.send(req("GET", "/_test/status/200", [("X-Forwarded-For", "198.51.100.2")]))
            assert c2.read_response().status == 200
    finally:
        s.stop()


def _pp_header(src):
    return ("PROXY TCP4 %s 127.0.0.1 40000 80\r\n" % src).encode()


def test_proxy_protocol_address_is_the_one_limited(tmpdir):
    s = fixture_server(tmpdir,
                       "listen 127.0.0.1:0 proxy_protocol\nlimit_conn_per_ip 1\n", listen=())
    try:
        with Conn(s) as c1:
            c1.send(_pp_header("198.51.100.7") + req("GET", "/one.txt"))
            assert c1.read_response().status == 200
            # the same client through the same proxy: over its limit
            with Conn(s) as c2:
                c2.send(_pp_header("198.51.100.7") + req("GET", "/one.txt"))
                r = c2.read_response()
                assert r.status == 429, r
                assert c2.wait_closed()
            # another client behind the same proxy address: served
            with Conn(s) as c3:
                c3.send(_pp_header("198.51.100.8") + req("GET", "/one.txt"))
                assert c3.read_response().status == 200
    finally:
        s.stop()
    assert "198.51.100.7" in s.stderr and "127.0.0.1 holds" not in s.stderr, s.stderr


IPV6_CLIENT = r"""
import json, sys
from lib.server import Conn, Server, req
s = Server(args=["--config", sys.argv[1]], listen=("[2001:db8::1]:0",), threads=2)
out = []
try:
    for src in ["2001:db8::1", "2001:db8::1", "2001:db8::2", "2001:db8:1::1", "2001:db8:1::1",
                "2001:db8:1::2"]:
        with Conn(s, source=src) as c:
            c.send(req("GET", "/one.txt"))
            out.append([src, c.read_response().status])
finally:
    s.stop()
print(json.dumps({"results": out, "stderr": s.stderr}))
"""


def test_ipv6_clients_grouped_by_64(tmpdir):
    """In a network namespace of its own (unshare -rn), so that the test can own addresses of
    2001:db8::/32: ::1 and ::2 share a /64, 2001:db8:1::/64 is another client."""
    tree = fixture_tree(tmpdir)
    conf = write_file(os.path.join(tmpdir, "v6.conf"), "root %s\nlocation / {\n"
                      "    limit_req_per_ip 1r/m burst 2\n}\n" % tree.root)
    script = write_file(os.path.join(tmpdir, "client.py"), IPV6_CLIENT)
    # the child imports tests/lib as this process does
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "tests"))
    setup = "ip link set lo up && " + " && ".join(
        "ip -6 addr add %s/64 dev lo nodad" % a
        for a in ("2001:db8::1", "2001:db8::2", "2001:db8:1::1", "2001:db8:1::2"))
    p = subprocess.run(["unshare", "-rn", "sh", "-c", setup + ' && exec "$0" "$@"',
                        sys.executable, script, conf], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(60))
    assert p.returncode == 0, p.stderr.decode()
    got = json.loads(p.stdout)
    statuses = [st for _, st in got["results"]]
    # ::1 twice (the burst), then ::2 of the same /64 is over it; the other /64 has its own
    assert statuses == [200, 200, 429, 200, 200, 429], got
    assert "2001:db8::/64" in got["stderr"], got["stderr"]


# ---- the table's bound -------------------------------------------------------------------------

def test_flood_of_addresses_stays_in_the_table_and_evicts(tmpdir):
    size, clients = 1024, 3000
    s = fixture_server(tmpdir,
                       "limit_table_size %d\nlocation / {\n    limit_req_per_ip 1r/m burst 5\n}\n"
                       % size)
    try:
        st0 = _stats(s)
        assert st0["table_size"] == size and st0["entries"] == 0, st0
        rss0 = rss_kib(s.proc.pid)
        deadline = time.monotonic() + T(120)
        for i in range(clients):
            assert time.monotonic() < deadline, "flood too slow: %d clients" % i
            src = "127.10.%d.%d" % (i // 254, i % 254 + 1)
            assert _get(s, "/one.txt", src).status == 200, src
        st = _stats(s)
        # every client got an entry (its bucket is not full again within the minute), so the
        # table is full and the rest came from evicting idle ones; none failed open
        assert st["entries"] <= size, st
        assert st["evictions"] >= clients - size, st
        assert st["fail_open"] == 0, st
        # the table was allocated at start: the flood adds no memory of its own (the
        # allowance covers the connections' buffers and the allocator's arenas)
        grown = rss_kib(s.proc.pid) - rss0
        assert grown * 1024 <= st["table_bytes"] + 8 * 1024 * 1024, (grown, st)
    finally:
        s.stop()


def test_table_full_of_connections_fails_open_and_never_evicts_them(tmpdir):
    """Every entry holds a connection: none may be evicted (its count would be lost), so the
    clients that find no entry are served unlimited, counted and logged once."""
    size, clients = 1024, 1100
    # 127.0.0.1 asks for the counters, on connections of its own that may still be closing
    # on the server's side when it asks again: it is never limited.
    s = fixture_server(tmpdir,
                       "limit_table_size %d\nlimit_conn_per_ip 1\nlimit_allow 127.0.0.1\n" % size)
    held = []
    try:
        deadline = time.monotonic() + T(120)
        for i in range(clients):
            assert time.monotonic() < deadline, "too slow: %d clients" % i
            c = Conn(s, source="127.20.%d.%d" % (i // 254, i % 254 + 1))
            held.append(c)
            c.send(req("GET", "/one.txt"))
            assert c.read_response().status == 200, i
        st = _stats(s)
        assert st["evictions"] == 0, st
        assert st["entries"] <= size and st["fail_open"] >= clients - size, st
        # the counted ones are still counted: a second connection of the first client is
        # refused
        _refused(s, "127.20.0.1")
        m = _metrics(s)
        assert m["lfhttpd_limit_table_fail_open_total"] >= clients - size, m
        for c in held:
            c.close()
        held = []
        assert wait_until(lambda: _stats(s)["entries"] == 0, T(10)), _stats(s)
    finally:
        for c in held:
            c.close()
        s.stop()
    assert s.stderr.count("new clients there are not limited") == 1, s.stderr


# ---- configuration errors ----------------------------------------------------------------------

BAD = [
    ("limit_conn_per_ip -1\n", 1, r"invalid value"),
    ("limit_conn_per_ip lots\n", 1, r"invalid value"),
    ("limit_req_per_ip 10r/h\n", 1, r"invalid rate"),
    ("limit_req_per_ip 0r/s\n", 1, r"invalid rate"),
    ("limit_req_per_ip r/s\n", 1, r"invalid rate"),
    ("limit_req_per_ip 10r/s burst 0\n", 1, r"invalid burst"),
    ("limit_req_per_ip 10r/s burst\n", 1, r"takes"),
    ("limit_req_per_ip 10r/s nodelay\n", 1, r"takes"),
    ("limit_req_per_ip off 3\n", 1, r"takes"),
    ("limit_allow 10.0.0.0/33\n", 1, r""),
    ("root .\nlocation / {\n    limit_allow 127.0.0.1\n}\n", 3, r""),
    ("root .\nlocation / {\n    limit_table_size 4096\n}\n", 3, r""),
    ("limit_table_size 100\n", 1, r""),
]


@pytest.mark.parametrize("text,lineno,want", BAD)
def test_bad_values_are_file_line_reason(tmpdir, text, lineno, want):
    path = write_file(os.path.join(tmpdir, "bad.conf"), text)
    rc, out, err = run_lfhttpd(["-t", "-c", path], cwd=tmpdir)
    assert rc == 2, (text, rc, err)
    line = one_error_line(err)
    assert line.startswith("%s:%d: " % (path, lineno)), (text, line)
    assert re.search(want, line, re.I), (text, line)


def test_good_values_pass_the_check(tmpdir):
    good = write_file(os.path.join(tmpdir, "good.conf"), "root %s\n" % tmpdir + textwrap.dedent("""\
        limit_conn_per_ip 10
        limit_req_per_ip 600r/m burst=20
        limit_allow 10.0.0.0/8 2001:db8::/32
        limit_table_size auto
        server example.com {
            limit_conn_per_ip 4
            location /api/ {
                limit_req_per_ip 10r/s burst 5
            }
        }
        """))
    rc, out, err = run_lfhttpd(["-t", "-c", good], cwd=tmpdir)
    assert rc == 0, err
