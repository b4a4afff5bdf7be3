"""Deploys without a signal: a root that is (or lies under) a symlink swapped to another
release, or a kubelet volume whose ..data is renamed over, is noticed by the timer tick
(root_follow, on by default) and served from a new generation: every response comes wholly from
one release (body, ETag and Last-Modified of the same files), with no error during the swaps.
After a switch, a hashed asset only the previous release has is still served from it for
root_grace, then is a 404; a name without a content hash is a 404 at once."""

import os
import re
import signal
import subprocess
import threading

import pytest

from lib.cdp import Browser
from lib.fault import preloaded
from lib.kubelet import atomic_write
from lib.server import ConfServer, Conn, T, binary, get, req, wait_until, write_config

BIG = 100 * 1024            # above the cache's in-memory size: sent from the file
OLD_CHUNK = "/assets/app.1a2b3c4d.js"
NEW_CHUNK = "/assets/app.5e6f7a8b.js"
# Each release's files carry their own modification time: Last-Modified names the release.
MTIME = {1: 1577836800, 2: 1609459200, 3: 1640995200}          # 2020, 2021, 2022-01-01
LAST_MODIFIED = {1: "Wed, 01 Jan 2020 00:00:00 GMT", 2: "Fri, 01 Jan 2021 00:00:00 GMT",
                 3: "Sat, 01 Jan 2022 00:00:00 GMT"}


