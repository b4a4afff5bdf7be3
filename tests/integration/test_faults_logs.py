"""Disk faults under the logs: the access log's disk full (a small tmpfs in a mount namespace of
the server's own, and /dev/full), the access log's directory gone, the error log's disk full.

Promised: serving goes on; one error line when lines start being lost and one when they are
written again (never one per lost line); no torn line — every line in the file is whole,
however the disk filled up. Afterwards descriptors and threads are back to their baseline."""

import os
import re
import shutil
import signal
import threading
import time

from lib.fault import Baseline
from lib.ops import parse_clf
from lib.procs import write_script
from lib.server import ConfServer, Conn, LISTEN_RE, Server, T, binary, fixture_tree, req, wait_until

ERROR_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \[(error|warn|notice|info|debug)\] ")


def _in_namespace(tmpdir, mnt, size):
    """A wrapper that starts the server in a mount namespace of its own, with a tmpfs of
    `size` on the (empty) directory `mnt`: only the server sees the tmpfs, and it goes away
    with the server. The mount namespace is made inside a user namespace of its own (root
    mapped to the caller), so mounting the tmpfs needs no CAP_SYS_ADMIN: the tests run the
    same as root on a server, in a container with podman's default capabilities (the
    quick-start stage), or as another user."""
    os.makedirs(mnt)
    wrapper = os.path.join(tmpdir, "in-namespace")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n"
                "exec unshare --user --map-root-user --mount --propagation private sh -c "
                "'mount -t tmpfs -o size=%s tmpfs %s && exec \"$0\" \"$@\"' %s \"$@\"\n"
                % (size, mnt, binary()))
    os.chmod(wrapper, 0o755)
    return wrapper


class NsServer(Server):
    """A Server whose error log may be a file in its own mount namespace: the "listening on"
    lines are looked for there too."""

    def __init__(self, *a, ns_error_log=None, **kw):
        self.ns_error_log = ns_error_log
        super().__init__(*a, **kw)

    def _scan_listeners(self):
        super()._scan_listeners()
        if self.listeners or not self.ns_error_log or self.proc is None:
            return
        try:
            with open("/proc/%d/root%s" % (self.proc.pid, self.ns_error_log), "rb") as f:
                data = f.read()
        except OSError:
            return
        for m in LISTEN_RE.finditer(data):
            self.listeners.append((m.group(1).decode(), m.group(2).decode(), int(m.group(3))))


def is_error_log_line(line):
    assert ERROR_LINE.match(line), "not an error-log line: %r" % line[:300]


def _server(tmpdir, conf, size="1m", cgi=False, error_log=None):
    tree = fixture_tree(tmpdir)
    if cgi:
        write_script(os.path.join(tree.root, "cgi-bin"), "chatty",
                     "#!/bin/sh\ni=0\nwhile [ $i -lt 20 ]; do echo \"complaint ${i}" + "x" * 150 +
                     "\" >&2; i=$((i+1)); done\nprintf 'Content-Type: text/plain\\n\\nok\\n'\n")
        conf = conf + ["location /cgi-bin/ {", "    handler cgi", "}"]
    conf = [line.replace("MNT", tmpdir + "/mnt") for line in conf]
    path = os.path.join(tmpdir, "logs.conf")
    with open(path, "w") as f:
        f.write("\n".join(conf) + "\n")
    srv = NsServer(binary_path=_in_namespace(tmpdir, tmpdir + "/mnt", size), root=tree.root,
                   args=["--config", path], ns_error_log=error_log)
    srv.tree = tree
    srv.files = tree.files
    srv.mnt = tmpdir + "/mnt"
    return srv


def inside(srv, path):
    """A path of the server's mount namespace, seen from here."""
    return "/proc/%d/root%s" % (srv.proc.pid, path)


def fill(srv, leave=0):
    """Fill the tmpfs, then free `leave` bytes of it."""
    filler = inside(srv, srv.mnt + "/filler")
    with open(filler, "ab") as f:
        chunk = b"\0" * 65536
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError:
            pass
    try:
        with open(filler, "ab") as f:      # the last partial chunk, byte-wise
            while True:
                f.write(b"\0" * 512)
                f.flush()
    except OSError:
        pass
    if leave:
        size = os.path.getsize(filler)
        os.truncate(filler, max(0, size - leave))
    return filler


