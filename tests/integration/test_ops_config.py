"""Configuration file: every process-wide directive (good and bad values), block syntax,
quoting and comments, `-t`, command-line overrides, and the shipped conf/lfhttpd.conf."""

import os
import re
import socket
import time

import pytest

from lib.static import make_root
from lib.server import (ConfServer, Conn, REPO, Server, T, free_port, get, port_is_free, raw, req,
                        wait_until)
from lib.ops import one_error_line, run_lfhttpd, write_file

MIME = os.path.join(REPO, "conf", "mime.types")


def _root(tmpdir, name="root", files=None):
    return make_root(os.path.join(tmpdir, name),
                     files or {"index.html": b"index of %s\n" % name.encode()}, mtime=None)


def _check(tmpdir, text, name="t.conf", extra=(), cwd=None):
    """lfhttpd -t -c FILE: (status, stderr, path)."""
    path = write_file(os.path.join(tmpdir, name), text)
    rc, out, err = run_lfhttpd(["-t", "-c", path] + list(extra), cwd=cwd or tmpdir)
    return rc, err, path


def _assert_error_at(tmpdir, text, lineno, want=None, extra=()):
    rc, err, path = _check(tmpdir, text, extra=extra)
    assert rc == 2, "%r: exit status %s (want 2); stderr %r" % (text, rc, err)
    line = one_error_line(err)
    assert line.startswith("%s:%d: " % (path, lineno)) and len(line) > len(path) + 5, \
        "%r: want '%s:%d: reason', got %r" % (text, path, lineno, line)
    if want:
        assert re.search(want, line, re.I), "%r: reason %r does not match %r" % (text, line, want)
    return line


# ---- every process-wide directive accepts a good value -----------------------------------------

def _all_globals(tmpdir, root):
    return (
        "# every process-wide directive\n"
        "listen 127.0.0.1:0\n"
        "listen 127.0.0.1:0 proxy_protocol\n"
        "root %(root)s\n"
        "threads 3\n"
        "leader_batch 1\n"
        "log_level info\n"
        "mime_types %(mime)s\n"
        "user root\n"
        "group root\n"
        "trusted_proxies 10.0.0.0/8 192.168.1.1 ::1 fd00::/8\n"
        "error_log %(d)s/error.log\n"
        "access_log %(d)s/access.log\n"
        "access_log_format json\n"
        "max_request_head 2k\n"
        "max_headers 20\n"
        "max_uri_length 100\n"
        "max_body_size 10\n"
        "max_connections 50\n"
        "timeout_header 1500ms\n"
        "timeout_body 2s\n"
        "timeout_keepalive 1m\n"
        "timeout_send 1h\n"
        "drain_timeout 0\n"
        "file_cache_entries 64\n"
        "file_cache_size 1m\n"
        "file_cache_valid 0\n"
    ) % {"root": root, "mime": MIME, "d": tmpdir}


def test_every_global_directive_good_value_checks(tmpdir):
    root = _root(tmpdir)
    rc, err, path = _check(tmpdir, _all_globals(tmpdir, root))
    assert rc == 0, "valid file rejected: %r" % err
    assert "valid" in err, err