def _files(n):
    tag = ("release %d\n" % n).encode()
    files = {"v.txt": tag, "big.bin": tag * (BIG // len(tag)),
             "index.html": b"<!doctype html><title>release %d</title>\n" % n,
             "only-%d.txt" % n: tag}
    files[(OLD_CHUNK if n == 1 else NEW_CHUNK)[1:]] = b"window.chunk = %d;\n" % n
    return files


def _release(tmpdir, n):
    d = os.path.join(tmpdir, "releases", str(n))
    for name, data in _files(n).items():
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        os.utime(path, (MTIME[n], MTIME[n]))
    return d


def _swap(link, target):
    """A deploy script's swap: a new symlink renamed over the old one (one rename(2))."""
    tmp = link + ".tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.rename(tmp, link)


def _start(tmpdir, lines):
    return ConfServer(tmpdir, ["log_level info"] + list(lines))


def _switched(srv, root, target, generation, why="root_follow"):
    """The switch logged while the generation is built, and the generation published."""
    line = "root %s -> %s: switched (generation %d)" % (root, target, generation)
    published = "%s: configuration reloaded (generation %d)" % (why, generation)
    return wait_until(lambda: line in srv.stderr and published in srv.stderr, 20)


def _release_of(r):
    """Which release a response is wholly from, or an AssertionError saying what mixed."""
    assert r.status == 200, (r.status, r.body[:200])
    m = re.match(rb"release (\d)\n", r.body)
    assert m, r.body[:100]
    n = int(m.group(1))
    assert r.body == _files(n)["big.bin" if len(r.body) > 100 else "v.txt"], "mixed body"
    assert r.header("Last-Modified") == LAST_MODIFIED[n], (n, r.header("Last-Modified"))
    return n, r.header("ETag")


class _Load(threading.Thread):
    """Keep-alive requests for both files until told to stop (or a bound): every response is
    checked; the releases seen and the ETags each release's files had are recorded."""

    def __init__(self, srv, bound=500000):
        super().__init__(daemon=True)
        self.srv, self.bound, self.stop = srv, bound, threading.Event()
        self.seen, self.etags, self.errors, self.count = set(), {}, [], 0
        self.last = None

    def run(self):
        try:
            with Conn(self.srv) as c:
                while not self.stop.is_set() and self.count < self.bound:
                    path = "/big.bin" if self.count % 2 else "/v.txt"
                    c.send(req("GET", path))
                    n, etag = _release_of(c.read_response())
                    self.seen.add(n)
                    self.last = n
                    self.etags.setdefault((n, path), set()).add(etag)
                    self.count += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.errors.append(repr(e))

    def finish(self):
        self.stop.set()
        self.join(T(30))
        assert not self.is_alive()
        assert not self.errors, self.errors
        for key, etags in self.etags.items():
            assert len(etags) == 1, (key, etags)      # one file per release and path: one ETag


def test_symlink_swaps_under_load_serve_one_release_per_response(tmpdir):
    _release(tmpdir, 1)
    _release(tmpdir, 2)
    current = os.path.join(tmpdir, "current")
    os.symlink("releases/1", current)
    srv = _start(tmpdir, ["root " + current])
    loads = [_Load(srv), _Load(srv)]
    try:
        for ld in loads:
            ld.start()
        generation = 1
        for swap in range(4):
            target = "releases/%d" % (2 if swap % 2 == 0 else 1)
            _swap(current, target)
            generation += 1
            assert _switched(srv, current, target, generation), srv.stderr[-2000:]
            # A new connection after the switch gets the new release, whole; so does every
            # keep-alive connection, from its next request on.
            n, _ = _release_of(get(srv, "/big.bin"))
            assert n == int(target[-1])
            assert wait_until(lambda: all(ld.last == n or not ld.is_alive() for ld in loads), 20)
            assert all(ld.is_alive() for ld in loads), [ld.errors for ld in loads]
        for ld in loads:
            ld.finish()
            assert ld.count > 0
        assert set().union(*(ld.seen for ld in loads)) == {1, 2}
        assert "root_follow: %s now names another directory" % current in srv.stderr
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_a_hashed_chunk_of_the_previous_release_is_served_for_root_grace(tmpdir):
    _release(tmpdir, 1)
    _release(tmpdir, 2)
    current = os.path.join(tmpdir, "current")
    os.symlink("releases/1", current)
    srv = _start(tmpdir, ["root " + current, "root_grace 3s"])
    try:
        assert get(srv, OLD_CHUNK).body == b"window.chunk = 1;\n"
        assert get(srv, NEW_CHUNK).status == 404
        _swap(current, "releases/2")
        assert _switched(srv, current, "releases/2", 2), srv.stderr[-2000:]
        assert get(srv, NEW_CHUNK).body == b"window.chunk = 2;\n"
        # The page of release 1 asks for its chunk: the previous tree still has it.
        r = get(srv, OLD_CHUNK)
        assert r.status == 200 and r.body == b"window.chunk = 1;\n"
        assert r.header("Last-Modified") == LAST_MODIFIED[1]
        # A name without a content hash that release 2 dropped is gone at once.
        assert get(srv, "/only-1.txt").status == 404
        assert get(srv, "/v.txt").body == b"release 2\n"
        # The grace ends: a generation without the previous tree, and the chunk is a 404.
        assert wait_until(lambda: "root_grace: configuration reloaded (generation 3)"
                          in srv.stderr, 20), srv.stderr[-2000:]
        assert "root_grace: over, the previous tree is let go" in srv.stderr
        assert get(srv, OLD_CHUNK).status == 404
        assert get(srv, NEW_CHUNK).status == 200
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_root_grace_off_keeps_nothing(tmpdir):
    _release(tmpdir, 1)
    _release(tmpdir, 2)
    current = os.path.join(tmpdir, "current")
    os.symlink("releases/1", current)
    srv = _start(tmpdir, ["root " + current, "root_grace off"])
    try:
        assert get(srv, OLD_CHUNK).status == 200
        _swap(current, "releases/2")
        assert _switched(srv, current, "releases/2", 2), srv.stderr[-2000:]
        assert get(srv, "/v.txt").body == b"release 2\n"
        assert get(srv, OLD_CHUNK).status == 404
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_root_follow_off_keeps_the_tree_until_a_reload(tmpdir):
    _release(tmpdir, 1)
    _release(tmpdir, 2)
    current = os.path.join(tmpdir, "current")
    os.symlink("releases/1", current)
    pinned = _start(tmpdir, ["root " + current, "root_follow off"])
    following = _start(tmpdir, ["root " + current])   # the witness that the swap was seen
    try:
        assert get(pinned, "/v.txt").body == b"release 1\n"
        _swap(current, "releases/2")
        assert _switched(following, current, "releases/2", 2), following.stderr[-2000:]
        assert get(following, "/v.txt").body == b"release 2\n"
        assert get(pinned, "/v.txt").body == b"release 1\n"
        assert "switched" not in pinned.stderr
        pinned.signal(signal.SIGHUP)                     # a reload opens the root again
        assert _switched(pinned, current, "releases/2", 2, "SIGHUP"), pinned.stderr[-2000:]
        assert get(pinned, "/v.txt").body == b"release 2\n"
    finally:
        pinned.stop()
        following.stop()
    assert pinned.returncode == 0 and following.returncode == 0


def test_kubelet_volume_swap_under_load(tmpdir):
    vol = os.path.join(tmpdir, "volume")
    # Four payloads written in turn (a ConfigMap edited three times): each names itself.
    payload = {n: {k: v for k, v in _files(n).items() if "/" not in k} for n in (1, 2, 3, 4)}
    atomic_write(vol, payload[1])
    # The kubelet's files carry no chosen mtime: Last-Modified cannot name the release here, so
    # the body and the ETag per body are what is checked.
    srv = _start(tmpdir, ["root " + vol])
    seen, etags, errors = set(), {}, []
    stop = threading.Event()

    def load():
        try:
            with Conn(srv) as c:
                for i in range(20000):
                    if stop.is_set():
                        break
                    path = "/big.bin" if i % 2 else "/v.txt"
                    c.send(req("GET", path))
                    r = c.read_response()
                    assert r.status == 200, r.status
                    m = re.match(rb"release (\d)\n", r.body)
                    n = int(m.group(1))
                    assert r.body == payload[n][path[1:]], "mixed body"
                    seen.add(n)
                    etags.setdefault((n, path), set()).add(r.header("ETag"))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    t = threading.Thread(target=load, daemon=True)
    t.start()
    try:
        for swap, n in enumerate((2, 3, 4)):
            atomic_write(vol, payload[n])
            line = re.compile(r"root %s/\.\.data -> \.\.[0-9_.]+\w*: switched \(generation %d\)"
                              % (re.escape(vol), swap + 2))
            published = "root_follow: configuration reloaded (generation %d)" % (swap + 2)
            assert wait_until(lambda: line.search(srv.stderr) and published in srv.stderr, 20), \
                srv.stderr[-2000:]
            assert get(srv, "/v.txt").body == b"release %d\n" % n
        stop.set()
        t.join(T(30))
        assert not t.is_alive() and not errors, errors
        assert len(seen) >= 2 and seen <= {1, 2, 3, 4}, seen
        for key, e in etags.items():
            assert len(e) == 1, (key, e)
    finally:
        stop.set()
        srv.stop()
    assert srv.returncode == 0


def _check(tmpdir, text):
    conf = write_config(tmpdir, text, "check.conf")
    p = subprocess.run([binary(), "-t", "--config", conf], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=T(30))
    return p.returncode, p.stderr.decode(), conf


@pytest.mark.parametrize("line,reason", [
    ("root_grace 500ms", "root_grace"), ("root_grace forever", "root_grace"),
    ("root_follow maybe", "on or off")])
def test_root_grace_and_root_follow_values_are_checked(tmpdir, line, reason):
    rc, err, conf = _check(tmpdir, "root %s\n%s\n" % (tmpdir, line))
    assert rc != 0 and err.startswith("%s:2: " % conf) and reason in err, (line, err)


def test_root_grace_and_root_follow_good_values_pass(tmpdir):
    rc, err, _ = _check(tmpdir, "root %s\nroot_grace 10m\nroot_follow off\n" % tmpdir)
    assert rc == 0, err


PAGE = """<!doctype html><title>release %d</title>
<p id="marker">waiting</p>
<script>
// The chunk is loaded late, as a route's code is: when the test calls loadChunk().
window.loadChunk = () => import("%s").then(
    m => { document.getElementById("marker").textContent = m.run(); return "loaded"; },
    e => { document.getElementById("marker").textContent = "failed: " + e; return "failed"; });
</script>
"""


def _spa_release(tmpdir, n):
    d = _release(tmpdir, n)
    chunk = OLD_CHUNK if n == 1 else NEW_CHUNK
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write(PAGE % (n, chunk))
    with open(os.path.join(d, chunk[1:]), "w") as f:
        f.write('export function run() { return "chunk of release %d ran"; }\n' % n)


# A browser's start and a deploy: more than the default minute on a loaded machine.
@pytest.mark.timeout(200)
def test_a_page_of_the_previous_release_loads_its_chunk_in_chromium(tmpdir):
    _spa_release(tmpdir, 1)
    _spa_release(tmpdir, 2)
    current = os.path.join(tmpdir, "current")
    os.symlink("releases/1", current)
    srv = _start(tmpdir, ["root " + current, "root_grace 10m"])
    try:
        with Browser(tmpdir) as b:
            page = b.open("http://127.0.0.1:%d/" % srv.port)
            assert page.eval("document.title") == "release 1"
            _swap(current, "releases/2")
            assert _switched(srv, current, "releases/2", 2), srv.stderr[-2000:]
            assert get(srv, NEW_CHUNK).status == 200                  # release 2 is served
            # The page of release 1, still open, now asks for its own chunk.
            assert page.eval("loadChunk()") == "loaded"
            assert page.eval('document.getElementById("marker").textContent') == \
                "chunk of release 1 ran"
            # A new visit gets release 2, whose chunk is its own.
            page2 = b.open("http://127.0.0.1:%d/" % srv.port)
            assert page2.eval("document.title") == "release 2"
            assert page2.eval("loadChunk()") == "loaded"
            assert page2.eval('document.getElementById("marker").textContent') == \
                "chunk of release 2 ran"
    finally:
        srv.stop()
    assert srv.returncode == 0



def test_a_swap_while_the_rule_files_are_read_is_not_mixed_into_a_generation(tmpdir):
    """A deploy that lands between the reading of a site's `_headers` and the opening of its
    root would give a generation one release's rules and another's files. The injector
    (LFHTTPD_FAULT_RENAME) swaps the link at exactly that instant, during the reload the
    first deploy started: that generation is refused, and the next look builds one wholly
    from the release the link names now."""
    for n in (1, 2, 3):
        d = _release(tmpdir, n)
        with open(os.path.join(d, "_headers"), "w") as f:
            f.write("/*\n  X-Release: %d\n" % n)
    current = os.path.join(tmpdir, "current")
    os.symlink("releases/1", current)
    late = os.path.join(tmpdir, "late-deploy")
    os.symlink("releases/3", late)
    # the second reading of _headers (the first is the start's)
    env = preloaded(LFHTTPD_FAULT_RENAME="_headers %s %s 1" % (late, current))
    srv = ConfServer(tmpdir, "log_level info\nroot %s\nsite_rules_files on\n" % current,
                     env=env)
    try:
        r = get(srv, "/v.txt")
        assert (r.body, r.header("X-Release")) == (b"release 1\n", "1"), r
        _swap(current, "releases/2")
        assert wait_until(lambda: "was switched while its site rules were read" in srv.stderr,
                          20), srv.stderr[-2000:]
        assert wait_until(lambda: "-> releases/3: switched" in srv.stderr and
                          get(srv, "/v.txt").body == b"release 3\n", 20), srv.stderr[-2000:]
        r = get(srv, "/v.txt")
        assert (r.body, r.header("X-Release")) == (b"release 3\n", "3"), r
        assert "-> releases/2: switched" not in srv.stderr, srv.stderr[-2000:]
    finally:
        srv.stop()
    assert srv.returncode == 0
