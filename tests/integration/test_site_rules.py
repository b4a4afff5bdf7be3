"""Site rules: redirects, rewrites, status pages and headers by path pattern, from the
configuration (redirect, rewrite, rule, header) and from the `_redirects` and `_headers` files
at a site's root (site_rules_files on). The rule engine itself is unit-tested
(tests/unit/test_rules.c); these tests start the server and check what a client sees."""

import os
import threading

from lib.ops import run_lfhttpd
from lib.procs import write_script
from lib.server import Conn, Server, get, raw, req, wait_until, write_config


def _site(tmpdir, conf, files=None, redirects=None, headers=None):
    """A root with `files` ({path: text}), the rule files, and a configuration `conf`."""
    root = os.path.join(str(tmpdir), "www")
    for path, text in dict({"index.html": "home\n"}, **(files or {})).items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    os.makedirs(root, exist_ok=True)
    if redirects is not None:
        _write(os.path.join(root, "_redirects"), redirects)
    if headers is not None:
        _write(os.path.join(root, "_headers"), headers)
    return root, write_config(str(tmpdir), "log_level info\nroot %s\n%s" % (root, conf))


def _write(path, text):
    """Replace a file whole (write and rename), as an editor or a deploy does."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def _start(tmpdir, conf="", **kw):
    root, path = _site(tmpdir, conf, **kw)
    return root, Server(args=["--config", path])


def _loc(r):
    return r.status, r.header("Location")


def test_directives_redirect_rewrite_rule_and_their_statuses(tmpdir):
    conf = "\n".join([
        "redirect /old /about.html",                     # 301 by default
        "redirect /tmp /about.html 302",
        "redirect /see /about.html 303",
        "redirect /keep /about.html 307",
        "redirect /perm /about.html 308",
        "redirect /out https://example.com/x",           # an absolute URL
        "redirect /q /about.html?from=q",                # the target's query wins
        "rewrite /pretty /about.html",                   # served as if requested
        "rule /gone /gone.html 410",                     # a status with its page
        "rule /nopage /missing.html 404",                # no page: the built-in one
        "rule /t /about.html 302",
        ""])
    _, srv = _start(tmpdir, conf, files={"about.html": "about\n", "gone.html": "it is gone\n"})
    with srv:
        assert _loc(get(srv, "/old")) == (301, "/about.html")
        assert _loc(get(srv, "/old?a=1&b=2")) == (301, "/about.html?a=1&b=2")   # query kept
        assert _loc(get(srv, "/tmp")) == (302, "/about.html")
        assert _loc(get(srv, "/see")) == (303, "/about.html")
        assert _loc(get(srv, "/keep")) == (307, "/about.html")
        assert _loc(get(srv, "/perm/")) == (308, "/about.html")   # a trailing '/' is the same
        assert _loc(get(srv, "/out?z=1")) == (301, "https://example.com/x?z=1")
        assert _loc(get(srv, "/q?a=1")) == (301, "/about.html?from=q")
        r = get(srv, "/pretty")
        assert (r.status, r.body, r.header("Location")) == (200, b"about\n", None)
        r = get(srv, "/gone")
        assert (r.status, r.body) == (410, b"it is gone\n")
        assert r.header("Content-Type") == "text/html; charset=utf-8"
        r = get(srv, "/nopage")
        assert r.status == 404 and b"404" in r.body
        assert get(srv, "/gone", method="HEAD").body == b""
        assert _loc(get(srv, "/t")) == (302, "/about.html")
        assert get(srv, "/index.html").body == b"home\n"              # no rule: as before


def test_first_match_in_file_order_location_server_top_then_files(tmpdir):
    conf = "\n".join([
        "site_rules_files on",
        "redirect /a /top-a 302",
        "redirect /b/* /top-b 302",
        "redirect /b/x /top-bx 302",                     # after /b/*: never reached
        "location /in/ {",
        "    redirect /in/* /loc 302",
        "}",
        "redirect /in/x /top-in 302",
        ""])
    _, srv = _start(tmpdir, conf, redirects="/a /file-a 302\n/f /file-f 302\n/in/y /file-y 302\n")
    with srv:
        assert _loc(get(srv, "/a")) == (302, "/top-a")     # the configuration before the file
        assert _loc(get(srv, "/f")) == (302, "/file-f")    # the file when nothing else matches
        assert _loc(get(srv, "/b/x")) == (302, "/top-b")   # first in file order, not longest
        assert _loc(get(srv, "/in/x")) == (302, "/loc")    # the location's own before the top's
        assert _loc(get(srv, "/in/y")) == (302, "/loc")


def test_server_blocks_have_their_own_rules_and_files(tmpdir):
    root_b = os.path.join(str(tmpdir), "b")
    os.makedirs(root_b)
    _write(os.path.join(root_b, "_redirects"), "/x /from-b-file 302\n")
    conf = "\n".join([
        "redirect /all /top 302",
        "server a.test {",
        "    redirect /x /from-a 302",
        "}",
        "server b.test {",
        "    root %s" % root_b,
        "    site_rules_files on",
        "}",
        ""])
    _, srv = _start(tmpdir, conf)
    with srv:
        def at(host, path):
            return _loc(get(srv, path, headers={"Host": host}))
        assert at("a.test", "/x") == (302, "/from-a")
        assert at("a.test", "/all") == (302, "/top")      # a server inherits the top level's
        assert at("b.test", "/x") == (302, "/from-b-file")
        assert at("other", "/x")[0] == 404                # the default site reads no file


def test_placeholders_splats_globs_and_query_conditions(tmpdir):
    redirects = "\n".join([
        "/news/:year/:slug /blog/:year-:slug 302",
        "/files/* /archive/:splat 302",
        "/img/*.png /png/:splat 302",
        "/deep/**/leaf /leaf-of/:splat 302",
        "/store id=:id /item/:id 302",
        "/pick kind=a /kind-a 302",
        "/pick /kind-other 302",
        ""])
    _, srv = _start(tmpdir, "site_rules_files on\n", redirects=redirects)
    with srv:
        assert _loc(get(srv, "/news/2024/hello")) == (302, "/blog/2024-hello")
        assert _loc(get(srv, "/files/a/b/c.txt")) == (302, "/archive/a/b/c.txt")
        assert _loc(get(srv, "/files")) == (302, "/archive/")
        assert _loc(get(srv, "/img/cat.png")) == (302, "/png/cat")
        assert get(srv, "/img/cat.jpg").status == 404
        assert _loc(get(srv, "/deep/a/b/leaf")) == (302, "/leaf-of/a/b")
        assert _loc(get(srv, "/store?id=42")) == (302, "/item/42")
        assert get(srv, "/store").status == 404            # the condition does not hold
        assert _loc(get(srv, "/pick?kind=a")) == (302, "/kind-a")
        assert _loc(get(srv, "/pick?kind=b")) == (302, "/kind-other?kind=b")
        # Captured bytes are percent-encoded in a Location.
        assert _loc(get(srv, "/files/a%20b")) == (302, "/archive/a%20b")


def test_header_directive_glob_and_order_with_add_header(tmpdir):
    conf = "\n".join([
        'add_header X-Frame-Options SAMEORIGIN',
        'add_header X-Kept kept',
        'header "/assets/**/*.{js,css}" Cache-Control "public, max-age=31536000, immutable"',
        'header /assets/** X-Frame-Options DENY',          # replaces add_header's
        'header /assets/** X-Tag one',
        'header /assets/*/*.js X-Tag two',                  # two rules: joined
        ""])
    files = {"assets/js/app.js": "js", "assets/css/s.css": "css", "assets/img/a.png": "png"}
    _, srv = _start(tmpdir, conf, files=files)
    with srv:
        r = get(srv, "/assets/js/app.js")
        assert r.header("Cache-Control") == "public, max-age=31536000, immutable"
        assert r.header_all("X-Frame-Options") == ["DENY"]
        assert r.header("X-Kept") == "kept"
        assert r.header("X-Tag") == "one, two"
        assert get(srv, "/assets/css/s.css").header("Cache-Control").startswith("public")
        r = get(srv, "/assets/img/a.png")
        assert r.header("Cache-Control") is None and r.header("X-Tag") == "one"
        r = get(srv, "/index.html")
        assert r.header_all("X-Frame-Options") == ["SAMEORIGIN"] and r.header("X-Tag") is None
        r = get(srv, "/assets/nothing.js")                 # error responses get them too
        assert r.status == 404 and r.header("X-Tag") == "one"


def test_netlify_documentation_examples(tmpdir):
    """The `_redirects` examples of Netlify's documentation, as behaviour."""
    redirects = """
# Redirects from what the browser requests to what we serve
/home              /
/blog/my-post.php  /blog/my-post
/news              /blog
/cuties            https://www.petsofnetlify.com
/pass-through      /index.html  200

/posts/*  /news/:splat
/news/:month/:date/:year/:slug  /blog/:year/:month/:date/:slug
/store id=:id  /blog/:id  301
/articles id=:id tag=:tag /posts/:tag/:id 301
/ecommerce  /store-closed  404
/app/*  /app/index.html  200
/*  /index.html  200
"""
    files = {"app/index.html": "app shell\n", "assets/logo.svg": "<svg/>"}
    _, srv = _start(tmpdir, "site_rules_files on\n", files=files, redirects=redirects)
    with srv:
        assert _loc(get(srv, "/home")) == (301, "/")
        assert _loc(get(srv, "/blog/my-post.php")) == (301, "/blog/my-post")
        assert _loc(get(srv, "/news")) == (301, "/blog")
        assert _loc(get(srv, "/cuties")) == (301, "https://www.petsofnetlify.com")
        assert get(srv, "/pass-through").body == b"home\n"
        assert _loc(get(srv, "/posts/2024/post")) == (301, "/news/2024/post")
        assert _loc(get(srv, "/news/02/12/2004/my-story")) == (301, "/blog/2004/02/12/my-story")
        assert _loc(get(srv, "/store?id=my-id")) == (301, "/blog/my-id")
        assert _loc(get(srv, "/articles?id=5&tag=cats")) == (301, "/posts/cats/5")
        assert get(srv, "/ecommerce").status == 404
        r = get(srv, "/app/settings/profile")               # a single-page app's routes
        assert (r.status, r.body) == (200, b"app shell\n")
        r = get(srv, "/anything/else")                       # the catch-all
        assert (r.status, r.body) == (200, b"home\n")
        assert get(srv, "/assets/logo.svg").body == b"<svg/>"  # a file shadows the catch-all
        assert get(srv, "/healthz").status == 200              # built-ins are never rewritten
    # The documentation's snippets together: /news -> /blog and /blog/* -> /news/:splat send
    # a browser round for ever; refused at load, with the trail.
    root, path = _site(tmpdir, "site_rules_files on\n",
                       redirects="/news /blog\n/blog/*  /news/:splat\n")
    rc, _, err = run_lfhttpd(["-t", "-c", path])
    assert rc == 2 and "_redirects:2: redirect loop: /news -> /blog -> /news/ -> /blog" in err, err


