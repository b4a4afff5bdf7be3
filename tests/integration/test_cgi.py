"""CGI/1.1 (handlers/cgi/cgi.c): meta-variables, bodies, responses, limits, processes."""

import json
import os
import signal
import socket
import threading
import time

import pytest

from lib.server import ConfServer, Conn, SCALE, T, get, raw, raw_bytes, req, wait_until
from lib.procs import (copy_example_scripts, group_members, rss_kib, status_json, write_script, zombies_of)

SH = "#!/bin/sh\n"


def cgi_server(tmpdir, conf=(), threads=2, env=None, args=()):
    """A document root with the example scripts and the test scripts in /cgi-bin/."""
    www = os.path.join(tmpdir, "www")
    cgi = os.path.join(www, "cgi-bin")
    copy_example_scripts(cgi)
    with open(os.path.join(www, "static.txt"), "w") as f:
        f.write("static file\n")
    os.makedirs(os.path.join(www, "cgi-bin", "sub"))
    scripts = {
        "echo-body": SH + "printf 'Content-Type: application/octet-stream\\n\\n'\nexec cat\n",
        "status404": SH + "printf 'Status: 404 Nothing Here\\nContent-Type: text/plain\\n"
                          "X-Custom: yes\\n\\nnot here\\n'\n",
        "local": SH + "printf 'Location: /static.txt\\n\\n'\n",
        "local-cgi": SH + "printf 'Location: /cgi-bin/env/from?redirect=1\\n\\n'\n",
        "abs": SH + "printf 'Location: http://example.com/elsewhere\\n\\n'\n",
        "abs-301": SH + "printf 'Status: 301 Moved Permanently\\nLocation: https://example.com/"
                        "\\nContent-Type: text/plain\\n\\nmoved\\n'\n",
        "loop": SH + "printf 'Location: /cgi-bin/loop\\n\\n'\n",
        "bad": SH + "printf 'this is not a header\\n\\nbody\\n'\n",
        "bad-status": SH + "printf 'Status: abc\\n\\n'\n",
        "injected": SH + "printf 'X-Evil: a\\rInjected: yes\\n\\nbody\\n'\n",
        "silent": SH + "exit 0\n",
        "bighead": SH + "i=0; while [ $i -lt 400 ]; do printf 'X-Filler-%d: %s\\n' $i "
                        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; i=$((i+1)); done; "
                        "printf '\\nbody\\n'\n",
        "fails-after": SH + "printf 'Content-Type: text/plain\\n\\nsome output\\n'; exit 3\n",
        "crlf": SH + "printf 'Content-Type: text/plain\\r\\nX-A: 1\\r\\n\\r\\ncrlf body'\n",
        "cl-short": SH + "printf 'Content-Length: 10\\n\\nabc'\n",
        "cl-long": SH + "printf 'Content-Length: 3\\n\\nabcdef'\n",
        "hop": SH + "printf 'Connection: close\\nTransfer-Encoding: chunked\\nServer: evil\\n"
                    "Content-Type: text/plain\\n\\nplain\\n'\n",
        "sleepy": SH + "sleep 0.5\nprintf 'Content-Type: text/plain\\n\\nrested\\n'\n",
        "slowread": SH + "sleep 1\nprintf 'Content-Type: text/plain\\n\\n'\nwc -c\n",
        "bigout": SH + "printf 'Content-Type: application/octet-stream\\n\\n'\n"
                       "exec head -c 30000000 /dev/zero\n",
        "stderr": SH + "printf 'first line\\nsecond\\001line\\n' >&2\n"
                       "printf 'Content-Type: text/plain\\n\\nok\\n'\n",
        "pwd": SH + "printf 'Content-Type: text/plain\\n\\n'; pwd\n",
        "never": SH + "echo $$ > %s/never.pid\nsleep 1000 &\nsleep 1000\n" % tmpdir,
        "partial": SH + "printf 'Content-Type: text/plain\\n\\npartial\\n'\n"
                        "echo $$ > %s/partial.pid\nexec sleep 1000\n" % tmpdir,
        "wait": SH + "echo $$ > %s/wait.pid\nexec sleep 1000\n" % tmpdir,
        "sub/inner": SH + "printf 'Content-Type: text/plain\\n\\ninner\\n'\n",
    }
    for name, text in scripts.items():
        write_script(cgi, name, text)
    write_script(cgi, "not-executable", SH + "echo no\n", mode=0o644)
    os.mkfifo(os.path.join(cgi, "fifo"))
    os.symlink("/bin/true", os.path.join(cgi, "outside"))
    os.makedirs(os.path.join(cgi, ".hidden"))
    write_script(os.path.join(cgi, ".hidden"), "x", scripts["silent"])
    lines = ["location /cgi-bin/ {", "    handler cgi", "}"] + list(conf)
    srv = ConfServer(tmpdir, ["root %s" % www] + list(lines), root=www, threads=threads, env=env, args=args)
    srv.www = www
    return srv


