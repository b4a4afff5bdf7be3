"""Request bodies, Expect: 100-continue, size limits (431/414/413), lingering close, the
connection limit and running out of file descriptors."""

import os
import select
import socket
import stat
import threading
import time

from lib.server import ConfServer, Conn, Server, T, binary, curl, fixture_tree, req, wait_until
from lib.probe import answer_then_keepalive, cpu_seconds, error_then_close, fd_count

P = b"POST /one.txt HTTP/1.1\r\nHost: x\r\n"
NEXT = b"GET /kib.txt HTTP/1.1\r\nHost: x\r\n\r\n"


# ---- Expect: 100-continue --------------------------------------------------------------------

def test_expect_100_static_gets_final_status_and_close(srv):
    # The static handler never reads a body, so no 100: the final status at once, and the
    # connection closes (the client may or may not send the body now).
    for method, status in (("POST", 405), ("GET", 200), ("PUT", 405)):
        with Conn(srv) as c:
            c.send(req(method, "/one.txt", {"Expect": "100-continue", "Content-Length": "5"}))
            r = c.read_response(method)
            assert r.status == status, (method, r)
            assert r.has_token("Connection", "close"), (method, status, r.headers)
            assert c.wait_closed(3), (method, status, "server waited for a body it will not read")


def test_expect_100_body_sent_anyway_is_not_a_request(srv):
    # A client that sends the body after the final status: it is drained, never parsed.
    with Conn(srv) as c:
        c.send(req("POST", "/one.txt", {"Expect": "100-continue", "Content-Length": "%d"
                                        % len(NEXT)}))
        r = c.read_response("POST")
        assert r.status == 405 and r.has_token("Connection", "close")
        try:
            c.send(NEXT)
        except OSError:
            pass
        assert c.wait_closed(5)   # wait_closed fails on any further response bytes


def test_expect_100_with_body_already_sent_keeps_alive(srv):
    # The whole body came with the head: nothing is in doubt.
    with Conn(srv) as c:
        c.send(req("POST", "/one.txt", {"Expect": "100-continue"}, body=b"hello") + NEXT)
        r1, r2 = c.read_response("POST"), c.read_response()
        assert r1.status == 405 and not r1.has_token("Connection", "close"), r1
        assert r2.status == 200 and r2.body == srv.files["/kib.txt"]


def test_expect_unknown_417(srv):
    error_then_close(srv, req("GET", "/one.txt", {"Expect": "something-else"}), 417)


def test_expect_100_curl(srv, tmpdir):
    # curl waits up to a second for "100 Continue"; it must get the final status instead and
    # then not upload the body at all.
    body = os.path.join(tmpdir, "body.bin")
    with open(body, "wb") as f:
        f.write(b"z" * 300000)
    for method, status in (("POST", "405"), ("GET", "200"), ("PUT", "405")):
        p = curl(["-o", "/dev/null", "-w", "%{http_code} %{size_upload}", "-X", method,
                  "-H", "Expect: 100-continue", "--data-binary", "@" + body,
                  srv.url + "/one.txt"])
        assert p.returncode == 0, (method, status, p.stderr)
        assert p.stdout.decode().split() == [status, "0"], (method, p.stdout)


# ---- size limits -------------------------------------------------------------------------------

LIMITS = {"max_request_head": "1k", "max_headers": "5", "max_uri_length": "64",
          "max_body_size": "1k"}


