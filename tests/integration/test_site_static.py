"""What a static site moved from GitHub Pages, Netlify or Cloudflare Pages expects: clean URLs
and the trailing-slash policy, CORS (preflights before auth_basic, origins, credentials,
Vary), allow/deny by client address (through trusted proxies and the PROXY protocol), the
SPA fallback for navigations only, and the cache policy derived from file names."""

import os
import subprocess

from lib.server import ConfServer, Conn, get, req
from lib.static import check_config, make_root

FILES = {
    "index.html": b"<p>home</p>\n",
    "about.html": b"<p>about</p>\n",
    "blog/index.html": b"<p>blog</p>\n",
    "blog/first.html": b"<p>first post</p>\n",
    "docs.html": b"<p>docs page</p>\n",       # a page and a directory of the same name:
    "docs/index.html": b"<p>docs dir</p>\n",   # /docs.html must not move to /docs
    "app.js": b"console.log(1)\n",
    "listed/a.txt": b"a\n",
    "assets/app.3f9a1c2b.js": b"hashed\n",
    "assets/index-BZ1x2y3Z.js": b"vite\n",
    "assets/main.min.9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.css":
        b"a{}\n",
    "assets/jquery-3.7.1.min.js": b"jq\n",
    "assets/polyfills-legacy.js": b"poly\n",
    "assets/bootstrap.bundle.min.js": b"bs\n",
    "files/2024-report.pdf": b"%PDF-1.4\n",
    "fixed/app.3f9a1c2b.js": b"fixed\n",
    "expiring/app.3f9a1c2b.js": b"expiring\n",
    "headed/app.3f9a1c2b.js": b"headed\n",
    "plain/app.3f9a1c2b.js": b"plain\n",
    "api/data.json": b'{"a":1}\n',
    "admin/panel.html": b"<p>panel</p>\n",
    "private/x.txt": b"private\n",
}


def _srv(tmpdir, conf="", files=None, **kw):
    f = dict(FILES)
    f.update(files or {})
    root = make_root(os.path.join(str(tmpdir), "root"), f)
    return ConfServer(str(tmpdir), conf, root=root, **kw)


def _status(s, path, headers=None, method="GET"):
    r = get(s, path, method=method, headers=headers)
    return r.status, (r.header("Location") if r.status == 301 else r.body)


# ---- clean URLs and the trailing slash ---------------------------------------------------------

def test_clean_urls_default_is_github_pages(tmpdir):
    s = _srv(tmpdir)
    assert _status(s, "/about") == (200, b"<p>about</p>\n")
    assert _status(s, "/about.html") == (200, b"<p>about</p>\n")
    assert _status(s, "/blog/first") == (200, b"<p>first post</p>\n")
    # A directory keeps its slash (its relative links need it), with the query.
    assert _status(s, "/blog") == (301, "/blog/")
    assert _status(s, "/blog?page=2") == (301, "/blog/?page=2")
    assert _status(s, "/blog/") == (200, b"<p>blog</p>\n")
    # keep: /about/ is not about.html (its relative links would resolve below /about/).
    assert _status(s, "/about/")[0] == 404
    # A directory wins over a page of the same name at the slash-less URL, as on GitHub Pages.
    assert _status(s, "/docs") == (301, "/docs/")
    assert _status(s, "/docs.html") == (200, b"<p>docs page</p>\n")
    # A file is served as it is; nothing with an extension is guessed.
    assert _status(s, "/app.js") == (200, b"console.log(1)\n")
    assert _status(s, "/app")[0] == 404
    assert _status(s, "/nothing")[0] == 404
    assert _status(s, "/")[1] == b"<p>home</p>\n"


def test_clean_urls_off(tmpdir):
    s = _srv(tmpdir, "clean_urls off\n")
    assert _status(s, "/about")[0] == 404
    assert _status(s, "/blog") == (301, "/blog/")
    assert _status(s, "/about.html") == (200, b"<p>about</p>\n")


def test_trailing_slash_add(tmpdir):
    s = _srv(tmpdir, "trailing_slash add\n")
    assert _status(s, "/about") == (301, "/about/")
    assert _status(s, "/about?x=1") == (301, "/about/?x=1")
    assert _status(s, "/about/") == (200, b"<p>about</p>\n")
    assert _status(s, "/blog") == (301, "/blog/")
    assert _status(s, "/blog/") == (200, b"<p>blog</p>\n")
    assert _status(s, "/app.js") == (200, b"console.log(1)\n")   # files never get a slash
    assert _status(s, "/nothing/")[0] == 404
    assert _status(s, "/")[1] == b"<p>home</p>\n"