def env_of(resp):
    assert resp.status == 200, resp
    out = {}
    for line in resp.body.decode("latin-1").splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k] = v
    return out


def no_zombies(srv):
    return wait_until(lambda: not zombies_of(srv.proc.pid), 3) is True


# ---- the example scripts -------------------------------------------------------------------

def test_example_scripts(tmpdir):
    srv = cgi_server(tmpdir)
    r = get(srv, "/cgi-bin/hello")
    assert r.status == 200 and r.header("Content-Type") == "text/plain; charset=utf-8"
    assert r.body.startswith(b"Hello from CGI!") and b"/cgi-bin/hello" in r.body
    assert r.header("Transfer-Encoding") == "chunked"
    r = get(srv, "/cgi-bin/form?name=Ann&message=a%3Cb%3E+c")
    assert r.status == 200 and b"<dt>name</dt><dd>Ann</dd>" in r.body
    assert b"<dd>a&lt;b&gt; c</dd>" in r.body
    body = b"name=J%C3%BCrgen&message=%22quoted%22+%26+more"
    r = raw(srv, req("POST", "/cgi-bin/form", body=body,
                     headers=[("Content-Type", "application/x-www-form-urlencoded")]))
    assert r.status == 200 and "<dd>J\u00fcrgen</dd>".encode() in r.body, r.body
    assert b"<dd>&quot;quoted&quot; &amp; more</dd>" in r.body
    assert b"Received (POST)" in r.body
    env = env_of(get(srv, "/cgi-bin/env"))
    assert env["GATEWAY_INTERFACE"] == "CGI/1.1"
    # slow: lines arrive while the script runs
    with Conn(srv, timeout=10) as c:
        t0 = time.monotonic()
        c.send(req("GET", "/cgi-bin/slow"))
        while b"line 1 of 10" not in c.buf:
            assert c._fill()
        first = time.monotonic() - t0
        r = c.read_response()
        total = time.monotonic() - t0
    assert r.status == 200 and r.body.count(b"\n") == 10 and b"line 10 of 10" in r.body
    assert first < T(0.5) and total >= 1.6, (first, total)
    assert no_zombies(srv)


# ---- meta-variables -------------------------------------------------------------------------

