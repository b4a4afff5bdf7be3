"""The ACME client core (server/acme/) against pebble, the test ACME CA, on loopback.

The driver (tests/acme/acme_drive.c) plays the server: it answers HTTP-01 on pebble's
httpPort from acme_http01_lookup() and TLS-ALPN-01 on its tlsPort with the published
certificate, and reports each install. pebble-challtestsrv resolves every name to 127.0.0.1.
Certificates are checked with the openssl command against pebble's root (/roots/0).
"""

import os
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lib.acme import drive, driver, start_pebble  # noqa: E402
from lib.server import T, sanitizer_report  # noqa: E402

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
