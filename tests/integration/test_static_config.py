"""Site configuration: Cache-Control/Expires by prefix and extension, add_header, error pages,
hidden files, symlink policies, OPTIONS/405, SPA fallback, directory redirects, virtual hosts,
location matching, and configuration errors (FILE:LINE, exit 2)."""

import os
import re
import time

import pytest

from lib.server import ConfServer, Conn, REPO, get, parse_imf, raw, req
from lib.static import check_config, make_root

PASSWD = open("/etc/passwd", "rb").read()


def _root(tmpdir, files=None):
    base = {
        "index.html": b"<p>home</p>\n",
        "app.js": b"console.log(1)\n",
        "style.css": b"a{}\n",
        "assets/app.js": b"assets js\n",
        "assets/logo.png": b"\x89PNG fake",
        "assets/theme.css": b"b{}\n",
        "api/data.json": b'{"a":1}\n',
        "docs/index.html": b"<p>docs</p>\n",
        "docs/guide.txt": b"guide\n",
        "404.html": b"<h1>custom not found</h1>\n",
        "403.html": b"<h1>custom forbidden</h1>\n",
        "emptydir/.keep": b"",
        ".env": b"SECRET=1\n",
        ".git/config": b"[core]\n",
        "a/.hidden/x": b"hidden x\n",
        "a/visible.txt": b"visible\n",
        ".well-known/acme-challenge/token": b"acme token\n",
    }
    base.update(files or {})
    return make_root(os.path.join(tmpdir, "root"), base)


def _srv(tmpdir, conf, files=None):
    root = _root(tmpdir, files)
    s = ConfServer(tmpdir, conf, root=root)
    s.rootdir = root
    return s


# ---- Cache-Control, Expires, add_header --------------------------------------------------

def test_cache_control_by_prefix_and_extension(tmpdir):
    s = _srv(tmpdir, 'cache_control "no-cache"\n'
                     "location /assets/ {\n"
                     '    cache_control "public, max-age=31536000, immutable"\n'
                     "    expires 365d\n"
                     "}\n"
                     "location *.css {\n"
                     '    cache_control "max-age=600"\n'
                     "    expires 10m\n"
                     "}\n"
                     "location /docs/ {\n"
                     "    cache_control off\n"
                     "}\n")
    now = time.time()

    def cc(path):
        r = get(s, path)
        assert r.status == 200, (path, r.status)
        exp = r.header("Expires")
        return r.header("Cache-Control"), (parse_imf(exp) - now if exp else None)

    c, e = cc("/index.html")
    assert c == "no-cache" and e is None, (c, e)
    c, e = cc("/assets/app.js")
    assert c == "public, max-age=31536000, immutable", c
    assert abs(e - 365 * 86400) < 60, e
    # Extension locations win over prefixes, wherever the file is.
    for path in ["/style.css", "/assets/theme.css"]:
        c, e = cc(path)
        assert c == "max-age=600", (path, c)
        assert abs(e - 600) < 60, (path, e)
    c, e = cc("/docs/guide.txt")
    assert c is None and e is None, (c, e)
    # cache_control off drops the inherited value; the page is then HTML under the default
    # cache_policy auto, which revalidates it (test_site_static.py has the policy's own tests).
    c, e = cc("/docs/")
    assert c == "no-cache", c
    # Extension matching is case-insensitive and looks at the end of the path only.
    assert get(s, "/assets/app.js?x=.css").header("Cache-Control") != "max-age=600"


def test_expires_on_head_206_and_directory_index(tmpdir):
    s = _srv(tmpdir, 'expires 1h\ncache_control "public"\n')
    for method, h in [("HEAD", {}), ("GET", {"Range": "bytes=0-1"}), ("GET", {})]:
        r = get(s, "/docs/", method, headers=h)
        assert r.status in (200, 206), (method, h, r.status)
        assert r.header("Cache-Control") == "public", (method, h, r.headers)
        assert abs(parse_imf(r.header("Expires")) - time.time() - 3600) < 60, (method, h, r.headers)


