"""Configuration from the environment and from several files: ${NAME} and ${NAME:-default} in
any value, `include FILE|PATTERN` (relative to the including file, in name order, cycles
refused), errors as FILE:LINE: reason, and reload_on_change for the files a pattern adds."""

import json
import os
import re
import signal
import subprocess

import pytest

from lib.ops import one_error_line, run_lfhttpd, write_file
from lib.server import ConfServer, Server, T, binary, free_port, get, wait_until


def _site(tmpdir, name):
    root = os.path.join(tmpdir, name)
    write_file(os.path.join(root, "v.txt"), name.upper() * 3)
    return root


def _check(tmpdir, path, env=None):
    """lfhttpd -t -c PATH with the environment given: (status, stdout, stderr)."""
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        return run_lfhttpd(["-t", "-c", path], cwd="/")
    finally:
        os.environ.clear()
        os.environ.update(old)


def _error(tmpdir, path, env=None):
    rc, _, err = _check(tmpdir, path, env)
    assert rc == 2, (rc, err)
    return one_error_line(err)


def test_variables_and_defaults_fill_values(tmpdir):
    a = _site(tmpdir, "a")
    conf = write_file(os.path.join(tmpdir, "lfhttpd.conf"),
                      "root ${LF_TEST_ROOT}\n"
                      "add_header X-Env \"${LF_TEST_GREETING:-hello} from ${LF_TEST_WHO}\"\n"
                      "add_header X-Literal \"$${LF_TEST_WHO} $x\"\n")
    env = dict(os.environ, LF_TEST_ROOT=a, LF_TEST_WHO="env")
    env.pop("LF_TEST_GREETING", None)
    srv = Server(args=["--config", conf], env=env)
    try:
        r = get(srv, "/v.txt")
        assert r.status == 200 and r.body == b"AAA", r
        assert r.header("X-Env") == "hello from env", r.headers
        assert r.header("X-Literal") == "${LF_TEST_WHO} $x", r.headers
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_an_unset_variable_without_default_is_refused_at_its_line(tmpdir):
    path = write_file(os.path.join(tmpdir, "t.conf"), "threads 2\nroot ${LF_TEST_NOPE}/www\n")
    line = _error(tmpdir, path, {})
    assert line == ("%s:2: environment variable LF_TEST_NOPE is not set (give a default: "
                    "${LF_TEST_NOPE:-VALUE})" % path), line
    path = write_file(os.path.join(tmpdir, "u.conf"), "root /srv\nthreads ${LF_TEST_N\n")
    assert re.match(r"%s:2: bad variable reference '\$\{LF_TEST_N'" % re.escape(path),
                    _error(tmpdir, path)), path


def test_a_value_from_the_environment_stays_out_of_the_check_output(tmpdir):
    root = _site(tmpdir, "a")
    path = write_file(os.path.join(tmpdir, "t.conf"),
                      "root %s\nadd_header X-Token \"${LF_TEST_SECRET}\"\n" % root)
    rc, out, err = _check(tmpdir, path, {"LF_TEST_SECRET": "s3cr3t-value"})
    assert rc == 0, err
    assert "s3cr3t-value" not in out + err, (out, err)
    # The same value where -t has something to say about it: the message quotes the line's
    # value, and it shows the reference (without the hiding, the value would be there).
    path = write_file(os.path.join(tmpdir, "u.conf"),
                      "root %s\nadd_header X-Token \"${LF_TEST_SECRET}\"\n"
                      "expires \"${LF_TEST_SECRET}\"\n" % root)
    rc, out, err = _check(tmpdir, path, {"LF_TEST_SECRET": "s3cr3t-value"})
    assert rc == 2 and out == "", (rc, out, err)
    line = one_error_line(err)
    assert line.startswith("%s:3: " % path) and "'${LF_TEST_SECRET}'" in line, line
    assert "s3cr3t" not in line, line


def _swap(link, target):
    """A deploy's swap: a new symlink renamed over the old one."""
    tmp = link + ".tmp"
    os.symlink(target, tmp)
    os.rename(tmp, link)


def _log_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


