"""Differential test: the same CGI scripts under lfhttpd and under lighttpd's mod_cgi.

Debian's lighttpd is started on loopback with a configuration the test writes (same document
root, cgi.local-redir and cgi.execute-x-only enabled so that both servers follow RFC 3875 the
same way). For each request the status, the headers that carry the script's answer
(Content-Type, Location, the script's own fields) and the body must be equal.

Intentional differences, not compared:
  - framing: lfhttpd streams a script's output as it comes (chunked when the script gives no
    Content-Length); lighttpd collects small outputs and sends a Content-Length;
  - the servers' own headers (Server, Date, Accept-Ranges, ETag of a redirected-to file);
  - CONTENT_LENGTH: lighttpd sets CONTENT_LENGTH=0 for requests without a body, lfhttpd leaves
    it unset ("if and only if the request is accompanied by a message-body", RFC 3875 4.1.2);
  - lighttpd passes HTTP_AUTHORIZATION and HTTP_CONTENT_LENGTH; lfhttpd does not (RFC 3875
    4.1.18: not credentials, not what CONTENT_LENGTH already says);
  - PATH: lfhttpd passes the server's PATH (cgi_env_pass, default PATH); lighttpd none;
  - SERVER_SOFTWARE, SERVER_PORT and REMOTE_PORT, naturally (SERVER_SOFTWARE is normalised in
    bodies that print it);
  - a file in the CGI directory that is not executable: lfhttpd answers 403 (a script's source
    is never served); lighttpd with cgi.execute-x-only serves it as a static file;
  - QUERY_STRING and REQUEST_URI are passed exactly as sent (RFC 3875 4.1.7); lighttpd decodes
    percent-encoded unreserved characters in them first (%41 -> A), so the requests here avoid
    those.
"""

import os
import re

import pytest

from lib.server import ConfServer, raw, req
from lib.procs import copy_example_scripts, write_script

SH = "#!/bin/sh\n"

EXTRA = {
    "status404": SH + "printf 'Status: 404 Nothing Here\\nContent-Type: text/plain\\n"
                      "X-Custom: yes\\n\\nnot here\\n'\n",
    "abs": SH + "printf 'Location: http://example.com/elsewhere\\n\\n'\n",
    "abs-301": SH + "printf 'Status: 301 Moved Permanently\\nLocation: https://example.com/\\n"
                    "Content-Type: text/plain\\n\\nmoved\\n'\n",
    "local": SH + "printf 'Location: /static.txt\\n\\n'\n",
    "local-cgi": SH + "printf 'Location: /cgi-bin/env/from?redirect=1\\n\\n'\n",
    "echo-body": SH + "printf 'Content-Type: application/octet-stream\\n\\n'\nexec cat\n",
    "cl": SH + "printf 'Content-Type: text/plain\\nContent-Length: 6\\n\\nsix ch'\n",
}


def make_root(tmpdir):
    www = os.path.join(tmpdir, "www")
    cgi = os.path.join(www, "cgi-bin")
    copy_example_scripts(cgi)
    for name, text in EXTRA.items():
        write_script(cgi, name, text)
    write_script(cgi, "not-executable", SH + "echo no\n", mode=0o644)
    with open(os.path.join(www, "static.txt"), "w") as f:
        f.write("static file\n")
    return os.path.realpath(www)


# lighttpd's configuration (lib.peers.lighttpd: %(port)d; %(root)s the document root)
LIGHTTPD_CONF = """server.document-root = "%(root)s"
server.bind = "127.0.0.1"
server.port = %(port)d
server.modules = ("mod_cgi")
mimetype.assign = (".txt" => "text/plain; charset=utf-8")
cgi.local-redir = "enable"
cgi.execute-x-only = "enable"
$HTTP["url"] =~ "^/cgi-bin/" {
    cgi.assign = ("" => "")
}
"""


@pytest.fixture
def both(tmpdir, lighttpd_peer):
    """lfhttpd and lighttpd on the same document root: (lfhttpd, lighttpd's address)."""
    www = make_root(tmpdir)
    lt = lighttpd_peer(LIGHTTPD_CONF, root=www)
    srv = ConfServer(tmpdir, ["root %s" % www, "location /cgi-bin/ {", "    handler cgi", "}"],
                     root=www)
    return srv, lt.addr