def test_add_header_per_location(tmpdir):
    s = _srv(tmpdir, 'add_header X-Content-Type-Options "nosniff"\n'
                     'add_header Content-Security-Policy "default-src \'self\'; img-src *"\n'
                     "location /api/ {\n"
                     '    add_header Access-Control-Allow-Origin "*"\n'
                     '    add_header Access-Control-Allow-Methods "GET, HEAD, OPTIONS"\n'
                     "}\n")
    r = get(s, "/index.html")
    assert r.header("X-Content-Type-Options") == "nosniff", r.headers
    assert r.header("Content-Security-Policy") == "default-src 'self'; img-src *", r.headers
    assert r.header("Access-Control-Allow-Origin") is None
    # A location that sets add_header replaces the inherited list (as in nginx).
    r = get(s, "/api/data.json")
    assert r.status == 200
    assert r.header("Access-Control-Allow-Origin") == "*", r.headers
    assert r.header("Access-Control-Allow-Methods") == "GET, HEAD, OPTIONS", r.headers
    assert r.header("X-Content-Type-Options") is None, r.headers
    # Also on HEAD, 206, 304 and OPTIONS (CORS preflight) of that location.
    assert get(s, "/api/data.json", "HEAD").header("Access-Control-Allow-Origin") == "*"
    r = get(s, "/api/data.json", headers={"Range": "bytes=0-0"})
    assert r.status == 206 and r.header("Access-Control-Allow-Origin") == "*"
    etag = get(s, "/api/data.json").header("ETag")
    r = get(s, "/api/data.json", headers={"If-None-Match": etag})
    assert r.status == 304 and r.header("Access-Control-Allow-Origin") == "*", r.headers
    r = get(s, "/api/data.json", "OPTIONS", headers={"Origin": "https://x.test"})
    assert r.status == 204 and r.header("Access-Control-Allow-Origin") == "*", r.headers
    # Each header once.
    r = get(s, "/index.html")
    assert len(r.header_all("X-Content-Type-Options")) == 1


# ---- error pages -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def error_pages_srv(shared_server):
    return shared_server(_srv, "error_page 404 /404.html\nerror_page 403 /403.html\n")


@pytest.mark.parametrize("path", ["/nope", "/deep/er/nope.txt", "/.env", "/a/.hidden/x"])
def test_error_page_custom_404_paths(error_pages_srv, path):
    r = get(error_pages_srv, path)
    assert r.status == 404, (path, r.status)
    assert r.body == b"<h1>custom not found</h1>\n", (path, r.body)
    assert r.header("Content-Type") == "text/html; charset=utf-8", (path, r.headers)


def test_error_page_custom_404(error_pages_srv):
    s = error_pages_srv
    r = get(s, "/emptydir/")
    assert r.status == 403 and r.body == b"<h1>custom forbidden</h1>\n", (r.status, r.body)
    r = get(s, "/nope", "HEAD")
    assert r.status == 404 and r.body == b""
    # The error page itself is still served normally.
    r = get(s, "/404.html")
    assert r.status == 200 and r.body == b"<h1>custom not found</h1>\n"
    # Keep-alive still works after a custom error page.
    with Conn(s) as c:
        c.send(req("GET", "/nope") + req("GET", "/index.html"))
        a, b = c.read_responses(2)
        assert a.status == 404 and b.status == 200 and b.body == b"<p>home</p>\n"


def test_error_page_builtin_and_missing_custom(tmpdir):
    # error_page pointing at a missing file: the built-in page, status kept.
    s = _srv(tmpdir, "error_page 404 /missing-404.html\n")
    r = get(s, "/nope")
    assert r.status == 404, r.status
    assert r.header("Content-Type").startswith("text/html")
    assert b"404" in r.body and len(r.body) < 2048, r.body
    assert b"custom" not in r.body


def test_error_page_per_location_several_statuses(tmpdir):
    s = _srv(tmpdir, "location /docs/ {\n    error_page 403 404 /404.html\n}\n",
             files={"docs/empty/.keep": b""})
    r = get(s, "/docs/nope")
    assert r.status == 404 and r.body == b"<h1>custom not found</h1>\n", (r.status, r.body)
    r = get(s, "/docs/empty/")
    assert r.status == 403 and r.body == b"<h1>custom not found</h1>\n", (r.status, r.body)
    r = get(s, "/nope")
    assert r.status == 404 and b"custom" not in r.body


# ---- hidden files and symlinks -----------------------------------------------------------------