def test_cloudflare_pages_documentation_examples(tmpdir):
    """The `_redirects` and `_headers` examples of Cloudflare Pages' documentation."""
    redirects = """
/home301 / 301
/home302 / 302
/querystrings /?query=string 301
/twitch https://twitch.tv
/notrailing/ /nottrailing 301
/page/ /page2/#fragment 301
/blog/* https://blog.my.domain/:splat
/products/:code/:name /products?code=:code&name=:name
"""
    headers = """
/secure/page
  X-Frame-Options: DENY
  X-Content-Type-Options: nosniff
  Referrer-Policy: no-referrer

/static/*
  Access-Control-Allow-Origin: *
  X-Robots-Tag: nosnippet

https://myproject.pages.dev/*
  X-Robots-Tag: noindex

/movies/:title
  x-movie-name: You are watching ":title"

/*
  X-Everywhere: yes

/static/private/*
  ! Access-Control-Allow-Origin
  ! X-Everywhere
"""
    files = {"secure/page": "secure", "static/a.txt": "a", "static/private/p.txt": "p",
             "movies/jaws": "jaws"}
    _, srv = _start(tmpdir, "site_rules_files on\n", files=files, redirects=redirects,
                    headers=headers)
    with srv:
        assert _loc(get(srv, "/home301")) == (301, "/")
        assert _loc(get(srv, "/home302")) == (302, "/")
        assert _loc(get(srv, "/querystrings?x=1")) == (301, "/?query=string")
        assert _loc(get(srv, "/twitch")) == (301, "https://twitch.tv")
        assert _loc(get(srv, "/notrailing")) == (301, "/nottrailing")
        assert _loc(get(srv, "/page/")) == (301, "/page2/#fragment")
        assert _loc(get(srv, "/page?x=1")) == (301, "/page2/?x=1#fragment")
        assert _loc(get(srv, "/blog/a/b")) == (301, "https://blog.my.domain/a/b")
        assert _loc(get(srv, "/products/42/chair")) == (301, "/products?code=42&name=chair")
        r = get(srv, "/secure/page")
        assert (r.header("X-Frame-Options"), r.header("X-Content-Type-Options"),
                r.header("Referrer-Policy")) == ("DENY", "nosniff", "no-referrer")
        r = get(srv, "/static/a.txt")
        assert r.header("Access-Control-Allow-Origin") == "*"
        assert r.header("X-Robots-Tag") == "nosnippet"       # not the other host's noindex
        assert r.header("X-Everywhere") == "yes"
        assert get(srv, "/movies/jaws").header("x-movie-name") == 'You are watching "jaws"'
        r = get(srv, "/static/private/p.txt")                  # detached
        assert r.header("Access-Control-Allow-Origin") is None
        assert r.header("X-Everywhere") is None and r.header("X-Robots-Tag") == "nosnippet"
    assert "_headers:11: pattern 'https://myproject.pages.dev/*' is for a host" in srv.stderr
    # /trailing -> /trailing/ matches its own target (a trailing '/' is not significant in a
    # pattern): a browser would come back for ever, so lfhttpd refuses it at load.
    _, path = _site(tmpdir, "site_rules_files on\n", redirects="/trailing /trailing/ 301\n")
    rc, _, err = run_lfhttpd(["-t", "-c", path])
    assert rc == 2 and "_redirects:1: redirect loop: /trailing -> /trailing/" in err, err


