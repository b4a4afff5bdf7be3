"""Name-based virtual hosts: routing by Host (case, port, trailing dot), aliases, wildcards,
the default site (a `default` server block, else the top level), absolute-form targets."""

import os

from lib.server import ConfServer, Conn, raw, req
from lib.ops import write_file


def _site(tmpdir, name):
    root = os.path.join(tmpdir, name)
    write_file(os.path.join(root, "who.txt"), name)
    write_file(os.path.join(root, "only-%s.txt" % name), "only " + name)
    return root


CONF = """
root %(d)s/top
server one.test www.one.test ONE-ALIAS.test {
    root %(d)s/one
}
server two.test {
    root %(d)s/two
    add_header X-Site two
}
server *.example.test {
    root %(d)s/wild
}
server *.deep.example.test {
    root %(d)s/deep
}
"""


def _start(tmpdir, extra=""):
    for n in ("top", "one", "two", "wild", "deep", "dflt"):
        _site(tmpdir, n)
    return ConfServer(tmpdir, CONF % {"d": tmpdir} + extra)


def _who(s, host, target="/who.txt", version="HTTP/1.1"):
    r = raw(s, req("GET", target, host=host, version=version))
    return r.body.decode() if r.status == 200 else r.status


def test_two_servers_by_host(tmpdir):
    s = _start(tmpdir)
    assert _who(s, "one.test") == "one"
    assert _who(s, "two.test") == "two"
    r = raw(s, req("GET", "/who.txt", host="two.test"))
    assert r.header("X-Site") == "two"
    r = raw(s, req("GET", "/who.txt", host="one.test"))
    assert r.header("X-Site") is None, "add_header of another server leaked"
    # Each server has its own root: another site's file is not reachable.
    assert _who(s, "one.test", "/only-two.txt") == 404
    assert _who(s, "two.test", "/only-two.txt") == "only two"


def test_host_case_port_and_trailing_dot(tmpdir):
    s = _start(tmpdir)
    for host in ("ONE.TEST", "One.Test", "one.test:8080", "one.test:80", "one.test.",
                 "ONE.test.:443", "one.test:%d" % s.port):
        assert _who(s, host) == "one", host
    # Not a prefix/suffix match of a literal name.
    for host in ("one.test.evil", "xone.test", "one.tes", "ne.test", "one.test..", "one"):
        assert _who(s, host) == "top", host


def test_aliases(tmpdir):
    s = _start(tmpdir)
    assert _who(s, "www.one.test") == "one"
    assert _who(s, "one-alias.test") == "one"        # the name was written in capitals
    assert _who(s, "WWW.ONE.TEST:1234") == "one"


def test_wildcard(tmpdir):
    s = _start(tmpdir)
    assert _who(s, "a.example.test") == "wild"
    assert _who(s, "A.Example.TEST.") == "wild"
    assert _who(s, "x.y.example.test:81") == "wild"
    assert _who(s, "example.test") == "top", "*.example.test must not match example.test"
    assert _who(s, "aexample.test") == "top"
    assert _who(s, ".example.test") in ("top", 400)
    # the longest wildcard wins
    assert _who(s, "q.deep.example.test") == "deep"
    assert _who(s, "deep.example.test") == "wild"


def test_unknown_host_goes_to_top_level(tmpdir):
    s = _start(tmpdir)
    assert _who(s, "unknown.test") == "top"
    assert _who(s, "127.0.0.1:%d" % s.port) == "top"
    assert _who(s, "[::1]:80") == "top"
    r = raw(s, req("GET", "/who.txt", host=None, version="HTTP/1.0"))
    assert r.status == 200 and r.body == b"top"


def test_default_server_block_receives_unknown_hosts(tmpdir):
    s = _start(tmpdir, "server default fallback.test {\n    root %s/dflt\n}\n" % tmpdir)
    assert _who(s, "unknown.test") == "dflt"
    assert _who(s, "fallback.test") == "dflt"
    assert _who(s, "127.0.0.1") == "dflt"
    assert _who(s, "example.test") == "dflt"
    r = raw(s, req("GET", "/who.txt", host=None, version="HTTP/1.0"))
    assert r.status == 200 and r.body == b"dflt"
    # named servers still win
    assert _who(s, "one.test") == "one"
    assert _who(s, "b.example.test") == "wild"


def test_default_block_inherits_top_level(tmpdir):
    # A `default` server without its own root inherits the top level's settings.
    _site(tmpdir, "top")
    s = ConfServer(tmpdir, "root %s/top\nadd_header X-Top yes\nserver default {\n"
                           "    etag off\n}\n" % tmpdir)
    r = raw(s, req("GET", "/who.txt", host="whatever.test"))
    assert r.status == 200 and r.body == b"top"
    assert r.header("X-Top") == "yes" and r.header("ETag") is None, r.headers


def test_absolute_form_target_routes_by_its_host(tmpdir):
    s = _start(tmpdir)
    assert _who(s, "two.test", "http://one.test/who.txt") == "one"
    assert _who(s, "one.test", "http://TWO.test:8080/who.txt") == "two"
    assert _who(s, "one.test", "http://a.example.test/who.txt") == "wild"
    assert _who(s, "one.test", "http://unknown.test/who.txt") == "top"
    # HTTP/1.0 absolute form without Host
    r = raw(s, req("GET", "http://two.test/who.txt", host=None, version="HTTP/1.0"))
    assert r.status == 200 and r.body == b"two"


def test_keepalive_connection_switches_sites_per_request(tmpdir):
    s = _start(tmpdir)
    with Conn(s) as c:
        for host in ("one.test", "two.test", "x.example.test", "nope.test", "one.test"):
            c.send(req("GET", "/who.txt", host=host))
        bodies = [c.read_response().body for _ in range(5)]
    assert bodies == [b"one", b"two", b"wild", b"top", b"one"], bodies
