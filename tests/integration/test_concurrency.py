"""Many concurrent keep-alive connections."""

import threading
import time

from lib.server import Conn, T, req, sha256

CLIENTS = 200
REQUESTS = 30


def test_200_concurrent_keepalive_clients(srv):
    files = srv.files
    digests = {p: sha256(b) for p, b in files.items()}
    small = ["/small.html", "/kib.txt", "/one.txt", "/empty.txt", "/sub/file.css", "/noext"]
    errors = []
    counts = [0] * CLIENTS
    start = threading.Barrier(CLIENTS + 1, timeout=T(60))

    def client(n):
        try:
            with Conn(srv, timeout=30) as c:
                start.wait()
                for i in range(REQUESTS):
                    k = (n * 7 + i) % 10
                    if k < 6:
                        path, method, st = small[(n + i) % len(small)], "GET", 200
                    elif k == 6:
                        path, method, st = "/nope-%d-%d" % (n, i), "GET", 404
                    elif k == 7:
                        path, method, st = "/sub/", "GET", 200
                    elif k == 8:
                        path, method, st = "/kib.txt", "HEAD", 200
                    else:
                        path, method, st = "/small.html", "HEAD", 200
                    # a few clients fetch the 3 MiB file once
                    if n % 20 == 0 and i == REQUESTS // 2:
                        path, method, st = "/big.bin", "GET", 200
                    c.send(req(method, path))
                    r = c.read_response(method)
                    if r.status != st:
                        errors.append((n, i, method, path, "status", r.status))
                        return
                    if st == 200:
                        want = files["/sub/index.html" if path == "/sub/" else path]
                        if r.header("Content-Length") != str(len(want)):
                            errors.append((n, i, path, "length", r.header("Content-Length")))
                            return
                        body_ok = (r.body == b"") if method == "HEAD" else \
                            (sha256(r.body) == digests["/sub/index.html" if path == "/sub/"
                                                       else path])
                        if not body_ok:
                            errors.append((n, i, method, path, "body", len(r.body)))
                            return
                    counts[n] += 1
        except Exception as e:
            errors.append((n, "exception", repr(e)))
            try:
                start.abort()
            except Exception:
                pass

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    try:
        start.wait()
    except threading.BrokenBarrierError:
        pass   # a client failed before the start line; its error is in `errors`
    for t in threads:
        t.join(T(90))
    alive = sum(t.is_alive() for t in threads)
    assert alive == 0, "%d clients still running after %.0fs" % (alive, time.monotonic() - t0)
    assert not errors, errors[:10]
    assert sum(counts) == CLIENTS * REQUESTS, sum(counts)
    assert srv.alive()


def test_concurrent_new_connections(srv):
    # 400 short connections, 50 at a time, each one request with Connection: close.
    errors = []
    sem = threading.Semaphore(50)

    def one(n):
        with sem:
            try:
                with Conn(srv, timeout=30) as c:
                    path = ["/one.txt", "/small.html", "/kib.txt"][n % 3]
                    c.send(req("GET", path, {"Connection": "close"}))
                    r = c.read_response()
                    if r.status != 200 or r.body != srv.files[path]:
                        errors.append((n, r.status))
                    elif not c.wait_closed(10):
                        errors.append((n, "not closed"))
            except Exception as e:
                errors.append((n, repr(e)))

    threads = [threading.Thread(target=one, args=(n,), daemon=True) for n in range(400)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(T(60))
    assert not any(t.is_alive() for t in threads), "clients hung"
    assert not errors, errors[:10]


def test_slow_readers_do_not_starve_others(srv):
    # Two clients that request the 3 MiB file and do not read it must not stop the
    # (2-thread) server from serving others.
    stuck = []
    try:
        for _ in range(4):
            c = Conn(srv, rcvbuf=4096)
            c.send(req("GET", "/big.bin"))
            stuck.append(c)
        time.sleep(0.2)
        t0 = time.monotonic()
        for path in ["/small.html", "/kib.txt", "/one.txt"]:
            with Conn(srv, timeout=10) as c:
                c.send(req("GET", path))
                r = c.read_response()
                assert r.status == 200 and r.body == srv.files[path]
        assert time.monotonic() - t0 < T(5)
        # now drain one of the stuck downloads fully
        r = stuck[0].read_response()
        assert sha256(r.body) == sha256(srv.files["/big.bin"])
    finally:
        for c in stuck:
            c.close()