def test_force_applies_over_a_file_and_a_plain_rule_is_shadowed(tmpdir):
    redirects = "\n".join([
        "/about.html /shadowed 302",
        "/forced.html /over-the-file 302!",
        "/dir/ /dir-shadowed 302",
        "/empty/ /empty-not-shadowed 302",
        "/missing.html /not-shadowed 302",
        "/spa/* /index.html 200",
        ""])
    files = {"about.html": "about", "forced.html": "f", "dir/index.html": "dir index",
             "empty/x.txt": "x", "spa/real.js": "real js"}
    _, srv = _start(tmpdir, "site_rules_files on\n", files=files, redirects=redirects)
    with srv:
        assert get(srv, "/about.html").body == b"about"              # the file wins
        assert _loc(get(srv, "/forced.html")) == (302, "/over-the-file")
        assert get(srv, "/dir/").body == b"dir index"                # a directory's index
        assert _loc(get(srv, "/empty/")) == (302, "/empty-not-shadowed")
        assert _loc(get(srv, "/missing.html")) == (302, "/not-shadowed")
        assert get(srv, "/spa/real.js").body == b"real js"
        assert get(srv, "/spa/route").body == b"home\n"


def test_rule_files_are_never_served(tmpdir):
    other = os.path.join(str(tmpdir), "other")
    os.makedirs(other)
    _write(os.path.join(other, "_redirects"), "secret\n")
    conf = "site_rules_files on\nlocation /_redirects {\n    root %s\n}\n" % other
    _, srv = _start(tmpdir, conf, redirects="/a /b 302\n", headers="/*\n  X-A: 1\n")
    with srv:
        for path in ("/_redirects", "/_headers", "/_redirects/", "/%5Fredirects"):
            r = get(srv, path)
            assert r.status == 404 and b"/a /b" not in r.body and b"secret" not in r.body, path
    # Off: the server does not know the files, and they are ordinary files.
    _, srv = _start(tmpdir, "", redirects="/a /b 302\n")
    with srv:
        assert get(srv, "/_redirects").body == b"/a /b 302\n"
        assert get(srv, "/a").status == 404


