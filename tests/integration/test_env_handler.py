"""`handler env [json|js]` with `env_expose NAME...`: an app's runtime configuration from an
allow-list of environment variables. Only the listed variables, an unset one left out; values
escaped so that the JSON parses back to them and the script is safe inside <script> (quotes,
</script>, newlines, U+2028, bytes that are not UTF-8); a strong ETag, Cache-Control: no-cache
and 304 for a matching If-None-Match; the exact path only; GET and HEAD only; configuration
errors at their line; a reload recomputes the body from the (unchanged) environment."""

import html
import json
import os
import signal
import tempfile

import pytest

from lib.browser import run_chromium
from lib.ops import run_lfhttpd, write_file
from lib.server import ConfServer, get, raw, req, wait_until

CONF = ("root %s\n"
        "location /env.js {\n    handler env js\n    env_expose LF_API_URL LF_FEATURE\n"
        "    env_expose LF_UNSET LF_EMPTY\n}\n"
        "location /config.json {\n    handler env\n    env_expose LF_API_URL\n}\n")


def _env(**kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LF_")}
    env.update(kw)
    env.pop("LF_UNSET", None)
    return env


def _start(tmpdir, env, conf=CONF):
    root = os.path.join(tmpdir, "www")
    write_file(os.path.join(root, "index.html"), "app")
    return ConfServer(tmpdir, conf % root, env=env)


def _script_object(body):
    text = body.decode("utf-8")
    assert text.startswith("window.__ENV = ") and text.endswith(";\n"), text
    return json.loads(text[len("window.__ENV = "):-2])


def test_only_the_allow_list_and_unset_left_out(tmpdir):
    env = _env(LF_API_URL="https://api.example/v1", LF_FEATURE="on", LF_EMPTY="",
               LF_SECRET="must-not-leak")
    srv = _start(tmpdir, env)
    try:
        r = get(srv, "/config.json")
        assert r.status == 200 and r.header("Content-Type") == "application/json", r
        assert json.loads(r.body) == {"LF_API_URL": "https://api.example/v1"}, r.body
        r = get(srv, "/env.js")
        assert r.header("Content-Type") == "text/javascript; charset=utf-8", r.headers
        assert r.header("X-Content-Type-Options") == "nosniff"
        assert _script_object(r.body) == {"LF_API_URL": "https://api.example/v1",
                                          "LF_FEATURE": "on", "LF_EMPTY": ""}, r.body
        assert b"must-not-leak" not in r.body
        assert get(srv, "/env.jsx").status == 404      # the exact path only
        assert get(srv, "/env.js/x").status == 404
        assert get(srv, "/env.js", method="POST").status == 405
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_values_are_escaped_for_json_and_for_a_script(tmpdir):
    tricky = 'say "hi"\\ </script><!-- & \n\t\u2028\u2029 é \u00e9\U0001F600'
    env = _env(LF_API_URL=tricky, LF_FEATURE="x")
    env = {k.encode(): v.encode("utf-8") for k, v in env.items()}
    env[b"LF_FEATURE"] = b"bad \xff byte"        # not UTF-8
    srv = _start(tmpdir, env)
    try:
        body = get(srv, "/env.js").body
        obj = _script_object(body)
        assert obj["LF_API_URL"] == tricky, obj
        assert obj["LF_FEATURE"] == "bad \ufffd byte", obj
        for bad in (b"</", b"<!--", b"\n\t", "\u2028".encode(), "\u2029".encode(), b"&"):
            assert bad not in body[:-1], (bad, body)
        assert json.loads(get(srv, "/config.json").body) == {"LF_API_URL": tricky}
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_strong_etag_no_cache_and_304(tmpdir):
    srv = _start(tmpdir, _env(LF_API_URL="https://a", LF_FEATURE="1"))
    try:
        r = get(srv, "/config.json")
        etag = r.header("ETag")
        assert etag and etag.startswith('"') and not etag.startswith("W/"), r.headers
        assert r.header("Cache-Control") == "no-cache", r.headers
        r2 = raw(srv, req("GET", "/config.json", headers=[("If-None-Match", etag)]))
        assert r2.status == 304 and r2.body == b"" and r2.header("ETag") == etag, r2
        r3 = raw(srv, req("GET", "/config.json", headers=[("If-None-Match", '"other", ' + etag)]))
        assert r3.status == 304, r3
        r4 = raw(srv, req("GET", "/config.json", headers=[("If-None-Match", '"other"')]))
        assert r4.status == 200 and json.loads(r4.body) == {"LF_API_URL": "https://a"}, r4
        assert get(srv, "/env.js").header("ETag") != etag   # another body, another tag
        h = raw(srv, req("HEAD", "/config.json"))
        assert h.status == 200 and h.body == b"" and h.header("ETag") == etag, h
        # A reload recomputes the body; the environment of a running process is the same, so
        # the tag is too (a new value takes a restart).
        srv.signal(signal.SIGHUP)
        assert wait_until(lambda: "generation 2" in srv.stderr, 15), srv.stderr
        assert get(srv, "/config.json").header("ETag") == etag
        # ...and a reload that exposes another list serves the new body at once.
        root = os.path.join(tmpdir, "www")
        write_file(srv.conf_path, (CONF % root).replace("    env_expose LF_API_URL\n}",
                                                         "    env_expose LF_FEATURE\n}"))
        srv.signal(signal.SIGHUP)
        assert wait_until(lambda: "generation 3" in srv.stderr, 15), srv.stderr
        r = get(srv, "/config.json")
        assert json.loads(r.body) == {"LF_FEATURE": "1"} and r.header("ETag") != etag, r.body
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr


def test_configuration_errors_name_their_line(tmpdir):
    cases = (
        ("location /e {\n    handler env\n}\n",
         ":3: handler env: needs env_expose NAME... (the variables it may show)"),
        ("location /e {\n    handler env yaml\n    env_expose A\n}\n",
         ":3: handler env: takes json (the default) or js, not 'yaml'"),
        ("location /e {\n    handler env\n    env_expose GOOD 1BAD\n}\n",
         ":4: env_expose: '1BAD' is not a variable name (letters, digits, _)"),
    )
    for body, want in cases:
        conf = write_file(os.path.join(tmpdir, "t.conf"), "root %s\n%s" % (tmpdir, body))
        rc, _, err = run_lfhttpd(["-t", "-c", conf])
        assert rc == 2 and err.strip() == conf + want, (body, err)


def _dump_dom(url, tmpdir):
    rc, dom, err = run_chromium(url, tempfile.mkdtemp(prefix="chromium-", dir=tmpdir),
                                ["--dump-dom"])
    assert rc == 0, "chromium exited %d:\n%s" % (rc, err[-2000:])
    return dom


@pytest.mark.timeout(200)
def test_the_script_runs_in_a_browser_external_and_inline(tmpdir):
    """Chromium loads /env.js from a page, and the same body pasted inside an inline <script>:
    window.__ENV holds the values exactly, and the inline copy does not end its element."""
    tricky = 'a "b" </script><script>window.pwned=1</script> \u2028 end'
    srv = _start(tmpdir, _env(LF_API_URL=tricky, LF_FEATURE="f"))
    try:
        body = get(srv, "/env.js").body.decode("utf-8")
        show = ("<pre id=out></pre><script>document.getElementById('out').textContent = "
                "JSON.stringify([window.__ENV, window.pwned || 0]);</script>")
        root = os.path.join(tmpdir, "www")
        write_file(os.path.join(root, "external.html"),
                   "<!doctype html><script src=/env.js></script>" + show)
        write_file(os.path.join(root, "inline.html"),
                   "<!doctype html><meta charset=utf-8><script>" + body + "</script>" + show)
        for page in ("external.html", "inline.html"):
            dom = _dump_dom("http://127.0.0.1:%d/%s" % (srv.port, page), tmpdir)
            start = dom.index("<pre id=\"out\">") + len("<pre id=\"out\">")
            got = json.loads(html.unescape(dom[start:dom.index("</pre>", start)]))
            assert got == [{"LF_API_URL": tricky, "LF_FEATURE": "f"}, 0], (page, got)
    finally:
        srv.stop()
    assert srv.returncode == 0, srv.stderr

