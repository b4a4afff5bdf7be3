"""reload_on_change: the configuration file and the files it names are watched with
inotify; a change reloads atomically, as SIGHUP does, without any signal. The Kubernetes case is
done the kubelet's way (lib/kubelet.py: a new timestamped directory, the ..data symlink renamed
over the old one): for a configuration, a certificate, a MIME table, an htpasswd file; a bad
configuration keeps the running generation and says FILE:LINE: reason."""

import base64
import os
import signal
import ssl
import subprocess

from lib.kubelet import atomic_write
from lib.server import ConfServer, Conn, Server, T, get, req, wait_until
from lib.tls import the_pki


def _roots(tmpdir):
    for name in ("a", "b", "c"):
        os.makedirs(os.path.join(tmpdir, name), exist_ok=True)
        with open(os.path.join(tmpdir, name, "v.txt"), "w") as f:
            f.write(name.upper() * 3)


def _conf(tmpdir, root, extra=()):
    return ("reload_on_change on\nlog_level info\nroot %s\n" % os.path.join(tmpdir, root)
            + "".join(l + "\n" for l in extra)).encode()


def _generation(srv, n, why="reload_on_change"):
    return wait_until(lambda: "%s: configuration reloaded (generation %d)" % (why, n)
                      in srv.stderr, 15)


def test_editing_the_file_reloads_without_a_signal(tmpdir):
    _roots(tmpdir)
    srv = ConfServer(tmpdir, _conf(tmpdir, "a"))
    conf = srv.conf_path
    try:
        assert get(srv, "/v.txt").body == b"AAA"
        with Conn(srv) as c:           # a keep-alive connection takes the new one between requests
            c.send(req("GET", "/v.txt"))
            assert c.read_response().body == b"AAA"
            with open(conf, "wb") as f:                     # in place (an editor's write)
                f.write(_conf(tmpdir, "b"))
            assert _generation(srv, 2), srv.stderr
            c.send(req("GET", "/v.txt"))
            assert c.read_response().body == b"BBB"
        tmp = conf + ".new"                                 # write and rename over it
        with open(tmp, "wb") as f:
            f.write(_conf(tmpdir, "c"))
        os.rename(tmp, conf)
        assert _generation(srv, 3), srv.stderr
        assert get(srv, "/v.txt").body == b"CCC"
        assert "lfhttpd.conf changed: reloading the configuration" in srv.stderr
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_kubelet_configmap_update_reaches_the_server(tmpdir):
    _roots(tmpdir)
    cm = os.path.join(tmpdir, "configmap")
    atomic_write(cm, {"lfhttpd.conf": _conf(tmpdir, "a")})
    srv = Server(args=["--config", os.path.join(cm, "lfhttpd.conf")])
    pid = srv.proc.pid
    try:
        assert get(srv, "/v.txt").body == b"AAA"
        atomic_write(cm, {"lfhttpd.conf": _conf(tmpdir, "b")})
        assert _generation(srv, 2), srv.stderr
        assert get(srv, "/v.txt").body == b"BBB"
        assert "configmap/..data changed: reloading" in srv.stderr, srv.stderr
        # A bad configuration: the running generation stays, the error says FILE:LINE.
        atomic_write(cm, {"lfhttpd.conf": _conf(tmpdir, "c", ["listen 127.0.0.1:0", "bogus on"])})
        assert wait_until(lambda: "keeping generation 2" in srv.stderr, 15), srv.stderr
        assert os.path.join(cm, "lfhttpd.conf") + ":5: unknown directive 'bogus'" in srv.stderr
        assert get(srv, "/v.txt").body == b"BBB"
        # Fixed: the next swap is seen (the watches survived the failure and the old directory).
        atomic_write(cm, {"lfhttpd.conf": _conf(tmpdir, "c")})
        assert _generation(srv, 3), srv.stderr
        assert get(srv, "/v.txt").body == b"CCC"
        assert srv.proc.pid == pid and srv.alive(), "reloaded, not restarted"
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_a_burst_of_changes_is_one_reload(tmpdir):
    _roots(tmpdir)
    cm = os.path.join(tmpdir, "configmap")
    atomic_write(cm, {"lfhttpd.conf": _conf(tmpdir, "a")})
    srv = Server(args=["--config", os.path.join(cm, "lfhttpd.conf")])
    try:
        # Stopped, the server cannot act on any event before the last change is made: all of
        # them wait in the inotify queue and make one burst.
        srv.signal(signal.SIGSTOP)
        try:
            for root in ("b", "a", "b", "c", "b", "c"):
                atomic_write(cm, {"lfhttpd.conf": _conf(tmpdir, root)})
        finally:
            srv.signal(signal.SIGCONT)
        assert _generation(srv, 2), srv.stderr
        assert get(srv, "/v.txt").body == b"CCC", "the last version is the one loaded"
        # one more change, and only then a third generation: nothing else was pending
        atomic_write(cm, {"lfhttpd.conf": _conf(tmpdir, "a")})
        assert _generation(srv, 3), srv.stderr
        assert srv.stderr.count("reload_on_change: configuration reloaded") == 2, srv.stderr
    finally:
        srv.stop()


