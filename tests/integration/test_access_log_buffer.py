"""access_log_buffer: access-log lines gathered per thread and written many at a time.

Promised: every line arrives, whole, within about the flush
interval without further traffic, at once when a buffer fills up, into the old file before a
reopen (SIGUSR1), into the old file on a reload that moves the log, and before the process
exits after a drain (SIGTERM); and far fewer write() calls than lines. The write calls are
counted by the kernel (/proc/PID/io, syscw: every write/writev/pwrite of the process; responses
go out with sendmsg, which it does not count).

Lines are in order per thread, not per connection: consecutive requests of one connection may
be served by different pool threads, whose buffers are written at different times. So with
more than one thread, lines are compared as sets."""

import os
import signal

from lib.ops import LogFile, logged_server, parse_clf, run_lfhttpd, write_file
from lib.server import ConfServer, Conn, fixture_tree, get, req, wait_until


def writes(s):
    """The server's write calls so far (not its sends). Counted from after the startup
    notices: 'listening on', which the server fixture waits for, is followed by the
    'lfhttpd serving' notice, itself a write that may come after a first count."""
    wait_until(lambda: "lfhttpd serving" in s.stderr, what="the startup notice")
    with open("/proc/%d/io" % s.proc.pid) as f:
        for line in f:
            if line.startswith("syscw:"):
                return int(line.split()[1])
    raise AssertionError("no syscw in /proc/%d/io" % s.proc.pid)


def keepalive_requests(s, n, tag, target="/one.txt"):
    """n requests on one keep-alive connection, each with its own User-Agent."""
    with Conn(s) as c:
        for i in range(n):
            c.send(req("GET", target, {"User-Agent": "%s-%04d" % (tag, i)}))
            assert c.read_response().status == 200


def agents(lines):
    return [parse_clf(l)["ua"] for l in lines]


def test_lines_arrive_after_the_interval_with_few_writes(tmpdir):
    """200 requests: far fewer writes than lines; then, with no more traffic, every line
    arrives whole within the interval (bounded from the last response)."""
    n = 200
    s, log = logged_server(tmpdir, "access_log_buffer 64k\naccess_log_flush 1s\n")
    before = writes(s)
    keepalive_requests(s, n, "buf")
    during = writes(s) - before
    # Unbuffered, that is one write per line (n). Buffered, a write per buffer per flush
    # interval at most, however slowly the loop ran.
    assert during < n // 4, "%d writes for %d lines" % (during, n)
    lines = log.wait_lines(n, timeout=10)
    assert sorted(agents(lines)) == ["buf-%04d" % i for i in range(n)], agents(lines)[:5]
    for l in lines:
        d = parse_clf(l)
        assert d["request"] == "GET /one.txt HTTP/1.1" and d["status"] == "200", l


def test_a_full_buffer_is_written_at_once(tmpdir):
    """With a flush interval far beyond the test, a 4 KiB buffer goes out as soon as the next
    line would not fit: the file grows while the requests come, in whole lines."""
    s, log = logged_server(tmpdir, "access_log_buffer 4k\naccess_log_flush 60s\n", threads=1)
    ua = "x" * 400
    n = 60                                   # ~27 KiB of lines: 6 or more full buffers
    before = writes(s)
    with Conn(s) as c:
        for i in range(n):
            c.send(req("GET", "/one.txt", {"User-Agent": "%s-%04d" % (ua, i)}))
            assert c.read_response().status == 200
    line_len = len(log.raw().split(b"\n")[0]) + 1 if log.raw() else 0
    assert line_len > 400, "no full buffer was written: %r" % log.raw()[:200]
    per_buffer = 4096 // line_len
    # Everything but what the last buffer holds is in the file, long before 60 s.
    lines = log.wait_lines(n - per_buffer, timeout=10)
    assert agents(lines) == ["%s-%04d" % (ua, i) for i in range(len(lines))]
    assert writes(s) - before <= n // per_buffer + 1, "more writes than full buffers"
    assert s.stop() == 0                     # the drain writes the rest
    assert agents(log.lines()) == ["%s-%04d" % (ua, i) for i in range(n)]


def test_drain_writes_buffered_lines(tmpdir):
    """SIGTERM: the lines still buffered are in the file when the process has exited."""
    s, log = logged_server(tmpdir, "access_log_buffer 64k\naccess_log_flush 60s\n")
    keepalive_requests(s, 10, "drain-a")
    for i in range(5):
        assert get(s, "/small.html", headers={"User-Agent": "drain-b-%d" % i}).status == 200
    assert s.stop() == 0
    got = agents(log.lines())
    assert sorted(got) == sorted(["drain-a-%04d" % i for i in range(10)] +
                                 ["drain-b-%d" % i for i in range(5)]), got


