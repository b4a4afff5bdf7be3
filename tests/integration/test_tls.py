"""HTTPS: TLS listeners (OpenSSL) inside the Leader/Followers pool.

Certificates come from a throw-away PKI made with the openssl command (lib/pki.py): a root CA,
an intermediate, a.test (RSA, the default certificate) and b.test (ECDSA), both sent with the
intermediate.  Clients are curl, openssl s_client and Python's ssl module, all verifying
against the test root CA.
"""

import os
import socket
import ssl
import subprocess
import threading
import time

import pytest

from lib.server import (T, binary, fixture_tree, get, raw_bytes, req,
                        sanitizer_report, sha256, wait_until, write_config)
from lib.tls import (TLSConn, client_ctx, client_hello, connect, curl_tls,
                     s_client, the_pki, tls_server)

SIZES = ["/empty.txt", "/one.txt", "/kib.txt", "/16k1.bin", "/big.bin"]


def run(args, timeout=20):
    p = subprocess.run([binary()] + list(args), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(timeout))
    err = p.stderr.decode("utf-8", "replace")
    rep = sanitizer_report(err)
    assert rep is None, "sanitizer report:\n" + rep
    return p.returncode, err


def exit_2_one_line(args):
    rc, err = run(args)
    assert rc == 2, "%r: exit status %s (want 2); stderr=%r" % (args, rc, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].strip(), "%r: want one stderr line, got %r" % (args, err)
    assert "listening on" not in err
    return lines[0]


def subject_cn(sock):
    return dict(x[0] for x in sock.getpeercert()["subject"])["commonName"]


# ---- protocol versions, ALPN, SNI, chains ------------------------------------------------

@pytest.fixture(scope="module")
def two_certs_srv(shared_server):
    """One server with a.test's and b.test's certificates, for the cases that only ask it."""
    return shared_server(tls_server)


@pytest.mark.parametrize("path", ["/kib.txt", "/16k1.bin", "/big.bin"])
@pytest.mark.parametrize("name,kx", [("a.test", "ECDHE-RSA"), ("b.test", "ECDHE-ECDSA")])
@pytest.mark.parametrize("ver", ["TLSv1.2", "TLSv1.3"])
def test_curl_tls12_and_tls13_verified(two_certs_srv, ver, name, kx, path):
    srv = two_certs_srv
    flags = ["--tlsv1.2", "--tls-max", "1.2"] if ver == "TLSv1.2" else ["--tlsv1.3"]
    p = curl_tls(srv, path, name, flags + ["-v", "-o", "-"])
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, (ver, name, path, err[-2000:])
    assert p.stdout == srv.files[path], (ver, name, path, len(p.stdout))
    assert "SSL connection using %s" % ver in err, err
    assert "ALPN: server accepted http/1.1" in err, err
    assert "subject: O=lfhttpd tests; CN=%s" % name in err, err
    if ver == "TLSv1.2":
        assert kx in err, err   # ECDHE only, with the certificate's key type


def test_tls10_and_tls11_refused(tmpdir):
    srv = tls_server(tmpdir)
    for flag in ("-tls1_1", "-tls1"):
        # SECLEVEL=0 lets this client offer the old version, so the refusal is the server's.
        rc, out = s_client(srv.https, [flag, "-cipher", "DEFAULT:@SECLEVEL=0"])
        assert rc != 0, (flag, out)
        assert "alert protocol version" in out, (flag, out)
    ctx = client_ctx(maxv=ssl.TLSVersion.TLSv1_2)
    with TLSConn(srv.https, ctx=ctx) as c:
        assert c.sock.version() == "TLSv1.2"


def test_only_forward_secret_aead_ciphers_in_tls12(tmpdir):
    srv = tls_server(tmpdir)
    for cipher in ("AES128-GCM-SHA256", "AES256-SHA", "DHE-RSA-AES128-GCM-SHA256",
                   "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384"):
        rc, out = s_client(srv.https, ["-tls1_2", "-cipher", cipher + ":@SECLEVEL=0",
                                       "-servername", "a.test"])
        assert rc != 0 and "handshake failure" in out, (cipher, out)
    # Server preference: offered last by the client, AES-128-GCM is still chosen.
    rc, out = s_client(srv.https, ["-tls1_2", "-servername", "a.test", "-cipher",
                                   "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256"])
    assert "Cipher is ECDHE-RSA-AES128-GCM-SHA256" in out, out