@pytest.mark.parametrize("fmt", ["plain", "json"])
def test_a_root_from_the_environment_stays_hidden_on_runtime_lines(tmpdir, fmt):
    """root ${SITE_ROOT} and a symlink swap: the tick thread's root_follow lines, a reload the
    new release makes fail and the one that succeeds all show ${SITE_ROOT}, never its value,
    in either error log format."""
    releases = os.path.join(tmpdir, "releases")
    for n in (1, 2, 3):
        write_file(os.path.join(releases, str(n), "v.txt"), "release %d" % n)
    # Release 2 has a _redirects file the configuration refuses: its path is quoted.
    write_file(os.path.join(releases, "2", "_redirects"), "/a /b 302\n/c\n")
    current = os.path.join(tmpdir, "cur-s3cret-site")
    os.symlink("releases/1", current)
    log = os.path.join(tmpdir, "error.log")
    env = dict(os.environ, SITE_ROOT=current)
    srv = ConfServer(tmpdir, "error_log %s\nerror_log_format %s\nlog_level info\n"
                     "site_rules_files on\nroot ${SITE_ROOT}\n" % (log, fmt),
                     error_log=log, env=env)
    try:
        assert get(srv, "/v.txt").body == b"release 1"
        _swap(current, "releases/2")
        assert wait_until(lambda: "configuration not reloaded" in _log_text(log), 15), \
            _log_text(log)
        _swap(current, "releases/3")
        assert wait_until(lambda: "configuration reloaded (generation 2)" in _log_text(log),
                          15), _log_text(log)
        assert get(srv, "/v.txt").body == b"release 3"
    finally:
        srv.stop()
    assert srv.returncode == 0
    text = _log_text(log)
    lines = [json.loads(l)["msg"] for l in text.splitlines()] if fmt == "json" else \
        text.splitlines()
    want = ["root_follow: ${SITE_ROOT} now names another directory: building a new generation",
            "${SITE_ROOT}/_redirects:2: missing target after '/c'",
            "root ${SITE_ROOT} -> releases/3: switched (generation 2)"]
    for w in want:
        assert any(l.endswith(w) for l in lines), (w, text)
    assert "s3cret" not in text + srv.stderr, text


def test_short_or_embedded_values_stay_readable_on_runtime_lines(tmpdir):
    """The process-wide hiding leaves a value shorter than 4 bytes alone, and one that is only a
    piece of a longer word: a header's value "2" leaves "2 threads" as it is, "listen" leaves
    "listening"; and a listener's address (shown on purpose) is printed."""
    root = _site(tmpdir, "a")
    log = os.path.join(tmpdir, "error.log")
    port = free_port()
    env = dict(os.environ, LF_T_N="2", LF_T_ROOT=root, LF_T_WORD="listen",
               LF_T_PORT=str(port))
    srv = ConfServer(tmpdir, "error_log %s\nlisten 127.0.0.1:${LF_T_PORT}\n"
                     "root ${LF_T_ROOT}\nadd_header X-N ${LF_T_N}\n"
                     "add_header X-W ${LF_T_WORD}\nadd_header X-P ${LF_T_PORT}\n" % log,
                     error_log=log, env=env, threads=2, listen=())
    try:
        assert get(srv, "/v.txt").body == b"AAA"
    finally:
        srv.stop()
    assert srv.returncode == 0
    text = _log_text(log)
    assert "serving ${LF_T_ROOT} with 2 threads" in text, text
    # "listening on" contains the value "listen" but not at a word's end: kept as it is.
    assert "listening on http://127.0.0.1:%d" % port in text, text
    assert "${LF_T_WORD}" not in text and "${LF_T_N}" not in text, text


def test_include_a_pattern_in_name_order_relative_to_the_including_file(tmpdir):
    a, b = _site(tmpdir, "a"), _site(tmpdir, "b")
    confdir = os.path.join(tmpdir, "etc")
    write_file(os.path.join(confdir, "conf.d", "20-b.conf"),
               "server b.test {\n    root %s\n}\nadd_header X-Order two\n" % b)
    write_file(os.path.join(confdir, "conf.d", "10-a.conf"),
               "server a.test {\n    root %s\n}\nadd_header X-Order one\n" % a)
    write_file(os.path.join(confdir, "conf.d", "notes.txt"), "not a configuration\n")
    write_file(os.path.join(confdir, "conf.d", "empty", ".keep"), "")
    conf = write_file(os.path.join(confdir, "lfhttpd.conf"),
                      "root %s\ninclude conf.d/*.conf\ninclude conf.d/empty/*.conf\n" % a)
    # Started from another directory: the pattern is the including file's, not the cwd's.
    srv = Server(args=["--config", conf], cwd="/")
    try:
        ra = get(srv, "/v.txt", headers=[("Host", "a.test")])
        rb = get(srv, "/v.txt", headers=[("Host", "b.test")])
        assert (ra.status, ra.body, rb.status, rb.body) == (200, b"AAA", 200, b"BBB"), (ra, rb)
        assert [v for k, v in ra.headers if k.lower() == "x-order"] == ["one", "two"], ra.headers
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_include_inside_a_block_and_blocks_stay_in_their_file(tmpdir):
    a = _site(tmpdir, "a")
    write_file(os.path.join(a, "x", "v.txt"), "XXX")
    write_file(os.path.join(tmpdir, "locs.conf"), "location /x/ {\n    add_header X-Loc yes\n}\n")
    conf = write_file(os.path.join(tmpdir, "main.conf"),
                      "root %s\nserver a.test {\n    include locs.conf\n}\n" % a)
    srv = Server(args=["--config", conf])
    try:
        r = get(srv, "/x/v.txt", headers=[("Host", "a.test")])
        assert r.status == 200 and r.header("X-Loc") == "yes", r
    finally:
        srv.stop()
    closer = write_file(os.path.join(tmpdir, "closer.conf"), "add_header X-A 1\n}\n")
    main = write_file(os.path.join(tmpdir, "m2.conf"),
                      "root %s\nserver a.test {\n    include closer.conf\n}\n" % a)
    assert _error(tmpdir, main) == "%s:2: unexpected '}'" % closer
    opener = write_file(os.path.join(tmpdir, "opener.conf"), "\nlocation /y/ {\n")
    main = write_file(os.path.join(tmpdir, "m3.conf"), "root %s\ninclude opener.conf\n" % a)
    assert _error(tmpdir, main) == "%s:2: 'location' block opened here is not closed" % opener