def test_every_global_directive_good_value_takes_effect(tmpdir):
    root = _root(tmpdir, files={"index.html": b"hello\n", "f.zzz": b"x"})
    # The file's listeners are used (no --listen on the command line): plain first, then the
    # proxy_protocol one.
    s = ConfServer(tmpdir, _all_globals(tmpdir, root), listen=(), threads=None,
                   expect_listeners=2, error_log=os.path.join(tmpdir, "error.log"))
    elog_path = os.path.join(tmpdir, "error.log")
    wait_until(lambda: "threads" in open(elog_path).read(), what="the 'N threads' notice")
    elog = open(elog_path).read()
    assert "3 threads" in elog, elog                          # threads 3
    assert s.stderr.strip() == "", s.stderr                   # error_log FILE: nothing on stderr
    r = get(s, "/")
    assert r.status == 200 and r.body == b"hello\n"
    # max_uri_length 100 -> 414; max_request_head 2k -> 431; max_headers 20 -> 431;
    # max_body_size 10 -> 413
    assert raw(s, req("GET", "/" + "a" * 150)).status == 414
    assert raw(s, req("GET", "/", headers={"X-Big": "b" * 3000})).status == 431
    assert raw(s, req("GET", "/", headers=[("X-H%d" % i, "v") for i in range(25)])).status == 431
    assert raw(s, req("POST", "/", body=b"0123456789abcdef")).status == 413
    # The proxy_protocol listener wants a PROXY header first.
    with Conn(s.addr(1)) as c:
        c.send(b"PROXY TCP4 203.0.113.1 127.0.0.1 1234 80\r\n" + req("GET", "/"))
        assert c.read_response().status == 200
    # timeout_header 1500ms: an incomplete head is cut off after ~1.5 s, not 60 s.
    with Conn(s, timeout=10) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        try:
            c.read_response()
        except Exception:
            pass
        took = time.monotonic() - t0
        assert 1.0 <= took <= T(1.5) + 2, "head timeout after %.2fs, want ~1.5s" % took
    # access_log_format json to access_log FILE
    time.sleep(0.2)
    alog = open(os.path.join(tmpdir, "access.log")).read().splitlines()
    assert alog and alog[0].startswith("{"), alog[:2]
    # log_level info: info messages are not filtered (notice lines at least are there)
    assert "[notice]" in elog


def test_size_and_duration_units(tmpdir):
    root = _root(tmpdir)
    good = ["max_request_head 1024", "max_request_head 64k", "max_request_head 64K",
            "max_body_size 0", "max_body_size 1g", "max_body_size 1024m", "max_uri_length 64",
            "max_uri_length 1m", "file_cache_size 0", "file_cache_size 2G",
            "timeout_header 1", "timeout_header 1ms", "timeout_header 90s", "timeout_header 3m",
            "timeout_header 24h", "timeout_body 86400000ms", "drain_timeout 0",
            "drain_timeout 0s", "file_cache_valid 0ms", "file_cache_valid 24h",
            "threads auto", "threads 1", "threads 1024", "leader_batch 64",
            "max_connections 1", "max_connections 1000000", "max_headers 1000",
            "file_cache_entries 64", "log_level error", "log_level warn", "log_level notice",
            "log_level debug", "access_log_format combined", "access_log off",
            "access_log stdout", "error_log stderr", "listen 8080", "listen *:8080",
            "listen [::1]:8080", "listen 127.0.0.1:65535", "trusted_proxies 0.0.0.0/0",
            "trusted_proxies ::/0 127.0.0.1/32", "user nobody", "group nogroup"]
    for g in good:
        rc, err, _ = _check(tmpdir, "root %s\n%s\n" % (root, g))
        assert rc == 0, "%r rejected: %r" % (g, err)


# ---- ... and rejects a bad one with FILE:LINE, exit 2 ------------------------------------------

