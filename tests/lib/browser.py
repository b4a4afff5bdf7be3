"""Headless Chromium (Debian's chromium), as the suite drives it.

    run_chromium(url, profile, extra)  run it once on `url` with a fresh profile directory and
                                       extra flags (--dump-dom, --screenshot=FILE): returns
                                       (exit status, stdout text, stderr text)
"""

import os
import shutil
import subprocess

from .server import T


def chromium():
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    raise AssertionError("chromium not installed (tools/deps.sh installs Debian's chromium)")


def run_chromium(url, profile, extra):
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", "--disable-crash-reporter", "--user-data-dir=" + profile,
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
           "--window-size=1280,1100"] + extra + [url]
    env = dict(os.environ, HOME=profile)
    for k in list(env):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            del env[k]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=T(90))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
