"""lfhttpd obtaining, serving and renewing its own certificates (ACME) against pebble, the test
ACME CA, on loopback: the `acme` directives, HTTP-01 answered by the plain listener, TLS-ALPN-01
by the TLS listener, the certificate swapped in without a restart, /readyz, the status page and
the metrics. pebble validates on its httpPort/tlsPort, which are lfhttpd's listeners here;
pebble-challtestsrv resolves every name to 127.0.0.1. The client core's faults (nonce
rejection, a malformed CA, a full disk...) are tests/integration/test_acme.py's."""

import json
import os
import re
import signal
import socket
import ssl
import subprocess

import pytest

from lib.acme import installed, self_signed, start_pebble
from lib.server import ConfServer, T, binary, free_port, wait_until
from lib.static import check_config

pytestmark = pytest.mark.skipif(not installed(), reason="pebble is not installed (make deps)")

NAME = "www.acme.test"


def acme_conf(tmpdir, ca, names=(NAME,), challenge="http-01", directory=None, extra="",
              site=""):
    """A configuration that has lfhttpd manage `names` with the CA `ca`; `site`: more lines of
    their server block."""
    root = os.path.join(str(tmpdir), "site")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("hello over tls\n")
    return ("root %s\nacme_ca %s\nacme_ca_bundle %s\nacme_email ops@example.org\n"
            "acme_agree_terms on\nacme_state_dir %s\nacme_challenge %s\n%s"
            "server %s {\n    acme on\n%s}\n"
            % (root, directory or ca.directory, ca.tls_cert, os.path.join(str(tmpdir), "state"),
               challenge, extra, " ".join(names), site))


def start(tmpdir, conf, http_port, tls_port):
    return ConfServer(str(tmpdir), conf, listen=("127.0.0.1:%d" % http_port,),
                      args=["--tls-listen", "127.0.0.1:%d" % tls_port], expect_listeners=2)


def get(port, path, host=NAME):
    """(status, body) of a plain GET."""
    with socket.create_connection(("127.0.0.1", port), timeout=T(10)) as s:
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                   % (path, host)).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body.decode(errors="replace")


def ready(port):
    return get(port, "/readyz", host="localhost")[0] == 200


def tls_ctx(root_pem):
    ctx = ssl.create_default_context(cadata=root_pem)
    ctx.check_hostname = True
    return ctx


class TLSConn:
    """A keep-alive HTTPS connection that verifies the server against pebble's root."""

    def __init__(self, port, root_pem, name=NAME):
        raw = socket.create_connection(("127.0.0.1", port), timeout=T(10))
        self.s = tls_ctx(root_pem).wrap_socket(raw, server_hostname=name)
        self.name = name
        self.buf = b""

    def cert(self):
        return self.s.getpeercert(binary_form=True)

    def get(self, path="/"):
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, self.name)).encode())
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            assert chunk, "connection closed"
            self.buf += chunk
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        n = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        while len(rest) < n:
            chunk = self.s.recv(65536)
            assert chunk, "connection closed"
            rest += chunk
        self.buf = rest[n:]
        return int(head.split(b" ")[1]), rest[:n].decode()

    def close(self):
        self.s.close()


def metric(port, family, name=NAME):
    status, body = get(port, "/metrics", host="localhost")
    assert status == 200
    m = re.search(r'^%s\{name="%s"\} (\d+)$' % (family, re.escape(name)), body, re.M)
    return int(m.group(1)) if m else None


def acme_status(port):
    status, body = get(port, "/server-status?json", host="localhost")
    assert status == 200
    return {e["name"]: e for e in json.loads(body)["acme"]}


