"""tls_session_ticket_key_file: replicas given the same key file resume each other's
sessions; other keys do not; rotation by replacing the file (and a second key that still opens
tickets); bad files are configuration errors. Sessions are carried between servers with
`openssl s_client -sess_out / -sess_in`, which says "Reused" or "New"."""

import os
import signal
import subprocess

from lib.server import binary, wait_until
from lib.tls import s_client, tls_server

REQUEST = b"GET /one.txt HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"


def _keyfile(tmpdir, name, nkeys=1, keys=None):
    path = os.path.join(tmpdir, name)
    data = keys if keys is not None else os.urandom(80 * nkeys)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)
    return path


def _replica(tmpdir, name, keyfile, extra=()):
    d = os.path.join(tmpdir, name)
    os.makedirs(d)
    lines = ["tls_session_ticket_key_file %s" % keyfile] if keyfile else []
    return tls_server(d, extra=lines + list(extra))


def _base(srv, proto):
    return ["-servername", "a.test", "-CAfile", srv.pki.ca, "-ign_eof", proto]


def _new_session(srv, tmpdir, name, proto):
    """A full handshake with `srv`; returns the file holding its session (and ticket)."""
    sess = os.path.join(tmpdir, name)
    rc, out = s_client(srv.https, _base(srv, proto) + ["-sess_out", sess], REQUEST)
    assert "New," in out and "HTTP/1.1 200 OK" in out, out
    assert os.path.getsize(sess) > 0, "no session written"
    return sess


def _resume(srv, sess, proto):
    """'Reused' or 'New': what `srv` made of the session in `sess`."""
    rc, out = s_client(srv.https, _base(srv, proto) + ["-sess_in", sess], REQUEST)
    assert "HTTP/1.1 200 OK" in out, out
    assert ("Reused," in out) != ("New," in out), out
    return "Reused" if "Reused," in out else "New"


def test_replicas_with_the_same_key_file_resume_each_others_sessions(tmpdir):
    shared = _keyfile(tmpdir, "shared.key")
    a = _replica(tmpdir, "a", shared)
    b = _replica(tmpdir, "b", shared)
    other = _replica(tmpdir, "other", _keyfile(tmpdir, "other.key"))
    generated = _replica(tmpdir, "generated", None)
    for proto in ("-tls1_3", "-tls1_2"):
        p = proto[1:]
        from_a = _new_session(a, tmpdir, "a." + p, proto)
        assert _resume(b, from_a, proto) == "Reused", "same key file, other replica: " + p
        from_b = _new_session(b, tmpdir, "b." + p, proto)
        assert _resume(a, from_b, proto) == "Reused", "and the other way: " + p
        assert _resume(other, from_a, proto) == "New", "another key file must not open it: " + p
        assert _resume(generated, from_a, proto) == "New", "generated keys must not open it: " + p
        # and the control: generated keys are each instance's own
        from_gen = _new_session(generated, tmpdir, "g." + p, proto)
        assert _resume(a, from_gen, proto) == "New", p


def test_rotation_by_replacing_the_file(tmpdir):
    old = os.urandom(80)
    new = os.urandom(80)
    keyfile = _keyfile(tmpdir, "ticket.key", keys=old)
    a = _replica(tmpdir, "a", keyfile)
    proto = "-tls1_3"
    sess_old = _new_session(a, tmpdir, "old", proto)
    # step 1 of a rotation: the new key is added second on every replica (opens, does not seal)
    b = _replica(tmpdir, "b", _keyfile(tmpdir, "b.key", keys=old + new))
    assert _resume(b, sess_old, proto) == "Reused"
    sess_b = _new_session(b, tmpdir, "b1", proto)
    assert _resume(a, sess_b, proto) == "Reused", "b still seals with the old key"
    # step 2: the new key first, the old one second; a reload takes the replaced file
    with open(keyfile + ".tmp", "wb") as f:
        f.write(new + old)
    os.rename(keyfile + ".tmp", keyfile)
    a.signal(signal.SIGHUP)
    assert wait_until(lambda: "configuration reloaded (generation 2)" in a.stderr, 10), a.stderr
    assert _resume(a, sess_old, proto) == "Reused", "the second key still opens old tickets"
    sess_new = _new_session(a, tmpdir, "new", proto)
    assert _resume(b, sess_new, proto) == "Reused", "b opens tickets sealed with the new key"
    # step 3: the old key removed: its tickets are no longer accepted
    with open(keyfile + ".tmp", "wb") as f:
        f.write(new)
    os.rename(keyfile + ".tmp", keyfile)
    a.signal(signal.SIGHUP)
    assert wait_until(lambda: "configuration reloaded (generation 3)" in a.stderr, 10), a.stderr
    assert _resume(a, sess_old, proto) == "New"
    assert _resume(a, sess_new, proto) == "Reused"


def test_bad_key_files_are_configuration_errors(tmpdir):
    def check(keyfile_line, expect, extra=()):
        conf = os.path.join(tmpdir, "bad.conf")
        with open(conf, "w") as f:
            f.write("# tickets\n%s\n" % keyfile_line + "".join(l + "\n" for l in extra))
        p = subprocess.run([binary(), "-t", "-c", conf], capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 2 and expect(conf, p.stderr), p.stderr
    short = _keyfile(tmpdir, "short.key", keys=os.urandom(79))
    check("tls_session_ticket_key_file " + short, lambda c, e: e.startswith(
        c + ":2: tls_session_ticket_key_file %s: 79 bytes; expected 1 to 8 keys of 80 bytes" % short))
    odd = _keyfile(tmpdir, "odd.key", keys=os.urandom(81))
    check("tls_session_ticket_key_file " + odd, lambda c, e: "81 bytes" in e and c + ":2:" in e)
    many = _keyfile(tmpdir, "many.key", keys=os.urandom(80 * 9))
    check("tls_session_ticket_key_file " + many, lambda c, e: "more than 640 bytes" in e)
    empty = _keyfile(tmpdir, "empty.key", keys=b"")
    check("tls_session_ticket_key_file " + empty, lambda c, e: "0 bytes" in e)
    missing = os.path.join(tmpdir, "missing.key")
    check("tls_session_ticket_key_file " + missing,
          lambda c, e: e.startswith(c + ":2: tls_session_ticket_key_file %s: No such file" % missing))
    good = _keyfile(tmpdir, "good.key", nkeys=8)
    check("tls_session_ticket_key_file " + good,
          lambda c, e: "tls_session_ticket_rotation 0 turns off" in e,
          extra=["tls_session_ticket_rotation 0"])


def test_tls13_resumption_on_a_replica_gets_a_fresh_ticket_the_others_open(tmpdir):
    # RFC 8446 C.4: a client uses a ticket once; the replica that resumed the session gives it
    # a new one, sealed with the shared key, so the next connection resumes on any replica.
    shared = _keyfile(tmpdir, "shared.key")
    a = _replica(tmpdir, "a", shared)
    b = _replica(tmpdir, "b", shared)
    first = _new_session(a, tmpdir, "first", "-tls1_3")
    second = os.path.join(tmpdir, "second")
    rc, out = s_client(b.https, _base(b, "-tls1_3") + ["-sess_in", first, "-sess_out", second],
                       REQUEST)
    assert "Reused, TLSv1.3" in out, out
    assert out.count("Post-Handshake New Session Ticket arrived") == 1, out
    with open(first, "rb") as f1, open(second, "rb") as f2:
        assert f1.read() != f2.read(), "no new ticket after the resumption"
    assert _resume(a, second, "-tls1_3") == "Reused"
