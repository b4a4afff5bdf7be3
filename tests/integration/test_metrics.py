"""Metrics a cluster can scrape: labelled request counters, the latency histogram,
TLS handshakes, checked by promtool; admin_listen; bounded labels; counters across reloads.

Every request whose count a test checks is sent with `Connection: close` and read until the
server closes: the server counts an exchange before it closes the connection, so a scrape
that follows sees it (a keep-alive response can reach the client before its count)."""

import os
import re
import signal
import ssl
import subprocess

import pytest

from lib.server import ConfServer, Conn, T, get, req, wait_until, write_config
from lib.procs import write_script
from lib.tls import client_ctx, tls_server
from lib.ops import run_lfhttpd

SAMPLE = re.compile(r'^([a-z_][a-z0-9_]*)(\{[^}]*\})? (\S+)$')
LABEL = re.compile(r'([a-z_]+)="([^"]*)"')


def parse(text):
    """{(name, frozenset(labels)): float} of every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        labels = frozenset(LABEL.findall(m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def requests_series(samples):
    """{(code, method, vhost): count} of lfhttpd_http_requests_total."""
    out = {}
    for (name, labels), v in samples.items():
        if name == "lfhttpd_http_requests_total":
            d = dict(labels)
            out[(d["code"], d["method"], d["vhost"])] = int(v)
    return out


def fetch(addr, path, method="GET", host="localhost", body=b""):
    """One request that closes the connection; the response, once the server has closed."""
    with Conn(addr) as c:
        c.send(req(method, path, [("Host", host), ("Connection", "close")], body=body))
        r = c.read_response(method)
        c.read_all()
    return r


def scrape(addr):
    r = fetch(addr, "/metrics")
    assert r.status == 200, r
    assert r.header("Content-Type").startswith("text/plain; version=0.0.4"), r
    return r.body.decode()


def promtool_ok(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(30))
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), \
        (p.returncode, p.stdout, p.stderr)


def done(addr, method, path, host="localhost", body=b""):
    """The status of fetch()."""
    return fetch(addr, path, method, host, body).status


def site(tmpdir, cgi=False):
    root = os.path.join(tmpdir, "root")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<!doctype html><title>t</title>\n")
    if cgi:
        d = os.path.join(root, "cgi-bin")
        os.makedirs(d, exist_ok=True)
        # Sleeps before it answers: the exchange is deferred and ends later than it starts.
        write_script(d, "slow", "#!/bin/sh\nsleep 0.2\nprintf 'Content-Type: text/plain\\n\\nok\\n'\n")
    return root


def start(tmpdir, lines, listeners=2):
    root = site(tmpdir, cgi=True)
    srv = ConfServer(tmpdir, ["root %s" % root, "admin_listen 127.0.0.1:0"] + list(lines),
                     root=root, expect_listeners=listeners)
    srv.conf = srv.conf_path
    # The file's admin listener is kept in front of the command line's --listen.
    srv.admin = srv.addr(0)
    srv.public = srv.addr(1)
    return srv


def test_exact_counts_histogram_and_promtool(tmpdir):
    srv = start(tmpdir, ["server a.test {", "}", "server b.test {",
                         "    location /cgi-bin/ {", "        handler cgi", "    }", "}"])
    assert done(srv.admin, "GET", "/index.html") == 404  # tells the admin port from the other
    assert done(srv.public, "GET", "/index.html") == 200
    first = requests_series(parse(scrape(srv.admin)))
    base = dict(first)
    for _ in range(3):
        assert done(srv.public, "GET", "/", "a.test") == 200
    for _ in range(2):
        assert done(srv.public, "HEAD", "/nope", "unknown.example") == 404
    assert done(srv.public, "POST", "/index.html", body=b"x") == 405
    assert done(srv.public, "FOO", "/") == 501
    assert done(srv.public, "GET", "/cgi-bin/slow", "b.test") == 200
    text = scrape(srv.admin)
    promtool_ok(text)
    samples = parse(text)
    got = requests_series(samples)
    want = dict(base)
    for k, n in {("200", "GET", "a.test"): 3, ("404", "HEAD", "default"): 2,
                 ("405", "POST", "default"): 1, ("501", "OTHER", "default"): 1,
                 ("200", "GET", "b.test"): 1, ("200", "GET", "admin"): 1}.items():
        want[k] = want.get(k, 0) + n
    assert got == want, (got, want)
    # The histogram: cumulative buckets ending in +Inf, which is _count, which is every
    # exchange counted; its sum covers at least the script's sleep.
    h = "lfhttpd_http_request_duration_seconds"
    buckets = sorted((float(dict(l)["le"]), v) for (n, l), v in samples.items()
                     if n == h + "_bucket")
    assert buckets[-1][0] == float("inf") and len(buckets) == 15, buckets
    counts = [v for _, v in buckets]
    assert counts == sorted(counts), buckets
    assert buckets[-1][1] == samples[(h + "_count", frozenset())] == sum(got.values())
    assert samples[(h + "_sum", frozenset())] >= 0.2, text
    # The script's exchange took at least its sleep: not in the buckets below 0.2 s.
    below = dict(buckets)[0.1]
    assert below <= sum(got.values()) - 1
    # Body bytes by site: a.test's are three copies of index.html.
    size = os.path.getsize(os.path.join(tmpdir, "root", "index.html"))
    bytes_a = samples[("lfhttpd_http_response_bytes_total", frozenset({("vhost", "a.test")}))]
    assert bytes_a == 3 * size, bytes_a
    srv.stop()
    assert srv.returncode == 0


def _admin_server(tmpdir):
    h = subprocess.run(["openssl", "passwd", "-6", "-salt", "lfhttpdtest", "s3cret"],
                       stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    users = os.path.join(tmpdir, "users")
    with open(users, "w") as f:
        f.write("ann:%s\n" % h)
    return start(tmpdir, ["status_allow 10.0.0.0/8", 'auth_basic "closed"',
                          "auth_basic_user_file %s" % users, "limit_req_per_ip 1r/m burst 1"])


@pytest.fixture(scope="module")
def admin_srv(shared_server):
    """One server with an admin port, a closed site and a strict request limit."""
    return shared_server(_admin_server)


def test_admin_listen_public_port_keeps_the_sites_rules(admin_srv):
    # The public port: the site's authentication, then its limit.
    assert get(admin_srv.public, "/metrics").status == 401
    assert get(admin_srv.public, "/index.html").status == 429
    assert get(admin_srv.admin, "/metrics", method="POST").status == 405


@pytest.mark.parametrize("path,status", [
    ("/healthz", 200), ("/livez", 200), ("/readyz", 200), ("/metrics", 200),
    ("/server-status", 200), ("/server-status?json", 200), ("/index.html", 404), ("/", 404),
    ("/healthzz", 404)])
def test_admin_listen_serves_only_the_builtins(admin_srv, path, status):
    # The admin port: the built-ins for anyone who reaches it, nothing of the sites.
    for i in range(3):   # more than limit_req allows: the site's limits do not apply
        r = get(admin_srv.admin, path)
        assert r.status == status, (path, i, r)


def test_admin_listen_server_exits_cleanly(tmpdir):
    srv = _admin_server(tmpdir)
    assert get(srv.admin, "/healthz").status == 200
    srv.stop()
    assert srv.returncode == 0


def test_admin_listen_alone_keeps_the_default_listener_and_listen_keeps_admin(tmpdir):
    # --listen replaces the file's plain listeners, never its admin_listen.
    srv = start(tmpdir, ["listen 127.0.0.1:1"])
    assert get(srv.public, "/index.html").status == 200
    assert get(srv.admin, "/readyz").status == 200
    srv.stop()


def test_vhost_labels_stay_bounded(tmpdir):
    names = ["n%d.test" % i for i in range(66)]
    lines = []
    for n in names:
        lines += ["server %s {" % n, "}"]
    srv = start(tmpdir, lines + ["status_allow 10.0.0.0/8"])
    # The public port still applies status_allow; the admin port does not.
    assert get(srv.public, "/metrics").status == 403
    # 70 Host names no server block has: all are `default`, not 70 series.
    for i in range(70):
        assert done(srv.public, "GET", "/", "h%d.example" % i) == 200
    # 66 configured names: the first 64 get a label of their own, the rest `other`.
    assert done(srv.public, "GET", "/", names[0]) == 200
    assert done(srv.public, "GET", "/", names[64]) == 200
    assert done(srv.public, "GET", "/", names[65]) == 200
    text = scrape(srv.admin)
    promtool_ok(text)
    got = requests_series(parse(text))
    assert got.get(("200", "GET", "default")) == 70, got
    assert got.get(("200", "GET", names[0])) == 1, got
    assert got.get(("200", "GET", "other")) == 2, got
    vhosts = {v for _, _, v in got}
    assert vhosts <= {"default", "other", "admin", names[0]}, vhosts
    srv.stop()


def test_reload_keeps_counters(tmpdir):
    srv = start(tmpdir, ["server a.test {", "}"])
    for _ in range(2):
        assert done(srv.public, "GET", "/", "a.test") == 200
    root = os.path.join(tmpdir, "root")
    write_config(os.path.dirname(srv.conf), ["root %s" % root, "admin_listen 127.0.0.1:0",
                          "server z.test {", "}", "server a.test {", "}"], os.path.basename(srv.conf))
    srv.signal(signal.SIGHUP)
    wait_until(lambda: "generation 2" in srv.stderr, 10, what="generation 2 after SIGHUP")
    admin = srv.admin   # the same address: the reload keeps its socket
    assert get(admin, "/index.html").status == 404
    assert done(srv.public, "GET", "/", "a.test") == 200
    assert done(srv.public, "GET", "/", "z.test") == 200
    got = requests_series(parse(scrape(admin)))
    assert got[("200", "GET", "a.test")] == 3, got     # counted on, never reset
    assert got[("200", "GET", "z.test")] == 1, got
    srv.stop()
    assert srv.returncode == 0


def test_tls_handshakes_and_resumptions(tmpdir):
    srv = tls_server(tmpdir, plain=True, extra=["tls_session_cache 64"])
    ctx = client_ctx(maxv=ssl.TLSVersion.TLSv1_2)
    sessions = []
    for i in range(2):
        with Conn(srv.https) as c:
            c.sock = ctx.wrap_socket(c.sock, server_hostname="a.test",
                                     session=sessions[-1] if sessions else None)
            c.send(req("GET", "/16k1.bin", [("Host", "a.test")]))
            assert c.read_response().status == 200
            assert c.sock.session_reused == (i == 1)
            sessions.append(c.sock.session)
    text = scrape(srv.http)
    promtool_ok(text)
    s = parse(text)
    assert s[("lfhttpd_tls_handshakes_total", frozenset())] == 2, text
    assert s[("lfhttpd_tls_resumptions_total", frozenset())] == 1, text
    srv.stop()


def test_admin_listen_errors_name_file_and_line(tmpdir):
    root = site(tmpdir)
    for lines, line, reason in (
            (["admin_listen nowhere"], 2, "invalid listen address 'nowhere'"),
            (["admin_listen 127.0.0.1:9090 proxy_protocol"], 2, "admin_listen"),
            (["server a.test {", "    admin_listen 127.0.0.1:9090", "}"], 3, "admin_listen")):
        conf = write_config(tmpdir, ["root %s" % root] + lines, "bad.conf")
        rc, _, err = run_lfhttpd(["-t", "--config", conf])
        assert rc == 2, (lines, rc, err)
        first = err.strip().splitlines()[0]
        assert first.startswith("%s:%d: " % (conf, line)) and reason in first, (lines, err)