def test_acme_http01_obtain_serve_renew_restart(tmpdir):
    """HTTP-01 answered by lfhttpd's own plain listener; the issued chain served over TLS and
    verified against pebble's root; a forced renewal (SIGUSR2) swaps the certificate while an
    open keep-alive connection goes on; a restart reuses the stored certificate, no order.
    The site's own rule for /.well-known/ never sees the CA's request: the challenge comes
    first."""
    ca = start_pebble(str(tmpdir))
    try:
        conf = acme_conf(tmpdir, ca, site="    redirect /.well-known/* https://away.invalid/ 302\n")
        s = start(tmpdir, conf, ca.http_port, ca.tls_port)
        with s:
            wait_until(lambda: ready(s.port), timeout=60, what="/readyz 200 (a certificate)")
            root = ca.root()
            c = TLSConn(ca.tls_port, root)
            assert c.get("/") == (200, "hello over tls\n")
            first = c.cert()
            assert get(s.port, "/.well-known/other")[0] == 302  # the rule that ACME passes by
            assert metric(s.port, "lfhttpd_acme_orders_total") == 1
            st = acme_status(s.port)[NAME]
            assert st["last_ok"] and st["not_after"] > 0 and st["orders"] == 1
            # a forced renewal: a new certificate, the open connection keeps working
            s.signal(signal.SIGUSR2)
            wait_until(lambda: metric(s.port, "lfhttpd_acme_orders_total") == 2, timeout=60,
                       what="a second order")
            wait_until(lambda: TLSConn(ca.tls_port, root).cert() != first, timeout=10,
                       what="the renewed certificate served")
            assert c.get("/") == (200, "hello over tls\n")
            assert c.cert() == first  # that connection keeps the handshake it had
            c.close()
            second = TLSConn(ca.tls_port, root).cert()
        # a restart: the stored certificate, without a new order
        s = start(tmpdir, conf, ca.http_port, ca.tls_port)
        with s:
            wait_until(lambda: ready(s.port), timeout=30, what="/readyz 200 after a restart")
            assert TLSConn(ca.tls_port, root).cert() == second
            assert metric(s.port, "lfhttpd_acme_orders_total") == 0
            assert acme_status(s.port)[NAME]["orders"] == 0
            # a reload that changes nothing of ACME keeps its thread (and its counters)
            s.signal(signal.SIGHUP)
            wait_until(lambda: "SIGHUP: configuration reloaded" in s.stderr, timeout=10,
                       what="the reload")
            assert "acme: stopped" not in s.stderr
            # one that changes its settings restarts it: the stored certificate again
            with open(s.conf_path, "w") as f:
                f.write(conf.replace("ops@example.org", "web@example.org"))
            s.signal(signal.SIGHUP)
            wait_until(lambda: "SIGHUP: acme: stopped (its settings changed)" in s.stderr,
                       timeout=10, what="ACME restarted by the reload")
            wait_until(lambda: ready(s.port), timeout=30, what="/readyz 200 after the reload")
            assert TLSConn(ca.tls_port, root).cert() == second
            assert metric(s.port, "lfhttpd_acme_orders_total") == 0
    finally:
        ca.stop()