def test_alpn(tmpdir):
    srv = tls_server(tmpdir)
    rc, out = s_client(srv.https, ["-alpn", "http/1.1", "-servername", "a.test"])
    assert "ALPN protocol: http/1.1" in out, out
    rc, out = s_client(srv.https, ["-alpn", "h2", "-servername", "a.test"])
    assert "No ALPN negotiated" in out, out
    with TLSConn(srv.https, ctx=client_ctx(alpn=("h2", "http/1.1"))) as c:
        assert c.sock.selected_alpn_protocol() == "http/1.1"
        c.send(req("GET", "/one.txt"))
        assert c.read_response().body == b"1"


@pytest.mark.parametrize("name,cn", [("a.test", "a.test"), ("b.test", "b.test"),
                                     ("B.TEST", "b.test"), ("localhost", "a.test")])
def test_sni_picks_certificate(two_certs_srv, name, cn):
    with TLSConn(two_certs_srv.https, name=name) as c:
        assert subject_cn(c.sock) == cn, (name, c.sock.getpeercert())
        c.send(req("GET", "/kib.txt"))
        assert c.read_response().body == two_certs_srv.files["/kib.txt"], name


def test_sni_default_certificate(tmpdir):
    srv = tls_server(tmpdir)
    # No SNI, or a name no certificate claims: the first certificate is the default.
    ctx = client_ctx()
    ctx.check_hostname = False
    for name in (None, "c.test"):
        with TLSConn(srv.https, name=name, ctx=ctx) as c:
            assert subject_cn(c.sock) == "a.test", name


def test_sni_explicit_names_and_wildcard(tmpdir):
    p = the_pki()
    srv = tls_server(tmpdir, certs=["%s %s" % (p.a_chain, p.a_key),
                                    "%s %s www.example.org *.b.example" % (p.b_chain, p.b_key)])
    ctx = client_ctx()
    ctx.check_hostname = False
    for name, cn in (("www.example.org", "b.test"), ("x.b.example", "b.test"),
                     ("b.example", "a.test"), ("b.test", "a.test"), ("a.test", "a.test")):
        with TLSConn(srv.https, name=name, ctx=ctx) as c:
            assert subject_cn(c.sock) == cn, name


def test_certificate_chain_is_sent(tmpdir):
    p = the_pki()
    # The chain file carries the intermediate: a client that trusts only the root verifies.
    srv = tls_server(os.path.join(tmpdir, "chain"))
    with TLSConn(srv.https, name="a.test") as c:
        assert subject_cn(c.sock) == "a.test"
    srv.stop()
    # A leaf without its intermediate cannot be verified by the same client.
    srv = tls_server(os.path.join(tmpdir, "leaf"), certs=["%s %s" % (p.a_leaf_only, p.a_key)])
    try:
        TLSConn(srv.https, name="a.test").close()
        raise AssertionError("verified a certificate without its chain")
    except ssl.SSLCertVerificationError:
        pass


# ---- session resumption --------------------------------------------------------------------

def _resume(srv, tmpdir, args, name, wait=0.0):
    sess = os.path.join(tmpdir, name)
    request = b"GET /one.txt HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
    base = ["-servername", "a.test", "-CAfile", srv.pki.ca, "-ign_eof"] + args
    rc, out = s_client(srv.https, base + ["-sess_out", sess], request)
    assert "New," in out and "Verify return code: 0 (ok)" in out, out
    assert "HTTP/1.1 200 OK" in out, out
    if not os.path.exists(sess):
        return "(no resumable session)"
    if wait:
        time.sleep(wait)
    rc, out = s_client(srv.https, base + ["-sess_in", sess], request)
    assert "HTTP/1.1 200 OK" in out, out
    return out


def test_resumption_tickets_and_session_cache(tmpdir):
    srv = tls_server(tmpdir)
    assert "Reused, TLSv1.3" in _resume(srv, tmpdir, ["-tls1_3"], "s13")
    assert "Reused, TLSv1.2" in _resume(srv, tmpdir, ["-tls1_2"], "s12t")
    assert "Reused, TLSv1.2" in _resume(srv, tmpdir, ["-tls1_2", "-no_ticket"], "s12c")
    # Resumption through curl/Python is not tested here; s_client shows it unambiguously.