BAD_GLOBALS = [
    ("listen nonsense", "listen"),
    ("listen 127.0.0.1:99999", "listen"),
    ("listen 127.0.0.1:http", "listen"),
    ("listen ::1:8080", "listen"),
    ("listen [::1", "listen"),
    ("listen", "listen"),
    ("listen 127.0.0.1:0 proxy_protcol", "proxy_protcol"),
    ("listen 127.0.0.1:0 ssl", "ssl"),
    ("listen 127.0.0.1:0 proxy_protocol extra", "listen"),
    ("threads 0", "threads"),
    ("threads -1", "threads"),
    ("threads 1025", "threads"),
    ("threads many", "threads"),
    ("threads 2 3", "threads"),
    ("leader_batch 0", "leader_batch"),
    ("leader_batch 65", "leader_batch"),
    ("leader_batch x", "leader_batch"),
    ("log_level verbose", "verbose"),
    ("log_level", "log_level"),
    ("access_log_format xml", "xml"),
    ("trusted_proxies 10.0.0.0/33", "10.0.0.0/33"),
    ("trusted_proxies 300.1.1.1", "300.1.1.1"),
    ("trusted_proxies ::1/129", "::1/129"),
    ("trusted_proxies 10.0.0.0/", "10.0.0.0/"),
    ("trusted_proxies 127.0.0.1 proxy.example", "proxy.example"),
    ("trusted_proxies", "trusted_proxies"),
    ('user "bad name"', "user"),
    ("user a:b", "user"),
    ("group g/x", "group"),
    ("max_request_head 65k", "max_request_head"),
    ("max_request_head 512", "max_request_head"),
    ("max_request_head 16q", "max_request_head"),
    ("max_headers 0", "max_headers"),
    ("max_headers 1001", "max_headers"),
    ("max_uri_length 32", "max_uri_length"),
    ("max_body_size 1t", "max_body_size"),
    ("max_body_size -1", "max_body_size"),
    ("max_connections 0", "max_connections"),
    ("max_connections 1000001", "max_connections"),
    ("timeout_header 0", "timeout_header"),
    ("timeout_header 5x", "timeout_header"),
    ("timeout_header 1.5s", "timeout_header"),
    ("timeout_header 25h", "timeout_header"),
    ("timeout_header 10k", "timeout_header"),
    ("timeout_body 0ms", "timeout_body"),
    ("timeout_keepalive 2d", "timeout_keepalive"),
    ("timeout_send -5", "timeout_send"),
    ("drain_timeout forever", "drain_timeout"),
    ("drain_timeout 1441m", "drain_timeout"),
    ("file_cache_entries 63", "file_cache_entries"),
    ("file_cache_entries 10000001", "file_cache_entries"),
    ("file_cache_size 1x", "file_cache_size"),
    ("file_cache_size 2048g", "file_cache_size"),
    ("file_cache_valid 2d", "file_cache_valid"),
    ("file_cache_valid 25h", "file_cache_valid"),
    ("max_body_size 99999999999999999999999", "max_body_size"),
]


@pytest.mark.parametrize("bad,want", BAD_GLOBALS)
def test_every_global_directive_bad_value_file_line(tmpdir, bad, want):
    root = _root(tmpdir)
    head = "# comment\nroot %s\n\n" % root            # the bad directive is on line 4
    _assert_error_at(tmpdir, head + bad + "\nthreads 2\n", 4, re.escape(want))


def test_bad_value_also_refuses_to_start(tmpdir):
    root = _root(tmpdir)
    path = write_file(os.path.join(tmpdir, "s.conf"), "root %s\nthreads 0\n" % root)
    port = free_port()
    rc, out, err = run_lfhttpd(["-c", path, "--listen", "127.0.0.1:%d" % port, "--user", "root"])
    assert rc == 2, (rc, err)
    assert one_error_line(err).startswith(path + ":2: "), err
    assert port_is_free(port)


def test_unknown_directive(tmpdir):
    root = _root(tmpdir)
    line = _assert_error_at(tmpdir, "root %s\n\nworker_processes 4\n" % root, 3)
    assert "worker_processes" in line, line
    # A misspelt directive inside a block too.
    _assert_error_at(tmpdir, "root %s\nserver a.test {\n  roott /x\n}\n" % root, 3, "roott")


def test_global_directive_inside_block(tmpdir):
    root = _root(tmpdir)
    for g in ["threads 2", "listen 127.0.0.1:0", "access_log off", "error_log stderr",
              "user nobody", "trusted_proxies 10.0.0.1", "max_body_size 1k",
              "timeout_keepalive 5s", "log_level debug", "access_log_format json",
              "mime_types %s" % MIME, "drain_timeout 1s", "leader_batch 4"]:
        _assert_error_at(tmpdir, "root %s\nserver a.test {\n  %s\n}\n" % (root, g), 3,
                         r"not allowed|block|server|context")
        _assert_error_at(tmpdir, "root %s\nlocation /x/ {\n  %s\n}\n" % (root, g), 3,
                         r"not allowed|block|location|context")