def test_acme_waiting_for_a_certificate(tmpdir):
    """No certificate yet (the CA cannot be reached): TLS handshakes for the name fail cleanly,
    the plain listener serves, /readyz says why, the failure is counted and shown; the
    challenge path is the ACME client's before tls_redirect_http, and 404 for an unknown
    token."""
    class NoCA:
        directory = "https://127.0.0.1:%d/dir" % free_port()
        tls_cert, tls_key = self_signed(str(tmpdir))

    http_port, tls_port, admin = free_port(), free_port(), free_port()
    conf = acme_conf(tmpdir, NoCA, extra="tls_redirect_http on\nadmin_listen 127.0.0.1:%d\n"
                     % admin)
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # systemd's end
    notify.bind(os.path.join(str(tmpdir), "notify"))
    notify.settimeout(T(10))
    s = ConfServer(str(tmpdir), conf, listen=("127.0.0.1:%d" % http_port,),
                   args=["--tls-listen", "127.0.0.1:%d" % tls_port], expect_listeners=3,
                   env=dict(os.environ, NOTIFY_SOCKET=os.path.join(str(tmpdir), "notify")))
    with s, notify:
        assert get(admin, "/readyz", host="localhost") == (
            503, "acme: waiting for a certificate for %s\n" % NAME)
        with pytest.raises(ssl.SSLError, match="UNRECOGNIZED_NAME"):
            TLSConn(tls_port, open(NoCA.tls_cert).read())
        assert get(http_port, "/")[0] == 301  # tls_redirect_http
        assert get(http_port, "/.well-known/acme-challenge/unknownToken_-1")[0] == 404
        assert get(http_port, "/.well-known/acme-challenge/not%20a%20token")[0] == 404
        wait_until(lambda: metric(admin, "lfhttpd_acme_failures_total") == 1, timeout=30,
                   what="the failed attempt counted")
        st = acme_status(admin)[NAME]
        assert not st["last_ok"] and st["last_error"] and st["not_after"] == 0
        assert st["next_attempt"] > st["last_attempt"]  # backing off, not a busy loop
        assert metric(admin, "lfhttpd_acme_last_attempt_success") == 0
        assert metric(admin, "lfhttpd_acme_certificate_not_after_seconds") == 0
        assert "acme: %s: " % NAME in s.stderr and "next attempt in" in s.stderr
        text = get(admin, "/metrics", host="localhost")[1]
        p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(30))
        assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), \
            (p.stdout, p.stderr)
        assert "Automatic certificates" in get(admin, "/server-status", host="localhost")[1]
        assert s.alive()
        assert get(admin, "/readyz", host="localhost")[0] == 503
        # systemd's STATUS= line says so (the timer tick sends it a few times a second)
        failing = "; acme: renewal failing for %s (" % NAME
        wait_until(lambda: failing in notify.recv(4096).decode(), timeout=10,
                   what="STATUS= naming the failing renewal")
        # a reload that turns ACME off: ready again, nothing of ACME shown any more
        with open(s.conf_path, "w") as f:
            f.write(conf.replace("    acme on\n", "") + "tls_certificate %s %s\n"
                    % (NoCA.tls_cert, NoCA.tls_key))
        s.signal(signal.SIGHUP)
        wait_until(lambda: "SIGHUP: configuration reloaded" in s.stderr, timeout=10,
                   what="the reload")
        assert get(admin, "/readyz", host="localhost") == (200, "ready\n")
        assert acme_status(admin) == {}
        assert "lfhttpd_acme_" not in get(admin, "/metrics", host="localhost")[1]


def test_acme_tls_alpn01(tmpdir):
    """TLS-ALPN-01 answered by lfhttpd's TLS listener (pebble's tlsPort); the issued chain is
    served and verifies against pebble's root; acme-tls/1 is never chosen outside a
    validation."""
    ca = start_pebble(str(tmpdir))
    try:
        s = start(tmpdir, acme_conf(tmpdir, ca, challenge="tls-alpn-01"), free_port(),
                  ca.tls_port)
        with s:
            wait_until(lambda: ready(s.port), timeout=60, what="/readyz 200 (a certificate)")
            c = TLSConn(ca.tls_port, ca.root())
            assert c.get("/") == (200, "hello over tls\n")
            c.close()
            ctx = tls_ctx(ca.root())
            ctx.set_alpn_protocols(["acme-tls/1", "http/1.1"])
            raw = socket.create_connection(("127.0.0.1", ca.tls_port), timeout=T(10))
            with ctx.wrap_socket(raw, server_hostname=NAME) as t:
                assert t.selected_alpn_protocol() == "http/1.1"
            assert "tls-alpn-01 challenge" in s.stderr
    finally:
        ca.stop()


def test_acme_certificate_file_wins(tmpdir):
    """A name that tls_certificate claims keeps that certificate; ACME manages the others."""
    ca = start_pebble(str(tmpdir))
    try:
        d = os.path.join(str(tmpdir), "own")
        os.makedirs(d)
        cert, key = os.path.join(d, "own.pem"), os.path.join(d, "own.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=" + NAME,
                        "-addext", "subjectAltName=DNS:" + NAME],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        other = "other.acme.test"
        conf = acme_conf(tmpdir, ca, names=(NAME, other),
                         extra="tls_certificate %s %s %s\n" % (cert, key, NAME))
        s = start(tmpdir, conf, ca.http_port, ca.tls_port)
        with s:
            wait_until(lambda: ready(s.port), timeout=60, what="/readyz 200 (a certificate)")
            assert set(acme_status(s.port)) == {other}
            assert "%s: served by its configured certificate" % NAME in s.stderr
            TLSConn(ca.tls_port, ca.root(), name=other).close()  # ACME's, verified
            own = TLSConn(ca.tls_port, open(cert).read())  # the file's, verified
            assert own.get("/")[0] == 200
            own.close()
    finally:
        ca.stop()


BASE = ("listen 127.0.0.1:0\ntls_listen 127.0.0.1:0\nacme_email ops@example.org\n"
        "acme_agree_terms on\nacme_state_dir %s\n")


