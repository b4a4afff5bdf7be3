"""A throw-away ACME CA for the ACME client's tests: pebble and pebble-challtestsrv (Debian's
pebble package, installed by `make deps`) on loopback ports, and the driver that plays the
server's part (BUILD/tests/acme_drive, tests/acme/acme_drive.c).

    ca = start_pebble(directory, nonce_reject=0)
    ca.directory        the ACME directory URL (https://127.0.0.1:PORT/dir)
    ca.tls_cert         pebble's own HTTPS certificate: the trust anchor for its API
    ca.http_port        where pebble validates HTTP-01 (the driver listens there)
    ca.tls_port         where pebble validates TLS-ALPN-01
    ca.root()           the root of the certificates it issues (PEM text, /roots/0)
    ca.stop()

challtestsrv answers every DNS name with 127.0.0.1, so no validation leaves loopback.
"""

import json
import os
import shutil
import ssl
import subprocess
import time
import urllib.request

from lib.server import T, binary, free_port


class Pebble:
    def __init__(self, d):
        self.dir = d
        self.procs = []

    def _get(self, url):
        ctx = ssl.create_default_context(cafile=self.tls_cert)
        with urllib.request.urlopen(url, context=ctx, timeout=T(5)) as r:
            return r.read()

    def root(self):
        return self._get("https://127.0.0.1:%d/roots/0" % self.mgmt_port).decode()

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=T(5))
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for f in self.logs:
            f.close()

    def log(self, tail=4000):
        """The output of challtestsrv and pebble (the last `tail` characters of each)."""
        out = []
        for name in ("challtestsrv.log", "pebble.log"):
            with open(os.path.join(self.dir, name), errors="replace") as f:
                out.append("== %s ==\n%s" % (name, f.read()[-tail if tail else 0:]))
        return "\n".join(out)


def installed():
    """Whether pebble is there (make deps installs it)."""
    return shutil.which("pebble") is not None and shutil.which("pebble-challtestsrv") is not None


def self_signed(d):
    """A certificate for 127.0.0.1 and localhost, and its key (pebble's own, a fake CA's)."""
    cert, key = os.path.join(d, "pebble.pem"), os.path.join(d, "pebble.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=pebble test CA API",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def start_pebble(d, nonce_reject=0):
    assert installed(), "pebble is not installed: run 'make deps' (Debian package pebble)"
    ca = Pebble(d)
    ca.tls_cert, key = self_signed(d)
    ca.port, ca.mgmt_port, ca.http_port, ca.tls_port, dns, dns_mgmt = (
        free_port() for _ in range(6))
    conf = os.path.join(d, "pebble.json")
    with open(conf, "w") as f:
        json.dump({"pebble": {
            "listenAddress": "127.0.0.1:%d" % ca.port,
            "managementListenAddress": "127.0.0.1:%d" % ca.mgmt_port,
            "certificate": ca.tls_cert, "privateKey": key,
            "httpPort": ca.http_port, "tlsPort": ca.tls_port,
            "externalAccountBindingRequired": False}}, f)
    env = dict(os.environ, PEBBLE_VA_NOSLEEP="1", PEBBLE_WFE_NONCEREJECT=str(nonce_reject))
    ca.logs = [open(os.path.join(d, n), "w") for n in ("challtestsrv.log", "pebble.log")]
    ca.procs.append(subprocess.Popen(
        ["pebble-challtestsrv", "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "",
         "-dns01", "127.0.0.1:%d" % dns, "-http01", "", "-https01", "", "-tlsalpn01", "",
         "-management", "127.0.0.1:%d" % dns_mgmt],
        stdout=ca.logs[0], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
    ca.procs.append(subprocess.Popen(
        ["pebble", "-config", conf, "-dnsserver", "127.0.0.1:%d" % dns],
        stdout=ca.logs[1], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env))
    ca.directory = "https://127.0.0.1:%d/dir" % ca.port
    deadline = time.monotonic() + T(20)
    while True:
        try:
            ca._get(ca.directory)
            return ca
        except OSError:
            if time.monotonic() > deadline or any(p.poll() is not None for p in ca.procs):
                ca.stop()
                raise AssertionError("pebble did not start:\n" + ca.log())
            time.sleep(0.1)


def driver():
    return os.path.join(os.path.dirname(binary()), "tests", "acme_drive")


def drive(ca, state, names, challenge="http-01", extra=(), timeout=60):
    """Run the driver to completion: (exit status, stdout, stderr)."""
    args = [driver(), "--directory", ca.directory, "--ca-bundle", ca.tls_cert,
            "--state", state, "--challenge", challenge, "--email", "ops@example.org",
            "--http-port", str(ca.http_port), "--tls-port", str(ca.tls_port),
            "--timeout", str(int(T(timeout)))] + list(extra) + list(names)
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=T(timeout) + 30)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
