"""Helpers for the operations tests (configuration, logs, proxies, auth, privileges).

    run_lfhttpd(args, cwd=None)        run the binary to completion: (status, stdout, stderr)
    write_file(path, text)             write text (str or bytes), return path
    logged_server(tmpdir, conf, fmt=None, log_name="access.log", **kw)
                                       a ConfServer on a fresh fixture tree that logs to
                                       tmpdir/log_name (access_log_format fmt): (server, LogFile)
    LogFile(path)                      follow an access log: wait_lines(n), lines()
    parse_clf(line) / CLF_RE           Combined Log Format, with nginx-style \\xHH escapes
    unescape_clf(field)                undo the \\xHH escapes of a CLF field
    proc_ids(pid)                      {'Uid': [...], 'Gid': [...], 'Groups': [...]} from /proc
"""

import json
import os
import re
import subprocess
import time

from .server import T, binary, fixture_server, sanitizer_report, wait_until


def run_lfhttpd(args, cwd=None, timeout=10):
    p = subprocess.run([binary()] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                       timeout=T(timeout))
    err = p.stderr.decode("utf-8", "replace")
    rep = sanitizer_report(err)
    assert rep is None, "sanitizer report:\n" + rep
    return p.returncode, p.stdout.decode("utf-8", "replace"), err


def write_file(path, content, mode=None):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)
    if mode is not None:
        os.chmod(path, mode)
    return path


def one_error_line(err):
    """The single non-empty stderr line (asserts there is exactly one)."""
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, "want exactly one stderr line, got %r" % err
    return lines[0]


def logged_server(tmpdir, conf="", fmt=None, log_name="access.log", **kw):
    """A ConfServer on a fresh fixture tree (tmpdir/root, .tree) writing its access log to
    tmpdir/log_name (.log_path; in the format fmt when given), then `conf`: (server, LogFile)."""
    log = os.path.join(tmpdir, log_name)
    s = fixture_server(tmpdir, "access_log %s\n%s%s" % (
        log, "access_log_format %s\n" % fmt if fmt else "", conf), **kw)
    s.log_path = log
    return s, LogFile(log)


class LogFile:
    """An access log file; lines are written after the response, so wait for them."""

    def __init__(self, path):
        self.path = path

    def raw(self):
        try:
            with open(self.path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""

    def lines(self):
        data = self.raw()
        assert data == b"" or data.endswith(b"\n"), "log ends with a partial line: %r" % data[-200:]
        return [l.decode("utf-8", "strict") for l in data.split(b"\n")[:-1]]

    def wait_lines(self, n, timeout=5.0, settle=0.0):
        """Wait until the file has at least n complete lines; returns all of them."""
        if not wait_until(lambda: self.raw().count(b"\n") >= n, timeout):
            data = self.raw()
            have = data.count(b"\n")
            assert have >= n, "%s: %d lines after %.0fs, want %d:\n%s" % (
                self.path, have, T(timeout), n, data[-2000:].decode("latin-1"))
        if settle:
            time.sleep(settle)
        return self.lines()


# Combined Log Format as nginx writes it: request-controlled fields between double quotes
# with '"', '\\', control and non-ASCII bytes as \xHH, "-" when absent.
_Q = r'"((?:[^"\\\x00-\x1f\x7f-\xff]|\\x[0-9A-Fa-f]{2})*)"'
CLF_RE = re.compile(
    r'^(?P<addr>[0-9A-Fa-f.:]+) - (?P<user>\S+) '
    r'\[(?P<time>\d{2}/(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)/\d{4}:\d{2}:\d{2}:\d{2} '
    r'[+-]\d{4})\] ' + _Q.replace("((", "(?P<request>(", 1) +
    r' (?P<status>\d{3}) (?P<bytes>\d+|-) ' + _Q.replace("((", "(?P<referer>(", 1) +
    r' ' + _Q.replace("((", "(?P<ua>(", 1) + r'$')


def short(text, n=160):
    """text, with the middle cut out if long (keeps assertion messages readable)."""
    r = repr(text)
    return r if len(r) <= 2 * n else "%s ...(%d chars)... %s" % (r[:n], len(r), r[-n:])


def parse_clf(line):
    m = CLF_RE.match(line)
    assert m, "not a Combined Log Format line: %s" % short(line)
    d = m.groupdict()
    d["timestamp"] = _timegm_with_offset(d["time"])
    return d


def _timegm_with_offset(s):
    import calendar
    tm = time.strptime(s[:-6], "%d/%b/%Y:%H:%M:%S")
    off = s[-5:]
    sign = 1 if off[0] == "+" else -1
    return calendar.timegm(tm) - sign * (int(off[1:3]) * 3600 + int(off[3:5]) * 60)


def unescape_clf(field):
    """A CLF field back to bytes ("-" stays "-")."""
    return re.sub(rb"\\x([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]),
                  field.encode("latin-1"))


def parse_json_line(line):
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise AssertionError("not a JSON line (%s): %s" % (e, short(line)))
    assert isinstance(obj, dict), line
    return obj


def json_bytes(s):
    """A JSON-logged string back to the request's bytes (the server writes bytes >= 0x80 as
    \\u00XX, i.e. code points U+0080..U+00FF)."""
    return s.encode("latin-1")


def proc_ids(pid, task=None):
    path = "/proc/%d/status" % pid if task is None else "/proc/%d/task/%d/status" % (pid, task)
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Uid", "Gid", "Groups"):
                out[k] = [int(x) for x in v.split()]
    return out