def test_trailing_slash_remove(tmpdir):
    s = _srv(tmpdir, "trailing_slash remove\ndirectory_listing on\n")
    assert _status(s, "/about/") == (301, "/about")
    assert _status(s, "/about") == (200, b"<p>about</p>\n")
    assert _status(s, "/blog/") == (301, "/blog")
    assert _status(s, "/blog/?q=1") == (301, "/blog?q=1")
    assert _status(s, "/blog") == (200, b"<p>blog</p>\n")
    assert _status(s, "/")[1] == b"<p>home</p>\n"       # the root keeps its slash
    # A listing has relative links: a directory without an index keeps its slash.
    assert _status(s, "/listed") == (301, "/listed/")
    assert _status(s, "/listed/")[0] == 200


def test_clean_urls_redirect(tmpdir):
    s = _srv(tmpdir, "clean_urls redirect\n")
    assert _status(s, "/about.html") == (301, "/about")
    assert _status(s, "/about.html?ref=x") == (301, "/about?ref=x")
    assert _status(s, "/about") == (200, b"<p>about</p>\n")
    assert _status(s, "/blog/index.html") == (301, "/blog/")
    assert _status(s, "/index.html") == (301, "/")
    assert _status(s, "/blog/first.html") == (301, "/blog/first")
    # /docs leads to the directory, not to docs.html: that page stays where it is.
    assert _status(s, "/docs.html") == (200, b"<p>docs page</p>\n")
    # Under trailing_slash add and remove, the redirect goes to the canonical form at once.
    s2 = _srv(os.path.join(str(tmpdir), "add"), "clean_urls redirect\ntrailing_slash add\n")
    assert _status(s2, "/about.html") == (301, "/about/")
    s3 = _srv(os.path.join(str(tmpdir), "rm"), "clean_urls redirect\ntrailing_slash remove\n")
    assert _status(s3, "/blog/index.html") == (301, "/blog")


def test_clean_urls_per_location(tmpdir):
    s = _srv(tmpdir, "location /blog/ {\n    trailing_slash add\n}\n")
    assert _status(s, "/blog/first") == (301, "/blog/first/")
    assert _status(s, "/about") == (200, b"<p>about</p>\n")


def test_clean_url_directives_checked(tmpdir):
    for conf, word in [("clean_urls maybe\n", "clean_urls"),
                       ("trailing_slash sometimes\n", "trailing_slash"),
                       ("cache_policy always\n", "cache_policy")]:
        rc, err, path = check_config(str(tmpdir), conf)
        assert rc == 2, (conf, rc, err)
        assert err.startswith(path + ":1: ") and word in err, err


# ---- CORS --------------------------------------------------------------------------------------

APP = "https://app.example"
PREFLIGHT = {"Origin": APP, "Access-Control-Request-Method": "PUT",
             "Access-Control-Request-Headers": "content-type"}


def _htpasswd(tmpdir):
    h = subprocess.run(["openssl", "passwd", "-6", "pw"], stdout=subprocess.PIPE,
                       check=True).stdout.decode().strip()
    path = os.path.join(str(tmpdir), "htpasswd")
    with open(path, "w") as f:
        f.write("alice:%s\n" % h)
    return path


def _cors(r):
    return {k.lower(): v for k, v in r.headers if k.lower().startswith("access-control-")}


def _vary(r):
    return {t.strip().lower() for v in r.header_all("Vary") for t in v.split(",")}