@pytest.fixture(scope="module")
def defaults_srv(shared_server):
    """One server with the defaults, for the cases that only ask it something."""
    return shared_server(_srv, "# defaults\n")


@pytest.mark.parametrize("path", [
    "/.env", "/.git/config", "/.git/", "/a/.hidden/x", "/%2eenv", "/a/%2Ehidden/x",
    "/a/./.hidden/x", "/.well-known/acme-challenge/token"])
def test_hidden_files_denied_by_default(defaults_srv, path):
    r = get(defaults_srv, path)
    assert r.status == 404, (path, r.status)
    assert b"SECRET" not in r.body and b"[core]" not in r.body, (path, r.body)
    assert get(defaults_srv, "/a/visible.txt").status == 200


def test_hidden_files_allow(tmpdir):
    s = _srv(tmpdir, "hidden_files allow\n")
    assert get(s, "/.env").body == b"SECRET=1\n"
    assert get(s, "/.git/config").body == b"[core]\n"
    assert get(s, "/a/.hidden/x").body == b"hidden x\n"


def test_hidden_files_allowed_for_well_known_only(tmpdir):
    # The usual ACME set-up: dot-files stay hidden except under /.well-known/.
    s = _srv(tmpdir, "location /.well-known/ {\n    hidden_files allow\n}\n")
    r = get(s, "/.well-known/acme-challenge/token")
    assert r.status == 200 and r.body == b"acme token\n", r.status
    assert get(s, "/.env").status == 404
    assert get(s, "/.well-known/../.env").status == 404


def _symlinks(root):
    os.symlink("index.html", os.path.join(root, "link-in.html"))
    os.symlink("../index.html", os.path.join(root, "docs", "link-up.html"))
    os.symlink("docs", os.path.join(root, "link-dir"))
    os.symlink("/etc/passwd", os.path.join(root, "link-out"))
    os.symlink("/etc", os.path.join(root, "link-etc"))
    os.symlink(os.path.join(root, "index.html"), os.path.join(root, "link-abs-in.html"))
    os.symlink("nowhere", os.path.join(root, "dangling"))


def _sym_srv(tmpdir, policy):
    root = _root(tmpdir)
    _symlinks(root)
    conf = "follow_symlinks %s\n" % policy if policy else "# default policy\n"
    return ConfServer(tmpdir, conf, root=root)


HOME = b"<p>home</p>\n"


def test_symlinks_inside_default(tmpdir):
    s = _sym_srv(tmpdir, None)
    for path in ["/link-in.html", "/docs/link-up.html"]:
        r = get(s, path)
        assert r.status == 200 and r.body == HOME, (path, r.status)
    r = get(s, "/link-dir/guide.txt")
    assert r.status == 200 and r.body == b"guide\n", r.status
    for path in ["/link-out", "/link-etc/passwd", "/link-etc/", "/dangling"]:
        r = get(s, path)
        assert r.status == 404, (path, r.status)
        assert PASSWD not in r.body, path


def test_symlink_absolute_target_inside_root(tmpdir):
    # An absolute symlink whose target is inside the root stays inside the root.
    s = _sym_srv(tmpdir, None)
    r = get(s, "/link-abs-in.html")
    assert r.status == 200 and r.body == HOME, r.status


@pytest.fixture(scope="module")
def symlinks_off_srv(shared_server):
    return shared_server(_sym_srv, "off")


@pytest.mark.parametrize("path", ["/link-in.html", "/docs/link-up.html", "/link-dir/guide.txt",
                                  "/link-out", "/link-etc/passwd", "/link-abs-in.html"])
def test_symlinks_off(symlinks_off_srv, path):
    r = get(symlinks_off_srv, path)
    assert r.status in (403, 404), (path, r.status)
    assert HOME not in r.body and PASSWD not in r.body, (path, r.body)
    assert get(symlinks_off_srv, "/index.html").status == 200
    assert get(symlinks_off_srv, "/docs/guide.txt").status == 200


def test_symlinks_any(tmpdir):
    s = _sym_srv(tmpdir, "any")
    r = get(s, "/link-out")
    assert r.status == 200 and r.body == PASSWD, r.status
    r = get(s, "/link-etc/passwd")
    assert r.status == 200 and r.body == PASSWD, r.status
    assert get(s, "/link-in.html").body == HOME
    assert get(s, "/dangling").status == 404
    # Still no way up with "..".
    assert get(s, "/../../etc/passwd").status in (400, 404)