def test_sigusr1_writes_buffered_lines_to_the_old_file(tmpdir):
    """Lines buffered before SIGUSR1 go to the renamed file, none is lost, and the lines
    after it to the new file. One pool thread: a request's line is buffered before the
    thread can take the signal."""
    s, log = logged_server(tmpdir, "access_log_buffer 64k\naccess_log_flush 60s\n", threads=1)
    keepalive_requests(s, 12, "before")
    assert get(s, "/small.html", headers={"User-Agent": "before-last"}).status == 200
    os.rename(s.log_path, s.log_path + ".1")
    s.signal(signal.SIGUSR1)
    wait_until(lambda: "log files reopened" in s.stderr, what="the reopen notice")
    old = LogFile(s.log_path + ".1").lines()
    assert agents(old) == ["before-%04d" % i for i in range(12)] + ["before-last"], old
    keepalive_requests(s, 3, "after")
    assert s.stop() == 0
    assert agents(log.lines()) == ["after-%04d" % i for i in range(3)]
    assert len(LogFile(s.log_path + ".1").lines()) == 13, "a line came after the reopen"


def test_reload_to_another_log_writes_the_old_lines_there(tmpdir):
    """A reload that moves the log: the lines buffered for the old file go there at the
    reload, though a keep-alive connection still holds the old configuration; the lines after
    it go to the new file."""
    s, log = logged_server(tmpdir, "access_log_buffer 64k\naccess_log_flush 60s\n", threads=1)
    new_path = os.path.join(tmpdir, "new.log")
    with Conn(s) as keep:
        for i in range(5):
            keep.send(req("GET", "/one.txt", {"User-Agent": "old-%d" % i}))
            assert keep.read_response().status == 200
        write_file(s.conf_path, "root %s\naccess_log %s\naccess_log_buffer 64k\n"
                   "access_log_flush 60s\n" % (s.tree.root, new_path))
        s.signal(signal.SIGHUP)
        wait_until(lambda: "configuration reloaded" in s.stderr, what="the reload notice")
        old = log.wait_lines(5, timeout=10)  # no traffic, and far less than 60 s
        assert agents(old) == ["old-%d" % i for i in range(5)], old
        keep.send(req("GET", "/one.txt", {"User-Agent": "new-0"}))
        assert keep.read_response().status == 200
    assert get(s, "/one.txt", headers={"User-Agent": "new-1"}).status == 200
    assert s.stop() == 0
    assert agents(LogFile(new_path).lines()) == ["new-0", "new-1"]
    assert agents(log.lines()) == ["old-%d" % i for i in range(5)]


def test_stdout_buffered(tmpdir):
    """A target that is not a file (a pipe here) is buffered too, in pieces of at most
    PIPE_BUF, whole lines only."""
    tree = fixture_tree(tmpdir)
    s = ConfServer(tmpdir, "root %s\naccess_log stdout\naccess_log_buffer 64k\n"
                   "access_log_flush 1s\n" % tree.root)
    n = 40
    with Conn(s) as c:
        for i in range(n):
            c.send(req("GET", "/one.txt", {"User-Agent": "p-%04d-%s" % (i, "y" * 300)}))
            assert c.read_response().status == 200
    wait_until(lambda: s.stdout.count("\n") == n, 10, what="%d lines on stdout" % n)
    got = sorted(parse_clf(l)["ua"] for l in s.stdout.splitlines())
    assert got == ["p-%04d-%s" % (i, "y" * 300) for i in range(n)]


def _config_error(tmpdir, text, lineno, want):
    path = write_file(os.path.join(tmpdir, "b.conf"), text)
    rc, out, err = run_lfhttpd(["-t", "-c", path])
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc == 2 and len(lines) == 1, (text, rc, err)
    assert lines[0].startswith("%s:%d: " % (path, lineno)), (text, lines[0])
    assert want in lines[0], (text, lines[0])


def test_bad_values_say_where(tmpdir):
    root = fixture_tree(tmpdir).root
    head = "root %s\naccess_log %s/a.log\n" % (root, tmpdir)
    for value, want in (("3k", "4096..1048576"), ("2m", "4096..1048576"), ("lots", "or off"),
                        ("-4k", "or off"), ("64kb", "or off"), ("", "takes a size"),
                        ("4k 8k", "takes a size")):
        _config_error(tmpdir, head + "access_log_buffer %s\n" % value, 3, want)
    for value in ("0", "2m", "soon", "1d"):
        _config_error(tmpdir, head + "access_log_flush %s\n" % value, 3, "access_log_flush")
    _config_error(tmpdir, head + "server example.test {\n    access_log_buffer 64k\n}\n", 4,
                  "access_log_buffer")
    path = write_file(os.path.join(tmpdir, "g.conf"),
                      head + "access_log_buffer off\naccess_log_buffer 1m\naccess_log_flush 250ms\n")
    rc, out, err = run_lfhttpd(["-t", "-c", path])
    assert rc == 0, err
