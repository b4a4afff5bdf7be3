"""Process-table and configuration helpers for the CGI, status and test-endpoint tests.

Standard library only; Linux /proc.
"""

import json
import os
import shutil
import stat

from lib.server import REPO, Conn, req


def proc_stat(pid):
    """(state, ppid, pgrp) of pid from /proc/PID/stat, or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read().decode("latin-1")
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm may contain spaces and parentheses: split after the last ')'
    rest = data[data.rindex(")") + 2:].split()
    return rest[0], int(rest[1]), int(rest[2])


def all_pids():
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def group_members(pgid):
    """Live (non-zombie) processes whose process group is pgid."""
    out = []
    for pid in all_pids():
        st = proc_stat(pid)
        if st and st[2] == pgid and st[0] != "Z":
            out.append(pid)
    return out


def zombies_of(ppid):
    """Zombie children of ppid."""
    out = []
    for pid in all_pids():
        st = proc_stat(pid)
        if st and st[1] == ppid and st[0] == "Z":
            out.append(pid)
    return out


def children_of(ppid):
    out = []
    for pid in all_pids():
        st = proc_stat(pid)
        if st and st[1] == ppid:
            out.append(pid)
    return out


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def write_script(directory, name, text, mode=0o755):
    """Write an executable script (text starts with its #! line)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def copy_example_scripts(cgi_dir):
    """Copy the shipped example scripts (www/cgi-bin) into cgi_dir."""
    src = os.path.join(REPO, "www", "cgi-bin")
    os.makedirs(cgi_dir, exist_ok=True)
    for n in os.listdir(src):
        shutil.copy2(os.path.join(src, n), os.path.join(cgi_dir, n))
        st = os.stat(os.path.join(src, n))
        assert st.st_mode & stat.S_IXUSR, "www/cgi-bin/%s is not executable" % n


def status_json(srv):
    r = Conn(srv).__enter__()
    try:
        r.send(req("GET", "/server-status?json"))
        resp = r.read_response()
    finally:
        r.close()
    assert resp.status == 200, resp
    return json.loads(resp.body)

