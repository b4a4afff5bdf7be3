"""Privilege drop: started as root, lfhttpd binds, then runs as the configured user and group
(default nobody), observed in /proc/PID/status; it stays root only when told to."""

import grp
import os
import pwd
import re
import signal
import socket

from lib.server import ConfServer, Server, free_port, get, port_is_free, wait_until
from lib.ops import LogFile, one_error_line, parse_clf, proc_ids, run_lfhttpd, write_file

IS_ROOT = os.geteuid() == 0


def _public_root(tmpdir):
    """A docroot nobody can read (tmpdir itself is 0700)."""
    os.chmod(tmpdir, 0o755)
    root = os.path.join(tmpdir, "www")
    write_file(os.path.join(root, "index.html"), "public index\n", 0o644)
    write_file(os.path.join(root, "root-only.txt"), "only root may read this\n", 0o600)
    os.chmod(root, 0o755)
    return root


def _all_tasks_ids(pid):
    out = []
    for t in os.listdir("/proc/%d/task" % pid):
        out.append(proc_ids(pid, int(t)))
    return out


def test_default_drop_to_nobody(tmpdir):
    if not IS_ROOT:
        return   # only a root start drops privileges
    root = _public_root(tmpdir)
    nobody = pwd.getpwnam("nobody")
    s = Server(root=root, user=None, threads=3)
    for ids in [proc_ids(s.proc.pid)] + _all_tasks_ids(s.proc.pid):
        assert ids["Uid"] == [nobody.pw_uid] * 4, ids     # real, effective, saved, fs
        assert ids["Gid"] == [nobody.pw_gid] * 4, ids
        assert ids["Groups"] == [], "supplementary groups kept: %r" % ids
    r = get(s, "/")
    assert r.status == 200 and r.body == b"public index\n"
    # root-only files are out of reach now (as root, mode 0600 would not stop it)
    r = get(s, "/root-only.txt")
    assert r.status in (403, 404), r
    assert re.search(r"\bnobody\b", s.stderr), s.stderr
    assert s.stop() == 0


def test_drop_keeps_port_below_1024(tmpdir):
    # Bind first, then drop: a privileged port still works for the unprivileged process.
    if not IS_ROOT:
        return
    root = _public_root(tmpdir)
    port = None
    for p in range(1000, 900, -7):
        if port_is_free(p):
            try:
                t = socket.socket()
                t.bind(("127.0.0.1", p))
                t.close()
                port = p
                break
            except OSError:
                continue
    if port is None:
        return
    s = Server(root=root, user=None, listen=("127.0.0.1:%d" % port,))
    assert s.port == port
    assert proc_ids(s.proc.pid)["Uid"][1] == pwd.getpwnam("nobody").pw_uid
    assert get(s, "/").status == 200


def test_user_root_on_command_line_stays_root_with_warning(tmpdir):
    if not IS_ROOT:
        return
    root = _public_root(tmpdir)
    s = Server(root=root, user="root")
    ids = proc_ids(s.proc.pid)
    assert ids["Uid"] == [0, 0, 0, 0], ids
    assert re.search(r"\[warn\].*root", s.stderr), s.stderr
    assert get(s, "/root-only.txt").status == 200


def test_user_root_in_file_stays_root_with_warning(tmpdir):
    if not IS_ROOT:
        return
    root = _public_root(tmpdir)
    s = ConfServer(tmpdir, "root %s\nuser root\n" % root, user=None)
    assert proc_ids(s.proc.pid)["Uid"] == [0, 0, 0, 0]
    assert re.search(r"\[warn\].*root", s.stderr), s.stderr


def test_user_and_group_from_file(tmpdir):
    if not IS_ROOT:
        return
    root = _public_root(tmpdir)
    daemon_gid = grp.getgrnam("daemon").gr_gid
    nobody_uid = pwd.getpwnam("nobody").pw_uid
    s = ConfServer(tmpdir, "root %s\nuser nobody\ngroup daemon\n" % root, user=None)
    ids = proc_ids(s.proc.pid)
    assert ids["Uid"] == [nobody_uid] * 4, ids
    assert ids["Gid"] == [daemon_gid] * 4, ids
    assert ids["Groups"] == [], ids
    assert get(s, "/").status == 200


def test_user_and_group_on_command_line(tmpdir):
    if not IS_ROOT:
        return
    root = _public_root(tmpdir)
    daemon = pwd.getpwnam("daemon")
    s = Server(root=root, user="daemon:nogroup")
    ids = proc_ids(s.proc.pid)
    assert ids["Uid"] == [daemon.pw_uid] * 4, ids
    assert ids["Gid"] == [grp.getgrnam("nogroup").gr_gid] * 4, ids
    assert get(s, "/").status == 200
    # the command line overrides the file's user
    s.stop()
    s = ConfServer(tmpdir, "root %s\nuser root\n" % root, user="nobody")
    assert proc_ids(s.proc.pid)["Uid"][0] == pwd.getpwnam("nobody").pw_uid


def test_nonexistent_user_exit_2(tmpdir):
    if not IS_ROOT:
        return
    root = _public_root(tmpdir)
    port = free_port()
    for args in (["--user", "no-such-user-xyz"],
                 ["--config", write_file(os.path.join(tmpdir, "u.conf"),
                                         "user no-such-user-xyz\n")],
                 ["--config", write_file(os.path.join(tmpdir, "g.conf"),
                                         "group no-such-group-xyz\n")]):
        rc, out, err = run_lfhttpd(["--root", root, "--listen", "127.0.0.1:%d" % port] + args)
        assert rc == 2, (args, rc, err)
        assert "no-such-" in one_error_line(err), (args, err)
        assert port_is_free(port), args


def test_logs_opened_before_drop_and_reopened_after(tmpdir):
    # Log files are opened as root; after the drop a SIGUSR1 reopens them in a directory the
    # server's user may write (the usual /var/log/lfhttpd owned by the service user).
    if not IS_ROOT:
        return
    root = _public_root(tmpdir)
    nobody = pwd.getpwnam("nobody")
    logs = os.path.join(tmpdir, "logs")
    os.makedirs(logs)
    os.chown(logs, nobody.pw_uid, nobody.pw_gid)
    alog = os.path.join(logs, "access.log")
    s = ConfServer(tmpdir, "root %s\naccess_log %s\n" % (root, alog), user=None)
    assert proc_ids(s.proc.pid)["Uid"][1] == nobody.pw_uid
    assert get(s, "/").status == 200
    LogFile(alog).wait_lines(1)
    os.rename(alog, alog + ".1")
    s.signal(signal.SIGUSR1)
    wait_until(lambda: "reopen" in s.stderr, what="the reopen notice")
    assert "[error]" not in s.stderr, s.stderr
    assert get(s, "/index.html").status == 200
    lines = LogFile(alog).wait_lines(1)
    assert parse_clf(lines[0])["request"] == "GET /index.html HTTP/1.1"
    assert os.stat(alog).st_uid == nobody.pw_uid
