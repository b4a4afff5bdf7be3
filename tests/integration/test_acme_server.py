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
from lib.server import ConfServer, T, free_port, wait_until
from lib.static import check_config

pytestmark = pytest.mark.skipif(not installed(), reason="pebble is not installed (make deps)")

NAME = "www.acme.test"


def acme_conf(tmpdir, ca, names=(NAME,), challenge="http-01", directory=None, extra=""):
    """A configuration that has lfhttpd manage `names` with the CA `ca`."""
    root = os.path.join(str(tmpdir), "site")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("hello over tls\n")
    return ("root %s\nacme_ca %s\nacme_ca_bundle %s\nacme_email ops@example.org\n"
            "acme_agree_terms on\nacme_state_dir %s\nacme_challenge %s\n%s"
            "server %s {\n    acme on\n}\n"
            % (root, directory or ca.directory, ca.tls_cert, os.path.join(str(tmpdir), "state"),
               challenge, extra, " ".join(names)))


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
    open keep-alive connection goes on; a restart reuses the stored certificate, no order."""
    ca = start_pebble(str(tmpdir))
    try:
        conf = acme_conf(tmpdir, ca)
        s = start(tmpdir, conf, ca.http_port, ca.tls_port)
        with s:
            wait_until(lambda: ready(s.port), timeout=60, what="/readyz 200 (a certificate)")
            root = ca.root()
            c = TLSConn(ca.tls_port, root)
            assert c.get("/") == (200, "hello over tls\n")
            first = c.cert()
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
    finally:
        ca.stop()