def test_nested_blocks(tmpdir):
    root = _root(tmpdir)
    _assert_error_at(tmpdir, "root %s\nserver a.test {\n  server b.test {\n  }\n}\n" % root, 3,
                     "nest")
    _assert_error_at(tmpdir, "root %s\nlocation /a/ {\n  server b.test {\n  }\n}\n" % root, 3)
    _assert_error_at(tmpdir, "root %s\nlocation /a/ {\n  location /a/b/ {\n  }\n}\n" % root, 3,
                     "nest")
    # location inside server is fine
    rc, err, _ = _check(tmpdir, "root %s\nserver a.test {\n  location /a/ {\n    etag off\n"
                                "  }\n}\n" % root)
    assert rc == 0, err


def test_block_syntax_errors(tmpdir):
    root = _root(tmpdir)
    h = "root %s\n" % root
    _assert_error_at(tmpdir, h + "location /x/\n  etag off\n", 2)          # no '{'
    _assert_error_at(tmpdir, h + "location x {\n}\n", 2)                    # not /prefix or *.ext
    _assert_error_at(tmpdir, h + "location {\n}\n", 2)
    _assert_error_at(tmpdir, h + "location /a/ /b/ {\n}\n", 2)
    _assert_error_at(tmpdir, h + "server {\n}\n", 2)                        # no name
    _assert_error_at(tmpdir, h + "server a.test\n{\n}\n", 2)                # '{' on next line
    _assert_error_at(tmpdir, h + "etag off {\n}\n", 2)                      # '{' after a directive
    _assert_error_at(tmpdir, h + "server a.test { root /x }\n", 2)          # one-line block
    _assert_error_at(tmpdir, h + "server a.b/c {\n}\n", 2)
    _assert_error_at(tmpdir, h + "server *a.test {\n}\n", 2)


def test_unclosed_block_reports_opening_line(tmpdir):
    root = _root(tmpdir)
    line = _assert_error_at(tmpdir, "root %s\n\n\nserver a.test {\n  etag off\n" % root, 4)
    assert "server" in line, line
    line = _assert_error_at(tmpdir, "root %s\nserver a.test {\n  location /x/ {\n  }\n"
                                    "  location /y/ {\n    etag off\n}\n" % root, 2)
    line = _assert_error_at(tmpdir, "root %s\nlocation *.css {\n  etag off\n" % root, 2)
    assert "location" in line, line


def test_mistakes_seen_only_with_the_whole_file_name_their_line(tmpdir):
    """A directive that needs another one, or a handler refusing its argument: the error
    still names the line of the directive at fault, not just "lfhttpd:"."""
    root = _root(tmpdir)
    _assert_error_at(tmpdir, "root %s\n\ntls_listen 127.0.0.1:0\n" % root, 3, "certificate")
    _assert_error_at(tmpdir, "root %s\ntls_redirect_http on\n" % root, 2, "TLS listener")
    _assert_error_at(tmpdir, 'root %s\nlocation /p/ {\n  auth_basic "R"\n}\n' % root, 3,
                     "auth_basic_user_file")
    _assert_error_at(tmpdir, "root %s\nlocation /c/ {\n  etag off\n  handler cgi %s/none\n}\n"
                     % (root, tmpdir), 4, "handler cgi")
    _assert_error_at(tmpdir, "root %s\nhandler cgi %s\n" % (root, root), 2, "prefix location")


def test_stray_closing_brace(tmpdir):
    root = _root(tmpdir)
    _assert_error_at(tmpdir, "root %s\n# x\n}\n" % root, 3, "}")
    _assert_error_at(tmpdir, "root %s\nserver a.test {\n}\n}\n" % root, 4, "}")
    _assert_error_at(tmpdir, "root %s\nserver a.test {\n} }\n" % root, 3)