def test_head_size_431(tmpdir):
    srv = ConfServer(tmpdir, LIMITS, root=fixture_tree(tmpdir))
    answer_then_keepalive(srv, req("GET", "/one.txt", {"X-A": "a" * 800}), 200)
    error_then_close(srv, req("GET", "/one.txt", {"X-A": "a" * 1100}), 431)
    error_then_close(srv, req("GET", "/one.txt", {"X-A": "a" * 350, "X-B": "b" * 350,
                                                  "X-C": "c" * 350}), 431)
    # a head that never ends: 431 as soon as it is too long, not when it is complete
    with Conn(srv) as c:
        c.send(b"GET /one.txt HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 2000)
        r = c.read_response()
        assert r.status == 431 and r.has_token("Connection", "close")
        assert c.wait_closed(3)


def test_header_count_431(tmpdir):
    srv = ConfServer(tmpdir, LIMITS, root=fixture_tree(tmpdir))
    answer_then_keepalive(srv, req("GET", "/one.txt", [("X-%d" % i, "v") for i in range(4)]),
                          200)
    error_then_close(srv, req("GET", "/one.txt", [("X-%d" % i, "v") for i in range(5)]), 431)


def test_uri_length_414(tmpdir):
    srv = ConfServer(tmpdir, LIMITS, root=fixture_tree(tmpdir))
    answer_then_keepalive(srv, req("GET", "/" + "a" * 63), 404)
    error_then_close(srv, req("GET", "/" + "a" * 64), 414)
    error_then_close(srv, req("GET", "/one.txt?" + "q" * 100), 414)


def test_body_size_413(tmpdir):
    srv = ConfServer(tmpdir, LIMITS, root=fixture_tree(tmpdir))
    answer_then_keepalive(srv, req("POST", "/one.txt", body=b"b" * 1024), 405, method="POST")
    error_then_close(srv, req("POST", "/one.txt", body=b"b" * 1025), 413, method="POST")
    error_then_close(srv, P + b"Content-Length: 99999999999\r\n\r\n", 413, method="POST")
    # chunked: the size is only known while reading; the first chunks came with the head
    chunked = b"400\r\n" + b"c" * 1024 + b"\r\n1\r\nc\r\n0\r\n\r\n"
    error_then_close(srv, P + b"Transfer-Encoding: chunked\r\n\r\n" + chunked + NEXT, 413,
                     method="POST")
    answer_then_keepalive(srv, P + b"Transfer-Encoding: chunked\r\n\r\n400\r\n" + b"c" * 1024
                          + b"\r\n0\r\n\r\n", 405, method="POST")


def test_chunk_framing_counts_towards_body_limit(tmpdir):
    # Chunk-size lines (leading zeros), extensions and trailer fields are not body bytes, but a
    # client must not be able to stream them forever: they may add max_request_head at most.
    srv = ConfServer(tmpdir, LIMITS, root=fixture_tree(tmpdir))
    te = P + b"Transfer-Encoding: chunked\r\n\r\n"
    for body in (b"0" * 3000 + b"1\r\na\r\n0\r\n\r\n",
                 b"1;" + b"e" * 3000 + b"\r\na\r\n0\r\n\r\n",
                 b"1\r\na\r\n0\r\n" + b"X-T: " + b"t" * 3000 + b"\r\n\r\n",
                 b"1\r\na\r\n0\r\n" + b"X-T: t\r\n" * 500 + b"\r\n"):
        error_then_close(srv, te + body + NEXT, 413, method="POST")
    # a body of max_body_size in many small chunks is fine
    body = b"".join(b"10\r\n" + b"d" * 16 + b"\r\n" for _ in range(64)) + b"0\r\n\r\n"
    answer_then_keepalive(srv, te + body, 405, method="POST")


def test_chunked_body_over_limit_later_closes(tmpdir):
    # When the excess arrives after the response, the connection is closed (the response was
    # already sent; the rest of the body is never parsed as requests).
    srv = ConfServer(tmpdir, LIMITS, root=fixture_tree(tmpdir))
    with Conn(srv) as c:
        c.send(P + b"Transfer-Encoding: chunked\r\n\r\n")
        assert c.read_response("POST").status == 405
        c.send(b"800\r\n" + b"c" * 2048 + b"\r\n0\r\n\r\n" + NEXT)
        assert c.wait_closed(5)


def test_413_seen_while_client_still_sending(tmpdir):
    # The client sends a large body without waiting. The 413 must reach it, and the server
    # must keep draining (lingering close) until the client has finished: a close with unread
    # input would reset the connection under it (its send fails, and on many stacks the
    # unread response is lost). Lingering, the client finishes sending and then sees EOF.
    srv = ConfServer(tmpdir, {"max_body_size": "64k"}, root=fixture_tree(tmpdir))
    size = 8 * 1024 * 1024
    with Conn(srv, timeout=20) as c:
        errors = []

        def pump():
            chunk = b"u" * 65536
            try:
                c.sock.sendall(P + b"Content-Length: %d\r\n\r\n" % size)
                for _ in range(size // len(chunk)):
                    c.sock.sendall(chunk)
            except OSError as e:
                errors.append(e)

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        r = c.read_response("POST")
        assert r.status == 413 and r.has_token("Connection", "close"), r
        t.join(T(20))
        assert not t.is_alive(), "the client could not finish sending its body"
        assert not errors, "the server reset the connection while lingering: %r" % errors
        try:
            assert c.wait_closed(5), "no EOF after the body was drained"
        except ConnectionResetError:
            raise AssertionError("connection reset instead of a clean close")


def test_413_curl_large_upload(tmpdir):
    srv = ConfServer(tmpdir, {"max_body_size": "64k"}, root=fixture_tree(tmpdir))
    body = os.path.join(tmpdir, "big-upload.bin")
    with open(body, "wb") as f:
        f.truncate(16 * 1024 * 1024)
    for expect in ("Expect:", "Expect: 100-continue"):
        p = curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", expect,
                  "--data-binary", "@" + body, srv.url + "/one.txt"])
        assert p.stdout == b"413", (expect, p.returncode, p.stdout, p.stderr)