def test_cors_preflight_answered_before_auth(tmpdir):
    conf = ("location /api/ {\n"
            "    auth_basic \"API\"\n"
            "    auth_basic_user_file %s\n"
            "    cors_allow_origin %s https://other.example\n"
            "    cors_allow_methods GET PUT DELETE\n"
            "    cors_allow_headers Content-Type Authorization\n"
            "    cors_max_age 1h\n"
            "}\n" % (_htpasswd(tmpdir), APP))
    s = _srv(tmpdir, conf)
    r = get(s, "/api/data.json", method="OPTIONS", headers=PREFLIGHT)
    assert r.status == 204, r
    assert r.header("WWW-Authenticate") is None
    assert _cors(r) == {"access-control-allow-origin": APP,
                        "access-control-allow-methods": "GET, PUT, DELETE",
                        "access-control-allow-headers": "Content-Type, Authorization",
                        "access-control-max-age": "3600"}, r.headers
    assert "origin" in _vary(r)
    # The request itself still needs the credentials; its 401 is readable by the app.
    r = get(s, "/api/data.json", headers={"Origin": APP})
    assert r.status == 401 and r.header("Access-Control-Allow-Origin") == APP, r.headers
    assert "origin" in _vary(r)
    # An OPTIONS that is no preflight (no Origin, or no Access-Control-Request-Method) is an
    # ordinary request: authentication applies.
    assert get(s, "/api/data.json", method="OPTIONS").status == 401
    assert get(s, "/api/data.json", method="OPTIONS", headers={"Origin": APP}).status == 401
    # A preflight from an origin not on the list: answered, with no CORS field at all.
    r = get(s, "/api/data.json", method="OPTIONS",
            headers=dict(PREFLIGHT, Origin="https://evil.example"))
    assert r.status == 204 and _cors(r) == {}, r.headers
    assert "origin" in _vary(r)
    # Outside the location, no CORS: OPTIONS is the static handler's.
    r = get(s, "/about.html", method="OPTIONS", headers=PREFLIGHT)
    assert r.status == 204 and _cors(r) == {} and "origin" not in _vary(r), r.headers


def test_cors_origins_on_every_response(tmpdir):
    s = _srv(tmpdir, "cors_allow_origin %s http://localhost:5173\n"
                     "cors_expose_headers ETag X-Request-Id\n" % APP)
    r = get(s, "/api/data.json", headers={"Origin": APP})
    assert r.status == 200 and r.header("Access-Control-Allow-Origin") == APP, r.headers
    assert r.header("Access-Control-Expose-Headers") == "ETag, X-Request-Id"
    assert r.header("Access-Control-Allow-Credentials") is None
    assert "origin" in _vary(r), r.headers
    # Origins compare as browsers serialise them; a port is part of the origin.
    r = get(s, "/app.js", headers={"Origin": "http://localhost:5173"})
    assert r.header("Access-Control-Allow-Origin") == "http://localhost:5173"
    for bad in ["https://evil.example", "http://localhost:5174", APP + ".evil.example",
                "null", APP + "/"]:
        r = get(s, "/app.js", headers={"Origin": bad})
        assert r.status == 200 and _cors(r) == {}, (bad, r.headers)
        assert "origin" in _vary(r), bad
    # Without Origin: no CORS field, but the response still varies by it (a cache must not
    # give this answer to a cross-origin request).
    r = get(s, "/app.js")
    assert _cors(r) == {} and "origin" in _vary(r)
    # Errors and redirects carry the fields too: a script can read them.
    for path, status in [("/nothing.js", 404), ("/blog", 301)]:
        r = get(s, path, headers={"Origin": APP})
        assert r.status == status and r.header("Access-Control-Allow-Origin") == APP, path
    # A conditional request's 304 as well.
    etag = get(s, "/app.js").header("ETag")
    r = get(s, "/app.js", headers={"Origin": APP, "If-None-Match": etag})
    assert r.status == 304 and r.header("Access-Control-Allow-Origin") == APP


def test_cors_on_deferred_and_streamed_responses(tmpdir):
    # The request's bytes are gone when a deferred exchange writes its head: the outcome was
    # kept, not the Origin.
    s = _srv(tmpdir, "test_endpoints /_test/\ncors_allow_origin %s\n" % APP)
    for path in ["/_test/delay/20", "/_test/stream/3"]:
        r = get(s, path, headers={"Origin": APP})
        assert r.status == 200 and r.header("Access-Control-Allow-Origin") == APP, (path, r)
        assert "origin" in _vary(r), (path, r.headers)
        r = get(s, path, headers={"Origin": "https://evil.example"})
        assert r.status == 200 and _cors(r) == {}, (path, r.headers)