def test_quoted_values_with_spaces_and_escapes(tmpdir):
    spaced = os.path.join(tmpdir, "dir with spaces")
    _root(tmpdir, "dir with spaces", {"f.txt": b"in a spaced dir\n"})
    conf = ('root "%s"\n'
            'add_header X-Quoted "a \\"quoted\\" value, a \\\\ backslash and a # hash"\n'
            'add_header X-Plain   plain-value   # a comment after the value\n'
            'add_header X-Empty-Comment "v"# glued comment\n'
            '   # an indented comment\n'
            '\t\n'
            'cache_control "public,  max-age=60"   \n' % spaced)
    s = ConfServer(tmpdir, conf)
    r = get(s, "/f.txt")
    assert r.status == 200 and r.body == b"in a spaced dir\n", r
    assert r.header("X-Quoted") == 'a "quoted" value, a \\ backslash and a # hash', r.headers
    assert r.header("X-Plain") == "plain-value", r.headers
    assert r.header("X-Empty-Comment") == "v", r.headers
    assert r.header("Cache-Control") == "public,  max-age=60", r.headers


def test_quote_errors(tmpdir):
    root = _root(tmpdir)
    line = _assert_error_at(tmpdir, 'root %s\nadd_header X-A "unterminated\n' % root, 2)
    assert "quot" in line.lower() or "unterminated" in line.lower(), line
    _assert_error_at(tmpdir, 'root %s\nadd_header X-A ab"cd"\n' % root, 2)


def test_comments_at_line_ends(tmpdir):
    root = _root(tmpdir)
    conf = ("root %s   # the root\n"
            "threads 2# glued\n"
            "leader_batch 4 #\n"
            "server a.test {   # a virtual host\n"
            "  etag off # no etags\n"
            "}   # end\n"
            "# threads 0   (a commented-out bad value is not read)\n" % root)
    rc, err, _ = _check(tmpdir, conf)
    assert rc == 0, err


def test_crlf_line_endings(tmpdir):
    root = _root(tmpdir)
    rc, err, _ = _check(tmpdir, "root %s\r\nthreads 2\r\nserver a.test {\r\n  etag off\r\n}\r\n"
                        % root)
    assert rc == 0, err


def test_missing_config_file(tmpdir):
    missing = os.path.join(tmpdir, "nope.conf")
    rc, out, err = run_lfhttpd(["-t", "-c", missing])
    assert rc == 2, (rc, err)
    assert missing in one_error_line(err), err
    rc, out, err = run_lfhttpd(["-c", missing, "--listen", "127.0.0.1:0", "--user", "root"])
    assert rc == 2 and missing in one_error_line(err), (rc, err)


# ---- files and names that are checked when the server starts ------------------------------------

def test_mime_types_missing_file_file_line(tmpdir):
    root = _root(tmpdir)
    missing = os.path.join(tmpdir, "no-such.types")
    line = _assert_error_at(tmpdir, "root %s\n\nmime_types %s\n" % (root, missing), 3)
    assert "no-such.types" in line, line


def test_mime_types_bad_file_refuses_to_start(tmpdir):
    root = _root(tmpdir)
    missing = os.path.join(tmpdir, "no-such.types")
    conf = write_file(os.path.join(tmpdir, "m.conf"), "root %s\nmime_types %s\n" % (root, missing))
    rc, out, err = run_lfhttpd(["-c", conf, "--listen", "127.0.0.1:0", "--user", "root"])
    assert rc == 2, (rc, err)
    assert "no-such.types" in one_error_line(err), err


def _unwritable_log_conf(tmpdir, directive):
    root = _root(tmpdir)
    bad = os.path.join(tmpdir, "no-such-dir", "x.log")
    return "root %s\n\n%s %s\n" % (root, directive, bad)


def test_access_log_unwritable_path_refuses_to_start(tmpdir):
    conf = write_file(os.path.join(tmpdir, "a.conf"), _unwritable_log_conf(tmpdir, "access_log"))
    port = free_port()
    rc, out, err = run_lfhttpd(["-c", conf, "--listen", "127.0.0.1:%d" % port, "--user", "root"])
    assert rc == 2, (rc, err)
    line = one_error_line(err)
    assert "no-such-dir" in line, line
    assert port_is_free(port)
    assert line.startswith(conf + ":3: "), "want '%s:3: reason', got %r" % (conf, line)