def test_meta_variables(tmpdir):
    env = dict(os.environ, SECRET_TOKEN="must-not-leak", LANG="C.UTF-8")
    srv = cgi_server(tmpdir, env=env)
    with Conn(srv) as c:
        headers = [("Host", "example.test:8080"), ("X-Custom", "v1"), ("X_Under", "no"),
                   ("Proxy", "http://evil:1"), ("Authorization", "Basic c2VjcmV0"),
                   ("Cookie", "a=1"), ("Cookie", "b=2"), ("Accept", "text/html"),
                   ("Accept", "text/plain"), ("Content-Type", "text/x-test")]
        c.send(req("POST", "/cgi-bin/env/extra/path%20x?q=1&r=%41", headers=headers,
                   body=b"12345"))
        r = c.read_response()
        local_port = c.sock.getpeername()[1]
        client_port = c.sock.getsockname()[1]
    e = env_of(r)
    assert e["GATEWAY_INTERFACE"] == "CGI/1.1"
    assert e["SERVER_SOFTWARE"].startswith("lfhttpd/")
    assert e["SERVER_NAME"] == "example.test"
    assert e["SERVER_PORT"] == str(local_port)
    assert e["SERVER_PROTOCOL"] == "HTTP/1.1"
    assert e["REQUEST_METHOD"] == "POST"
    assert e["QUERY_STRING"] == "q=1&r=%41"
    assert e["SCRIPT_NAME"] == "/cgi-bin/env"
    assert e["PATH_INFO"] == "/extra/path x"
    docroot = os.path.realpath(srv.www)
    assert e["PATH_TRANSLATED"] == docroot + "/extra/path x"
    assert e["DOCUMENT_ROOT"] == docroot
    assert e["SCRIPT_FILENAME"] == docroot + "/cgi-bin/env"
    assert e["REQUEST_URI"] == "/cgi-bin/env/extra/path%20x?q=1&r=%41"
    assert e["CONTENT_LENGTH"] == "5"
    assert e["CONTENT_TYPE"] == "text/x-test"
    assert e["REMOTE_ADDR"] == "127.0.0.1"
    assert e["REMOTE_PORT"] == str(client_port)
    assert "HTTPS" not in e                      # plain HTTP: unset, as in Apache/lighttpd
    assert e["REQUEST_SCHEME"] == "http"
    assert e["HTTP_HOST"] == "example.test:8080"
    assert e["HTTP_X_CUSTOM"] == "v1"
    assert e["HTTP_COOKIE"] == "a=1; b=2"
    assert e["HTTP_ACCEPT"] == "text/html, text/plain"
    assert "HTTP_X_UNDER" not in e               # '_' in a name could pose as '-'
    assert "HTTP_PROXY" not in e                 # httpoxy
    assert "HTTP_AUTHORIZATION" not in e         # RFC 3875 4.1.18
    assert "HTTP_CONTENT_TYPE" not in e and "HTTP_CONTENT_LENGTH" not in e
    assert "SECRET_TOKEN" not in e and "LANG" not in e
    assert e["PATH"] == os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    allowed = {"GATEWAY_INTERFACE", "SERVER_SOFTWARE", "SERVER_NAME", "SERVER_ADDR", "SERVER_PORT",
               "SERVER_PROTOCOL", "REQUEST_METHOD", "REQUEST_URI", "QUERY_STRING", "SCRIPT_NAME",
               "SCRIPT_FILENAME", "DOCUMENT_ROOT", "PATH_INFO", "PATH_TRANSLATED",
               "CONTENT_LENGTH", "CONTENT_TYPE", "REMOTE_ADDR", "REMOTE_PORT", "REDIRECT_STATUS", "REQUEST_SCHEME",
               "PATH", "PWD", "SHLVL", "_"}
    extra = [k for k in e if k not in allowed and not k.startswith("HTTP_")]
    assert not extra, "unexpected variables: %r" % extra

    # GET without a body or a query; HTTP/1.0 without Host: SERVER_NAME is our address
    e = env_of(get(srv, "/cgi-bin/env"))
    assert "CONTENT_LENGTH" not in e and "PATH_INFO" not in e and e["QUERY_STRING"] == ""
    data = raw_bytes(srv, b"GET /cgi-bin/env HTTP/1.0\r\n\r\n")
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"chunked" not in head and b"Connection: close" in head   # close-delimited
    e = dict(l.split("=", 1) for l in body.decode().splitlines() if "=" in l)
    assert e["SERVER_PROTOCOL"] == "HTTP/1.0" and e["SERVER_NAME"] == "127.0.0.1"