# ---- methods ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/index.html", "/docs/", "*"])
def test_options(defaults_srv, path):
    r = get(defaults_srv, path, "OPTIONS")
    assert r.status == 204, (path, r.status)
    allow = {m.strip() for m in (r.header("Allow") or "").split(",")}
    assert {"GET", "HEAD", "OPTIONS"} <= allow, (path, r.header("Allow"))
    assert r.body == b"", (path, r.body)


def test_405_consumes_the_body(defaults_srv):
    with Conn(defaults_srv) as c:
        for m in ["POST", "PUT", "DELETE", "PATCH"]:
            c.send(req(m, "/index.html", body=b"payload"))
            r = c.read_response()
            assert r.status == 405, (m, r.status)
            allow = {x.strip() for x in (r.header("Allow") or "").split(",")}
            assert {"GET", "HEAD"} <= allow and m not in allow, (m, r.header("Allow"))
        # The bodies were consumed: the connection still works.
        c.send(req("GET", "/index.html"))
        r = c.read_response()
        assert r.status == 200 and r.body == HOME


# ---- single-page applications ----------------------------------------------------------------

# The fallback answers navigations only (test_site_static.py tells them from other requests).
NAVIGATE = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}


@pytest.fixture(scope="module")
def spa_srv(shared_server):
    return shared_server(_srv, "spa_fallback /index.html\n")


@pytest.mark.parametrize("path", ["/dashboard", "/users/42/edit", "/deep/a/b/c?x=1",
                                  "/nope.html"])
def test_spa_fallback_navigations(spa_srv, path):
    r = get(spa_srv, path, headers=NAVIGATE)
    assert r.status == 200, (path, r.status)
    assert r.body == HOME, (path, r.body)
    assert r.header("Content-Type") == "text/html; charset=utf-8", (path, r.headers)


def test_spa_fallback(spa_srv):
    s = spa_srv
    # Existing files and directories are still served as themselves.
    assert get(s, "/app.js").body == b"console.log(1)\n"
    assert get(s, "/docs/").body == b"<p>docs</p>\n"
    assert get(s, "/docs").status == 301
    # Hidden files are not turned into the app page's 200... nor served.
    r = get(s, "/.env")
    assert b"SECRET" not in r.body


def test_spa_fallback_per_location(tmpdir):
    s = _srv(tmpdir, "location /app/ {\n    spa_fallback /app/index.html\n}\n",
             files={"app/index.html": b"<p>the app</p>\n"})
    assert get(s, "/app/route/x", headers=NAVIGATE).body == b"<p>the app</p>\n"
    assert get(s, "/app/route/x", headers=NAVIGATE).status == 200
    assert get(s, "/elsewhere", headers=NAVIGATE).status == 404


def test_spa_fallback_off_by_default(tmpdir):
    s = _srv(tmpdir, "# defaults\n")
    assert get(s, "/dashboard", headers=NAVIGATE).status == 404


# ---- directory redirects ---------------------------------------------------------------------

def test_directory_redirect_location_is_relative(tmpdir):
    s = _srv(tmpdir, "# defaults\n")
    cases = [
        (req("GET", "/docs"), "/docs/"),
        (req("GET", "/docs", host="www.example.test:8443"), "/docs/"),
        (req("GET", "/docs?a=1&b=2", host="example.test:80"), "/docs/?a=1&b=2"),
        (req("GET", "http://internal.example:8080/docs", host="x"), "/docs/"),
        (req("GET", "http://internal.example:8080/docs?q=1"), "/docs/?q=1"),
        (req("HEAD", "/docs"), "/docs/"),
    ]
    for data, want in cases:
        r = raw(s, data)
        assert r.status == 301, (data, r.status)
        assert r.header("Location") == want, (data, r.header("Location"))