def test_error_log_unwritable_path_refuses_to_start(tmpdir):
    conf = write_file(os.path.join(tmpdir, "e.conf"), _unwritable_log_conf(tmpdir, "error_log"))
    rc, out, err = run_lfhttpd(["-c", conf, "--listen", "127.0.0.1:0", "--user", "root"])
    assert rc == 2, (rc, err)
    line = one_error_line(err)
    assert "no-such-dir" in line, line
    assert line.startswith(conf + ":3: "), "want '%s:3: reason', got %r" % (conf, line)


def test_unwritable_log_paths_fail_the_check(tmpdir):
    # `lfhttpd -t` is run before a deployment: a log path that cannot be opened is an error
    # there too (as with nginx -t), not only at start.
    for directive in ("access_log", "error_log"):
        rc, err, path = _check(tmpdir, _unwritable_log_conf(tmpdir, directive))
        assert rc == 2, "%s to a missing directory: -t exit status %s; stderr %r" % (
            directive, rc, err)
        assert one_error_line(err).startswith(path + ":3: "), (directive, err)


def test_unknown_user_or_group_refuses_to_start(tmpdir):
    root = _root(tmpdir)
    for directive, name in (("user", "no-such-user-xyz"), ("group", "no-such-group-xyz")):
        conf = write_file(os.path.join(tmpdir, "u.conf"), "root %s\n%s %s\n" % (root, directive,
                                                                                 name))
        port = free_port()
        rc, out, err = run_lfhttpd(["-c", conf, "--listen", "127.0.0.1:%d" % port])
        if os.geteuid() != 0:
            return   # user/group only matter when started as root
        assert rc == 2, (directive, rc, err)
        assert name in one_error_line(err), err
        assert "listening on" not in err, (directive, name)
        assert port_is_free(port), (directive, name)
    # --user on the command line too
    rc, out, err = run_lfhttpd(["--root", root, "--listen", "127.0.0.1:0",
                                "--user", "no-such-user-xyz"])
    assert rc == 2 and "no-such-user-xyz" in one_error_line(err), (rc, err)
    rc, out, err = run_lfhttpd(["--root", root, "--listen", "127.0.0.1:0",
                                "--user", "nobody:no-such-group-xyz"])
    assert rc == 2 and "no-such-group-xyz" in one_error_line(err), (rc, err)


# ---- lfhttpd -t -------------------------------------------------------------------------------

def test_check_shipped_configuration(tmpdir):
    rc, out, err = run_lfhttpd(["-t", "-c", "conf/lfhttpd.conf"], cwd=REPO)
    assert rc == 0, "shipped configuration rejected: %r" % err
    assert "valid" in err, err
    assert "listening" not in err
    rc, out, err = run_lfhttpd(["--test", "--config", "conf/lfhttpd.conf"], cwd=REPO)
    assert rc == 0, err
    rc, out, err = run_lfhttpd(["-t", "--config=conf/lfhttpd.conf"], cwd=REPO)
    assert rc == 0, err


def test_check_binds_nothing(tmpdir):
    root = _root(tmpdir)
    # A port that is busy: -t still succeeds, so it did not try to bind.
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        bport = busy.getsockname()[1]
        rc, err, _ = _check(tmpdir, "root %s\nlisten 127.0.0.1:%d\n" % (root, bport))
        assert rc == 0, "-t tried to bind a busy port? %r" % err
    finally:
        busy.close()
    # A free port stays free while and after checking a good and a bad file.
    port = free_port()
    for text, want in (("root %s\nlisten 127.0.0.1:%d\n" % (root, port), 0),
                       ("root %s\nlisten 127.0.0.1:%d\nthreads zero\n" % (root, port), 2)):
        rc, err, _ = _check(tmpdir, text)
        assert rc == want, (text, rc, err)
        assert port_is_free(port), (text, want, "port %d bound after -t" % port)


def test_check_bad_file_and_bad_root(tmpdir):
    root = _root(tmpdir)
    rc, err, path = _check(tmpdir, "root %s\nthreads zero\n" % root)
    assert rc == 2 and one_error_line(err).startswith(path + ":2: "), err
    rc, err, path = _check(tmpdir, "root %s/missing\n" % root)
    assert rc == 2 and "missing" in one_error_line(err), err


