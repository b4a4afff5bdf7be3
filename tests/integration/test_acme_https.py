"""The ACME client's HTTPS (server/acme/https.c) against a small fake CA on loopback, driven by
tests/acme/acme_drive: a reply framed by chunks or by the connection's close is read whole; a
truncated one, a server whose certificate the bundle does not vouch for, and one whose
certificate is for another name each fail the attempt with the reason (no certificate is
taken from them). The happy path against pebble is test_acme.py's and test_acme_server.py's."""

import os
import socket
import ssl
import subprocess
import threading

import pytest

from lib.acme import driver, self_signed
from lib.server import T, sanitizer_report

NAMES = ["a.acme.test"]
DIRECTORY = b"[1, 2]"  # read whole, it is refused as "not a JSON object"


class FakeCA:
    """Answers every request on an HTTPS port with `reply` (bytes), then closes."""

    def __init__(self, d, reply, cert=None):
        self.cert, key = cert or self_signed(d)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(T(30))
        self.ctx, self.reply = ctx, reply
        self.url = "https://127.0.0.1:%d/dir" % self.sock.getsockname()[1]
        self.requests = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        for _ in range(8):  # bounded: the driver makes one attempt
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.ctx.wrap_socket(raw, server_side=True) as c:
                    c.settimeout(T(10))
                    head = b""
                    while b"\r\n\r\n" not in head and len(head) < 65536:
                        chunk = c.recv(4096)
                        if not chunk:
                            break
                        head += chunk
                    self.requests.append(head)
                    c.sendall(self.reply)
            except (OSError, ssl.SSLError):
                pass  # the client refused the handshake

    def stop(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        except OSError:
            pass
        self.sock.close()
        self.thread.join(T(10))


def run(d, ca, bundle=None):
    state = os.path.join(d, "state")
    p = subprocess.run([driver(), "--directory", ca.url, "--ca-bundle", bundle or ca.cert,
                        "--state", state, "--http-port", "0", "--tls-port", "0",
                        "--timeout", "2"] + NAMES,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(60))
    out, err = p.stdout.decode(), p.stderr.decode(errors="replace")
    assert sanitizer_report(err) is None, sanitizer_report(err)
    assert p.returncode == 1 and "installed " not in out and "last_ok=0" in out, (out, err)
    return err


@pytest.mark.parametrize("framing,reply", [
    ("chunked", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n3\r\n[1,\r\n3\r\n 2]\r\n0\r\n\r\n"),
    ("close", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
              b"\r\n" + DIRECTORY),
    ("length", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 6\r\n"
               b"\r\n" + DIRECTORY),
])
def test_acme_https_reply_framing(tmpdir, framing, reply):
    """Each framing gives the body whole: the directory is judged on its content."""
    ca = FakeCA(str(tmpdir), reply)
    try:
        err = run(str(tmpdir), ca)
    finally:
        ca.stop()
    assert "not a JSON object" in err, err
    head = ca.requests[0].decode()
    assert head.startswith("GET /dir HTTP/1.1\r\n"), head
    assert "\r\nHost: 127.0.0.1:%s\r\n" % ca.url.split(":")[2].split("/")[0] in head, head


def test_acme_https_truncated_reply(tmpdir):
    ca = FakeCA(str(tmpdir), b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n[1, 2]")
    try:
        err = run(str(tmpdir), ca)
    finally:
        ca.stop()
    assert "the reply ended early" in err, err


def test_acme_https_untrusted_server(tmpdir):
    """A server certificate that the bundle does not vouch for: refused in the handshake."""
    other = os.path.join(str(tmpdir), "other")
    os.makedirs(other)
    ca = FakeCA(str(tmpdir), b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n[1, 2]")
    try:
        err = run(str(tmpdir), ca, bundle=self_signed(other)[0])
    finally:
        ca.stop()
    assert "certificate verify failed" in err and not ca.requests, err


def test_acme_https_certificate_for_another_name(tmpdir):
    """A trusted certificate, but not for the address the URL names: refused."""
    d = str(tmpdir)
    cert, key = os.path.join(d, "host.pem"), os.path.join(d, "host.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=elsewhere",
                    "-addext", "subjectAltName=DNS:elsewhere.test"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ca = FakeCA(d, b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n[1, 2]", cert=(cert, key))
    try:
        err = run(d, ca)
    finally:
        ca.stop()
    assert "certificate verify failed" in err and "mismatch" in err and not ca.requests, err