def test_cors_any_origin(tmpdir):
    s = _srv(tmpdir, "location /api/ {\n    cors_allow_origin *\n}\n")
    for h in [{"Origin": APP}, {"Origin": "https://anyone.example"}, None]:
        r = get(s, "/api/data.json", headers=h)
        assert r.header("Access-Control-Allow-Origin") == "*", (h, r.headers)
        assert r.header("Access-Control-Allow-Credentials") is None, h
        assert "origin" not in _vary(r), (h, r.headers)   # the same answer for every origin
    r = get(s, "/api/data.json", method="OPTIONS", headers=PREFLIGHT)
    assert r.status == 204 and r.header("Access-Control-Allow-Origin") == "*"
    assert r.header("Access-Control-Allow-Methods") == "GET, HEAD, POST"   # the default
    assert r.header("Access-Control-Max-Age") == "600"
    assert get(s, "/app.js", headers={"Origin": APP}).header("Access-Control-Allow-Origin") is None


def test_cors_credentials(tmpdir):
    s = _srv(tmpdir, "cors_allow_origin %s\ncors_allow_credentials on\n" % APP)
    r = get(s, "/app.js", headers={"Origin": APP})
    assert r.header("Access-Control-Allow-Origin") == APP
    assert r.header("Access-Control-Allow-Credentials") == "true"
    # Never an echo of an origin not on the list, and never credentials for it.
    r = get(s, "/app.js", headers={"Origin": "https://evil.example"})
    assert _cors(r) == {}, r.headers


def test_cors_later_line_replaces_and_off_stops_inheritance(tmpdir):
    s = _srv(tmpdir, "cors_allow_origin https://old.example\ncors_allow_origin %s\n"
                     "location /api/ {\n    cors_allow_origin off\n}\n" % APP)
    assert _cors(get(s, "/app.js", headers={"Origin": "https://old.example"})) == {}
    assert get(s, "/app.js", headers={"Origin": APP}).header("Access-Control-Allow-Origin") == APP
    r = get(s, "/api/data.json", headers={"Origin": APP})
    assert _cors(r) == {} and "origin" not in _vary(r), r.headers


def test_cors_configuration_errors(tmpdir):
    cases = [
        ("cors_allow_origin *\ncors_allow_credentials on\n", 2, "cors_allow_credentials on"),
        ("cors_allow_credentials on\ncors_allow_origin *\n", 2, "cors_allow_origin *"),
        # `*` from the top level, credentials in a location: caught once inherited.
        ("cors_allow_origin *\nlocation /api/ {\n    cors_allow_credentials on\n}\n", 3,
         "cors_allow_origin * (%s:1)"),
        ("cors_allow_origin null\n", 1, "invalid origin 'null'"),
        ("cors_allow_origin https://app.example/\n", 1, "invalid origin"),
        ("cors_allow_origin app.example\n", 1, "invalid origin"),
        ("cors_allow_origin * https://app.example\n", 1, "alone"),
        ("cors_allow_methods GET,PUT\n", 1, "cors_allow_methods"),
        ("cors_max_age forever\n", 1, "cors_max_age"),
    ]
    for conf, line, what in cases:
        rc, err, path = check_config(str(tmpdir), conf)
        assert rc == 2, (conf, rc, err)
        assert err.startswith("%s:%d: " % (path, line)), (conf, err)
        assert (what % path if "%s" in what else what) in err, (conf, err)


# ---- allow / deny ------------------------------------------------------------------------------

def _get_from(s, path, source, headers=None, proxy=None):
    with Conn(s, source=source) as c:
        c.send((proxy or b"") + req("GET", path, headers))
        return c.read_response()


def test_allow_deny_first_match_wins(tmpdir):
    s = _srv(tmpdir, "location /admin/ {\n"
                     "    allow 127.0.0.2 10.0.0.0/8\n"
                     "    deny all\n"
                     "}\n"
                     "location /private/ {\n"
                     "    deny 127.0.0.3\n"
                     "    allow all\n"
                     "}\n"
                     "location /api/ {\n"
                     "    deny 127.0.0.0/24\n"
                     "    allow 127.0.0.4\n"    # never reached: the deny above matched first
                     "}\n")
    assert _get_from(s, "/admin/panel.html", "127.0.0.2").status == 200
    assert _get_from(s, "/admin/panel.html", "127.0.0.3").status == 403
    assert _get_from(s, "/admin/panel", "127.0.0.3").status == 403   # the clean URL too
    assert _get_from(s, "/private/x.txt", "127.0.0.3").status == 403
    assert _get_from(s, "/private/x.txt", "127.0.0.2").status == 200
    assert _get_from(s, "/api/data.json", "127.0.0.4").status == 403
    assert _get_from(s, "/api/data.json", "127.0.1.4").status == 200  # no rule matched
    assert _get_from(s, "/about", "127.0.0.3").status == 200          # no rules there