CASES = [
    ("GET", "/cgi-bin/hello", [], b""),
    ("HEAD", "/cgi-bin/hello", [], b""),
    ("GET", "/cgi-bin/form?name=Ann&message=a%3Cb%3E+%26+c", [], b""),
    ("POST", "/cgi-bin/form", [("Content-Type", "application/x-www-form-urlencoded")],
     b"name=J%C3%BCrgen&message=%22quoted%22+%26+more"),
    ("POST", "/cgi-bin/form", [("Content-Type", "application/x-www-form-urlencoded"),
                               ("Transfer-Encoding", "chunked")],
     b"name=chunked&message=yes"),
    ("GET", "/cgi-bin/slow", [], b""),
    ("GET", "/cgi-bin/status404", [], b""),
    ("GET", "/cgi-bin/abs", [], b""),
    ("GET", "/cgi-bin/abs-301", [], b""),
    ("GET", "/cgi-bin/local", [], b""),
    ("GET", "/cgi-bin/cl", [], b""),
    ("POST", "/cgi-bin/echo-body", [], bytes(range(256)) * 64),
    ("GET", "/cgi-bin/nothere", [], b""),
]

COMPARED_HEADERS = ("content-type", "location", "x-custom", "content-length")

# Meta-variables both servers must set to the same value for the same request.
SAME_VARS = ("GATEWAY_INTERFACE", "SERVER_PROTOCOL", "REQUEST_METHOD", "REQUEST_URI",
             "QUERY_STRING", "SCRIPT_NAME", "SCRIPT_FILENAME", "PATH_INFO", "PATH_TRANSLATED",
             "DOCUMENT_ROOT", "CONTENT_TYPE", "REMOTE_ADDR", "SERVER_ADDR", "SERVER_NAME",
             "REQUEST_SCHEME", "REDIRECT_STATUS", "HTTP_X_TEST", "HTTP_HOST", "HTTP_COOKIE")


def normalise(body):
    return re.sub(rb"(lfhttpd|lighttpd)/[0-9.]+", b"SERVER", body)


def ask(target, method, path, headers, body):
    data = req(method, path, headers=headers + [("Host", "cgi.test")], host=None)
    if body:
        if any(k.lower() == "transfer-encoding" for k, _ in headers):
            data += b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        else:
            data = req(method, path, headers=headers + [("Host", "cgi.test"),
                                                        ("Content-Length", str(len(body)))],
                       host=None) + body
    return raw(target, data, timeout=30, method=method)


def env_of(resp):
    return dict(l.split("=", 1) for l in resp.body.decode("latin-1").splitlines() if "=" in l)


@pytest.mark.parametrize("method,path,headers,body", CASES,
                         ids=["%d-%s %s" % (i, c[0], c[1]) for i, c in enumerate(CASES)])
def test_same_answers_as_lighttpd_mod_cgi(both, method, path, headers, body):
    srv, lighttpd = both
    a = ask(srv, method, path, headers, body)
    b = ask(lighttpd, method, path, headers, body)
    assert a.status == b.status, "status %d (lfhttpd) vs %d (lighttpd)" % (a.status, b.status)
    if a.status >= 400:
        return            # error pages are each server's own: the status is the answer
    for h in COMPARED_HEADERS:
        va, vb = a.header(h), b.header(h)
        if h == "content-length" and (va is None or vb is None):
            continue      # framing: see the module docstring
        assert va == vb, "%s %r (lfhttpd) vs %r (lighttpd)" % (h, va, vb)
    assert normalise(a.body) == normalise(b.body), "body %r vs %r" % (a.body[:200], b.body[:200])


META_CASES = [
    ("GET", "/cgi-bin/env/x/y%20z?q=1&r=a%20b", [("X-Test", "1"), ("Cookie", "a=1")], b""),
    ("POST", "/cgi-bin/env", [("Content-Type", "text/x-test")], b"hello"),
    ("POST", "/cgi-bin/env", [("Transfer-Encoding", "chunked")], b"chunked body"),
]


@pytest.mark.parametrize("method,path,headers,body", META_CASES,
                         ids=["get-path-info-query", "post-length", "post-chunked"])
def test_same_meta_variables_as_lighttpd(both, method, path, headers, body):
    srv, lighttpd = both
    a = env_of(ask(srv, method, path, headers, body))
    b = env_of(ask(lighttpd, method, path, headers, body))
    for k in SAME_VARS:
        assert a.get(k) == b.get(k), "%s=%r (lfhttpd) vs %r (lighttpd)" % (k, a.get(k), b.get(k))
    if body:
        assert a["CONTENT_LENGTH"] == b["CONTENT_LENGTH"] == str(len(body))
    else:
        assert "CONTENT_LENGTH" not in a and b.get("CONTENT_LENGTH") == "0"
    # Everything lfhttpd sets, lighttpd sets too, but PATH (cgi_env_pass).
    only_ours = sorted(k for k in a if k not in b and k not in ("PATH",))
    assert not only_ours, only_ours
    # What lighttpd sets and lfhttpd deliberately does not.
    only_theirs = sorted(k for k in b if k not in a)
    assert set(only_theirs) <= {"CONTENT_LENGTH", "HTTP_CONTENT_LENGTH",
                                "HTTP_AUTHORIZATION"}, only_theirs
