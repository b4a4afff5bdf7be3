"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe):
the browser reads JSON commands from its fd 3 and writes replies and events to its fd 4, each
message ended by a NUL byte. No websocket library needed; everything stays on loopback.

    with Browser(tmpdir) as b:
        page = b.open("http://127.0.0.1:PORT/")      # waits for the load event
        page.eval("document.title")                   # the value (awaits a promise)
"""

import json
import os
import select
import subprocess
import tempfile
import time

from lib.browser import chromium
from lib.server import T


class Browser:
    def __init__(self, tmpdir):
        self.profile = tempfile.mkdtemp(prefix="chromium-", dir=str(tmpdir))
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()

        def fds():   # in the child: the pipe ends at the numbers Chromium expects
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        env = dict(os.environ, HOME=self.profile)
        for k in list(env):
            if k.lower() in ("http_proxy", "https_proxy", "all_proxy"):
                del env[k]
        self.log = open(os.path.join(self.profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
             "--remote-debugging-pipe", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             "--disable-crash-reporter", "--user-data-dir=" + self.profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log,
            preexec_fn=fds, pass_fds=(3, 4), env=env)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._next = 0
        self.events = []

    def send(self, method, params=None, session=None, timeout=60):
        """One command; its result (an AssertionError for an error reply)."""
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        reply = self.wait(lambda m: m.get("id") == self._next, timeout)
        assert "error" not in reply, (method, reply["error"])
        return reply.get("result", {})

    def wait(self, match, timeout=60):
        """The first message (reply or event) for which match() holds, within T(timeout)."""
        for m in self.events:
            if match(m):
                self.events.remove(m)
                return m
        deadline = time.monotonic() + T(timeout)
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                m = json.loads(raw)
                if match(m):
                    return m
                self.events.append(m)
            left = deadline - time.monotonic()
            assert left > 0, "no answer from chromium within %ss" % timeout
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                data = os.read(self._r, 1 << 16)
                assert data, "chromium closed its pipe (its log: %s)" % self.log.name
                self._buf += data

    def open(self, url):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.navigate(url)
        return page

    def close(self):
        try:
            os.write(self._w, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
            self.proc.wait(T(30))
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    def __init__(self, browser, session):
        self.b, self.session = browser, session
        self.b.send("Page.enable", session=session)
        self.b.send("Runtime.enable", session=session)

    def navigate(self, url):
        self.b.send("Page.navigate", {"url": url}, session=self.session)
        self.b.wait(lambda m: m.get("method") == "Page.loadEventFired"
                    and m.get("sessionId") == self.session)

    def eval(self, expression):
        r = self.b.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                             "returnByValue": True}, session=self.session)
        assert "exceptionDetails" not in r, r["exceptionDetails"]
        return r["result"].get("value")
