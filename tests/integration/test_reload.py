"""SIGHUP: atomic configuration reload."""

import os
import signal
import threading
import time

from lib.server import ConfServer, Conn, T, free_port, get, req, wait_until


def _setup(tmpdir):
    for name in ("a", "b"):
        os.makedirs(os.path.join(tmpdir, name), exist_ok=True)
        with open(os.path.join(tmpdir, name, "v.txt"), "w") as f:
            f.write(name.upper() * 3)
    return os.path.join(tmpdir, "lfhttpd.conf")


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def test_reload_switches_root_and_listeners(tmpdir):
    conf = _setup(tmpdir)
    p1, p2 = free_port(), free_port()
    s = ConfServer(tmpdir, "listen 127.0.0.1:%d\nroot %s/a\n" % (p1, tmpdir), listen=())
    try:
        assert get(("127.0.0.1", p1), "/v.txt").body == b"AAA"
        _write(conf, "listen 127.0.0.1:%d\nlisten 127.0.0.1:%d\nroot %s/b\n" % (p1, p2, tmpdir))
        s.signal(signal.SIGHUP)
        assert wait_until(lambda: "generation 2" in s.stderr, 5), s.stderr
        assert get(("127.0.0.1", p1), "/v.txt").body == b"BBB"
        assert get(("127.0.0.1", p2), "/v.txt").body == b"BBB", "new listener not serving"
        # Remove the first listener: it stops accepting, the second keeps serving.
        _write(conf, "listen 127.0.0.1:%d\nroot %s/a\n" % (p2, tmpdir))
        s.signal(signal.SIGHUP)
        assert wait_until(lambda: "generation 3" in s.stderr, 5), s.stderr
        try:
            get(("127.0.0.1", p1), "/v.txt", timeout=2)
            raise AssertionError("removed listener still accepts")
        except (ConnectionError, OSError):
            pass
        assert get(("127.0.0.1", p2), "/v.txt").body == b"AAA"
    finally:
        s.stop()
    assert s.returncode == 0


def test_invalid_reload_keeps_the_running_configuration(tmpdir):
    conf = _setup(tmpdir)
    p1 = free_port()
    s = ConfServer(tmpdir, "listen 127.0.0.1:%d\nroot %s/a\n" % (p1, tmpdir), listen=())
    try:
        _write(conf, "listen 127.0.0.1:%d\nroot %s/b\nno_such_directive 1\n" % (p1, tmpdir))
        s.signal(signal.SIGHUP)
        assert wait_until(lambda: "not reloaded" in s.stderr, 5), s.stderr
        assert conf + ":3: unknown directive" in s.stderr, s.stderr
        assert get(("127.0.0.1", p1), "/v.txt").body == b"AAA", "old configuration lost"
        # A root that does not exist is refused as well.
        _write(conf, "listen 127.0.0.1:%d\nroot %s/missing\n" % (p1, tmpdir))
        s.signal(signal.SIGHUP)
        assert wait_until(lambda: s.stderr.count("not reloaded") >= 2, 5), s.stderr
        assert get(("127.0.0.1", p1), "/v.txt").body == b"AAA"
    finally:
        s.stop()
    assert s.returncode == 0


def test_keepalive_connection_switches_between_requests(tmpdir):
    conf = _setup(tmpdir)
    p1 = free_port()
    s = ConfServer(tmpdir, "listen 127.0.0.1:%d\nroot %s/a\n" % (p1, tmpdir), listen=())
    try:
        with Conn(("127.0.0.1", p1)) as c:
            c.send(req("GET", "/v.txt"))
            assert c.read_response().body == b"AAA"
            _write(conf, "listen 127.0.0.1:%d\nroot %s/b\n" % (p1, tmpdir))
            s.signal(signal.SIGHUP)
            assert wait_until(lambda: "generation 2" in s.stderr, 5), s.stderr
            c.send(req("GET", "/v.txt"))
            r = c.read_response()
            assert r.body == b"BBB", "the same keep-alive connection must see the new root"
    finally:
        s.stop()


def test_reload_under_load_drops_nothing(tmpdir):
    conf = _setup(tmpdir)
    p1 = free_port()
    s = ConfServer(tmpdir, "listen 127.0.0.1:%d\nroot %s/a\n" % (p1, tmpdir), listen=())
    failures, counts = [], [0]
    stop = threading.Event()
    lock = threading.Lock()

    def client():
        while not stop.is_set():
            try:
                with Conn(("127.0.0.1", p1), timeout=T(10)) as c:
                    for _ in range(20):
                        c.send(req("GET", "/v.txt"))
                        r = c.read_response()
                        if r.status != 200 or r.body not in (b"AAA", b"BBB"):
                            failures.append((r.status, r.body[:20]))
                        with lock:
                            counts[0] += 1
            except Exception as e:  # any dropped request is a failure
                failures.append(repr(e))

    threads = [threading.Thread(target=client) for _ in range(6)]
    try:
        for t in threads:
            t.start()
        for i in range(6):
            time.sleep(0.3)
            _write(conf, "listen 127.0.0.1:%d\nroot %s/%s\n" % (p1, tmpdir, "ab"[i % 2]))
            s.signal(signal.SIGHUP)
        assert wait_until(lambda: "generation 7" in s.stderr, 10), s.stderr
        time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join(T(20))
        s.stop()
    assert not failures, failures[:5]
    assert counts[0] > 50, counts
    assert s.returncode == 0