# ---- the connection limit ----------------------------------------------------------------------

def _cpu_over(pid, seconds):
    c0 = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - c0


def test_max_connections_pauses_accepting_without_spinning(tmpdir):
    srv = ConfServer(tmpdir, {"max_connections": "4"}, root=fixture_tree(tmpdir))
    pid = srv.proc.pid
    held = []
    try:
        for _ in range(4):
            c = Conn(srv)
            c.send(b"GET /one.txt HTTP/1.1\r\n")   # a head in progress: accepted and counted
            held.append(c)
        time.sleep(T(0.3))
        extra = Conn(srv)
        extra.send(req("GET", "/one.txt"))
        r, _, _ = select.select([extra.sock], [], [], T(1))
        assert not r, "a fifth connection was served over max_connections 4"
        used = _cpu_over(pid, 1.0)
        assert used < 0.3, "server used %.2f s of CPU in 1 s while paused at the limit" % used
        held.pop(0).close()                      # one slot frees: the fifth gets in
        resp = extra.read_response()
        assert resp.status == 200 and resp.body == b"1"
        for c in held:                            # the held ones still work
            c.send(b"Host: x\r\n\r\n")
            assert c.read_response().status == 200
        extra.close()
    finally:
        for c in held:
            c.close()


def test_out_of_file_descriptors_pauses_without_spinning(tmpdir):
    # Start the server with at most 64 descriptors and open more connections than that.
    tree = fixture_tree(tmpdir)
    wrapper = os.path.join(tmpdir, "limited.sh")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec prlimit --nofile=64:64 %s \"$@\"\n" % binary())
    os.chmod(wrapper, stat.S_IRWXU)
    srv = Server(binary_path=wrapper, root=tree.root)
    pid = srv.proc.pid
    conns = []
    try:
        for i in range(90):
            c = Conn(srv)
            c.send(b"GET /one.txt HTTP/1.1\r\n")
            conns.append(c)
        assert wait_until(lambda: "pausing accepts" in srv.stderr, 5), srv.stderr[-2000:]
        used = _cpu_over(pid, 1.0)
        assert used < 0.3, "server used %.2f s of CPU in 1 s while out of descriptors" % used
        for c in conns[:45]:
            c.close()
        del conns[:45]
        # let the server see those closes (until then the descriptors are still in use and a
        # request may fairly get a 503 for want of one to open the file)
        assert wait_until(lambda: fd_count(pid) <= 60, 5), fd_count(pid)
        time.sleep(T(0.5))
        # every remaining connection (accepted before, or waiting in the backlog until
        # descriptors were freed) is now served
        for c in conns:
            c.send(b"Host: x\r\n\r\n")
        for c in conns:
            r = c.read_response()
            assert r.status == 200 and r.body == b"1", r
        # one line per shortage, not per retry (a retry every 250 ms over the second measured
        # above would log at least 4): a second "pausing" line only after the shortage ended
        # ("accepting ... again"); as descriptors free up one by one, a loaded machine may
        # end and restart a shortage several times
        state = None
        for line in srv.stderr.splitlines():
            if "pausing accepts" in line:
                assert state != "paused", "the shortage is logged on every retry:\n" + \
                    srv.stderr[-2000:]
                state = "paused"
            elif "accepting on" in line and "again" in line:
                state = "resumed"
        assert "again" in srv.stderr
    finally:
        for c in conns:
            c.close()
