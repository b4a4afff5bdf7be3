"""HTTP Basic authentication from an htpasswd file (bcrypt, SHA-crypt), 401 challenges, the
user in the access log, and refused hash formats (plain text, MD5)."""

import base64
import os
import re
import subprocess
import threading
import time
import warnings

import pytest

from lib.server import ConfServer, Conn, T, get, raw, req, wait_until
from lib.ops import LogFile, one_error_line, parse_clf, parse_json_line, run_lfhttpd, write_file

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt   # deprecated in 3.11, removed in 3.13

REALM = "Members Area"


def bcrypt_hash(pw):
    return crypt.crypt(pw, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** 4))


def sha512_hash(pw):
    return subprocess.run(["openssl", "passwd", "-6", pw], stdout=subprocess.PIPE,
                          check=True).stdout.decode().strip()


def sha256_hash(pw):
    return crypt.crypt(pw, crypt.mksalt(crypt.METHOD_SHA256))


def basic(user, pw):
    raw_ = (user + ":" + pw).encode("utf-8") if isinstance(user, str) else user + b":" + pw
    return "Basic " + base64.b64encode(raw_).decode()


USERS = {"alice": ("bcrypt", "wonder land"), "bob": ("sha512", "b0b:with:colons"),
         "carol": ("sha256", "c4rol"), "j\u00fcrgen": ("bcrypt", "p\u00e4ss\u20ac")}


def _htpasswd(tmpdir, users=USERS, extra=""):
    lines = ["# comment line", ""]
    for name, (kind, pw) in users.items():
        h = {"bcrypt": bcrypt_hash, "sha512": sha512_hash, "sha256": sha256_hash}[kind](pw)
        lines.append("%s:%s" % (name, h))
    return write_file(os.path.join(tmpdir, "htpasswd"), "\n".join(lines) + "\n" + extra)


def _start(tmpdir, json_log=False, **kw):
    root = os.path.join(tmpdir, "root")
    for rel in ("private/secret.txt", "private/pub/open.txt", "public/hello.txt",
                "privateer.txt"):
        write_file(os.path.join(root, rel), "content of %s\n" % rel)
    ht = _htpasswd(tmpdir)
    log = os.path.join(tmpdir, "access.log")
    conf = ("root %s\naccess_log %s\n%s"
            "location /private/ {\n"
            '    auth_basic "%s"\n'
            "    auth_basic_user_file %s\n"
            "}\n"
            "location /private/pub/ {\n"
            "    auth_basic off\n"
            "}\n" % (root, log, "access_log_format json\n" if json_log else "", REALM, ht))
    return ConfServer(tmpdir, conf, **kw), LogFile(log)


def _assert_challenge(r):
    assert r.status == 401, r
    assert r.header_all("WWW-Authenticate") == \
        ['Basic realm="%s", charset="UTF-8"' % REALM], r.headers
    assert b"secret" not in r.body


@pytest.fixture(scope="module")
def auth_srv(shared_server):
    """One server for the cases that only ask it something."""
    return shared_server(lambda d: _start(d)[0])


GOOD = base64.b64encode(b"alice:wonder land").decode()


def test_no_credentials_401(tmpdir):
    s, _ = _start(tmpdir)
    _assert_challenge(get(s, "/private/secret.txt"))
    _assert_challenge(get(s, "/private/"))
    _assert_challenge(get(s, "/private/no-such-file"))   # no existence oracle
    r = get(s, "/private/secret.txt", method="HEAD")
    _assert_challenge(r)


@pytest.mark.parametrize("user", sorted(USERS))
def test_right_credentials_200(auth_srv, user):
    kind, pw = USERS[user]
    r = get(auth_srv, "/private/secret.txt", headers={"Authorization": basic(user, pw)})
    assert r.status == 200 and r.body == b"content of private/secret.txt\n", (user, kind, r)
    assert r.header("WWW-Authenticate") is None, (user, r.headers)


def test_the_scheme_name_is_case_insensitive(auth_srv):
    r = get(auth_srv, "/private/secret.txt", headers={"Authorization": "bAsIc " + base64.b64encode(
        b"alice:wonder land").decode()})
    assert r.status == 200, r


@pytest.mark.parametrize("user,pw", [
    ("alice", "wrong"), ("alice", ""), ("alice", "wonder land "), ("alice", "Wonder land"),
    ("bob", "b0b"), ("bob", "b0b:with"), ("carol", "c4rol\x00"), ("ALICE", "wonder land"),
    ("nobody-here", "wonder land"), ("", "wonder land"), ("alice:wonder land", "")])
def test_wrong_credentials_401(auth_srv, user, pw):
    _assert_challenge(get(auth_srv, "/private/secret.txt",
                          headers={"Authorization": basic(user, pw)}))


