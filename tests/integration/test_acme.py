"""The ACME client core (server/acme/) against pebble, the test ACME CA, on loopback.

The driver (tests/acme/acme_drive.c) plays the server: it answers HTTP-01 on pebble's
httpPort from acme_http01_lookup() and TLS-ALPN-01 on its tlsPort with the published
certificate, and reports each install. pebble-challtestsrv resolves every name to 127.0.0.1.
Certificates are checked with the openssl command against pebble's root (/roots/0).
"""

import base64
import fcntl
import http.server
import json
import os
import ssl
import stat
import subprocess
import threading
import time

import pytest

from lib.acme import drive, driver, self_signed, start_pebble
from lib.server import T, sanitizer_report

NAMES = ["a.acme.test", "b.acme.test"]


def _ok(rc, out, err, orders, installs=1):
    rep = sanitizer_report(err)
    assert rep is None, "sanitizer report:\n" + rep
    assert rc == 0, "driver exit %d\nstdout:\n%s\nstderr:\n%s" % (rc, out, err[-4000:])
    assert out.count("installed ") == installs, out
    assert "orders=%d " % orders in out, (out, err[-4000:])
    assert "last_ok=1" in out, out


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _verify(ca, tmpdir, chain, key, names):
    """The chain verifies up to pebble's root, covers the names, and matches the key."""
    root = os.path.join(tmpdir, "root.pem")
    with open(root, "w") as f:
        f.write(ca.root())
    p = subprocess.run(["openssl", "verify", "-CAfile", root, "-untrusted", chain, chain],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert p.returncode == 0 and b": OK" in p.stdout, p.stdout
    text = subprocess.run(["openssl", "x509", "-in", chain, "-noout", "-ext", "subjectAltName"],
                          stdout=subprocess.PIPE, check=True).stdout.decode()
    for n in names:
        assert "DNS:" + n in text, text
    pub = [subprocess.run(["openssl"] + a, stdout=subprocess.PIPE, check=True).stdout for a in
           (["x509", "-in", chain, "-noout", "-pubkey"], ["pkey", "-in", key, "-pubout"])]
    assert pub[0] == pub[1], "the certificate is not for the stored key"


def test_acme_http01_issue_reuse_renew(tmpdir):
    """HTTP-01 for two names; the files are private; a second run reuses the stored
    certificate without an order; a forced renewal orders a new one with the same account."""
    ca = start_pebble(tmpdir)
    try:
        state = os.path.join(tmpdir, "state")
        crt, key = os.path.join(state, "a.acme.test.crt"), os.path.join(state, "a.acme.test.key")
        rc, out, err = drive(ca, state, NAMES)
        _ok(rc, out, err, orders=1)
        assert "alpn_served=0 " in out and "http01_served=0 " not in out, out
        _verify(ca, tmpdir, crt, key, NAMES)
        assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
        for f in ("account.key", "a.acme.test.key"):
            assert stat.S_IMODE(os.stat(os.path.join(state, f)).st_mode) == 0o600, f
        first, account = _read(crt), _read(os.path.join(state, "account.key"))

        _ok(*drive(ca, state, NAMES), orders=0)
        assert _read(crt) == first, "a reused certificate was rewritten"

        _ok(*drive(ca, state, NAMES, extra=["--renew"]), orders=1, installs=2)
        assert _read(crt) != first, "renewal kept the old certificate"
        assert _read(os.path.join(state, "account.key")) == account
        _verify(ca, tmpdir, crt, key, NAMES)
        assert not [f for f in os.listdir(state) if f.endswith(".tmp")], os.listdir(state)
    finally:
        ca.stop()


def test_acme_tls_alpn01(tmpdir):
    ca = start_pebble(tmpdir)
    try:
        state = os.path.join(tmpdir, "state")
        rc, out, err = drive(ca, state, ["alpn.acme.test"], challenge="tls-alpn-01")
        _ok(rc, out, err, orders=1)
        _verify(ca, tmpdir, os.path.join(state, "alpn.acme.test.crt"),
                os.path.join(state, "alpn.acme.test.key"), ["alpn.acme.test"])
        assert "http01_served=0 " in out and "alpn_served=0 " not in out, out
    finally:
        ca.stop()


def test_acme_survives_rejected_nonces(tmpdir):
    """PEBBLE_WFE_NONCEREJECT: pebble refuses 40% of good nonces with badNonce; each refused
    request is sent again with the nonce the refusal brought."""
    ca = start_pebble(tmpdir, nonce_reject=40)
    try:
        state = os.path.join(tmpdir, "state")
        rc, out, err = drive(ca, state, NAMES, extra=["--renew"])
        _ok(rc, out, err, orders=2, installs=2)
        assert "failures=0" in out, out
        assert "Configured to reject 40% of good nonces" in ca.log(tail=None)
        assert "badNonce, retrying" in err, err[-4000:]
        _verify(ca, tmpdir, os.path.join(state, "a.acme.test.crt"),
                os.path.join(state, "a.acme.test.key"), NAMES)
    finally:
        ca.stop()


def test_acme_damaged_state(tmpdir):
    """A truncated stored chain is ordered anew (never installed); a corrupt account key is
    refused, not silently replaced (the account would be lost with it)."""
    ca = start_pebble(tmpdir)
    try:
        state = os.path.join(tmpdir, "state")
        crt = os.path.join(state, "a.acme.test.crt")
        _ok(*drive(ca, state, NAMES), orders=1)
        text = _read(crt)
        with open(crt, "wb") as f:
            f.write(text[:len(text) // 3])
        rc, out, err = drive(ca, state, NAMES)
        _ok(rc, out, err, orders=1)
        assert "the stored certificate is not usable" in err, err[-4000:]
        _verify(ca, tmpdir, crt, os.path.join(state, "a.acme.test.key"), NAMES)

        with open(os.path.join(state, "account.key"), "w") as f:
            f.write("-----BEGIN PRIVATE KEY-----\nnot a key\n")
        os.unlink(crt)
        rc, out, err = drive(ca, state, NAMES, extra=["--timeout", "3"])
        assert sanitizer_report(err) is None, sanitizer_report(err)
        assert rc == 1 and "installed " not in out, (rc, out, err[-4000:])
        assert "not a private key" in err, err[-4000:]
        assert "last_ok=0" in out and "orders=0" in out, out
    finally:
        ca.stop()


def test_acme_shared_state_directory(tmpdir):
    """Processes sharing a state directory take turns on its lock file: one that finds it held
    waits, then orders; another one later installs what that one stored, with no order."""
    ca = start_pebble(tmpdir)
    try:
        state = os.path.join(tmpdir, "state")
        os.mkdir(state, 0o700)
        holder = open(os.path.join(state, "lock"), "w")
        fcntl.flock(holder, fcntl.LOCK_EX)
        first = subprocess.Popen(
            [driver(), "--directory", ca.directory, "--ca-bundle", ca.tls_cert, "--state", state,
             "--challenge", "http-01", "--http-port", str(ca.http_port),
             "--tls-port", str(ca.tls_port), "--timeout", str(int(T(30))), "a.acme.test"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        time.sleep(T(2))
        assert first.poll() is None and "order-plz" not in ca.log(tail=None), \
            "ordered while another process held the lock"
        holder.close()
        out1, err1 = first.communicate(timeout=T(40))
        _ok(first.returncode, out1.decode(), err1.decode(), orders=1)
        # no responder: it could not pass a validation, only reuse
        rc, out, err = drive(ca, state, ["a.acme.test"], extra=["--http-port", "0",
                                                               "--tls-port", "0"])
        _ok(rc, out, err, orders=0)
    finally:
        ca.stop()


@pytest.mark.parametrize("name,why", [("*.acme.test", "wildcard"), ("127.0.0.1", "IP address"),
                                      ("-bad.acme.test", "'-'"), ("single", "two labels")])
def test_acme_refuses_bad_settings(tmpdir, name, why):
    """Wildcards and IP addresses need what this client does not do: refused at start."""
    p = subprocess.run([driver(), "--directory", "https://127.0.0.1:1/dir", "--state",
                        os.path.join(tmpdir, "s"), "--http-port", "0", "--tls-port", "0",
                        name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=T(10))
    err = p.stderr.decode()
    assert sanitizer_report(err) is None, sanitizer_report(err)
    assert p.returncode == 2 and why in err, (name, p.returncode, err)


class _FakeCA:
    """An HTTPS server that answers the directory with `body` (status 200): a CA gone wrong."""

    def __init__(self, tmpdir, body):
        cert, key = self_signed(os.path.join(tmpdir, "fake"))
        body = body.encode() if isinstance(body, str) else body

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.cert = cert
        self.directory = "https://127.0.0.1:%d/dir" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_acme_untrusted_replies_keep_the_certificate(tmpdir):
    """A directory that is not JSON, holds a non-https URL or is too large fails the renewal
    with a reason; the stored certificate stays, untouched, and stays installed."""
    ca = start_pebble(tmpdir)
    state = os.path.join(tmpdir, "state")
    try:
        _ok(*drive(ca, state, NAMES), orders=1)
    finally:
        ca.stop()
    crt = os.path.join(state, "a.acme.test.crt")
    before = _read(crt)
    os.mkdir(os.path.join(tmpdir, "fake"))
    bad_url = "\"newNonce\" is missing or not an acceptable"
    cases = [('{"newNonce": "https://127.0.0.1/n", ', "not a JSON object"),
             ('{"newNonce": "https://127.0.0.1/n"} trailing', "not a JSON object"),
             ('[1, 2]', "not a JSON object"),
             ('{"newNonce": "http://127.0.0.1/n", "newAccount": "https://127.0.0.1/a",'
              ' "newOrder": "https://127.0.0.1/o"}', bad_url),
             ('{"newNonce": 7}', bad_url),
             ('{"x": "' + "y" * 100000 + '"}', "reply too large")]
    for body, why in cases:
        fake = _FakeCA(tmpdir, body)
        try:
            p = subprocess.run(
                [driver(), "--directory", fake.directory, "--ca-bundle", fake.cert,
                 "--state", state, "--http-port", "0", "--tls-port", "0", "--renew",
                 "--timeout", "2"] + NAMES, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                timeout=T(30))
        finally:
            fake.stop()
        out, err = p.stdout.decode(), p.stderr.decode()
        assert sanitizer_report(err) is None, sanitizer_report(err)
        assert p.returncode == 1 and out.count("installed ") == 1, (body[:60], out, err)
        assert why in err and "last_ok=0" in out, (body[:60], why, out, err[-2000:])
        assert _read(crt) == before, "a failed renewal touched the stored certificate"


def _b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _ari_id(crt):
    """RFC 9773 4.1's identifier of a certificate, from the openssl command's view of it."""
    text = subprocess.run(["openssl", "x509", "-in", crt, "-noout", "-serial", "-ext",
                           "authorityKeyIdentifier"], stdout=subprocess.PIPE,
                          check=True).stdout.decode()
    serial = bytes.fromhex(text.split("serial=")[1].split()[0].rjust(2, "0"))
    if serial[0] & 0x80:
        serial = b"\0" + serial
    keyid = [l.strip() for l in text.splitlines() if ":" in l and "serial" not in l
             and "Identifier" not in l][0].replace("keyid:", "")
    return _b64url(bytes.fromhex(keyid.replace(":", ""))) + "." + _b64url(serial)


class _AriDirectory:
    """pebble's directory plus a renewalInfo resource (pebble 2.4 has none): each request's
    identifier is kept, each answer is `window` (seconds from now) with a Retry-After."""

    def __init__(self, ca, window):
        pebble_dir = json.loads(ca._get(ca.directory))
        self.asked = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/dir":
                    body = dict(pebble_dir, renewalInfo=outer.base + "/ari")
                else:
                    outer.asked.append(self.path[len("/ari/"):])
                    now = time.time()
                    body = {"suggestedWindow": {"start": _rfc3339(now + window[0]),
                                                "end": _rfc3339(now + window[1])}}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Retry-After", "21600")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ca.tls_cert, os.path.join(ca.dir, "pebble.key"))
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.base = "https://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_acme_ari_renewal_window(tmpdir):
    """ARI (RFC 9773): the stored certificate's identifier is asked for; a window a year ahead
    moves the renewal there but orders nothing now, a window already open renews now."""
    ca = start_pebble(tmpdir)
    try:
        state = os.path.join(tmpdir, "state")
        crt = os.path.join(state, "a.acme.test.crt")
        _ok(*drive(ca, state, NAMES), orders=1)
        want = _ari_id(crt)
        for window, orders in (((365 * 86400, 366 * 86400), 0), ((-2 * 86400, -86400), 1)):
            ari = _AriDirectory(ca, window)
            directory, ca.directory = ca.directory, ari.base + "/dir"
            try:
                rc, out, err = drive(ca, state, NAMES)
            finally:
                ca.directory = directory
                ari.stop()
            _ok(rc, out, err, orders=orders, installs=1 + orders)
            assert ari.asked == [want], (ari.asked, want, err[-3000:])
            # a year ahead is still before our own two thirds of pebble's five years
            assert "the CA suggests renewing" in err, err[-3000:]
        _verify(ca, tmpdir, crt, os.path.join(state, "a.acme.test.key"), NAMES)
        assert _ari_id(crt) != want, "renewed: a new certificate"
    finally:
        ca.stop()