def test_include_errors_name_the_include_line(tmpdir):
    a = _site(tmpdir, "a")
    missing = write_file(os.path.join(tmpdir, "m.conf"), "root %s\ninclude nope.conf\n" % a)
    assert _error(tmpdir, missing) == "%s:2: include: cannot open %s: No such file or directory" \
        % (missing, os.path.join(tmpdir, "nope.conf"))
    two = write_file(os.path.join(tmpdir, "two.conf"), "include a.conf b.conf\n")
    assert _error(tmpdir, two) == "%s:1: 'include' takes one file name or pattern" % two
    # a.conf -> b.conf -> a.conf
    write_file(os.path.join(tmpdir, "a.conf"), "root %s\ninclude b.conf\n" % a)
    b = write_file(os.path.join(tmpdir, "b.conf"), "\n\ninclude a.conf\n")
    assert _error(tmpdir, os.path.join(tmpdir, "a.conf")) == \
        "%s:3: include cycle: %s is already being read" % (b, os.path.join(tmpdir, "a.conf"))
    selfish = write_file(os.path.join(tmpdir, "self.conf"), "include *.conf\n")
    assert "include cycle" in _error(tmpdir, selfish)
    # An error inside an included file names that file and its line.
    write_file(os.path.join(tmpdir, "d", "bad.conf"), "threads 2\nthreads many\n")
    top = write_file(os.path.join(tmpdir, "top.conf"), "root %s\ninclude d/*.conf\n" % a)
    line = _error(tmpdir, top)
    assert line.startswith("%s:2: " % os.path.join(tmpdir, "d", "bad.conf")), line


def test_a_file_added_to_an_included_pattern_reloads(tmpdir):
    a, b = _site(tmpdir, "a"), _site(tmpdir, "b")
    confd = os.path.join(tmpdir, "conf.d")
    os.makedirs(confd)
    srv = ConfServer(tmpdir, "reload_on_change on\nlog_level info\nroot %s\n"
                     "include conf.d/*.conf\n" % a)
    try:
        assert get(srv, "/v.txt").body == b"AAA"
        tmp = os.path.join(confd, ".new")
        write_file(tmp, "root %s\n" % b)
        os.rename(tmp, os.path.join(confd, "site.conf"))
        assert wait_until(lambda: "configuration reloaded (generation 2)" in srv.stderr, 15), \
            srv.stderr
        assert get(srv, "/v.txt").body == b"BBB"
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_an_invalid_value_from_the_environment_is_named_by_its_reference(tmpdir):
    """The error shows ${NAME} as written, never the value (it may be a secret), whether the
    message quotes the whole value or a piece of it."""
    path = write_file(os.path.join(tmpdir, "t.conf"), "root /\nthreads ${LF_SECRET}\n")
    line = _error(tmpdir, path, {"LF_SECRET": "s3cret"})
    assert line == "%s:2: invalid value '${LF_SECRET}' for 'threads' (1..1024)" % path, line
    path = write_file(os.path.join(tmpdir, "u.conf"),
                      "root ${LF_SECRET_DIR}/gone\n")
    line = _error(tmpdir, path, {"LF_SECRET_DIR": os.path.join(tmpdir, "s3cret-dir")})
    assert line.startswith("%s:1: root ${LF_SECRET_DIR}/gone: " % path), line
    assert "s3cret" not in line, line
    # A handler type's own directive (the static handler's) is no exception.
    path = write_file(os.path.join(tmpdir, "v.conf"), "root /\nexpires ${LF_SECRET}\n")
    line = _error(tmpdir, path, {"LF_SECRET": "s3cret"})
    assert line.startswith("%s:2: " % path) and "${LF_SECRET}" in line, line
    assert "s3cret" not in line, line


