"""TLS helpers for integration tests (standard library + the openssl command).

    the_pki()                 the test PKI (lib/pki.py), made once in BUILD/test-pki/
    tls_server(tmpdir, extra=(), plain=False, certs=None, threads=2)
                              a ConfServer with a TLS listener (and a plain one if
                              plain=True), its file tmpdir/tls.conf (srv.conf); srv.https is
                              the (host, port) of the TLS listener, srv.tree the fixture docroot
                              (with /16k1.bin, 16 KiB + 1 bytes, added)
    client_ctx(minv, maxv)    an ssl.SSLContext verifying against the test CA, ALPN http/1.1
    TLSConn(addr, name)       lib.server.Conn over TLS (SNI `name`, verified)
    s_client(addr, args, stdin)  run `openssl s_client`; returns (rc, output text)
    curl_tls(srv, url_path, name, extra)  curl --cacert --resolve NAME:PORT:127.0.0.1
    client_hello()            the bytes of a real ClientHello (for stalling clients)
"""

import os
import select
import shutil
import socket
import ssl
import subprocess
import tempfile
import time

from lib.pki import Pki, make_pki
from lib.server import BUILD, REPO, ConfServer, Conn, Server, T, curl, fixture_tree  # noqa: F401

_pki = None


def the_pki():
    global _pki
    if _pki is None:
        b = BUILD if os.path.isabs(BUILD) else os.path.join(REPO, BUILD)
        d = os.path.join(b, "test-pki")
        if not os.path.exists(os.path.join(d, "done")):
            os.makedirs(b, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix="test-pki.", dir=b)
            make_pki(tmp)
            open(os.path.join(tmp, "done"), "w").close()
            try:
                os.rename(tmp, d)
            except OSError:          # another worker made it first
                shutil.rmtree(tmp, ignore_errors=True)
        p = _pki = Pki()
        p.dir = d
        p.ca = os.path.join(d, "ca.pem")
        p.a_chain = os.path.join(d, "a.test.chain.pem")
        p.a_leaf_only = os.path.join(d, "a.test.pem")
        p.a_key = os.path.join(d, "a.test.key")
        p.a_key_enc = os.path.join(d, "a.test.enc.key")
        p.b_chain = os.path.join(d, "b.test.chain.pem")
        p.b_key = os.path.join(d, "b.test.key")
        p.passfile = os.path.join(d, "passphrase.txt")
    return _pki


SIXTEEN_K1 = bytes((i * 31 + 7) % 251 for i in range(16 * 1024 + 1))


def tls_server(tmpdir, extra=(), plain=False, certs=None, threads=2, start=True):
    p = the_pki()
    tree = fixture_tree(tmpdir)
    with open(os.path.join(tree.root, "16k1.bin"), "wb") as f:
        f.write(SIXTEEN_K1)
    tree.files["/16k1.bin"] = SIXTEEN_K1
    if certs is None:
        certs = ["%s %s" % (p.a_chain, p.a_key), "%s %s" % (p.b_chain, p.b_key)]
    conf = ["tls_listen 127.0.0.1:0"] + ["tls_certificate %s" % c for c in certs] + list(extra)
    srv = ConfServer(tmpdir, conf, name="tls.conf", root=tree,
                     listen=("127.0.0.1:0",) if plain else (), threads=threads,
                     expect_listeners=2 if plain else 1, start=start)
    srv.conf = srv.conf_path
    srv.pki = p
    if start:
        _find(srv)
    return srv


def _find(srv):
    srv.https = next((h, port) for s, h, port in srv.listeners if s == "https")
    plain = [(h, port) for s, h, port in srv.listeners if s == "http"]
    srv.http = plain[0] if plain else None


def client_ctx(minv=None, maxv=None, alpn=("http/1.1",), verify=True):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if verify:
        ctx.load_verify_locations(the_pki().ca)
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if minv:
        ctx.minimum_version = minv
    if maxv:
        ctx.maximum_version = maxv
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    return ctx


class TLSConn(Conn):
    """A Conn whose socket is wrapped in TLS (handshake done in the constructor)."""

    def __init__(self, addr, name="a.test", ctx=None, timeout=10.0, rcvbuf=None):
        super().__init__(addr, timeout, rcvbuf=rcvbuf)
        self.sock = (ctx or client_ctx()).wrap_socket(self.sock, server_hostname=name)

    def send_while_reading(self, data):
        """Send `data` while reading whatever arrives meanwhile into the response buffer.

        One thread does both: an SSL object must not be used by two threads at once, so a
        writer thread next to a reader would corrupt the client, not test the server."""
        sock = self.sock
        sock.setblocking(False)
        out = memoryview(data)
        deadline = time.monotonic() + self.timeout
        try:
            while out:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout("send_while_reading: %d bytes unsent" % len(out))
                r, w, _ = select.select([sock], [sock], [], left)
                if w:
                    try:
                        out = out[sock.send(out[:16384]):]
                    except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                        pass
                while r or sock.pending():
                    r = None
                    try:
                        chunk = sock.recv(65536)
                    except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                        break
                    if not chunk:
                        self.eof = True
                        return
                    self.buf += chunk
        finally:
            sock.settimeout(self.timeout)

    def _fill(self, n=65536):
        try:
            return super()._fill(n)
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
            self.eof = True
            return False


def s_client(addr, args, stdin=b"", timeout=20):
    host, port = addr
    cmd = ["openssl", "s_client", "-connect", "%s:%d" % (host, port)] + list(args)
    p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=T(timeout))
    return p.returncode, p.stdout.decode("utf-8", "replace")


def curl_tls(srv, path, name="a.test", extra=()):
    host, port = srv.https
    return curl(["--cacert", srv.pki.ca, "--resolve", "%s:%d:%s" % (name, port, host)]
                + list(extra) + ["https://%s:%d%s" % (name, port, path)])


def client_hello(name="a.test"):
    ctx = client_ctx(verify=False)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def connect(addr, timeout=10.0):
    s = socket.create_connection(addr, timeout=T(timeout))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s
