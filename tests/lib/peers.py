"""The reference servers the differential tests compare lfhttpd with (Debian's nginx-light
and lighttpd, tools/deps.sh set `test`), each a foreground process on a loopback port.

    Peer(name, argv_for_port, log)  start argv_for_port(port) on a free port (free_port());
                                    retried on another port if that one was taken
    nginx(directory, conf, **values)     nginx on that configuration, one process
    lighttpd(directory, conf, **values)  lighttpd -D on that configuration
        conf is a %-template: %(port)d its port, %(tmp)s its directory, and the values given

A Peer has .port, .addr, .alive(), .log() and .stop(); tests get them from the conftest
fixtures `nginx_peer` and `lighttpd_peer`, which stop them after the test.
"""

import os
import shutil
import signal
import socket
import subprocess
import time

from lib.server import T, free_port


def _find(name):
    for p in ("/usr/sbin/" + name, shutil.which(name) or ""):
        if p and os.path.exists(p):
            return p
    raise AssertionError("%s is not installed: `make deps` installs Debian's package "
                         "(tools/deps.sh), which this differential test needs" % name)


class Peer:
    def __init__(self, name, argv_for_port, log_path, stop_signal=signal.SIGTERM, attempts=5):
        self.name = name
        self.log_path = log_path
        self.stop_signal = stop_signal
        self.proc = None
        for _ in range(attempts):
            self.port = free_port()
            self.proc = subprocess.Popen(argv_for_port(self.port), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         start_new_session=True)
            deadline = time.monotonic() + T(10)
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                except OSError:
                    time.sleep(0.02)
            out = self.log()
            self.stop()
            if "in use" not in out:
                raise AssertionError("%s did not start:\n%s" % (name, out))
        raise AssertionError("%s: no free port after %d attempts" % (name, attempts))

    @property
    def addr(self):
        return ("127.0.0.1", self.port)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log(self):
        out = ""
        try:
            with open(self.log_path, errors="replace") as f:
                out = f.read()
        except OSError:
            pass
        if self.proc is not None and self.proc.poll() is not None and self.proc.stdout:
            out += self.proc.stdout.read().decode("utf-8", "replace")
        return out

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, self.stop_signal)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=T(10))
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def nginx(directory, conf, **values):
    """nginx on `conf`, one process, in the foreground."""
    exe = _find("nginx")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "nginx.conf")
    log = os.path.join(directory, "error.log")

    def argv(port):
        with open(path, "w") as f:
            f.write(conf % dict(values, port=port, tmp=directory))
        return [exe, "-p", directory + "/", "-c", path, "-e", log,
                "-g", "daemon off; master_process off;"]
    return Peer("nginx", argv, log, stop_signal=signal.SIGQUIT)


def lighttpd(directory, conf, **values):
    """lighttpd -D on `conf`."""
    exe = _find("lighttpd")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "lighttpd.conf")
    log = os.path.join(directory, "lighttpd-error.log")

    def argv(port):
        with open(path, "w") as f:
            f.write(conf % dict(values, port=port, tmp=directory))
            f.write('server.errorlog = "%s"\n' % log)
        return [exe, "-D", "-f", path]
    return Peer("lighttpd", argv, log)