def test_tls13_resumption_issues_a_fresh_ticket(tmpdir):
    # RFC 8446 C.4: a client should not reuse a ticket. A resumed TLS 1.3 session gets a new
    # ticket (nginx sends one too), so a careful client can resume again with that one instead
    # of falling back to a full handshake every second connection.
    srv = tls_server(tmpdir)
    request = b"GET /one.txt HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
    base = ["-servername", "a.test", "-CAfile", srv.pki.ca, "-ign_eof", "-tls1_3"]
    tickets = "Post-Handshake New Session Ticket arrived"
    first, second = os.path.join(tmpdir, "t1"), os.path.join(tmpdir, "t2")
    rc, out = s_client(srv.https, base + ["-sess_out", first], request)
    assert "New, TLSv1.3" in out and out.count(tickets) == 2, out
    rc, out = s_client(srv.https, base + ["-sess_in", first, "-sess_out", second], request)
    assert "Reused, TLSv1.3" in out and "HTTP/1.1 200 OK" in out, out
    assert out.count(tickets) == 1, "a resumed session got %d tickets" % out.count(tickets)
    with open(first, "rb") as a, open(second, "rb") as b:
        assert a.read() != b.read(), "the resumed session did not carry a new ticket"
    rc, out = s_client(srv.https, base + ["-sess_in", second], request)
    assert "Reused, TLSv1.3" in out and "HTTP/1.1 200 OK" in out, out


def test_resumption_without_tickets_uses_the_cache(tmpdir):
    srv = tls_server(tmpdir, extra=["tls_session_ticket_rotation 0"])
    assert "Reused, TLSv1.3" in _resume(srv, tmpdir, ["-tls1_3"], "s13")
    assert "Reused, TLSv1.2" in _resume(srv, tmpdir, ["-tls1_2"], "s12")
    srv.stop()
    srv = tls_server(os.path.join(tmpdir, "nocache"),
                     extra=["tls_session_ticket_rotation 0", "tls_session_cache 0"])
    assert "Reused" not in _resume(srv, tmpdir, ["-tls1_3"], "n13")
    assert "Reused" not in _resume(srv, tmpdir, ["-tls1_2"], "n12")


def test_ticket_keys_rotate(tmpdir):
    # Keys rotate every 2 s and open tickets for two periods: a ticket is accepted at once,
    # and refused (full handshake) once its key is more than 4 s old.
    srv = tls_server(tmpdir, extra=["tls_session_ticket_rotation 2s"])
    assert "Reused, TLSv1.3" in _resume(srv, tmpdir, ["-tls1_3"], "fresh")
    assert "New, TLSv1.3" in _resume(srv, tmpdir, ["-tls1_3"], "stale", wait=4.5)


# ---- static files over TLS -------------------------------------------------------------------

def test_bodies_byte_identical_get_head_pipelined(tmpdir):
    srv = tls_server(tmpdir)
    files = srv.files
    with TLSConn(srv.https, timeout=30) as c:
        for path in SIZES:
            for method in ("GET", "HEAD"):
                c.send(req(method, path))
                r = c.read_response(method)
                assert r.status == 200, (method, path, r)
                assert r.header("Content-Length") == str(len(files[path])), (method, path)
                assert r.body == (b"" if method == "HEAD" else files[path]), (method, path)
        # Everything again, pipelined in one write.
        methods = [m for _ in SIZES for m in ("GET", "HEAD")]
        c.send(b"".join(req(m, p) for p in SIZES for m in ("GET", "HEAD")))
        rs = c.read_responses(methods)
        for i, path in enumerate(p for p in SIZES for _ in (0, 1)):
            want = b"" if methods[i] == "HEAD" else files[path]
            assert rs[i].status == 200 and sha256(rs[i].body) == sha256(want), (i, path)


