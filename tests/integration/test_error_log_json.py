"""error_log_format json: every line of the error log one JSON object {"time", "level",
"msg"} with the JSON access log's time format, through start-up, a reload the configuration
refuses (its FILE:LINE: reason is a logged message, not bare text), a SIGUSR1 reopen and a
stop; error_log_format plain keeps the "TIME [level] message" lines."""

import json
import os
import re
import signal

from lib.ops import run_lfhttpd, write_file
from lib.server import ConfServer, get, wait_until

TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def _objects(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), data[-200:]
    out = []
    for line in data.decode("utf-8").split("\n")[:-1]:
        obj = json.loads(line)  # every line, or the test fails here
        assert sorted(obj) == ["level", "msg", "time"], line
        assert TIME_RE.match(obj["time"]), line
        assert obj["level"] in ("error", "warn", "notice", "info", "debug"), line
        out.append(obj)
    return out


def _has(path, level, needle):
    try:
        return any(o["level"] == level and needle in o["msg"] for o in _objects(path))
    except (OSError, AssertionError, ValueError):
        return False


def test_every_line_of_a_json_error_log_is_an_object(tmpdir):
    root = os.path.join(tmpdir, "www")
    write_file(os.path.join(root, "v.txt"), "v")
    log = os.path.join(tmpdir, "error.log")
    conf = "error_log %s\nerror_log_format json\nlog_level info\nroot %s\n" % (log, root)
    srv = ConfServer(tmpdir, conf, error_log=log)
    try:
        assert get(srv, "/v.txt").status == 200
        assert _has(log, "notice", "listening on http://127.0.0.1:%d" % srv.port)
        # A reload the configuration refuses: its reason is a message of its own.
        write_file(srv.conf_path, conf + "threads lots\n")
        srv.signal(signal.SIGHUP)
        assert wait_until(lambda: _has(log, "error", "configuration not reloaded"), 15), \
            open(log).read()
        assert _has(log, "error", "%s:5: invalid value 'lots' for 'threads'" % srv.conf_path)
        # A reopen: the renamed file and the new one, both all JSON.
        os.rename(log, log + ".1")
        srv.signal(signal.SIGUSR1)
        assert wait_until(lambda: _has(log, "notice", "SIGUSR1: log files reopened"), 15)
        assert get(srv, "/v.txt").status == 200
    finally:
        srv.stop()
    assert srv.returncode == 0
    assert _has(log, "notice", "SIGTERM received"), open(log).read()
    assert _objects(log + ".1") and _objects(log)


def test_a_message_with_quotes_and_control_bytes_stays_one_object(tmpdir):
    root = os.path.join(tmpdir, "www")
    write_file(os.path.join(root, "v.txt"), "v")
    log = os.path.join(tmpdir, "error.log")
    conf = "error_log %s\nerror_log_format json\nroot %s\n" % (log, root)
    srv = ConfServer(tmpdir, conf, error_log=log)
    try:
        write_file(srv.conf_path, conf + "access_log_format \"a\\\"b\tc\\\\\"\n")
        srv.signal(signal.SIGHUP)
        assert wait_until(lambda: _has(log, "error", "configuration not reloaded"), 15)
        assert _has(log, "error", "invalid access_log_format 'a\"b\tc\\'"), open(log).read()
    finally:
        srv.stop()
    assert srv.returncode == 0


def test_error_log_format_takes_plain_or_json(tmpdir):
    path = write_file(os.path.join(tmpdir, "t.conf"), "root /\nerror_log_format yaml\n")
    rc, _, err = run_lfhttpd(["-t", "-c", path])
    assert rc == 2 and err.strip() == \
        "%s:2: invalid error_log_format 'yaml' (plain or json)" % path, err
    root = os.path.join(tmpdir, "www")
    write_file(os.path.join(root, "v.txt"), "v")
    log = os.path.join(tmpdir, "plain.log")
    srv = ConfServer(tmpdir, "error_log %s\nerror_log_format plain\nroot %s\n" % (log, root),
                     error_log=log)
    srv.stop()
    assert srv.returncode == 0
    lines = open(log).read().splitlines()
    assert lines and all(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \[\w+\] ", l)
                         for l in lines), lines