@pytest.mark.parametrize("case,body,line,reason", [
    ("no email", "server www.acme.test {\n acme on\n}\n", 6, "acme on needs acme_email"),
    ("no terms", "server www.acme.test {\n acme on\n}\n", 6, "acme_agree_terms on"),
    ("wildcard", "server *.acme.test {\n acme on\n}\n", 7, "DNS-01"),
    ("IP address", "server www.acme.test 192.0.2.7 {\n acme on\n}\n", 7,
     "IP addresses"),
    ("state dir", "acme_state_dir %(file)s/acme\nserver www.acme.test {\n acme on\n}\n", 6,
     "acme state directory"),
    ("no TLS listener", "server www.acme.test {\n acme on\n}\n", 6, "needs a TLS listener"),
    ("top level", "acme on\n", 6, "'acme' "),
])
def test_acme_config_errors(tmpdir, case, body, line, reason):
    """Each misconfiguration is refused at load with FILE:LINE: reason."""
    state = os.path.join(str(tmpdir), "state")
    afile = os.path.join(str(tmpdir), "a-file")
    open(afile, "w").close()
    conf = BASE % state + body % {"file": afile}
    if case == "no email":
        conf = conf.replace("acme_email ops@example.org\n", "")
    elif case == "no terms":
        conf = conf.replace("acme_agree_terms on\n", "")
    elif case == "no TLS listener":
        conf = conf.replace("tls_listen 127.0.0.1:0\n", "")
    rc, err, path = check_config(str(tmpdir), conf)
    assert rc == 2, err
    assert "%s:%d: " % (path, line) in err and reason in err, err


def _dns_blackhole():
    """A UDP socket on 127.0.0.77:53 that takes every DNS query and never answers (binding
    port 53 needs root: CI's case; skipped otherwise)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.77", 53))
    except OSError as e:
        s.close()
        pytest.skip("cannot bind 127.0.0.77:53 for a silent DNS server: %s" % e)
    return s


def test_a_silent_dns_server_holds_neither_a_reload_nor_the_stop(tmpdir):
    """The CA's name is looked up while a DNS server never answers (the resolver would wait
    30 s x 5 attempts). A reload that restarts ACME (its settings changed) and the stop both
    go on without waiting for the lookup: it runs on a thread of its own, given up by the
    ACME thread at its deadline or stop. The server runs in a mount namespace of its own whose
    /etc/resolv.conf names the silent server."""
    dns = _dns_blackhole()
    resolv = os.path.join(str(tmpdir), "resolv.conf")
    with open(resolv, "w") as f:
        f.write("nameserver 127.0.0.77\noptions timeout:30 attempts:5\n")
    wrapper = os.path.join(str(tmpdir), "in-namespace")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec unshare --user --map-root-user --mount --propagation private "
                "sh -c 'mount --bind %s /etc/resolv.conf && exec \"$0\" \"$@\"' %s \"$@\"\n"
                % (resolv, binary()))
    os.chmod(wrapper, 0o755)

    class Silent:
        directory = "https://ca.silent.test:%d/dir" % free_port()
        tls_cert, tls_key = self_signed(str(tmpdir))

    http_port, tls_port = free_port(), free_port()
    conf = acme_conf(tmpdir, Silent)
    s = ConfServer(str(tmpdir), conf, listen=("127.0.0.1:%d" % http_port,),
                   args=["--tls-listen", "127.0.0.1:%d" % tls_port], expect_listeners=2,
                   binary_path=wrapper)
    with s, dns:
        dns.settimeout(T(20))
        query, _ = dns.recvfrom(512)            # the ACME thread is inside the lookup now
        assert b"\x02ca\x06silent\x04test\x00" in query, query
        with open(s.conf_path, "w") as f:
            f.write(conf.replace("ops@example.org", "web@example.org"))
        s.signal(signal.SIGHUP)
        wait_until(lambda: "SIGHUP: configuration reloaded" in s.stderr, timeout=20,
                   what="the reload, which restarts ACME, done while the lookup hangs")
        assert "acme: stopped (its settings changed)" in s.stderr, s.stderr[-3000:]
        assert get(http_port, "/")[0] == 200
    assert s.returncode == 0, s.stderr[-3000:]