def test_slow_reader_large_files(tmpdir):
    # A small receive buffer and a reader that pauses: the server's SSL_write hits WANT_WRITE
    # in the middle of records and must finish them with the same bytes later.
    srv = tls_server(tmpdir)
    big = srv.files["/big.bin"]
    with TLSConn(srv.https, timeout=60, rcvbuf=4096) as c:
        c.send(req("GET", "/big.bin") + req("HEAD", "/big.bin") + req("GET", "/16k1.bin") +
               req("GET", "/big.bin"))
        n = 0
        while len(c.buf) < len(big) + len(big) // 2:   # the first 4.5 MiB slowly
            chunk = c.sock.recv(16384)
            assert chunk, "closed early"
            c.buf += chunk
            n += 1
            if n % 64 == 0:
                time.sleep(0.005)
        rs = c.read_responses(["GET", "HEAD", "GET", "GET"])
        assert sha256(rs[0].body) == sha256(big)
        assert rs[1].body == b"" and rs[1].header("Content-Length") == str(len(big))
        assert rs[2].body == srv.files["/16k1.bin"]
        assert sha256(rs[3].body) == sha256(big)


def test_pipelined_input_larger_than_the_read_buffer(tmpdir):
    # ~70 KiB of pipelined requests arrive in many records; the server's 64 KiB buffer fills,
    # and the rest (decrypted or not) must be read without waiting for a new epoll event.
    srv = tls_server(tmpdir)
    n = 2000
    data = b"".join(req("HEAD", "/kib.txt") for _ in range(n)) + req("GET", "/kib.txt")
    assert len(data) > 64 * 1024
    with TLSConn(srv.https, timeout=30) as c:
        c.send_while_reading(data)
        rs = c.read_responses(["HEAD"] * n + ["GET"])
        assert all(r.status == 200 for r in rs)
        assert rs[-1].body == srv.files["/kib.txt"]


def test_request_body_discarded_over_tls(tmpdir):
    srv = tls_server(tmpdir)
    body = b"x" * 200000
    with TLSConn(srv.https, timeout=30) as c:
        c.send_while_reading(req("POST", "/kib.txt", body=body) + req("GET", "/one.txt"))
        r1, r2 = c.read_responses(["POST", "GET"])
        assert r1.status == 405 and r2.status == 200 and r2.body == b"1"


def test_plain_and_tls_listeners_side_by_side(tmpdir):
    srv = tls_server(tmpdir, plain=True)
    assert srv.http and srv.https and srv.http != srv.https
    assert "listening on https://127.0.0.1:%d" % srv.https[1] in srv.stderr
    assert "listening on http://127.0.0.1:%d" % srv.http[1] in srv.stderr
    for _ in range(3):
        r = get(srv.http, "/kib.txt")
        assert r.status == 200 and r.body == srv.files["/kib.txt"]
        assert r.header("Strict-Transport-Security") is None
        with TLSConn(srv.https) as c:
            c.send(req("GET", "/kib.txt"))
            r = c.read_response()
            assert r.status == 200 and r.body == srv.files["/kib.txt"]
    p = curl_tls(srv, "/16k1.bin", "b.test")
    assert p.returncode == 0 and p.stdout == srv.files["/16k1.bin"], p.stderr


# ---- misbehaving clients -----------------------------------------------------------------

def test_plain_http_to_tls_port_is_closed(tmpdir):
    srv = tls_server(tmpdir)
    t0 = time.monotonic()
    data = raw_bytes(srv.https, b"GET /kib.txt HTTP/1.1\r\nHost: a.test\r\n\r\n", timeout=15)
    assert b"HTTP/1." not in data and b"kib" not in data, data[:200]
    assert time.monotonic() - t0 < T(5), "not closed promptly"
    with TLSConn(srv.https) as c:     # the server is fine
        c.send(req("GET", "/one.txt"))
        assert c.read_response().body == b"1"


def test_garbage_is_closed(tmpdir):
    srv = tls_server(tmpdir, extra=["timeout_handshake 1s"])
    for junk in (b"\x00\xff" * 300, b"garbage\r\n" * 40, bytes(range(256)) * 3):
        t0 = time.monotonic()
        data = raw_bytes(srv.https, junk, timeout=15)
        assert len(data) < 64, (junk, data)       # at most an alert
        assert time.monotonic() - t0 < T(5), junk
    # A record header that promises more than is sent: closed by the handshake timeout.
    t0 = time.monotonic()
    data = raw_bytes(srv.https, b"\x16\x03\x01\x40\x00" + b"x" * 100, timeout=15)
    took = time.monotonic() - t0
    assert 0.7 < took < T(4), took
    with TLSConn(srv.https) as c:
        c.send(req("GET", "/one.txt"))
        assert c.read_response().body == b"1"