def test_no_stale_acceptance(auth_srv):
    # right password, then a wrong one: no stale acceptance
    assert get(auth_srv, "/private/secret.txt",
               headers={"Authorization": basic("alice", "wonder land")}).status == 200
    _assert_challenge(get(auth_srv, "/private/secret.txt",
                          headers={"Authorization": basic("alice", "wonder lan")}))


@pytest.mark.parametrize("value", [
    "Basic", "Basic ", "Basic !!!!", "Basic " + GOOD[:-1], "Basic " + GOOD + "=",
    "Basic " + base64.b64encode(b"alice").decode(),          # no colon
    "Basic " + base64.b64encode(b"alice\x00:wonder land").decode(),
    "Basic " + "A" * 2000, "Bearer " + GOOD, "Digest username=\"alice\"",
    GOOD, "Basic" + GOOD, "Basic " + GOOD.replace("=", ""),
    "Basic =" + GOOD])
def test_malformed_authorization_401(auth_srv, value):
    r = get(auth_srv, "/private/secret.txt", headers={"Authorization": value})
    assert r.status in (401, 400), (value, r)
    if r.status == 401:
        _assert_challenge(r)
    assert get(auth_srv, "/public/hello.txt").status == 200   # still serving


def test_location_without_auth_unaffected(tmpdir):
    s, _ = _start(tmpdir)
    r = get(s, "/public/hello.txt")
    assert r.status == 200 and r.header("WWW-Authenticate") is None
    r = get(s, "/privateer.txt")             # shares a prefix with /private but not /private/
    assert r.status == 200, r
    r = get(s, "/private/pub/open.txt")      # auth_basic off in a nested location
    assert r.status == 200 and r.body == b"content of private/pub/open.txt\n", r
    r = get(s, "/public/hello.txt", headers={"Authorization": basic("alice", "wrong")})
    assert r.status == 200, "credentials on a public location must not matter"


@pytest.mark.parametrize("target", [
    "//private/secret.txt", "/./private/secret.txt", "/public/../private/secret.txt",
    "/%70rivate/secret.txt", "/private/./secret.txt", "/private//secret.txt",
    "/private/pub/../secret.txt", "/private/pub/%2e%2e/secret.txt",
    "/x/..%2fprivate/secret.txt", "/private/secret.txt?x=1",
    "http://localhost/private/secret.txt"])
def test_path_tricks_do_not_bypass_auth(auth_srv, target):
    r = raw(auth_srv, req("GET", target))
    assert r.status != 200 and b"content of private/secret" not in r.body, (target, r)


def test_access_log_shows_user(tmpdir):
    s, log = _start(tmpdir)
    assert get(s, "/private/secret.txt",
               headers={"Authorization": basic("alice", "wonder land")}).status == 200
    log.wait_lines(1)
    assert get(s, "/private/secret.txt",
               headers={"Authorization": basic("bob", "b0b:with:colons")}).status == 200
    log.wait_lines(2)
    assert get(s, "/public/hello.txt").status == 200
    log.wait_lines(3)
    assert get(s, "/private/secret.txt",
               headers={"Authorization": basic("j\u00fcrgen", "p\u00e4ss\u20ac")}).status == 200
    lines = log.wait_lines(4)
    d = [parse_clf(l) for l in lines]
    assert [x["user"] for x in d[:3]] == ["alice", "bob", "-"], lines
    assert d[0]["request"] == "GET /private/secret.txt HTTP/1.1" and d[0]["status"] == "200"
    # a non-ASCII user name is escaped like any request-controlled field
    assert d[3]["user"] in ("j\\xC3\\xBCrgen", "j\\xc3\\xbcrgen"), d[3]["user"]


def test_json_log_shows_user(tmpdir):
    s, log = _start(tmpdir, json_log=True)
    assert get(s, "/private/secret.txt",
               headers={"Authorization": basic("carol", "c4rol")}).status == 200
    o = parse_json_line(log.wait_lines(1)[0])
    assert o["remote_user"] == "carol", o


def test_concurrent_logins(tmpdir):
    s, _ = _start(tmpdir, threads=4)
    errors = []

    def work(k):
        try:
            with Conn(s) as c:
                for i in range(10):
                    user = ["alice", "bob", "carol"][(k + i) % 3]
                    pw = USERS[user][1] if (k + i) % 4 else "bad"
                    c.send(req("GET", "/private/secret.txt", {"Authorization": basic(user, pw)}))
                    r = c.read_response()
                    want = 200 if (k + i) % 4 else 401
                    if r.status != want:
                        errors.append((k, i, user, r.status))
        except Exception as e:
            errors.append((k, repr(e)))

    ts = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(T(60))
    assert not errors, errors[:5]


# ---- refused htpasswd entries -------------------------------------------------------------------

