"""Command line: --version, --help, errors (exit 2), listeners, root, threads."""

import os
import re
import socket
import subprocess
import threading

import pytest

from lib.static import make_root
from lib.server import (Conn, Server, T, binary, fixture_tree, get, req,
                        sanitizer_report)


def run(args, cwd=None, timeout=10):
    p = subprocess.run([binary()] + list(args), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                       timeout=T(timeout))
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    rep = sanitizer_report(err)
    assert rep is None, "sanitizer report:\n" + rep
    return p.returncode, out, err


def assert_usage_error(args, cwd=None):
    rc, out, err = run(args, cwd=cwd)
    assert rc == 2, "%r: exit status %s (want 2); stderr=%r" % (args, rc, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].strip(), \
        "%r: want exactly one stderr line, got %r" % (args, err)
    assert "listening on" not in err
    return lines[0]


def _root(tmpdir):
    return make_root(os.path.join(tmpdir, "root"), {"index.html": b"hello from index\n"},
                     mtime=None)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    rc, out, err = run([flag])
    assert rc == 0, (flag, rc, err)
    assert re.match(r"^lfhttpd \S+\n?$", out), (flag, out, err)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(flag):
    rc, out, err = run([flag])
    assert rc == 0, (flag, rc, err)
    text = out + err
    assert re.search(r"(?i)usage", text), text
    for opt in ["--listen", "--root", "--threads", "--config", "--version", "--help"]:
        assert opt in text, (flag, opt, text)


def test_bad_flag_exit_2(tmpdir):
    root = _root(tmpdir)
    line = assert_usage_error(["--bogus", "--root", root, "--listen", "127.0.0.1:0"])
    assert "bogus" in line, line
    assert_usage_error(["-x", "--root", root, "--listen", "127.0.0.1:0"])


def test_missing_option_argument_exit_2(tmpdir):
    root = _root(tmpdir)
    assert_usage_error(["--listen", "127.0.0.1:0", "--root", root, "--threads"])
    assert_usage_error(["--root", root, "--listen"])


@pytest.mark.parametrize("args", [
    ["--threads", "0"], ["--threads", "abc"], ["--threads", "-3"], ["--listen", "nonsense"],
    ["--listen", "127.0.0.1:99999"], ["--listen", "127.0.0.1:http"], ["--listen", "[::1"]])
def test_bad_option_values_exit_2(tmpdir, args):
    root = _root(tmpdir)
    a = ["--listen", "127.0.0.1:0", "--root", root] + args \
        if args[0] != "--listen" else args + ["--root", root]
    assert_usage_error(a)


def test_nonexistent_root_exit_2(tmpdir):
    missing = os.path.join(tmpdir, "does-not-exist")
    line = assert_usage_error(["--listen", "127.0.0.1:0", "--root", missing])
    assert "does-not-exist" in line, line
    assert_usage_error(["--listen", "127.0.0.1:0", missing])          # positional


def test_root_is_a_file_exit_2(tmpdir):
    f = os.path.join(tmpdir, "file")
    open(f, "w").close()
    assert_usage_error(["--listen", "127.0.0.1:0", "--root", f])


def test_default_root_missing_exit_2(tmpdir):
    # default root is ./www; run in a directory without it
    assert_usage_error(["--listen", "127.0.0.1:0"], cwd=tmpdir)


def test_port_in_use_exit_2(tmpdir):
    root = _root(tmpdir)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        line = assert_usage_error(["--listen", "127.0.0.1:%d" % port, "--root", root])
        assert str(port) in line or "in use" in line.lower(), line
    finally:
        s.close()


def test_listening_line_reports_real_port(tmpdir):
    root = _root(tmpdir)
    with Server(root=root) as s:
        assert re.search(r"listening on http://127\.0\.0\.1:%d\b" % s.port, s.stderr), s.stderr
        assert s.port != 0
        r = get(s, "/")
        assert r.status == 200 and r.body == b"hello from index\n"


def test_two_listeners_ipv4(tmpdir):
    root = _root(tmpdir)
    with Server(root=root, listen=["127.0.0.1:0", "127.0.0.1:0"]) as s:
        assert len(s.listeners) == 2, s.stderr
        ports = {p for _, _, p in s.listeners}
        assert len(ports) == 2, s.listeners
        for _, h, p in s.listeners:
            r = get((h, p), "/")
            assert r.status == 200 and r.body == b"hello from index\n", (h, p)


def _have_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as t:
            t.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_ipv4_and_ipv6_listeners(tmpdir):
    root = _root(tmpdir)
    if not _have_ipv6_loopback():
        # no IPv6 loopback on this machine: check the IPv4 part only
        with Server(root=root) as s:
            assert get(s, "/").status == 200
        return
    with Server(root=root, listen=["127.0.0.1:0", "[::1]:0"]) as s:
        assert len(s.listeners) == 2, s.stderr
        hosts = sorted(h for _, h, _ in s.listeners)
        assert hosts == ["127.0.0.1", "::1"], (hosts, s.stderr)
        assert re.search(r"listening on http://\[::1\]:\d+", s.stderr), s.stderr
        for _, h, p in s.listeners:
            r = get((h, p), "/")
            assert r.status == 200 and r.body == b"hello from index\n", (h, p)


def test_positional_root(tmpdir):
    root = _root(tmpdir)
    with Server(root=None, args=[root]) as s:
        r = get(s, "/")
        assert r.status == 200 and r.body == b"hello from index\n"


def test_default_root_www(tmpdir):
    os.makedirs(os.path.join(tmpdir, "www"))
    with open(os.path.join(tmpdir, "www", "x.txt"), "w") as f:
        f.write("default root\n")
    with Server(root=None, cwd=tmpdir) as s:
        r = get(s, "/x.txt")
        assert r.status == 200 and r.body == b"default root\n"


def test_short_options(tmpdir):
    root = _root(tmpdir)
    with Server(listen=(), threads=None, expect_listeners=1,
                args=["-l", "127.0.0.1:0", "-r", root, "-t", "1"]) as s:
        r = get(s, "/")
        assert r.status == 200 and r.body == b"hello from index\n"
    assert s.returncode == 0, s.returncode


def _hammer(s, files, n_threads=8, n_req=20):
    errors = []

    def work(k):
        try:
            with Conn(s) as c:
                for i in range(n_req):
                    path = list(files)[(k + i) % len(files)]
                    c.send(req("GET", path))
                    r = c.read_response()
                    if r.status != 200 or r.body != files[path]:
                        errors.append((k, i, path, r.status))
        except Exception as e:
            errors.append((k, repr(e)))

    ts = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(T(60))
    assert not any(t.is_alive() for t in ts)
    return errors


def test_threads_1_and_4(tmpdir):
    tree = fixture_tree(tmpdir)
    files = {p: tree.files[p] for p in ["/small.html", "/kib.txt", "/one.txt", "/big.bin"]}
    for n in (1, 4):
        with Server(root=tree.root, threads=n) as s:
            errors = _hammer(s, files)
            assert not errors, (n, errors[:5])
        assert s.returncode == 0, (n, s.returncode)


def test_stop_exit_code_zero(tmpdir):
    root = _root(tmpdir)
    s = Server(root=root)
    assert get(s, "/").status == 200
    rc = s.stop()
    assert rc == 0 and not s.killed, (rc, s.killed, s.stderr[-1000:])