def test_stalled_handshake_closed_at_handshake_timeout(tmpdir):
    srv = tls_server(tmpdir, extra=["timeout_handshake 1s"])
    hello = client_hello()
    s = connect(srv.https, timeout=15)
    t0 = time.monotonic()
    s.sendall(hello[:len(hello) // 2])
    try:
        data = s.recv(4096)
    except ConnectionResetError:
        data = b""
    took = time.monotonic() - t0
    s.close()
    assert data == b"", data
    assert 0.7 < took < T(4), took
    # A client that completes the hello but never sends its Finished: also closed.
    s = connect(srv.https, timeout=15)
    t0 = time.monotonic()
    s.sendall(hello)
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except ConnectionResetError:
        pass
    took = time.monotonic() - t0
    s.close()
    assert got[:1] == b"\x16", got[:16]    # the server's flight came, then the close
    assert 0.7 < took < T(4), took


def test_100_concurrent_clients_some_stalling(tmpdir):
    # The handshake timeout must leave 70 Python clients on a loaded machine the time to finish
    # their handshakes (the server's side of a handshake ends with the client's Finished).
    hs_timeout = int(T(4))
    srv = tls_server(tmpdir, extra=["timeout_handshake %ds" % hs_timeout], threads=2)
    hello = client_hello()
    stall_half = []
    stall_none = []
    t_stall = time.monotonic()
    for i in range(15):
        s = connect(srv.https, timeout=30)
        s.sendall(hello[:len(hello) // 2])
        stall_half.append(s)
        stall_none.append(connect(srv.https, timeout=30))
    errors = []
    done = [0]
    lock = threading.Lock()
    files = srv.files
    paths = ["/kib.txt", "/16k1.bin", "/one.txt", "/empty.txt"]

    def client(n):
        try:
            with TLSConn(srv.https, name="a.test" if n % 2 else "b.test", timeout=30) as c:
                for i in range(3):
                    path = paths[(n + i) % len(paths)]
                    c.send(req("GET", path))
                    r = c.read_response()
                    if r.status != 200 or r.body != files[path]:
                        errors.append((n, path, r.status, len(r.body)))
                        return
            with lock:
                done[0] += 1
        except Exception as e:   # noqa: BLE001
            errors.append((n, repr(e)))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(70)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(T(60))
    assert not errors, errors[:5]
    assert done[0] == 70
    # The half-hello clients are closed once the handshake timeout passes.
    for s in stall_half:
        s.settimeout(max(0.1, t_stall + hs_timeout + T(3) - time.monotonic()))
        try:
            d = s.recv(100)
        except ConnectionResetError:
            d = b""
        except socket.timeout:
            raise AssertionError("a stalled handshake was not closed")
        assert d == b""
        s.close()
    for s in stall_none:
        s.close()
    # Draining with handshakes in progress is prompt.
    for i in range(5):
        stall_half.append(connect(srv.https))
        stall_half[-1].sendall(hello[:20])
    time.sleep(0.2)
    assert srv.stop() == 0
    assert srv.stop_seconds < T(5), srv.stop_seconds
    for s in stall_half:
        s.close()


# ---- redirect and HSTS -----------------------------------------------------------------------

def test_redirect_plain_to_https_and_hsts(tmpdir):
    srv = tls_server(tmpdir, plain=True, extra=["tls_redirect_http on", "tls_hsts 31536000"])
    port = srv.https[1]
    r = get(srv.http, "/sub/file.css?x=1&y=%20", headers={"Host": "example.com:8080"})
    assert r.status == 301, r
    assert r.header("Location") == "https://example.com:%d/sub/file.css?x=1&y=%%20" % port, r
    assert r.header("Strict-Transport-Security") is None
    r = get(srv.http, "/", headers={"Host": "[::1]:80"}, method="HEAD")
    assert r.status == 301 and r.header("Location") == "https://[::1]:%d/" % port, r
    r = get(srv.http, "/x", headers={"Host": "bad/host"})
    assert r.status == 400, r
    with TLSConn(srv.https) as c:
        c.send(req("GET", "/one.txt") + req("GET", "/missing"))
        r1, r2 = c.read_responses(2)
        assert r1.status == 200 and r1.body == b"1"
        for r in (r1, r2):
            assert r.header("Strict-Transport-Security") == "max-age=31536000", r
    # curl follows the redirect from the plain listener to the TLS one.
    host, hport = srv.http
    q = subprocess.run(["curl", "--noproxy", "*", "-sS", "-L", "--max-time", "20", "--cacert",
                        srv.pki.ca, "--resolve", "a.test:%d:%s" % (hport, host), "--resolve",
                        "a.test:%d:%s" % (port, host), "http://a.test:%d/kib.txt" % hport],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(30))
    assert q.returncode == 0, q.stderr
    assert q.stdout == srv.files["/kib.txt"]


# ---- keys, passphrases and configuration errors ----------------------------------------------

def test_passphrase_protected_key(tmpdir):
    p = the_pki()
    srv = tls_server(tmpdir, certs=["%s %s" % (p.a_chain, p.a_key_enc)],
                     extra=["tls_passphrase_file %s" % p.passfile])
    with TLSConn(srv.https) as c:
        c.send(req("GET", "/kib.txt"))
        assert c.read_response().body == srv.files["/kib.txt"]
    srv.stop()
    root = fixture_tree(os.path.join(tmpdir, "x")).root
    conf = write_config(tmpdir, ["tls_listen 127.0.0.1:0",
                                 "tls_certificate %s %s" % (p.a_chain, p.a_key_enc)],
                        "nopass.conf")
    line = exit_2_one_line(["-c", conf, "--root", root])
    assert line.startswith(conf + ":2: ") and "encrypted" in line, line
    wrong = os.path.join(tmpdir, "wrong.txt")
    with open(wrong, "w") as f:
        f.write("not the passphrase\n")
    with open(conf, "a") as f:
        f.write("tls_passphrase_file %s\n" % wrong)
    line = exit_2_one_line(["-c", conf, "--root", root])
    assert line.startswith(conf + ":2: ") and "passphrase" in line, line


def test_bad_certificate_or_key_exit_2(tmpdir):
    p = the_pki()
    root = fixture_tree(tmpdir).root
    base = ["--root", root, "--listen", "127.0.0.1:0", "--tls-listen", "127.0.0.1:0"]
    missing = os.path.join(tmpdir, "missing.pem")
    line = exit_2_one_line(base + ["--cert", missing, "--key", p.a_key])
    assert missing in line and "No such file" in line, line
    line = exit_2_one_line(base + ["--cert", p.a_chain, "--key", missing])
    assert missing in line, line
    line = exit_2_one_line(base + ["--cert", p.a_chain, "--key", p.b_key])
    assert "does not match" in line, line
    notpem = os.path.join(tmpdir, "not.pem")
    with open(notpem, "w") as f:
        f.write("hello\n")
    exit_2_one_line(base + ["--cert", notpem, "--key", p.a_key])
    exit_2_one_line(base + ["--cert", p.a_chain, "--key", notpem])
    line = exit_2_one_line(base + ["--cert", p.a_chain])
    assert "pairs" in line, line
    line = exit_2_one_line(base)
    assert "certificate" in line, line
    exit_2_one_line(base + ["--cert", p.a_chain, "--key", p.a_key, "--tls-listen", "nonsense"])


@pytest.mark.parametrize("text,where", [
    ("tls_certificate %(missing)s %(a_key)s", ":2: "),
    ("tls_certificate %(a_chain)s %(b_key)s", ":2: "),
    ("tls_certificate %(a_chain)s", ":2: "),
    ("tls_certificate %(a_chain)s %(a_key)s\ntls_redirect_http maybe", ":3: "),
    ("tls_certificate %(a_chain)s %(a_key)s\ntls_hsts -1", ":3: "),
    ("tls_certificate %(a_chain)s %(a_key)s\ntimeout_handshake soon", ":3: "),
    ("tls_certificate %(a_chain)s %(a_key)s bad/name", ":2: ")])
def test_bad_certificate_in_the_file_is_file_line(tmpdir, text, where):
    p = the_pki()
    root = fixture_tree(tmpdir).root
    text = text % dict(missing=os.path.join(tmpdir, "missing.pem"), a_key=p.a_key,
                       b_key=p.b_key, a_chain=p.a_chain)
    conf = write_config(tmpdir, "tls_listen 127.0.0.1:0\n" + text + "\n", "bad.conf")
    line = exit_2_one_line(["-c", conf, "--root", root])
    assert line.startswith(conf + where), (text, line)


def test_config_check_loads_certificates(tmpdir):
    p = the_pki()
    root = fixture_tree(tmpdir).root
    conf = write_config(tmpdir, "tls_listen 127.0.0.1:0\ntls_certificate %s %s\n"
                        "tls_certificate %s %s b.test\n"
                        "tls_redirect_http on\ntls_hsts 600\ntimeout_handshake 5s\n"
                        "tls_session_cache 1000\ntls_session_timeout 10m\n"
                        "tls_session_ticket_rotation 30m\n"
                        % (p.a_chain, p.a_key, p.b_chain, p.b_key), "ok.conf")
    rc, err = run(["-t", "-c", conf, "--root", root])
    assert rc == 0 and "is valid" in err, err
    with open(conf, "a") as f:
        f.write("tls_certificate %s %s\n" % (p.a_chain, p.b_key))
    line = exit_2_one_line(["-t", "-c", conf, "--root", root])
    assert line.startswith(conf + ":10: ") and "does not match" in line, line


def test_cli_only_tls_listener(tmpdir):
    # --tls-listen alone: no default plain listener is added.
    from lib.server import Server
    p = the_pki()
    tree = fixture_tree(tmpdir)
    srv = Server(root=tree.root, listen=(), args=["--tls-listen", "127.0.0.1:0", "--cert",
                                                  p.b_chain, "--key", p.b_key])
    assert [s for s, _, _ in srv.listeners] == ["https"], srv.stderr
    assert "http://" not in srv.stderr
    with TLSConn((srv.host, srv.port), name="b.test") as c:
        c.send(req("GET", "/kib.txt"))
        assert c.read_response().body == tree.files["/kib.txt"]


# ---- reload ------------------------------------------------------------------------------

def test_sighup_reloads_certificates_without_dropping_connections(tmpdir):
    import signal
    p = the_pki()
    srv = tls_server(tmpdir, certs=["%s %s" % (p.a_chain, p.a_key)])
    ctx = client_ctx()
    ctx.check_hostname = False
    try:
        old = TLSConn(srv.https, name=None, ctx=ctx)
        assert subject_cn(old.sock) == "a.test"
        old.send(req("GET", "/kib.txt"))
        assert old.read_response().body == srv.files["/kib.txt"]
        # The default certificate becomes b.test's.
        with open(srv.conf) as f:
            text = f.read()
        with open(srv.conf, "w") as f:
            f.write(text.replace("tls_certificate %s %s" % (p.a_chain, p.a_key),
                                 "tls_certificate %s %s\ntls_certificate %s %s"
                                 % (p.b_chain, p.b_key, p.a_chain, p.a_key)))
        srv.signal(signal.SIGHUP)
        wait_until(lambda: "generation 2" in srv.stderr, 5, step=0.05,
                   what="'generation 2' after SIGHUP")
        with TLSConn(srv.https, name=None, ctx=ctx) as new:
            assert subject_cn(new.sock) == "b.test", "new connections must get the new certificate"
            new.send(req("GET", "/one.txt"))
            assert new.read_response().body == srv.files["/one.txt"]
        # The connection opened before the reload keeps working on its session.
        old.send(req("GET", "/kib.txt"))
        assert old.read_response().body == srv.files["/kib.txt"]
        old.close()
        # A certificate that cannot be loaded keeps the running configuration.
        with open(srv.conf, "a") as f:
            f.write("tls_certificate %s %s\n" % (p.a_chain, p.b_key))  # key does not match
        srv.signal(signal.SIGHUP)
        wait_until(lambda: "not reloaded" in srv.stderr, 5, step=0.05,
                   what="'not reloaded' after SIGHUP")
        with TLSConn(srv.https, name=None, ctx=ctx) as c:
            assert subject_cn(c.sock) == "b.test"
    finally:
        srv.stop()
    assert srv.returncode == 0
