"""sendfile_min_size: how a file response is sent — by sendfile, or by a copy through the
serving thread's buffer with the head in the same write — chosen by size.

Promised: whichever way a file goes out, the client gets the same bytes: every size class (a
1 KiB and a 16 KiB file, which are answered from memory; 16 KiB + 1, 256 KiB, 1 MiB, 10 MiB),
single and multiple ranges, HEAD, pipelined requests and keep-alive, and a client that reads
slowly (its small receive buffer makes the server's writes partial: the copy reads the rest of
a chunk again). `0` sends every file by sendfile, `never` none, a size splits them; `auto` (the
default) asks the machine once at start-up and says what it chose, with what it measured, in a
notice; never on a reload (which runs on a pool thread): a reload that turns `auto` on keeps
`sendfile` when start-up measured nothing, and says so. The choice is a configuration matter only: no figure is checked here. Bad values are
refused with FILE:LINE."""

import hashlib
import os
import re
import signal

import pytest

from lib.ops import run_lfhttpd, write_file
from lib.server import ConfServer, Conn, req, wait_until

SIZES = {"1k.bin": 1024, "16k.bin": 16 * 1024, "16k1.bin": 16 * 1024 + 1,
         "256k.bin": 256 * 1024, "1m.bin": 1024 * 1024, "10m.bin": 10 * 1024 * 1024}
MODES = ("0", "never", "1m", "auto")
AUTO_RE = re.compile(r"sendfile_min_size auto: (0|1m|never) \((loopback TCP|UNIX socketpair|"
                     r"no [a-z ]+) probe in \d+ ms, L3 [^;]+; 256 KiB: [^;]+; 2048 KiB: [^)]+\)")


def _content(name, size):
    """Bytes that differ at every offset (a wrong offset or a lost chunk shows)."""
    out = bytearray()
    block = 0
    while len(out) < size:
        out += hashlib.sha256(b"%s-%d" % (name.encode(), block)).digest()
        block += 1
    return bytes(out[:size])


def _tree(tmpdir):
    root = os.path.join(tmpdir, "root")
    files = {n: _content(n, size) for n, size in SIZES.items()}
    for n, data in files.items():
        write_file(os.path.join(root, n), data)
    return root, files


def _server(tmpdir, mode):
    root, files = _tree(tmpdir)
    line = "" if mode == "auto" else "sendfile_min_size %s\n" % mode
    s = ConfServer(tmpdir, "root %s\n%s" % (root, line))
    return s, files


def _check_every_size(s, files):
    """GET and HEAD of every file, then two ranges, all on one keep-alive connection."""
    with Conn(s, timeout=30) as c:
        for name, data in files.items():
            c.send(req("GET", "/" + name))
            r = c.read_response()
            assert r.status == 200 and r.body == data, (name, r.status, len(r.body))
            c.send(req("HEAD", "/" + name))
            r = c.read_response("HEAD")
            assert r.status == 200 and r.header("Content-Length") == str(len(data)), name
        for name in ("256k.bin", "10m.bin"):
            data = files[name]
            c.send(req("GET", "/" + name, headers=[("Range", "bytes=100-200099")]))
            r = c.read_response()
            assert r.status == 206 and r.body == data[100:200100], (name, r.status, len(r.body))
            c.send(req("GET", "/" + name, headers=[("Range", "bytes=-70000")]))
            r = c.read_response()
            assert r.status == 206 and r.body == data[-70000:], (name, r.status, len(r.body))
        data = files["256k.bin"]
        c.send(req("GET", "/256k.bin", headers=[("Range", "bytes=0-9,100000-100009")]))
        r = c.read_response()
        assert r.status == 206 and data[0:10] in r.body and data[100000:100010] in r.body, \
            (r.status, r.body[:200])


def _check_pipelined(s, files):
    """Three requests in one write: a small response gathered, then a large file behind it
    (the copy writes both with the file's head), then a small one again."""
    with Conn(s, timeout=30) as c:
        c.send(req("GET", "/1k.bin") + req("GET", "/256k.bin") + req("GET", "/16k1.bin")
               + req("GET", "/1k.bin"))
        for name in ("1k.bin", "256k.bin", "16k1.bin", "1k.bin"):
            r = c.read_response()
            assert r.status == 200 and r.body == files[name], (name, r.status, len(r.body))


def _check_slow_reader(s, files):
    """A 16 KiB receive buffer: the server's writes of the 10 MiB file are partial."""
    with Conn(s, timeout=60, rcvbuf=16 * 1024) as c:
        c.send(req("GET", "/10m.bin") + req("GET", "/256k.bin"))
        for name in ("10m.bin", "256k.bin"):
            r = c.read_response()
            assert r.status == 200 and r.body == files[name], (name, r.status, len(r.body))


def _serve_in_mode(tmpdir, mode):
    s, files = _server(tmpdir, mode)
    _check_every_size(s, files)
    _check_pipelined(s, files)
    _check_slow_reader(s, files)
    err = s.stderr
    assert s.stop() == 0
    return err


def test_every_file_by_sendfile(tmpdir):
    err = _serve_in_mode(tmpdir, "0")
    assert "sendfile_min_size auto" not in err, err


def test_every_file_by_copy(tmpdir):
    err = _serve_in_mode(tmpdir, "never")
    assert "sendfile_min_size auto" not in err, err


def test_split_at_one_mebibyte(tmpdir):
    _serve_in_mode(tmpdir, "1m")


def test_auto_measures_once_and_says_what_it_chose(tmpdir):
    err = _serve_in_mode(tmpdir, "auto")
    found = AUTO_RE.findall(err)
    assert len(found) == 1, err


@pytest.mark.parametrize("bad", ["sendfile_min_size lots", "sendfile_min_size 2t",
                                 "sendfile_min_size -1", "sendfile_min_size",
                                 "sendfile_min_size 1m 2m"])
def test_bad_values_name_the_line(tmpdir, bad):
    conf = write_file(os.path.join(tmpdir, "bad.conf"), "root /tmp\n%s\n" % bad)
    rc, _, err = run_lfhttpd(["-t", "--config", conf])
    assert rc != 0, bad
    assert "%s:2:" % conf in err and "sendfile_min_size" in err, (bad, err)


@pytest.mark.parametrize("good", MODES + ("64k",))
def test_good_values_pass_the_check(tmpdir, good):
    conf = write_file(os.path.join(tmpdir, "good.conf"),
                      "root /tmp\nsendfile_min_size %s\n" % good)
    rc, _, err = run_lfhttpd(["-t", "--config", conf])
    assert rc == 0, (good, err)


def test_a_reload_to_auto_does_not_measure(tmpdir):
    s, files = _server(tmpdir, "never")
    root = os.path.dirname(s.conf_path) + "/root"
    write_file(s.conf_path, "root %s\n" % root)
    s.signal(signal.SIGHUP)
    wait_until(lambda: "configuration reloaded" in s.stderr, what="the reload notice")
    with Conn(s, timeout=30) as c:
        for name in ("256k.bin", "10m.bin"):
            c.send(req("GET", "/" + name))
            r = c.read_response()
            assert r.status == 200 and r.body == files[name], (name, r.status, len(r.body))
    err = s.stderr
    assert s.stop() == 0
    assert "sendfile_min_size auto: measured at start-up only; sendfile (0) until the next " \
        "start" in err, err
    assert not AUTO_RE.search(err), err