def test_reload_on_change_rereads_the_files_and_never_mixes(tmpdir):
    def files(n):
        return "/probe /v%d 302\n" % n, "/probe\n  X-A: %d\n/*\n  X-B: %d\n" % (n, n)
    red, hdr = files(1)
    root, path = _site(tmpdir, "reload_on_change on\nsite_rules_files on\n",
                       redirects=red, headers=hdr)
    srv = Server(args=["--config", path])
    seen, stop, errors = set(), threading.Event(), []

    def hammer():
        with Conn(srv) as c:
            while not stop.is_set():
                c.send(req("GET", "/probe"))
                r = c.read_response()
                if r.header("X-A") != r.header("X-B") or \
                        r.header("Location") != "/v%s" % r.header("X-A"):
                    errors.append(r)
                seen.add(r.header("X-A"))
    t = threading.Thread(target=hammer)
    try:
        t.start()
        for n in (2, 3):
            red, hdr = files(n)
            _write(os.path.join(root, "_headers"), hdr)
            _write(os.path.join(root, "_redirects"), red)
            assert wait_until(lambda: get(srv, "/probe").header("Location") == "/v%d" % n
                              and get(srv, "/probe").header("X-A") == str(n), 15), srv.stderr
        assert "_redirects changed: reloading" in srv.stderr or \
            "_headers changed: reloading" in srv.stderr, srv.stderr
        stop.set()
        t.join(10)
        # A file created after the start is watched too (its directory is).
        os.remove(os.path.join(root, "_redirects"))
        assert wait_until(lambda: get(srv, "/probe").status == 404, 15), srv.stderr
        _write(os.path.join(root, "_redirects"), "/probe /created 302\n")
        assert wait_until(lambda: get(srv, "/probe").header("Location") == "/created", 15)
    finally:
        stop.set()
        t.join(10)
        srv.stop()
    # One request sees one reading of the files: the headers and the redirect agree.
    assert not errors, errors[:3]
    assert {"1", "3"} <= seen


