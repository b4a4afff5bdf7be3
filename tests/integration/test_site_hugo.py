"""A real generator's output end to end: a small Hugo site (fingerprinted assets with
subresource integrity, `aliases` for moved pages, a `_redirects` file for a moved section, its
own 404 page) built by Debian's hugo, served by lfhttpd with the defaults plus
`error_page 404 /404.html` and `site_rules_files on`, and rendered by headless
Chromium: pages render with their style and script, moved pages land where they should,
assets are cached immutable and pages revalidated (raw requests), the 404 page is the site's."""

import os
import re
import shutil
import subprocess
import tempfile


import pytest

from lib.browser import run_chromium
from lib.server import ConfServer, T, get

SITE = {
    "hugo.toml": 'baseURL = "/"\ntitle = "lfhttpd test site"\n'
                 'disableKinds = ["RSS", "sitemap", "taxonomy", "term"]\n',
    "layouts/_default/baseof.html": """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{ .Title }}</title>
{{ $css := resources.Get "css/main.css" | minify | fingerprint }}
<link rel="stylesheet" href="{{ $css.RelPermalink }}" integrity="{{ $css.Data.Integrity }}">
</head>
<body>
<main>{{ block "main" . }}{{ end }}</main>
<div id="probe"></div>
{{ $js := resources.Get "js/app.js" | minify | fingerprint }}
<script src="{{ $js.RelPermalink }}" integrity="{{ $js.Data.Integrity }}"></script>
</body>
</html>
""",
    "layouts/_default/single.html":
        '{{ define "main" }}<h1 id="title">{{ .Title }}</h1>{{ .Content }}{{ end }}\n',
    "layouts/_default/list.html":
        '{{ define "main" }}<h1 id="title">{{ .Title }}</h1>{{ end }}\n',
    "layouts/index.html": '{{ define "main" }}<h1 id="title">Home</h1>{{ end }}\n',
    "layouts/404.html": '{{ define "main" }}<h1 id="title">This page is not here</h1>{{ end }}\n',
    # The style sets the probe's width; the script reads it back into the DOM: a rendered DOM
    # with 123px proves both were served, with their types, and passed their integrity check.
    "assets/css/main.css": "#probe { width: 123px; height: 1px; }\n",
    "assets/js/app.js": 'document.body.setAttribute("data-js", "ran");\n'
                        'document.body.setAttribute("data-probe-width", '
                        'getComputedStyle(document.getElementById("probe")).width);\n',
    "content/about.md": '---\ntitle: "About us"\naliases: ["/old-about/", "/company/info.html"]'
                        '\n---\nWe serve static files.\n',
    "content/posts/first.md": '---\ntitle: "First post"\naliases: ["/2019/01/first-post/"]\n'
                              '---\nHello.\n',
    # Netlify's file, which Hugo copies from static/ as it is: a section moved wholesale.
    "static/_redirects": "# moved when the blog became posts\n/blog/* /posts/:splat 301\n",
}


def _build(tmpdir):
    hugo = shutil.which("hugo")
    assert hugo, "hugo not installed (tools/deps.sh test installs Debian's hugo)"
    src = os.path.join(tmpdir, "site")
    for rel, text in SITE.items():
        p = os.path.join(src, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
    public = os.path.join(tmpdir, "public")
    p = subprocess.run([hugo, "--source", src, "--destination", public, "--quiet"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=T(60), env=dict(os.environ, HOME=tmpdir))
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")
    return public


def _render(tmpdir, srv, path):
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmpdir)
    url = "http://127.0.0.1:%d%s" % (srv.port, path)
    rc, dom, err = run_chromium(url, profile, ["--dump-dom"])
    assert rc == 0, "chromium exited %d:\n%s" % (rc, err[-2000:])
    return dom


def _rendered_page(dom, title):
    assert '<h1 id="title">%s</h1>' % title in dom, dom[:1500]
    assert 'data-js="ran"' in dom and 'data-probe-width="123px"' in dom, dom[:1500]


@pytest.mark.timeout(900)
def test_hugo_site_in_headless_chromium(tmpdir):
    tmpdir = str(tmpdir)
    public = _build(tmpdir)
    assert os.path.exists(os.path.join(public, "_redirects"))
    srv = ConfServer(tmpdir, "error_page 404 /404.html\nsite_rules_files on\n", root=public)

    # Raw requests: the fingerprinted assets are immutable, the pages revalidated.
    home = get(srv, "/")
    assert home.status == 200 and home.header("Cache-Control") == "no-cache", home.headers
    assets = re.findall(r'(?:href|src)="(/(?:css|js)/[^"]+)"', home.body.decode())
    assert len(assets) == 2 and all(re.search(r"\.[0-9a-f]{64}\.", a) for a in assets), assets
    for a in assets:
        r = get(srv, a)
        assert r.status == 200, (a, r.status)
        assert r.header("Cache-Control") == "public, max-age=31536000, immutable", r.headers
    r = get(srv, "/nowhere/at-all")
    assert r.status == 404 and b"This page is not here" in r.body, r
    assert get(srv, "/about").header("Location") == "/about/"
    r = get(srv, "/blog/first/")                     # the site's _redirects, read and obeyed
    assert (r.status, r.header("Location")) == (301, "/posts/first/"), r.headers
    assert get(srv, "/_redirects").status == 404     # and never served

    # Pages render with their style and script.
    _rendered_page(_render(tmpdir, srv, "/"), "Home")
    _rendered_page(_render(tmpdir, srv, "/posts/first/"), "First post")
    # A moved page lands where it should, by every form of its old URL: the alias page's
    # refresh, behind the directory slash, and a clean URL for an alias written as .html.
    for old in ["/old-about/", "/old-about", "/company/info", "/company/info.html"]:
        _rendered_page(_render(tmpdir, srv, old), "About us")
    _rendered_page(_render(tmpdir, srv, "/2019/01/first-post"), "First post")
    _rendered_page(_render(tmpdir, srv, "/blog/first/"), "First post")
    # The 404 page is the site's, styled and scripted like the others.
    _rendered_page(_render(tmpdir, srv, "/no/such/page"), "This page is not here")


# Eight runs of a browser, each bounded by its own T(90).