def long_get(srv, i):
    """A request whose access-log line is long (about 3 KiB), so lines cross pages."""
    path = "/nope-%05d/%s" % (i, "/".join(["y" * 200] * 15))   # (a segment <= NAME_MAX)
    with Conn(srv) as c:
        c.send(req("GET", path, headers=[("User-Agent", "faults-%d" % i)]))
        return c.read_response().status


def whole_lines(data, check):
    """Every line ends with its newline and parses; returns them."""
    assert data == b"" or data.endswith(b"\n"), "a torn last line: %r" % data[-300:]
    lines = data.split(b"\n")[:-1]
    for line in lines:
        check(line.decode("latin-1"))
    return lines


def _clients(srv, start, n):
    """n long requests from 4 clients at once, all answered 404."""
    errors = []

    def one(k):
        for i in range(start + k, start + n, 4):
            try:
                if long_get(srv, i) != 404:
                    errors.append(i)
            except Exception as e:
                errors.append(repr(e))
    ts = [threading.Thread(target=one, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(T(60))
    assert not errors, errors[:5]


def test_access_log_on_a_full_disk(tmpdir):
    """The disk fills up while requests come from several clients; lines stop, then start
    again when room is made; one line each way in the error log; no torn line."""
    srv = _server(tmpdir, ["access_log MNT/access.log"])
    log = inside(srv, srv.mnt + "/access.log")
    base = Baseline(srv)
    for i in range(20):
        assert long_get(srv, i) == 404
    assert wait_until(lambda: open(log, "rb").read().count(b"\n") == 20, 5)
    fill(srv, leave=6000)                 # a page or so: lines that cross into the next fail

    def clients(start, n):
        _clients(srv, start, n)
    clients(1000, 400)                    # serving goes on
    assert wait_until(lambda: srv.stderr.count("its lines are lost") == 1, 5), srv.stderr
    data = open(log, "rb").read()
    before = whole_lines(data, parse_clf)
    assert len(before) < 420, "the disk did not fill up: %d lines" % len(before)
    assert srv.stderr.count("its lines are lost") == 1, "more than one line for one episode"

    os.unlink(inside(srv, srv.mnt + "/filler"))  # room again
    time.sleep(0.3)                          # past the retry interval: the next line is tried
    clients(2000, 40)
    assert wait_until(lambda: "written again;" in srv.stderr, 5), srv.stderr
    m = re.search(r"access log \S+: written again; (\d+) line\(s\) were lost", srv.stderr)
    assert m and int(m.group(1)) > 0, srv.stderr
    after = whole_lines(open(log, "rb").read(), parse_clf)
    assert len(after) > len(before), "no line written after the disk had room again"
    assert srv.stderr.count("its lines are lost") == 1 and srv.stderr.count("written again;") == 1
    lost = int(m.group(1))
    assert wait_until(lambda: open(log, "rb").read().count(b"\n") + lost == 20 + 400 + 40, 5), \
        "lines in the file and lines lost do not add up: %d + %d" % (
            open(log, "rb").read().count(b"\n"), lost)
    base.check("after the disk filled up and emptied")


def test_buffered_access_log_on_a_full_disk(tmpdir):
    """access_log_buffer: a buffer's write reserves space for all its lines, or none of them is
    written and all are counted lost. The file holds whole lines only; one error line each way;
    lines in the file and lines lost add up once the buffers are written."""
    srv = _server(tmpdir, ["access_log MNT/access.log", "access_log_buffer 16k",
                           "access_log_flush 1s"])
    log = inside(srv, srv.mnt + "/access.log")
    base = Baseline(srv)
    for i in range(20):
        assert long_get(srv, i) == 404
    assert wait_until(lambda: os.path.exists(log) and
                      open(log, "rb").read().count(b"\n") == 20, T(10))   # the interval
    fill(srv, leave=6000)
    _clients(srv, 1000, 400)                 # serving goes on; full buffers go out at once
    assert wait_until(lambda: srv.stderr.count("its lines are lost") == 1, T(10)), srv.stderr
    before = whole_lines(open(log, "rb").read(), parse_clf)
    assert len(before) < 420, "the disk did not fill up: %d lines" % len(before)

    os.unlink(inside(srv, srv.mnt + "/filler"))  # room again
    _clients(srv, 2000, 40)
    assert wait_until(lambda: "written again;" in srv.stderr, T(10)), srv.stderr
    m = re.search(r"access log \S+: written again; (\d+) line\(s\) were lost", srv.stderr)
    assert m and int(m.group(1)) > 0, srv.stderr
    lost = int(m.group(1))
    assert wait_until(lambda: open(log, "rb").read().count(b"\n") + lost == 20 + 400 + 40,
                      T(10)), "lines in the file and lines lost do not add up: %d + %d" % (
                          open(log, "rb").read().count(b"\n"), lost)
    after = whole_lines(open(log, "rb").read(), parse_clf)
    assert len(after) > len(before), "no line written after the disk had room again"
    assert srv.stderr.count("its lines are lost") == 1 and srv.stderr.count("written again;") == 1
    base.check("after the disk filled up and emptied, buffered")


def test_buffered_access_log_that_can_never_be_written(tmpdir):
    """/dev/full with access_log_buffer: every buffer's write fails; serving goes on, one
    error line in all, also for the lines written at exit."""
    srv = _server(tmpdir, ["access_log /dev/full", "access_log_buffer 4k", "access_log_flush 1s"])
    for i in range(30):
        assert long_get(srv, i) == 404
    assert wait_until(lambda: "its lines are lost" in srv.stderr, T(10)), srv.stderr
    for i in range(30):
        assert long_get(srv, 30 + i) == 404
    assert srv.stop() == 0
    assert srv.stderr.count("its lines are lost") == 1, srv.stderr
    assert "No space left on device" in srv.stderr


def test_access_log_that_can_never_be_written(tmpdir):
    """/dev/full: every write fails. Serving goes on, one error line in all."""
    srv = _server(tmpdir, ["access_log /dev/full"])
    base = Baseline(srv)
    for i in range(50):
        assert long_get(srv, i) == 404
    time.sleep(0.3)
    for i in range(50):                      # after the retry interval: tried again, silently
        assert long_get(srv, 50 + i) == 404
    assert wait_until(lambda: "its lines are lost" in srv.stderr, 5)
    assert srv.stderr.count("its lines are lost") == 1, srv.stderr
    assert "No space left on device" in srv.stderr
    base.check("after /dev/full")


def test_access_log_directory_gone(tmpdir):
    """The log's directory is removed: lines go to the unlinked file (nothing fails), the
    reopen (SIGUSR1) fails with one line and the server keeps the file it has; once the
    directory is back, the next reopen writes the new file."""
    logs = os.path.join(tmpdir, "logs")
    os.makedirs(logs)
    tree_conf = ["access_log %s/access.log" % logs]
    tree = fixture_tree(tmpdir)
    # One pool thread: a request's line is written (after its response) before the thread
    # can take the next signal, so no line of the old file lands in the new one.
    srv = ConfServer(tmpdir, tree_conf, name="gone.conf", root=tree.root, threads=1)
    base = Baseline(srv)
    with Conn(srv) as c:
        c.send(req("GET", "/one.txt"))
        assert c.read_response().status == 200
    shutil.rmtree(logs)
    for i in range(5):
        with Conn(srv) as c:
            c.send(req("GET", "/one.txt"))
            assert c.read_response().status == 200
    srv.signal(signal.SIGUSR1)
    assert wait_until(lambda: "reopening logs failed" in srv.stderr, 5), srv.stderr
    with Conn(srv) as c:
        c.send(req("GET", "/kib.txt"))
        assert c.read_response().status == 200
    os.makedirs(logs)
    srv.signal(signal.SIGUSR1)
    assert wait_until(lambda: "log files reopened" in srv.stderr, 5), srv.stderr
    with Conn(srv) as c:
        c.send(req("GET", "/small.html", headers=[("User-Agent", "after-reopen")]))
        assert c.read_response().status == 200
    new = os.path.join(logs, "access.log")
    assert wait_until(lambda: os.path.exists(new) and b"after-reopen" in open(new, "rb").read(), 5)
    lines = whole_lines(open(new, "rb").read(), parse_clf)
    assert len(lines) == 1, lines
    assert srv.stderr.count("reopening logs failed") == 1
    base.check("after the directory came back")


def test_error_log_on_a_full_disk(tmpdir):
    """The error log's disk fills up: serving goes on (a script that writes to stderr, one
    error-log line per line, keeps answering), the lines that do not fit are dropped whole,
    and the first line once there is room says how many were lost."""
    srv = _server(tmpdir, ["error_log MNT/error.log"], cgi=True,
                  error_log=tmpdir + "/mnt/error.log")
    log = inside(srv, srv.mnt + "/error.log")
    assert wait_until(lambda: os.path.exists(log) and b"listening on" in open(log, "rb").read(), 5)
    base = Baseline(srv)

    def chatty(n):
        for _ in range(n):
            with Conn(srv) as c:
                c.send(req("GET", "/cgi-bin/chatty"))
                r = c.read_response()
                assert r.status == 200 and r.body == b"ok\n", r
    chatty(2)
    assert wait_until(lambda: open(log, "rb").read().count(b"complaint 19") == 2, 5)
    fill(srv, leave=5000)
    chatty(30)                               # 600 lines of about 180 bytes: most cannot fit
    os.unlink(inside(srv, srv.mnt + "/filler"))
    time.sleep(0.3)
    chatty(2)
    assert wait_until(lambda: b"line(s) lost before this one" in open(log, "rb").read(), 5)

    def lost_and_kept():
        lines = whole_lines(open(log, "rb").read(), is_error_log_line)
        lost = [l for l in lines if b"line(s) lost before this one" in l]
        n = int(re.search(rb"error log: (\d+) line", lost[0]).group(1)) if lost else 0
        return len(lost), n, [l for l in lines if b"complaint" in l]
    # the script's stderr is logged as it is read: the last lines may follow its answer
    assert wait_until(lambda: sum(len(x) if isinstance(x, list) else 0
                                  for x in lost_and_kept()) + lost_and_kept()[1] >= 34 * 20, 5)
    episodes, n, complaints = lost_and_kept()
    assert episodes == 1, "one line for one episode, not %d" % episodes
    assert n > 0 and len(complaints) + n >= 34 * 20, (n, len(complaints))
    for l in complaints:                   # whole lines, not pieces of two
        assert re.search(rb"complaint \d+x{150}$", l), l
    base.check("after the error log's disk filled up")


def _gzip_get(srv, path):
    import zlib
    with Conn(srv) as c:
        c.send(req("GET", path, headers=[("Accept-Encoding", "gzip")]))
        r = c.read_response()
    body = r.body
    if r.header("Content-Encoding") == "gzip":
        body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
    return r.status, r.header("Content-Encoding"), body


def test_compression_cache_directory_on_a_full_disk(tmpdir):
    """compress_cache_dir on a disk that fills up: every response stays right (identity, or
    gzip that decodes to the file), one line says the directory is given up, and nothing but
    complete variants is ever left in it; once there is room, a reload takes it up again."""
    import zlib
    srv = _server(tmpdir, ["compress_cache_dir MNT/zc", "compress_min_size 1k"], size="2m")
    texts = {}
    for i in range(12):
        data = ("".join("line %d of file %d: %s\n" % (k, i, "lorem ipsum " * (k % 7))
                        for k in range(150))).encode()
        with open(os.path.join(srv.tree.root, "t%02d.txt" % i), "wb") as f:
            f.write(data)
        texts["/t%02d.txt" % i] = data
    zc = inside(srv, srv.mnt + "/zc")
    for p in list(texts)[:2]:            # two variants made and kept while there is room
        assert _gzip_get(srv, p)[2] == texts[p]
        assert wait_until(lambda: _gzip_get(srv, p)[1] == "gzip", 10)
    assert wait_until(lambda: os.path.isdir(zc) and len(os.listdir(zc)) == 2, 5)
    base = Baseline(srv)                  # the directory is open now
    fill(srv, leave=0)
    for rnd in range(3):
        for p, data in texts.items():
            status, enc, body = _gzip_get(srv, p)
            assert status == 200 and body == data, (p, status, enc)
        time.sleep(0.2)
    assert wait_until(lambda: "compress_cache_dir" in srv.stderr, 5), srv.stderr
    assert srv.stderr.count("compress_cache_dir") == 1, srv.stderr
    for name in os.listdir(zc):           # complete variants only, never a piece of one
        with open(os.path.join(zc, name), "rb") as f:
            assert zlib.decompress(f.read(), 16 + zlib.MAX_WBITS) in texts.values(), name

    os.unlink(inside(srv, srv.mnt + "/filler"))
    srv.signal(signal.SIGHUP)
    assert wait_until(lambda: "configuration reloaded" in srv.stderr, 5)
    late = list(texts)[-1]
    assert wait_until(lambda: _gzip_get(srv, late)[1] == "gzip", 10), \
        "no gzip variant after the reload"
    for p, data in texts.items():
        assert _gzip_get(srv, p)[2] == data
    base.check("after the cache directory filled up")