def test_check_with_cli_flags(tmpdir):
    root = _root(tmpdir)
    # The flags are checked together with the file: a bad --threads fails -t.
    path = write_file(os.path.join(tmpdir, "c.conf"), "root %s\n" % root)
    rc, out, err = run_lfhttpd(["-t", "-c", path, "--threads", "0"])
    assert rc == 2, (rc, err)
    one_error_line(err)
    rc, out, err = run_lfhttpd(["-c", path, "-t"])
    assert rc == 0, err


# ---- command-line flags override the file -------------------------------------------------------

def test_cli_overrides_file(tmpdir):
    file_root = _root(tmpdir, "fileroot")
    cli_root = _root(tmpdir, "cliroot")
    fport = free_port()
    conf = ("listen 127.0.0.1:%d\nroot %s\nthreads 3\nuser no-such-user-xyz\n"
            % (fport, file_root))
    s = ConfServer(tmpdir, conf, root=cli_root, threads=1)      # --listen 127.0.0.1:0 --root
    assert len(s.listeners) == 1 and s.port != fport, s.listeners   # --listen replaced the file's
    assert port_is_free(fport), "the file's listener is open despite --listen"
    wait_until(lambda: "threads" in s.stderr, what="the 'N threads' notice")
    assert re.search(r"\b1 threads?\b", s.stderr), s.stderr
    assert get(s, "/").body == b"index of cliroot\n"
    s.stop()
    # Without --listen/--root/--threads the file's values are used.
    s = ConfServer(tmpdir, conf.replace("user no-such-user-xyz", ""), listen=(), threads=None)
    assert s.port == fport, s.listeners
    wait_until(lambda: "threads" in s.stderr, what="the 'N threads' notice")
    assert "3 threads" in s.stderr, s.stderr
    assert get(s, "/").body == b"index of fileroot\n"


def test_cli_listen_several_replace_file_listeners(tmpdir):
    root = _root(tmpdir)
    p1, p2 = free_port(), free_port()
    s = ConfServer(tmpdir, "root %s\nlisten 127.0.0.1:%d\nlisten 127.0.0.1:%d\n" % (root, p1, p2),
                   listen=("127.0.0.1:0", "127.0.0.1:0"))
    assert len(s.listeners) == 2 and {p for _, _, p in s.listeners}.isdisjoint({p1, p2})
    assert port_is_free(p1) and port_is_free(p2)


def test_positional_root_overrides_file(tmpdir):
    file_root = _root(tmpdir, "fileroot")
    pos_root = _root(tmpdir, "posroot")
    s = ConfServer(tmpdir, "root %s\n" % file_root, args=[pos_root])
    assert get(s, "/").body == b"index of posroot\n"


# ---- the shipped configuration --------------------------------------------------------------

def test_shipped_configuration_serves_www(tmpdir):
    with open(os.path.join(REPO, "www", "index.html"), "rb") as f:
        index = f.read()
    # As `make run` does it: from the repository root, the file's root ./www, mime.types...
    # and (started as root) the default drop to nobody.
    s = Server(root=None, threads=None, cwd=REPO, user=None,
               args=["--config", "conf/lfhttpd.conf"])
    r = get(s, "/")
    assert r.status == 200 and r.body == index, r
    assert r.header("X-Content-Type-Options") == "nosniff", r.headers
    r = get(s, "/no-such-page")
    assert r.status == 404
    with open(os.path.join(REPO, "www", "404.html"), "rb") as f:
        assert r.body == f.read(), "error_page 404 /404.html not used"
    svgs = [n for n in os.listdir(os.path.join(REPO, "www")) if n.endswith(".svg")]
    if svgs:
        r = get(s, "/" + svgs[0])
        assert r.status == 200 and r.header("Cache-Control") == "public, max-age=3600", r.headers
        assert r.header("Content-Type", "").startswith("image/svg+xml"), r.headers