def test_malformed_file_fails_the_start_and_keeps_the_old_rules_at_reload(tmpdir):
    root, path = _site(tmpdir, "site_rules_files on\nreload_on_change on\n",
                       redirects="/a /b 302\n/c\n")
    rc, _, err = run_lfhttpd(["-t", "-c", path])
    assert rc == 2 and "www/_redirects:2: missing target after '/c'" in err, err
    rc, _, err = run_lfhttpd(["-c", path, "-l", "127.0.0.1:0"])
    assert rc == 2 and "_redirects:2:" in err, err
    _write(os.path.join(root, "_redirects"), "/a /b 302\n")
    _write(os.path.join(root, "_headers"), "/x\n  Bad Name: 1\n")
    rc, _, err = run_lfhttpd(["-t", "-c", path])
    assert rc == 2 and "www/_headers:2: invalid header name 'Bad Name'" in err, err
    _write(os.path.join(root, "_headers"), "/x\n  X-Ok: 1\n")
    srv = Server(args=["--config", path])
    with srv:
        assert _loc(get(srv, "/a")) == (302, "/b")
        _write(os.path.join(root, "_redirects"), "/a /new 302\n/loop1 /loop2\n/loop2 /loop1\n")
        assert wait_until(lambda: "keeping generation 1" in srv.stderr, 15), srv.stderr
        assert "_redirects:2: redirect loop: /loop1 -> /loop2 -> /loop1" in srv.stderr
        assert _loc(get(srv, "/a")) == (302, "/b")           # the old rules, whole
        assert get(srv, "/x").header("X-Ok") == "1"