def test_deny_before_auth_and_preflight(tmpdir):
    s = _srv(tmpdir, "location /admin/ {\n"
                     "    auth_basic \"Admin\"\n"
                     "    auth_basic_user_file %s\n"
                     "    cors_allow_origin %s\n"
                     "    allow 127.0.0.2\n"
                     "    deny all\n"
                     "}\n" % (_htpasswd(tmpdir), APP))
    r = _get_from(s, "/admin/panel.html", "127.0.0.3")
    assert r.status == 403 and r.header("WWW-Authenticate") is None, r
    assert _get_from(s, "/admin/panel.html", "127.0.0.2").status == 401
    with Conn(s, source="127.0.0.3") as c:
        c.send(req("OPTIONS", "/admin/panel.html", PREFLIGHT))
        assert c.read_response().status == 403
    with Conn(s, source="127.0.0.2") as c:
        c.send(req("OPTIONS", "/admin/panel.html", PREFLIGHT))
        assert c.read_response().status == 204


def test_allow_deny_behind_trusted_proxy(tmpdir):
    s = _srv(tmpdir, "trusted_proxies 127.0.0.1\n"
                     "location /admin/ {\n    allow 198.51.100.0/24\n    deny all\n}\n")
    xff = lambda a: {"X-Forwarded-For": a}  # noqa: E731
    assert _get_from(s, "/admin/panel.html", "127.0.0.1", xff("198.51.100.7")).status == 200
    assert _get_from(s, "/admin/panel.html", "127.0.0.1", xff("203.0.113.1")).status == 403
    # From a peer that is no trusted proxy, its X-Forwarded-For is not believed.
    assert _get_from(s, "/admin/panel.html", "127.0.0.2", xff("198.51.100.7")).status == 403


def test_allow_deny_through_proxy_protocol(tmpdir):
    s = _srv(tmpdir, "listen 127.0.0.1:0 proxy_protocol\n"
                     "location /admin/ {\n    allow 198.51.100.7\n    deny all\n}\n", listen=())

    def pp(src):
        return ("PROXY TCP4 %s 127.0.0.1 40000 80\r\n" % src).encode()

    assert _get_from(s, "/admin/panel.html", None, proxy=pp("198.51.100.7")).status == 200
    assert _get_from(s, "/admin/panel.html", None, proxy=pp("198.51.100.8")).status == 403


def test_allow_deny_errors(tmpdir):
    for conf in ["allow 300.1.1.1\n", "deny 10.0.0.0/33\n", "allow everyone\n"]:
        rc, err, path = check_config(str(tmpdir), conf)
        assert rc == 2 and err.startswith(path + ":1: "), (conf, err)
        assert "invalid address or CIDR range" in err, (conf, err)


# ---- the SPA fallback: navigations only --------------------------------------------------------