def test_env_pass_allow_list(tmpdir):
    env = dict(os.environ, SECRET_TOKEN="must-not-leak", LANG="C.UTF-8")
    srv = cgi_server(tmpdir, conf=["cgi_env_pass PATH LANG"], env=env)
    e = env_of(get(srv, "/cgi-bin/env"))
    assert e["LANG"] == "C.UTF-8" and "SECRET_TOKEN" not in e and "PATH" in e


def test_working_directory_is_the_scripts(tmpdir):
    srv = cgi_server(tmpdir)
    r = get(srv, "/cgi-bin/pwd")
    assert r.body.strip().decode() == os.path.realpath(os.path.join(srv.www, "cgi-bin"))
    assert get(srv, "/cgi-bin/sub/inner").body == b"inner\n"


# ---- request bodies ---------------------------------------------------------------------------

def test_post_bodies_plain_and_chunked(tmpdir):
    srv = cgi_server(tmpdir)
    body = bytes(range(256)) * 1000
    r = raw(srv, req("POST", "/cgi-bin/echo-body", body=body))
    assert r.status == 200 and r.body == body
    chunks = [b"first ", b"", b"x" * 70000, b" last"]
    data = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c) + b"0\r\n\r\n"
    r = raw(srv, req("POST", "/cgi-bin/echo-body", headers=[("Transfer-Encoding", "chunked")])
            + data)
    assert r.status == 200 and r.body == b"".join(chunks)
    # CONTENT_LENGTH of a chunked body is its decoded length (RFC 3875 4.1.2)
    r = raw(srv, req("POST", "/cgi-bin/env", headers=[("Transfer-Encoding", "chunked")])
            + b"4\r\nabcd\r\n3\r\nefg\r\n0\r\n\r\n")
    assert env_of(r)["CONTENT_LENGTH"] == "7"
    # body sent in pieces, slowly
    with Conn(srv) as c:
        c.send(req("POST", "/cgi-bin/echo-body", headers=[("Content-Length", "30")]))
        for i in range(3):
            time.sleep(0.1)
            c.send(b"0123456789")
        r = c.read_response()
        assert r.body == b"0123456789" * 3
    # Expect: 100-continue gets the interim response before the body is sent
    with Conn(srv) as c:
        c.send(req("PUT", "/cgi-bin/echo-body",
                   headers=[("Content-Length", "5"), ("Expect", "100-continue")]))
        interim = c.read_response()
        assert interim.status == 100
        c.send(b"hello")
        r = c.read_response()
        assert r.status == 200 and r.body == b"hello"
        c.send(req("GET", "/cgi-bin/hello"))       # and the connection goes on
        assert c.read_response().status == 200


def test_chunked_body_limit_holds_across_reads(tmpdir):
    # max_body_size bounds the whole body, not what one read brings: a chunked body sent in
    # many pieces, 320 KiB in all against a 100 KiB limit, is refused with 413 and never
    # reaches the script (whose echo would be a 200).
    srv = cgi_server(tmpdir, conf=["max_body_size 100k"])
    chunk = b"%x\r\n%s\r\n" % (16384, b"c" * 16384)
    with Conn(srv) as c:
        c.send(req("POST", "/cgi-bin/echo-body", headers=[("Transfer-Encoding", "chunked")]))
        try:
            for _ in range(20):
                c.send(chunk)
                time.sleep(0.02)
            c.send(b"0\r\n\r\n")
        except OSError:
            pass   # the server may close while the rest is still on its way
        r = c.read_response("POST")
        assert r.status == 413, (r.status, r.body[:100])
        assert c.wait_closed(5)