def _conf_with_htpasswd(tmpdir, ht_text):
    root = os.path.join(tmpdir, "root")
    write_file(os.path.join(root, "index.html"), "x")
    ht = write_file(os.path.join(tmpdir, "bad.htpasswd"), ht_text)
    conf = write_file(os.path.join(tmpdir, "auth.conf"),
                      'root %s\nlocation /p/ {\n  auth_basic "R"\n  auth_basic_user_file %s\n}\n'
                      % (root, ht))
    return conf, ht


def _md5_apr1():
    return subprocess.run(["openssl", "passwd", "-apr1", "pw"], stdout=subprocess.PIPE,
                          check=True).stdout.decode().strip()


@pytest.mark.parametrize("args", ["-t", "start"])
@pytest.mark.parametrize("bad", [
    "alice:plaintext", "APR1", "alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
    "alice:" + crypt.crypt("pw", "ab"),                      # DES crypt
    "alice:$1$abc$" + "x" * 22,                               # MD5-crypt
    "alice:", "no-colon-at-all"])
def test_refused_hash_formats(tmpdir, bad, args):
    if bad == "APR1":
        bad = "alice:" + _md5_apr1()
    good = "ok:" + bcrypt_hash("x") + "\n"
    conf, ht = _conf_with_htpasswd(tmpdir, "# users\n" + good + bad + "\n")
    args = (["-t", "-c", conf] if args == "-t" else
            ["-c", conf, "--listen", "127.0.0.1:0", "--user", "root"])
    rc, out, err = run_lfhttpd(args)
    assert rc == 2, (bad, args, rc, err)
    line = one_error_line(err)
    assert line.startswith(ht + ":3: "), "want '%s:3: reason' for %r, got %r" % (ht, bad, line)
    assert "listening on" not in err


def test_user_file_without_users_or_missing(tmpdir):
    conf, ht = _conf_with_htpasswd(tmpdir, "# nobody\n")
    rc, out, err = run_lfhttpd(["-t", "-c", conf])
    assert rc == 2 and ht in one_error_line(err), err
    os.unlink(ht)
    rc, out, err = run_lfhttpd(["-t", "-c", conf])
    assert rc == 2 and ht in one_error_line(err), err


def test_auth_basic_without_user_file(tmpdir):
    root = os.path.join(tmpdir, "root")
    write_file(os.path.join(root, "index.html"), "x")
    conf = write_file(os.path.join(tmpdir, "a.conf"),
                      'root %s\nlocation /p/ {\n  auth_basic "R"\n}\n' % root)
    rc, out, err = run_lfhttpd(["-t", "-c", conf])
    assert rc == 2, (rc, err)
    assert re.search("auth_basic_user_file", one_error_line(err)), err


def test_bad_realm_rejected(tmpdir):
    root = os.path.join(tmpdir, "root")
    write_file(os.path.join(root, "index.html"), "x")
    for realm in ('"a\\"b"', '"back\\\\slash"'):
        conf = write_file(os.path.join(tmpdir, "a.conf"),
                          "root %s\nlocation /p/ {\n  auth_basic %s\n}\n" % (root, realm))
        rc, out, err = run_lfhttpd(["-t", "-c", conf])
        assert rc == 2 and one_error_line(err).startswith(conf + ":3: "), (realm, rc, err)


def test_reload_with_changed_password(tmpdir):
    # After SIGHUP with a changed user file, the old password stops working at once (verified
    # credentials may be cached, but never across configuration generations), and an index into
    # the old user list never applies to the new one.
    import signal
    root = os.path.join(tmpdir, "root")
    write_file(os.path.join(root, "p", "x.txt"), "private\n")
    ht = os.path.join(tmpdir, "htpasswd")
    write_file(ht, "alice:%s\nbob:%s\n" % (bcrypt_hash("old-a"), bcrypt_hash("old-b")))
    log = os.path.join(tmpdir, "access.log")
    conf = ('root %s\naccess_log %s\nlocation /p/ {\n  auth_basic "R"\n'
            '  auth_basic_user_file %s\n}\n' % (root, log, ht))
    s = ConfServer(tmpdir, conf, threads=1)
    assert get(s, "/p/x.txt", headers={"Authorization": basic("bob", "old-b")}).status == 200
    assert get(s, "/p/x.txt", headers={"Authorization": basic("alice", "old-a")}).status == 200
    write_file(ht, "carol:%s\n" % bcrypt_hash("new-c"))
    for gen in range(2, 22):
        s.signal(signal.SIGHUP)
        wait_until(lambda: "generation %d" % gen in s.stderr, what="reload %d" % gen)
        for user, pw in (("alice", "old-a"), ("bob", "old-b")):
            r = get(s, "/p/x.txt", headers={"Authorization": basic(user, pw)})
            if r.status != 401:
                time.sleep(0.2)
                raise AssertionError("generation %d: %s's old password still accepted; access "
                                     "log:\n%s" % (gen, user, open(log).read()))
        assert get(s, "/p/x.txt", headers={"Authorization": basic("carol", "new-c")}).status == 200