def test_unsupported_conditions_warn_with_file_and_line_and_skip_the_rule(tmpdir):
    redirects = "/a /b 302 Country=us\n/c /d 302 Language=fr\n/a /e 302\n"
    _, path = _site(tmpdir, "site_rules_files on\n", redirects=redirects)
    rc, _, err = run_lfhttpd(["-t", "-c", path])
    assert rc == 0, err
    assert "_redirects:1: condition 'Country=us' cannot be evaluated by lfhttpd; rule skipped" \
        in err, err
    assert "_redirects:2: condition 'Language=fr'" in err
    srv = Server(args=["--config", path])
    with srv:
        assert _loc(get(srv, "/a")) == (302, "/e")


def test_configuration_errors_name_the_line(tmpdir):
    cases = [
        ("redirect /a /b 200", "'redirect' takes a status 301, 302, 303, 307 or 308"),
        ("rewrite /a /b sometimes", "'rewrite' takes FROM TO [force]"),
        ("rule /a 302", "missing target after '/a'"),
        ("rule /a b 302", "target 'b' is neither a path nor an http(s) URL"),
        ("header /a Bad:Name 1", "invalid header name"),
        ("header /a Content-Length 1", "header 'Content-Length' is the server's to send"),
        ("redirect /a //evil.example", "names another host"),
        ("location /x {\n    site_rules_files on\n}", "site_rules_files"),
    ]
    for line, reason in cases:
        _, path = _site(tmpdir, "listen 127.0.0.1:0\n" + line + "\n")
        rc, _, err = run_lfhttpd(["-t", "-c", path])
        want_line = 5 if "site_rules_files" in line else 4
        assert rc == 2 and "lfhttpd.conf:%d:" % want_line in err and reason in err, (line, err)
    # A loop among the configuration's rules, found at load, names the rule's line.
    _, path = _site(tmpdir, "redirect /a /b\nredirect /b /a\n")
    rc, _, err = run_lfhttpd(["-t", "-c", path])
    assert rc == 2 and "lfhttpd.conf:3: redirect loop: /a -> /b -> /a" in err, err


def test_rewrite_chain_is_bounded_at_run_time(tmpdir):
    # Eight forced rewrites are followed; a ninth answers 500 and says so in the log.
    chain = "".join("/c%d /c%d 200!\n" % (i, i + 1) for i in range(12))
    _, srv = _start(tmpdir, "site_rules_files on\n", files={"c12": "twelve"}, redirects=chain)
    with srv:
        r = get(srv, "/c0")                       # /c8 still matches a rule after eight
        assert r.status == 500
        assert wait_until(lambda: "more than 8 rewrites for /c0" in srv.stderr, 5), srv.stderr
        assert get(srv, "/c4").body == b"twelve"  # eight rewrites, then no rule: served
    chain = "".join("/d%d /d%d 200!\n" % (i, i + 1) for i in range(8))
    _, srv = _start(tmpdir, "site_rules_files on\n", files={"d8": "d eight"}, redirects=chain)
    with srv:
        assert get(srv, "/d0").body == b"d eight"                # exactly eight: served