def test_stdin_backpressure_large_body_to_slow_reader(tmpdir):
    srv = cgi_server(tmpdir, conf=["max_body_size 64m"])
    size = 32 * 1024 * 1024
    body = b"y" * size
    before = rss_kib(srv.proc.pid)
    peak = [before]
    with Conn(srv, timeout=60) as c:
        t0 = time.monotonic()
        sent_at = []

        def send():
            c.send(req("POST", "/cgi-bin/slowread", headers=[("Content-Length", str(size))]))
            c.sock.sendall(body)
            sent_at.append(time.monotonic() - t0)

        th = threading.Thread(target=send)
        th.start()
        while th.is_alive():
            peak[0] = max(peak[0], rss_kib(srv.proc.pid))
            time.sleep(0.05)
        th.join()
        r = c.read_response()
    assert r.status == 200 and r.body.strip() == str(size).encode(), r
    # The script reads nothing for 1 s: a 32 MiB body cannot have been taken before.
    assert sent_at[0] >= 0.8, "the body was taken before the script read it (%.2fs)" % sent_at[0]
    assert peak[0] - before < 16 * 1024, "RSS grew by %d KiB" % (peak[0] - before)


def test_stdout_backpressure_slow_client(tmpdir):
    srv = cgi_server(tmpdir)
    before = rss_kib(srv.proc.pid)
    with Conn(srv, timeout=60, rcvbuf=16384) as c:
        c.send(req("GET", "/cgi-bin/bigout"))
        while len(c.buf) < 100000:
            assert c._fill(4096)
        time.sleep(1.0)    # the script can only fill the pipe and our carry meanwhile
        during = rss_kib(srv.proc.pid)
        r = c.read_response()
    assert r.status == 200 and len(r.body) == 30000000 and r.body.count(b"\0") == 30000000
    assert during - before < 8 * 1024, "RSS grew by %d KiB" % (during - before)


# ---- responses ------------------------------------------------------------------------------

def test_status_location_and_headers(tmpdir):
    srv = cgi_server(tmpdir)
    r = get(srv, "/cgi-bin/status404")
    assert r.status == 404 and r.header("X-Custom") == "yes" and r.body == b"not here\n"
    r = get(srv, "/cgi-bin/local")                       # local redirect: served internally
    assert r.status == 200 and r.body == b"static file\n" and r.header("Location") is None
    r = get(srv, "/cgi-bin/local-cgi", headers=[("Host", "h.example")])
    e = env_of(r)
    assert e["REQUEST_METHOD"] == "GET" and e["PATH_INFO"] == "/from"
    assert e["QUERY_STRING"] == "redirect=1" and e["HTTP_HOST"] == "h.example"
    r = get(srv, "/cgi-bin/abs")
    assert r.status == 302 and r.header("Location") == "http://example.com/elsewhere"
    r = get(srv, "/cgi-bin/abs-301")
    assert r.status == 301 and r.header("Location") == "https://example.com/"
    assert r.body == b"moved\n"
    assert get(srv, "/cgi-bin/loop").status == 500    # local redirects in a loop
    r = get(srv, "/cgi-bin/crlf")
    assert r.header("X-A") == "1" and r.body == b"crlf body"
    r = get(srv, "/cgi-bin/fails-after")
    assert r.status == 200 and r.body == b"some output\n"
    # the script's framing and connection headers are the server's business
    r = get(srv, "/cgi-bin/hop")
    assert r.status == 200 and r.body == b"plain\n"
    assert r.header("Server") == "lfhttpd" and r.header("Connection") is None
    assert r.header_all("Transfer-Encoding") == ["chunked"]
    # Content-Length from the script: kept to; fewer bytes -> the connection closes
    with Conn(srv) as c:
        c.send(req("GET", "/cgi-bin/cl-long") + req("GET", "/cgi-bin/cl-short"))
        a = c.read_response()
        assert a.header("Content-Length") == "3" and a.body == b"abc"
        with_short = c.read_all()
    assert with_short.startswith(b"HTTP/1.1 200") and with_short.endswith(b"\r\n\r\nabc")
    r = get(srv, "/cgi-bin/hello", method="HEAD")
    assert r.status == 200 and r.body == b"" and r.header("Content-Type")


@pytest.fixture(scope="module")
def cgi_srv(shared_server):
    """One server for the cases that only ask it something."""
    return shared_server(cgi_server)