def test_directory_redirect_never_leaves_the_site(tmpdir):
    # The Location must be a path on this site: never "//host/..." (a network-path reference
    # a browser would follow to another host), whatever the raw request path looked like.
    s = _srv(tmpdir, "# defaults\n")
    for target in ["//docs", "//evil.example/..//docs", "///docs", "/%2F/evil.example/../../docs",
                   "/./docs", "/x/../docs"]:
        r = raw(s, req("GET", target))
        assert r.status in (301, 400, 404), (target, r.status)
        if r.status == 301:
            loc = r.header("Location")
            assert loc.startswith("/") and not loc.startswith("//"), (target, loc)
            assert loc.split("?")[0] == "/docs/", (target, loc)


# ---- virtual hosts ---------------------------------------------------------------------------

VHOSTS = """
server a.test www.a.test {
    root %(d)s/a
}
server *.example.test {
    root %(d)s/wild
}
server *.deep.example.test {
    root %(d)s/deep
}
server b.test {
    root %(d)s/b
    location /x/ {
        root %(d)s/bx
    }
}
"""


def _vhosts(tmpdir, default_block=""):
    for name in ["top", "a", "wild", "deep", "b", "bx/x", "dflt"]:
        make_root(os.path.join(tmpdir, name), {"who.txt": name.split("/")[0].encode()})
    return ConfServer(tmpdir, VHOSTS % {"d": tmpdir} + default_block, root=os.path.join(tmpdir, "top"))


def _who(s, host, path="/who.txt", version="HTTP/1.1", target=None):
    r = raw(s, req("GET", target or path, host=host, version=version))
    return r.body.decode() if r.status == 200 else r.status


def test_virtual_hosts(tmpdir):
    s = _vhosts(tmpdir)
    cases = [("a.test", "a"), ("A.TEST", "a"), ("a.test:8080", "a"), ("a.test.", "a"),
             ("www.a.test", "a"), ("A.test.:80", "a"),
             ("x.example.test", "wild"), ("X.Y.Example.Test", "wild"),
             ("q.deep.example.test", "deep"),        # the longest wildcard wins
             ("example.test", "top"),                 # *.example.test needs a label
             ("b.test", "b"), ("unknown.test", "top"), ("127.0.0.1", "top"),
             ("[::1]:80", "top"), ("nota.test", "top"), ("aa.test", "top")]
    for host, want in cases:
        assert _who(s, host) == want, (host, _who(s, host), want)
    # A location with its own root inside a virtual host.
    assert _who(s, "b.test", "/x/who.txt") == "bx"
    # HTTP/1.0 without Host: the default site.
    r = raw(s, req("GET", "/who.txt", host=None, version="HTTP/1.0"))
    assert r.body == b"top", r.body
    # The authority of an absolute-form target wins over Host.
    assert _who(s, "b.test", target="http://a.test/who.txt") == "a"


def test_virtual_hosts_explicit_default(tmpdir):
    s = _vhosts(tmpdir, "server default other.test {\n    root %s/dflt\n}\n" % tmpdir)
    assert _who(s, "unknown.test") == "dflt"
    assert _who(s, "other.test") == "dflt"
    assert _who(s, "a.test") == "a"
    r = raw(s, req("GET", "/who.txt", host=None, version="HTTP/1.0"))
    assert r.body == b"dflt", r.body


def test_location_longest_prefix(tmpdir):
    s = _srv(tmpdir, 'location /assets/ {\n    add_header X-Loc "assets"\n}\n'
                     'location /assets/img/ {\n    add_header X-Loc "img"\n}\n'
                     'location /ass {\n    add_header X-Loc "ass"\n}\n',
             files={"assets/img/a.png": b"png"})
    assert get(s, "/assets/img/a.png").header("X-Loc") == "img"
    assert get(s, "/assets/app.js").header("X-Loc") == "assets"
    assert get(s, "/index.html").header("X-Loc") is None
    # Locations match the normalised path: "/assets/../x" is not under /assets/.
    assert get(s, "/assets/../index.html").header("X-Loc") is None
    assert get(s, "/%61ssets/app.js").header("X-Loc") == "assets"


# ---- configuration errors --------------------------------------------------------------------