def test_crlf_injection_is_impossible(tmpdir):
    redirects = "/r/:x /t/:x 302\n/q id=:id /t?id=:id 302\n/h/* /t/:splat 302\n"
    headers = "/v/:x\n  X-V: :x\n"
    _, srv = _start(tmpdir, "site_rules_files on\n", redirects=redirects, headers=headers)
    with srv:
        for path in ("/r/a%0d%0aSet-Cookie:%20x=1", "/h/a%0aSet-Cookie:x", "/v/a%0d%0aX-Evil:1",
                     "/q?id=a%0d%0aSet-Cookie:x"):
            r = get(srv, path)
            assert r.header("Set-Cookie") is None and r.header("X-Evil") is None, (path, r)
            assert "\r" not in (r.header("Location") or "") and r.status in (302, 400), (path, r)
        assert _loc(get(srv, "/q?id=a%0d%0aSet-Cookie:x")) == (302, "/t?id=a%0d%0aSet-Cookie:x")
        assert get(srv, "/v/a%0d%0aX-Evil:1").status == 400


def test_rewrites_never_leave_the_root(tmpdir):
    secret = os.path.join(str(tmpdir), "secret.txt")
    with open(secret, "w") as f:
        f.write("secret")
    _, srv = _start(tmpdir, "site_rules_files on\n",
                    redirects="/e/* /:splat 200!\n/up/:x /../:x 200!\n")
    with srv:
        for path in ("/e/../secret.txt", "/e/%2e%2e/secret.txt", "/e/..%2fsecret.txt",
                     "/up/secret.txt"):
            r = raw(srv, req("GET", path))
            assert r.status in (400, 404) and b"secret" not in r.body, (path, r)


def test_access_log_shows_the_original_request_and_handlers_see_the_rewrite(tmpdir):
    log = os.path.join(str(tmpdir), "access.log")
    conf = "access_log %s\nrewrite /pretty/* /about.html\nlocation /t/ {\n    handler test\n}\n" \
           "header /t/* X-Deferred yes\nrewrite /late /t/delay/1\n" % log
    _, srv = _start(tmpdir, conf, files={"about.html": "about\n"})
    with srv:
        assert get(srv, "/pretty/page?x=1").body == b"about\n"
        r = get(srv, "/t/delay/1")                        # a deferred exchange keeps them
        assert r.status == 200 and r.header("X-Deferred") == "yes", r
        r = get(srv, "/late")                             # rewritten into another location
        assert r.status == 200 and r.header("X-Deferred") is None, r
        assert wait_until(lambda: os.path.exists(log) and
                          "GET /pretty/page?x=1 HTTP/1.1" in open(log).read(), 5)


def test_rules_run_after_access_and_cors_and_their_headers_come_last(tmpdir):
    conf = "\n".join([
        "location /closed/ {",
        "    deny all",
        "}",
        "redirect /closed/* /elsewhere 302",
        "cors_allow_origin https://app.example",
        "redirect /r /about.html 302",
        "header /* X-Rule yes",
        "header /replaced Access-Control-Allow-Origin https://other.example",
        ""])
    _, srv = _start(tmpdir, conf, files={"about.html": "about", "replaced": "r"})
    with srv:
        assert get(srv, "/closed/x").status == 403          # access before the rules
        origin = {"Origin": "https://app.example"}
        r = get(srv, "/r", headers=origin)                   # CORS fields on a rule's redirect
        assert _loc(r) == (302, "/about.html")
        assert r.header("Access-Control-Allow-Origin") == "https://app.example"
        assert r.header("X-Rule") == "yes"
        r = get(srv, "/replaced", headers=origin)             # a rule's header comes last
        assert r.header_all("Access-Control-Allow-Origin") == ["https://other.example"]