@pytest.mark.parametrize("name", ["bad", "bad-status", "silent", "bighead", "injected"])
def test_bad_scripts_502(cgi_srv, name):
    data = raw_bytes(cgi_srv, req("GET", "/cgi-bin/" + name, headers=[("Connection", "close")]))
    assert data.startswith(b"HTTP/1.1 502 "), (name, data[:200])
    assert b"Injected" not in data, (name, data)
    if name == "bad":
        assert wait_until(lambda: "cgi /cgi-bin/bad: header line without a colon"
                          in cgi_srv.stderr, 5), cgi_srv.stderr[-2000:]


def test_script_resolution(tmpdir):
    srv = cgi_server(tmpdir)
    assert get(srv, "/cgi-bin/not-executable").status == 403
    assert get(srv, "/cgi-bin/nothere").status == 404
    assert get(srv, "/cgi-bin/sub").status == 403        # a directory is not a script
    assert get(srv, "/cgi-bin/sub/").status == 403
    assert get(srv, "/cgi-bin/fifo").status == 403
    assert get(srv, "/cgi-bin/outside").status == 404    # symlink out of the root
    assert get(srv, "/cgi-bin/.hidden/x").status == 404
    assert get(srv, "/cgi-bin/%2e%2e/static.txt").status == 200   # normalised: not a script
    assert get(srv, "/cgi-bin/sub/../hello").status == 200
    r = get(srv, "/cgi-bin/hello/more/path")               # PATH_INFO after the script
    assert r.status == 200


def test_stderr_goes_to_the_error_log(tmpdir):
    srv = cgi_server(tmpdir)
    assert get(srv, "/cgi-bin/stderr").body == b"ok\n"
    assert wait_until(lambda: "second?line" in srv.stderr, 3)
    assert "cgi /cgi-bin/stderr: first line" in srv.stderr
    assert "\x01" not in srv.stderr


def test_keepalive_and_pipelining_around_cgi(tmpdir):
    srv = cgi_server(tmpdir)
    with Conn(srv) as c:
        c.send(req("GET", "/cgi-bin/hello") + req("GET", "/static.txt") +
               req("POST", "/cgi-bin/echo-body", body=b"piped") + req("GET", "/cgi-bin/local"))
        a, b, d, e = c.read_responses(4)
        assert a.status == 200 and a.body.startswith(b"Hello")
        assert b.body == b"static file\n"
        assert d.body == b"piped"
        assert e.body == b"static file\n"
        assert c.is_open()


# ---- limits and processes ----------------------------------------------------------------------

def test_timeout_kills_the_process_group(tmpdir):
    srv = cgi_server(tmpdir, conf=["cgi_timeout 1s"])
    t0 = time.monotonic()
    r = get(srv, "/cgi-bin/never", timeout=30)
    dt = time.monotonic() - t0
    assert r.status == 504, r
    assert 0.9 <= dt < T(3), dt
    pid = int(open(os.path.join(tmpdir, "never.pid")).read())
    assert wait_until(lambda: not group_members(pid), 3), \
        "process group %d still alive: %r" % (pid, group_members(pid))
    assert no_zombies(srv)
    assert status_json(srv)["cgi"]["timeouts"] >= 1
    # output already sent: the response is cut off, the connection closes
    with Conn(srv, timeout=30) as c:
        c.send(req("GET", "/cgi-bin/partial"))
        data = c.read_all()
    assert data.startswith(b"HTTP/1.1 200") and b"partial" in data and not data.endswith(b"0\r\n\r\n")
    pid = int(open(os.path.join(tmpdir, "partial.pid")).read())
    assert wait_until(lambda: not group_members(pid), 3)


def test_client_disconnect_kills_the_script(tmpdir):
    srv = cgi_server(tmpdir)
    pidfile = os.path.join(tmpdir, "wait.pid")
    c = Conn(srv)
    c.send(req("GET", "/cgi-bin/wait"))
    assert wait_until(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0, 5)
    pid = int(open(pidfile).read())
    assert group_members(pid), "the script is not running"
    c.close()
    assert wait_until(lambda: not group_members(pid), 3), "the script survived its client"
    assert no_zombies(srv)
    assert wait_until(lambda: status_json(srv)["cgi"]["running"] == 0, 3)