def test_files_the_configuration_names_are_watched(tmpdir):
    """A certificate and key from a Secret, a MIME table, an htpasswd file."""
    _roots(tmpdir)
    p = the_pki()
    secret = os.path.join(tmpdir, "secret")
    atomic_write(secret, {"tls.crt": open(p.a_chain, "rb").read(),
                          "tls.key": open(p.a_key, "rb").read()}, mode=0o600)
    mime = os.path.join(tmpdir, "mime", "mime.types")
    os.makedirs(os.path.dirname(mime))
    with open(mime, "w") as f:
        f.write("text/x-first txt\n")
    users = os.path.join(tmpdir, "users", "htpasswd")
    os.makedirs(os.path.dirname(users))

    def hash_of(pw):
        return subprocess.run(["openssl", "passwd", "-6", pw], stdout=subprocess.PIPE,
                              check=True).stdout.decode().strip()
    with open(users, "w") as f:
        f.write("ann:%s\n" % hash_of("first"))
    os.makedirs(os.path.join(tmpdir, "a", "private"))
    with open(os.path.join(tmpdir, "a", "private", "p.txt"), "w") as f:
        f.write("private\n")
    srv = ConfServer(tmpdir, _conf(tmpdir, "a", [
        "tls_listen 127.0.0.1:0",
        "tls_certificate %s/tls.crt %s/tls.key" % (secret, secret),
        "mime_types " + mime,
        "location /private/ {", "    auth_basic Private",
        "    auth_basic_user_file " + users, "}"]), expect_listeners=2)
    conf = srv.conf_path
    https = next((h, port) for s, h, port in srv.listeners if s == "https")
    http = next((h, port) for s, h, port in srv.listeners if s == "http")

    def served_cert():
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        import socket
        with socket.create_connection(https, timeout=T(10)) as s, \
                ctx.wrap_socket(s, server_hostname="a.test") as t:
            return ssl.DER_cert_to_PEM_cert(t.getpeercert(binary_form=True))

    def leaf(path):
        text = open(path).read()
        return text[:text.index("-----END CERTIFICATE-----") + 25]

    def auth(pw):
        return {"Authorization": "Basic " + base64.b64encode(b"ann:" + pw.encode()).decode()}

    try:
        assert served_cert().strip() == leaf(p.a_chain).strip()
        assert get(http, "/v.txt").header("Content-Type").startswith("text/x-first")
        assert get(http, "/private/p.txt", headers=auth("first")).status == 200
        # the Secret is updated: new certificate and key
        atomic_write(secret, {"tls.crt": open(p.b_chain, "rb").read(),
                              "tls.key": open(p.b_key, "rb").read()}, mode=0o600)
        assert _generation(srv, 2), srv.stderr
        assert served_cert().strip() == leaf(p.b_chain).strip(), "new connections, new certificate"
        # the MIME table, rewritten in place
        with open(mime, "w") as f:
            f.write("text/x-second txt\n")
        assert _generation(srv, 3), srv.stderr
        assert get(http, "/v.txt").header("Content-Type").startswith("text/x-second")
        # the htpasswd file, replaced by rename
        with open(users + ".tmp", "w") as f:
            f.write("ann:%s\n" % hash_of("second"))
        os.rename(users + ".tmp", users)
        assert _generation(srv, 4), srv.stderr
        assert get(http, "/private/p.txt", headers=auth("first")).status == 401
        assert get(http, "/private/p.txt", headers=auth("second")).status == 200
        # a key that does not match the certificate: refused, the running one stays
        atomic_write(secret, {"tls.crt": open(p.a_chain, "rb").read(),
                              "tls.key": open(p.b_key, "rb").read()}, mode=0o600)
        assert wait_until(lambda: "keeping generation 4" in srv.stderr, 15), srv.stderr
        assert "%s:5: key %s/tls.key does not match certificate" % (conf, secret) in srv.stderr, srv.stderr
        assert served_cert().strip() == leaf(p.b_chain).strip()
    finally:
        srv.stop()
    assert srv.returncode == 0


def _inotify_fds(pid):
    fds = os.path.join("/proc/%d/fd" % pid)
    return sum(1 for fd in os.listdir(fds)
               if os.readlink(os.path.join(fds, fd)) == "anon_inode:inotify")


def test_off_by_default_and_turned_on_by_a_reload(tmpdir):
    _roots(tmpdir)
    srv = ConfServer(tmpdir, "root %s/a\n" % tmpdir)
    conf = srv.conf_path
    try:
        # inotify instances are a per-user resource (128): a server watching nothing has none
        assert _inotify_fds(srv.proc.pid) == 0
        with open(conf, "w") as f:
            f.write("root %s/b\n" % tmpdir)
        # Only SIGHUP reloads while it is off (the edit above made no reload of its own).
        srv.signal(signal.SIGHUP)
        assert _generation(srv, 2, why="SIGHUP"), srv.stderr
        assert get(srv, "/v.txt").body == b"BBB"
        with open(conf, "wb") as f:
            f.write(_conf(tmpdir, "c"))
        srv.signal(signal.SIGHUP)
        assert _generation(srv, 3, why="SIGHUP"), srv.stderr
        assert "reload_on_change:" not in srv.stderr, srv.stderr
        # The watches follow each reload attempt, just after its log line.
        pid = srv.proc.pid
        assert wait_until(lambda: _inotify_fds(pid) == 1, 10), _inotify_fds(pid)
        # now on: an edit is enough
        with open(conf, "wb") as f:
            f.write(_conf(tmpdir, "a"))
        assert _generation(srv, 4), srv.stderr
        assert get(srv, "/v.txt").body == b"AAA"
        # and off again: the watches go (the handle stays); edits are not seen
        with open(conf, "w") as f:
            f.write("root %s/b\n" % tmpdir)
        assert _generation(srv, 5), srv.stderr
        assert "reload_on_change: watching" not in srv.stderr.split("(generation 5)")[1]
    finally:
        srv.stop()