def test_a_reload_names_the_reference_in_the_error_log_not_the_value(tmpdir):
    a = _site(tmpdir, "a")
    log = os.path.join(tmpdir, "error.log")
    env = dict(os.environ, LF_SECRET="s3cret")
    srv = ConfServer(tmpdir, "error_log %s\nroot %s\n" % (log, a), error_log=log, env=env)
    try:
        write_file(srv.conf_path, "error_log %s\nroot %s\nleader_batch ${LF_SECRET}\n" % (log, a))
        srv.signal(signal.SIGHUP)
        assert wait_until(lambda: "configuration not reloaded" in open(log).read(), 15), \
            open(log).read()
        text = open(log).read()
        assert "%s:3: invalid value '${LF_SECRET}' for 'leader_batch'" % srv.conf_path in text, \
            text
        assert "s3cret" not in text + srv.stderr, text
        assert get(srv, "/v.txt").body == b"AAA"
    finally:
        srv.stop()
    assert srv.returncode == 0


def _env_without_lfhttpd(**kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LFHTTPD_")}
    env.update(kw)
    return env


def test_lfhttpd_variables_stand_for_their_flags(tmpdir):
    a, b = _site(tmpdir, "a"), _site(tmpdir, "b")
    p1, p2 = free_port(), free_port()
    conf = write_file(os.path.join(tmpdir, "lfhttpd.conf"), "threads 1\n")
    env = _env_without_lfhttpd(LFHTTPD_LISTEN="127.0.0.1:%d, 127.0.0.1:%d" % (p1, p2),
                               LFHTTPD_ROOT=a, LFHTTPD_THREADS="3", LFHTTPD_CONFIG=conf,
                               LFHTTPD_CONCURRENCY="half-sync-half-async")
    # concurrency=False: the variable chooses the strategy, not the suite's --concurrency flag
    srv = Server(listen=(), threads=None, env=env, expect_listeners=2, concurrency=False)
    try:
        assert {srv.addr(0), srv.addr(1)} == {("127.0.0.1", p1), ("127.0.0.1", p2)}
        assert get(("127.0.0.1", p2), "/v.txt").body == b"AAA"
        # the variable's threads over the file's (LFHTTPD_CONFIG was read), and the model
        # (the start-up line is written before the first answer, but read by another thread)
        assert wait_until(lambda: "with 3 threads (half-sync-half-async;" in srv.stderr, 10), \
            srv.stderr
        assert "serving ${LFHTTPD_ROOT} with" in srv.stderr and a not in srv.stderr, srv.stderr
    finally:
        srv.stop()
    assert srv.returncode == 0
    # The command line wins: its --listen replaces the variable's, its ROOT the variable's.
    env = _env_without_lfhttpd(LFHTTPD_LISTEN="127.0.0.1:%d" % p1, LFHTTPD_ROOT=a,
                               LFHTTPD_THREADS="3")
    srv = Server(listen=("127.0.0.1:0",), threads=2, args=[b], env=env)
    try:
        assert len(srv.listeners) == 1 and srv.port != p1, srv.listeners
        assert get(srv, "/v.txt").body == b"BBB"
        assert wait_until(lambda: "with 2 threads" in srv.stderr, 10), srv.stderr
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_a_bad_lfhttpd_variable_is_named_not_quoted(tmpdir):
    env = _env_without_lfhttpd(LFHTTPD_THREADS="s3cret")
    p = subprocess.run([binary(), "-t", "--root", tmpdir], env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(10))
    err = p.stderr.decode()
    assert p.returncode == 2 and err.strip() == (
        "lfhttpd: LFHTTPD_THREADS: invalid value '${LFHTTPD_THREADS}' for 'threads' (1..1024)"), err
    env = _env_without_lfhttpd(LFHTTPD_LISTEN="127.0.0.1:1, nonsense")
    p = subprocess.run([binary(), "-t", "--root", tmpdir], env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(10))
    err = p.stderr.decode()
    assert p.returncode == 2 and err.startswith("lfhttpd: LFHTTPD_LISTEN: "), err
    assert "nonsense" not in err, err