def test_a_rewrite_targets_query_reaches_the_handler(tmpdir):
    """The query a rewrite's target carries is the one the handler sees (a CGI script's
    QUERY_STRING); a target without a query keeps the request's."""
    conf = ("location /cgi-bin/ {\n    handler cgi\n}\n"
            "rewrite /search/:term /cgi-bin/q?term=:term\n"
            "rewrite /plain /cgi-bin/q\n"
            "rewrite /twice /search/x%20y\n")
    root, path = _site(tmpdir, conf)
    write_script(os.path.join(root, "cgi-bin"), "q",
                 "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s' \"$QUERY_STRING\"\n")
    with Server(args=["--config", path]) as srv:
        assert get(srv, "/search/caf%C3%A9?page=2").body == b"term=caf%C3%A9"
        assert get(srv, "/plain?a=1&b").body == b"a=1&b"
        assert get(srv, "/twice?ignored=1").body == b"term=x%20y"
        assert get(srv, "/cgi-bin/q?direct=1").body == b"direct=1"


def test_a_rewrite_meets_the_guards_of_its_targets_location(tmpdir):
    """A rewrite into another location passes that location's allow/deny, limits and CORS,
    as if the client had asked for the rewritten path: from the configuration and from
    `_redirects`, forced or not."""
    conf = "\n".join([
        "site_rules_files on",
        "location /admin/ {",
        "    deny all",
        "}",
        "location /slow/ {",
        "    limit_req_per_ip 1r/m",
        "}",
        "location /many/ {",
        "    cors_allow_origin https://a.example https://b.example https://c.example",
        "}",
        "location /one/ {",
        "    cors_allow_origin https://x.example",
        "}",
        "rewrite /open/* /admin/:splat force",
        "rewrite /fast/* /slow/:splat force",
        "rewrite /many/* /one/:splat force",
        ""])
    files = {"admin/secret.html": "secret", "slow/a.html": "a", "one/f.html": "f"}
    _, srv = _start(tmpdir, conf, files=files, redirects="/open2/* /admin/:splat 200!\n"
                                                         "/soft/* /admin/:splat 200\n")
    with srv:
        assert get(srv, "/admin/secret.html").status == 403
        for path in ("/open/secret.html", "/open2/secret.html", "/soft/secret.html"):
            assert get(srv, path).status == 403, path
        assert get(srv, "/fast/a.html").status == 200      # the target's rate: 1 a minute
        assert get(srv, "/fast/a.html").status == 429
        assert get(srv, "/slow/a.html").status == 429
        # The third origin of /many/ is not one of /one/'s: no CORS field, and never
        # another location's origin list read by this one's index.
        r = get(srv, "/many/f.html", headers={"Origin": "https://c.example"})
        assert (r.status, r.header("Access-Control-Allow-Origin")) == (200, None)
        r = get(srv, "/many/f.html", headers={"Origin": "https://x.example"})
        assert r.header("Access-Control-Allow-Origin") == "https://x.example"


def test_a_loop_through_the_configuration_and_the_file_is_refused_at_load(tmpdir):
    """Each set alone is loop-free; together (the configuration's rules tried first, then
    `_redirects`) /a -> /b -> /a. Refused by -t and at start, and a reload that brings the
    loop keeps the old rules."""
    root, path = _site(tmpdir, "site_rules_files on\nreload_on_change on\nredirect /a /b\n",
                       redirects="/b /a 301\n")
    rc, _, err = run_lfhttpd(["-t", "-c", path])
    assert rc == 2 and "lfhttpd.conf:5: redirect loop: /a -> /b -> /a" in err, err
    _write(os.path.join(root, "_redirects"), "/b /c 301\n")
    srv = Server(args=["--config", path])
    with srv:
        assert _loc(get(srv, "/b")) == (301, "/c")
        _write(os.path.join(root, "_redirects"), "/b /a 301\n")
        assert wait_until(lambda: "keeping generation 1" in srv.stderr, 15), srv.stderr
        assert "redirect loop: /a -> /b -> /a" in srv.stderr
        assert _loc(get(srv, "/b")) == (301, "/c")