BAD = [
    "directory_listing maybe",
    "directory_listing",
    "hidden_files sometimes",
    "follow_symlinks never",
    "precompressed yes",
    "etag 1",
    "spa_fallback index.html",
    'add_header "Bad Name" "v"',
    "add_header X-Only-Name",
    'add_header X-A "a" "b"',
    "cache_control max-age=1 public",
    "expires soon",
    "expires 10x",
    "expires -5",
    "error_page 404",
    "error_page 200 /x.html",
    "error_page abc /x.html",
    "error_page 404 x.html",
    "default_type nonsense",
    "index ../x.html",
    "index a/b.html",
    "file_cache_valid abc",
    "file_cache_valid 5x",
    "file_cache_entries 1",
    "file_cache_entries lots",
    "file_cache_size 1q",
    "mime_types a b",
    "root",
    "location /x/",
    "location x/ {",
    "location /a/ /b/ {",
    "server a/b {",
    "server {",
    "}",
    "no_such_directive on",
    "handler no_such_handler",
]


def _assert_conf_error(tmpdir, text, lineno, why=""):
    rc, err, path = check_config(tmpdir, text)
    lines = err.splitlines()
    assert rc == 2, "%r: exit %s (want 2), stderr %r" % (text, rc, err)
    assert len(lines) == 1, "%r: want one stderr line, got %r" % (text, err)
    assert re.match(r"^%s:%d: \S" % (re.escape(path), lineno), lines[0]), \
        "%r: want '%s:%d: reason', got %r %s" % (text, path, lineno, lines[0], why)
    return lines[0]


@pytest.mark.parametrize("bad", BAD)
def test_config_errors_file_line(tmpdir, bad):
    head = "root %s\n# a comment\n\n" % tmpdir     # the bad line is line 4
    _assert_conf_error(tmpdir, head + bad + "\n", 4)


@pytest.mark.parametrize("bad", ["directory_listing maybe", "expires soon",
                                 "follow_symlinks never", 'add_header "Bad Name" "v"',
                                 "threads 4", "listen 127.0.0.1:1", "file_cache_valid 1s",
                                 "no_such_directive on", "location /y/ {", "server b.test {"])
def test_config_errors_inside_blocks(tmpdir, bad):
    head = "root %s\nserver a.test {\n    location /x/ {\n" % tmpdir
    _assert_conf_error(tmpdir, head + "        " + bad + "\n    }\n}\n", 4, bad)


def test_config_unclosed_block(tmpdir):
    line = _assert_conf_error(tmpdir, "root %s\n\nserver a.test {\n    root %s\n" % (tmpdir, tmpdir),
                              3)
    assert "close" in line or "unclosed" in line or "}" in line, line
    _assert_conf_error(tmpdir, "root %s\nlocation /x/ {\n    etag off\n" % tmpdir, 2)
    _assert_conf_error(tmpdir, "root %s\nserver a.test {\n    location /x/ {\n    }\n" % tmpdir, 2)


def test_config_missing_root_in_block(tmpdir):
    rc, err, _ = check_config(tmpdir, "root %s\nserver a.test {\n    root %s/nope\n}\n"
                              % (tmpdir, tmpdir))
    assert rc == 2 and len(err.splitlines()) == 1 and "nope" in err, (rc, err)


def test_config_test_mode_ok(tmpdir):
    os.makedirs(os.path.join(tmpdir, "r"))
    good = ("root %(d)s/r\nmime_types %(m)s\nfile_cache_entries 1000\nfile_cache_size 8m\n"
            "file_cache_valid 250ms\ndirectory_listing off\nhidden_files deny\n"
            "follow_symlinks inside\nprecompressed on\netag on\nspa_fallback off\n"
            'add_header X-A "1"\ncache_control "no-cache"\nexpires 1h\n'
            "error_page 404 500 /err.html\ndefault_type text/plain\nindex index.html index.htm\n"
            "server a.test *.b.test {\n  root %(d)s/r\n  location /x/ {\n    expires off\n  }\n"
            "  location *.css {\n    cache_control off\n  }\n}\n"
            "server default {\n  handler static\n}\n"
            % {"d": tmpdir, "m": os.path.join(REPO, "conf", "mime.types")})
    rc, err, path = check_config(tmpdir, good)
    assert rc == 0, err
    assert "valid" in err or err == "", err
    # The shipped configuration checks out too (from the repository, as `make run` uses it).
    import subprocess
    from lib.server import binary
    p = subprocess.run([binary(), "-t", "-c", "conf/lfhttpd.conf"], cwd=REPO,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert p.returncode == 0, p.stderr
