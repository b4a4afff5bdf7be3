"""error_log_format json: every line of the error log one JSON object {"time", "level",
"msg"} with the JSON access log's time format, through start-up, a reload the configuration
refuses (its FILE:LINE: reason is a logged message, not bare text), a SIGUSR1 reopen and a
stop; error_log_format plain keeps the "TIME [level] message" lines."""

import json
import os
import re
import signal
import socket
import subprocess

from lib.ops import run_lfhttpd, write_file
from lib.server import ConfServer, T, binary, free_port, get, wait_until

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
    # Once started, the stderr it was started with hears nothing: the errors that stop a start
    # are repeated there, a refused reload is the log's alone.
    assert "configuration not reloaded" not in srv.stderr, srv.stderr


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


def _json_lines(text):
    """Every line of `text` one error-log object (asserted): the objects."""
    out = []
    for line in text.splitlines():
        obj = json.loads(line)  # a plain line fails here
        assert sorted(obj) == ["level", "msg", "time"] and TIME_RE.match(obj["time"]), line
        out.append(obj)
    return out


def test_a_start_up_failure_after_the_configuration_is_read_is_a_json_line(tmpdir):
    """A port in use, or a Unix socket another server accepts on, is found once the
    configuration is accepted: the failure goes through the error log in its format (JSON here,
    on stderr and in a file), and the exit status is 2."""
    root = os.path.join(tmpdir, "www")
    write_file(os.path.join(root, "v.txt"), "v")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    sock_path = os.path.join(tmpdir, "other.sock")
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(sock_path)
    other.listen(1)
    as_root = ["--user", "root"] if os.geteuid() == 0 else []  # as Server does
    try:
        port = busy.getsockname()[1]
        cases = [("listen 127.0.0.1:%d" % port,
                  "listen 127.0.0.1:%d: Address already in use" % port),
                 ("listen unix:%s" % sock_path,
                  "listen unix:%s: another server accepts on this socket" % sock_path)]
        for listen, want in cases:
            conf = write_file(os.path.join(tmpdir, "t.conf"), "error_log_format json\n"
                              "root %s\n%s\n" % (root, listen))
            rc, out, err = run_lfhttpd(as_root + ["-c", conf])
            assert rc == 2 and out == "", (rc, out, err)
            objs = _json_lines(err)
            assert [o["msg"] for o in objs if o["level"] == "error"] == ["lfhttpd: " + want], err
            # The same into a file; the stderr it was started with (a terminal) still hears why,
            # plain, as nginx says it there too.
            log = os.path.join(tmpdir, "error.log")
            write_file(conf, "error_log %s\nerror_log_format json\nroot %s\n%s\n"
                       % (log, root, listen))
            rc, out, err = run_lfhttpd(as_root + ["-c", conf])
            assert rc == 2 and out == "" and err == "lfhttpd: %s\n" % want, (rc, out, err)
            with open(log) as f:
                objs = _json_lines(f.read())
            os.unlink(log)
            assert [o["msg"] for o in objs if o["level"] == "error"] == ["lfhttpd: " + want], objs
    finally:
        busy.close()
        other.close()


def _activated_failure(sockets_args, conf, poke):
    """lfhttpd -c conf under systemd-socket-activate (its arguments: sockets_args), started by
    poke() (retried while the activator is not there yet, bounded): (status, the server's
    stderr lines, after the activator's own)."""
    as_root = ["--user", "root"] if os.geteuid() == 0 else []
    cmd = ["systemd-socket-activate"] + sockets_args + [binary()] + as_root + ["-c", conf]
    for k, v in os.environ.items():
        if k.endswith("SAN_OPTIONS"):
            cmd[1:1] = ["-E", "%s=%s" % (k, v)]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        wait_until(lambda: poke() or proc.poll() is not None, 20, what="the activator")
        _, err = proc.communicate(timeout=T(20))
    finally:
        if proc.poll() is None:
            proc.kill()  # by its PID
            proc.wait()
    lines = err.decode().splitlines()
    execing = [i for i, l in enumerate(lines) if l.startswith("Execing ")]
    assert execing, lines
    return proc.returncode, lines[execing[0] + 1:]


def test_a_socket_from_systemd_that_is_refused_is_a_json_line(tmpdir):
    """Sockets systemd passed are taken before the configuration is built, but refusing one is
    not a configuration error: a datagram socket, and a socket no listener uses, each give one
    JSON error object and exit status 2."""
    conf = write_file(os.path.join(tmpdir, "t.conf"), "error_log_format json\nroot %s\n"
                      "listen 127.0.0.1:%d\n" % (tmpdir, free_port()))
    port = free_port()

    def datagram():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"x", ("127.0.0.1", port))  # lost while nothing listens: sent again
        s.close()
        return False

    rc, lines = _activated_failure(["--datagram", "-l", "127.0.0.1:%d" % port], conf, datagram)
    objs = _json_lines("\n".join(lines))
    assert rc == 2 and [o["level"] for o in objs] == ["error"], lines
    assert "passed by systemd is not a listening stream socket" in objs[0]["msg"], objs
    port = free_port()
    box = []

    def stream():
        try:
            box.append(socket.create_connection(("127.0.0.1", port), timeout=T(5)))
            return True
        except OSError:
            return False

    rc, lines = _activated_failure(["--fdname=http", "-l", "127.0.0.1:%d" % port], conf, stream)
    for s in box:
        s.close()
    objs = _json_lines("\n".join(lines))
    errors = [o["msg"] for o in objs if o["level"] == "error"]
    assert rc == 2 and len(errors) == 1, lines
    assert errors[0].startswith("lfhttpd: socket 'http' passed by systemd is used by no "
                                "listener"), errors