def test_cgi_max_answers_503(tmpdir):
    srv = cgi_server(tmpdir, conf=["cgi_max 2"])
    conns = [Conn(srv) for _ in range(2)]
    for c in conns:
        c.send(req("GET", "/cgi-bin/sleepy"))
    time.sleep(0.15)
    r = get(srv, "/cgi-bin/hello")
    assert r.status == 503 and r.header("Retry-After") == "1"
    for c in conns:
        assert c.read_response().status == 200
        c.close()
    assert wait_until(lambda: get(srv, "/cgi-bin/hello").status == 200, 3)
    assert status_json(srv)["cgi"]["rejected"] >= 1


def test_100_scripts_running_never_hold_the_pool(tmpdir):
    """100 scripts running at once on a pool of 2 threads, each held (using no CPU) reading a
    request body its client has not sent yet: static requests are answered while all 100 are
    still running, so no pool thread waits for a script (proved by the order of events, not by
    a latency threshold)."""
    srv = cgi_server(tmpdir, conf=["cgi_max 128"], threads=2)
    write_script(os.path.join(srv.www, "cgi-bin"), "held",
                 SH + "read x\nprintf 'Content-Type: text/plain\\n\\nrested %s\\n' \"$x\"\n")
    n = 100
    results = [None] * n
    release = threading.Event()

    def client(i):
        try:
            with Conn(srv, timeout=T(120)) as c:
                c.send(req("POST", "/cgi-bin/held", {"Content-Length": "6"}))
                release.wait(T(120))
                c.send(b"%05d\n" % i)
                r = c.read_response()
                results[i] = (r.status, r.body)
        except Exception as e:  # noqa: BLE001
            results[i] = ("error", repr(e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    try:
        assert wait_until(lambda: status_json(srv)["cgi"]["running"] == n, T(60)), \
            status_json(srv)["cgi"]
        with Conn(srv) as c:
            for _ in range(50):
                c.send(req("GET", "/static.txt"))
                r = c.read_response()
                assert r.status == 200 and r.body == b"static file\n"
        # every script was still running while the static requests were answered
        assert status_json(srv)["cgi"]["running"] == n
        assert all(r is None for r in results), [r for r in results if r is not None][:3]
    finally:
        release.set()
        for t in threads:
            t.join(T(60))
    bad = [(i, r) for i, r in enumerate(results) if r != (200, b"rested %05d\n" % i)]
    assert not bad, "%d scripts failed: %r" % (len(bad), bad[:3])
    assert no_zombies(srv)
    assert wait_until(lambda: status_json(srv)["cgi"]["running"] == 0, 3)


def test_sigterm_lets_a_running_script_finish(tmpdir):
    srv = cgi_server(tmpdir)
    with Conn(srv) as c:
        c.send(req("GET", "/cgi-bin/sleepy"))
        time.sleep(0.1)
        srv.signal(signal.SIGTERM)
        r = c.read_response()
        assert r.status == 200 and r.body == b"rested\n"
    assert srv.wait(T(5)) == 0


# ---- with the rest of the server: the access log, Basic authentication, reloads ------------

def test_access_log_covers_deferred_exchanges(tmpdir):
    log = os.path.join(tmpdir, "access.log")
    srv = cgi_server(tmpdir, conf=["access_log %s" % log, "test_endpoints /_test/"])
    get(srv, "/cgi-bin/hello")
    get(srv, "/cgi-bin/status404")
    get(srv, "/_test/delay/50")
    get(srv, "/_test/bytes/1000")
    get(srv, "/_test/stream/3")
    raw(srv, req("POST", "/cgi-bin/echo-body", body=b"12345",
                 headers=[("User-Agent", "ua/1"), ("Referer", "http://r.example/")]))
    c = Conn(srv)                                  # a client that goes away: 499
    c.send(req("GET", "/cgi-bin/wait"))
    pidfile = os.path.join(tmpdir, "wait.pid")
    assert wait_until(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0, 5)
    c.close()

    def lines():
        with open(log) as f:
            return f.read().splitlines()
    assert wait_until(lambda: len(lines()) >= 7, 5), lines()
    text = "\n".join(lines())
    hello_len = len(get(srv, "/cgi-bin/hello").body)

    def has(request, status, size):
        pat = '"%s HTTP/1.1" %s %s ' % (request, status, size)
        return any(pat in l for l in lines())
    assert has("GET /cgi-bin/hello", 200, hello_len), text
    assert has("GET /cgi-bin/status404", 404, 9), text
    assert has("GET /_test/delay/50", 200, len(b'{"delay_ms":50}\n')), text
    assert has("GET /_test/bytes/1000", 200, 1000), text
    assert any('"GET /_test/stream/3 HTTP/1.1" 200 ' in l for l in lines()), text
    assert any('"POST /cgi-bin/echo-body HTTP/1.1" 200 5 "http://r.example/" "ua/1"' in l
               for l in lines()), text
    assert wait_until(lambda: any('"GET /cgi-bin/wait HTTP/1.1" 499 -' in l for l in lines()), 3), \
        "\n".join(lines())


def test_basic_authentication_reaches_the_script(tmpdir):
    import subprocess
    h = subprocess.run(["openssl", "passwd", "-6", "-salt", "lfhttpdtest", "s3cret"],
                       stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    users = os.path.join(tmpdir, "users")
    with open(users, "w") as f:
        f.write("ann:%s\n" % h)
    srv = cgi_server(tmpdir, conf=["location /cgi-bin/private/ {", "    handler cgi",
                              '    auth_basic "scripts"', "    auth_basic_user_file %s" % users,
                              "}"])
    os.makedirs(os.path.join(srv.www, "cgi-bin", "private"))
    write_script(os.path.join(srv.www, "cgi-bin", "private"), "env",
                 SH + "printf 'Content-Type: text/plain\\n\\n'\nenv\n")
    assert get(srv, "/cgi-bin/private/env").status == 401
    import base64
    auth = "Basic " + base64.b64encode(b"ann:s3cret").decode()
    e = env_of(get(srv, "/cgi-bin/private/env", headers=[("Authorization", auth)]))
    assert e["AUTH_TYPE"] == "Basic" and e["REMOTE_USER"] == "ann"
    assert "HTTP_AUTHORIZATION" not in e
    assert "AUTH_TYPE" not in env_of(get(srv, "/cgi-bin/env"))


def test_reload_while_scripts_run(tmpdir):
    """A job outlives the configuration generation it started under."""
    srv = cgi_server(tmpdir, conf=["cgi_timeout 20s"])
    conf = os.path.join(tmpdir, "lfhttpd.conf")
    with Conn(srv, timeout=30) as c1, Conn(srv, timeout=30) as c2:
        c1.send(req("GET", "/cgi-bin/slow"))
        c2.send(req("POST", "/cgi-bin/slowread", body=b"x" * 100000))
        time.sleep(0.3)
        with open(conf, "a") as f:
            f.write("cgi_timeout 10s\n")
        srv.signal(signal.SIGHUP)
        assert wait_until(lambda: srv.stderr.count("generation") >= 1 or
                          "reload" in srv.stderr.lower(), 5), srv.stderr
        time.sleep(0.2)
        # A request on a new connection runs under the new generation meanwhile.
        assert get(srv, "/cgi-bin/hello").status == 200
        srv.signal(signal.SIGHUP)                 # and yet another generation
        time.sleep(0.2)
        a = c1.read_response()
        b = c2.read_response()
        assert a.status == 200 and a.body.count(b"\n") == 10
        assert b.status == 200 and b.body.strip() == b"100000"
        # the old connections go on under the newest generation
        c1.send(req("GET", "/cgi-bin/hello"))
        assert c1.read_response().status == 200
    assert no_zombies(srv)
    assert wait_until(lambda: status_json(srv)["cgi"]["running"] == 0, 3)