def test_spa_fallback_answers_navigations_only(tmpdir):
    s = _srv(tmpdir, "spa_fallback /index.html\n")
    home = b"<p>home</p>\n"
    navigations = [
        ("/dashboard", {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}),
        ("/users/42.profile", {"Sec-Fetch-Mode": "navigate"}),   # a dot in a route
        ("/dashboard", {"Sec-Fetch-Dest": "document"}),
        ("/dashboard", {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}),
    ]
    for path, h in navigations:
        r = get(s, path, headers=h)
        assert r.status == 200 and r.body == home, (path, h, r.status)
        assert {"sec-fetch-mode", "sec-fetch-dest", "accept"} <= _vary(r), r.headers
        assert r.header("Cache-Control") == "no-cache"   # the app's page is revalidated
    others = [
        ("/assets/app.0ld0ld12.js", {"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"}),
        ("/assets/old.css", {"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "style"}),
        ("/api/users", {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}),
        ("/dashboard", {"Sec-Fetch-Dest": "iframe"}),
        ("/missing.js", {"Accept": "text/html"}),       # no fetch metadata, an extension
        ("/dashboard", {"Accept": "*/*"}),              # no fetch metadata, not HTML
        ("/dashboard", None),
    ]
    for path, h in others:
        r = get(s, path, headers=h)
        assert r.status == 404, (path, h, r.status)
        assert {"sec-fetch-mode", "sec-fetch-dest", "accept"} <= _vary(r), r.headers
    # What exists is served as itself, and does not vary by fetch metadata.
    r = get(s, "/app.js", headers={"Sec-Fetch-Mode": "navigate"})
    assert r.body == b"console.log(1)\n" and "sec-fetch-mode" not in _vary(r)


def test_spa_fallback_with_error_page(tmpdir):
    s = _srv(tmpdir, "spa_fallback /index.html\nerror_page 404 /404.html\n",
             files={"404.html": b"<h1>gone</h1>\n"})
    r = get(s, "/assets/gone.js", headers={"Sec-Fetch-Dest": "script"})
    assert r.status == 404 and r.body == b"<h1>gone</h1>\n"
    assert get(s, "/route", headers={"Sec-Fetch-Mode": "navigate"}).body == b"<p>home</p>\n"


# ---- the cache policy --------------------------------------------------------------------------

IMMUTABLE = "public, max-age=31536000, immutable"


def _cc(s, path):
    r = get(s, path)
    assert r.status == 200, (path, r.status)
    return r.header_all("Cache-Control")


def test_cache_policy_auto_by_default(tmpdir):
    s = _srv(tmpdir)
    for path in ["/assets/app.3f9a1c2b.js", "/assets/index-BZ1x2y3Z.js",
                 "/assets/main.min.9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
                 ".css"]:
        assert _cc(s, path) == [IMMUTABLE], path
    for path in ["/", "/index.html", "/about", "/blog/", "/blog/first"]:
        assert _cc(s, path) == ["no-cache"], path
    for path in ["/assets/jquery-3.7.1.min.js", "/assets/polyfills-legacy.js",
                 "/assets/bootstrap.bundle.min.js", "/files/2024-report.pdf", "/app.js",
                 "/api/data.json"]:
        assert _cc(s, path) == [], path
    # A HEAD, a range and a 304 say the same.
    r = get(s, "/assets/app.3f9a1c2b.js", headers={"Range": "bytes=0-1"})
    assert r.status == 206 and r.header("Cache-Control") == IMMUTABLE
    etag = get(s, "/index.html").header("ETag")
    r = get(s, "/index.html", headers={"If-None-Match": etag})
    assert r.status == 304 and r.header("Cache-Control") == "no-cache", r.headers


def test_cache_policy_explicit_settings_win(tmpdir):
    s = _srv(tmpdir, "location /fixed/ {\n    cache_control \"max-age=60\"\n}\n"
                     "location /expiring/ {\n    expires 1h\n}\n"
                     "location /headed/ {\n    add_header Cache-Control \"private\"\n}\n"
                     "location /plain/ {\n    cache_policy off\n}\n")
    assert _cc(s, "/fixed/app.3f9a1c2b.js") == ["max-age=60"]
    r = get(s, "/expiring/app.3f9a1c2b.js")
    assert r.header_all("Cache-Control") == [] and r.header("Expires"), r.headers
    assert _cc(s, "/headed/app.3f9a1c2b.js") == ["private"]
    assert _cc(s, "/plain/app.3f9a1c2b.js") == []
    assert _cc(s, "/assets/app.3f9a1c2b.js") == [IMMUTABLE]


def test_cache_policy_a_header_rule_wins(tmpdir):
    """A site rule naming Cache-Control (the configuration's `header`, or `_headers`) replaces
    what the cache policy derived, for hashed files and HTML alike."""
    files = {"_headers": b"/index.html\n  Cache-Control: max-age=600\n"}
    s = _srv(tmpdir, "site_rules_files on\n"
                     'header /assets/*.js Cache-Control "public, max-age=60"\n', files=files)
    assert _cc(s, "/assets/app.3f9a1c2b.js") == ["public, max-age=60"]
    assert _cc(s, "/index.html") == ["max-age=600"]
    assert _cc(s, "/about") == ["no-cache"]                  # no rule: the policy's
    assert _cc(s, "/assets/main.min.9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c"
                  "15b0f00a08.css") == [IMMUTABLE]
