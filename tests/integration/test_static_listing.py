"""Directory listings: off by default, on per location; HTML (escaped names, percent-encoded
links that work, sizes, dates, sorting, viewport meta) and JSON (Accept: application/json)."""

import html.parser
import json
import os
import urllib.parse

import pytest

from lib.server import ConfServer, get
from lib.static import OLD, make_root, set_mtime

NAMES = {
    "plain.txt": b"abc",
    "with space.txt": b"spaces" * 10,
    "<b>bold<i>.html": b"<p>tag</p>" * 30,
    'quote"s.txt': b"q" * 3000,
    "amp&co.txt": b"a" * 12,
    "x&amp;y.txt": b"xy" * 50,
    "apos'x.txt": b"'",
    "h\u00e9llo w\u00f6rld \u2603.txt": "snow\u2603".encode(),
    "100%.txt": b"percent" * 7,
    "q?mark.txt": b"question",
    "hash#tag.txt": b"hash" * 100,
    "semi;colon.txt": b";;",
    "plus+sign.txt": b"+",
    "big.bin": b"\0" * 200000,
}
HIDDEN = {".hidden": b"h", ".git/config": b"[core]\n"}
SUBDIR = "sub dir <&>"


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []        # (href, text)
        self.metas = []
        self.title = ""
        self._in_a = None
        self._in_title = False
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a":
            self._in_a = [a.get("href"), ""]
        elif tag == "meta":
            self.metas.append(a)
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag):
        if tag == "a" and self._in_a:
            self.links.append(tuple(self._in_a))
            self._in_a = None
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_a is not None:
            self._in_a[1] += data
        if self._in_title:
            self.title += data


def parse(body):
    p = Links()
    p.feed(body.decode("utf-8"))
    p.close()
    return p


def _tree(tmpdir):
    files = {"pub/" + n: d for n, d in NAMES.items()}
    files.update({"pub/" + n: d for n, d in HIDDEN.items()})
    files["pub/%s/inner.txt" % SUBDIR] = b"inner"
    files["pub/withindex/index.html"] = b"<p>the index</p>"
    files["pub/withindex/other.txt"] = b"other"
    files["private/x.txt"] = b"x"
    root = make_root(os.path.join(tmpdir, "root"), files)
    # Distinct mtimes: plain.txt is the newest file.
    for i, n in enumerate(sorted(NAMES)):
        set_mtime(os.path.join(root, "pub", n), OLD + i * 60)
    set_mtime(os.path.join(root, "pub", "plain.txt"), OLD + 86400 * 30)
    return root


def _srv(tmpdir, extra=""):
    root = _tree(tmpdir)
    s = ConfServer(tmpdir, "location /pub/ {\n    directory_listing on\n%s}\n" % extra, root=root)
    s.rootdir = root
    return s


def _file_links(p):
    """Names (decoded from the hrefs) of the entries, in page order, with their link text."""
    out = []
    for href, text in p.links:
        if href is None or href.startswith("?") or href in ("../", "./.."):
            continue
        rel = href[2:] if href.startswith("./") else href
        out.append((urllib.parse.unquote(rel, errors="strict"), text))
    return out


def test_listing_off_by_default(srv):
    for path in ["/", "/emptydir/"]:
        r = get(srv, path)
        assert r.status == 403, (path, r.status)
        assert b"emptydir" not in r.body and b"small.html" not in r.body, path


def test_listing_per_location(tmpdir):
    s = _srv(tmpdir)
    assert get(s, "/pub/").status == 200
    assert get(s, "/private/").status == 403
    assert get(s, "/").status == 403
    # A directory with an index file serves the index, listing or not.
    r = get(s, "/pub/withindex/")
    assert r.status == 200 and r.body == b"<p>the index</p>"
    # Without its slash: the usual redirect first.
    r = get(s, "/pub")
    assert r.status == 301 and r.header("Location") == "/pub/", r.headers


def test_html_listing_names_escaped_and_links_work(tmpdir):
    s = _srv(tmpdir)
    r = get(s, "/pub/")
    assert r.status == 200, r.status
    assert r.header("Content-Type") == "text/html; charset=utf-8", r.header("Content-Type")
    body = r.body
    # Raw markup from file names never reaches the page.
    assert b"<b>bold" not in body and b'quote"s' not in body, "unescaped name in the listing"
    p = parse(body)
    entries = _file_links(p)
    names = [n.rstrip("/") for n, _ in entries]
    assert sorted(names) == sorted(list(NAMES) + [SUBDIR, "withindex"]), names
    for name, text in entries:
        assert text.rstrip("/") == name.rstrip("/"), (name, text)
    # Every link, resolved against the directory URL, leads to the entry.
    for href, text in p.links:
        if href is None or href.startswith("?") or href == "../":
            continue
        for ch in ' "<>#?':
            assert ch not in href, "unencoded %r in href %r" % (ch, href)
        url = urllib.parse.urljoin("/pub/", href)
        got = get(s, url)
        name = urllib.parse.unquote(href[2:] if href.startswith("./") else href).rstrip("/")
        if name in NAMES:
            assert got.status == 200 and got.body == NAMES[name], (href, url, got.status)
        else:
            assert got.status in (200, 403), (href, url, got.status)
    # Hidden files are not listed.
    assert b".hidden" not in body and b".git" not in body


def test_html_listing_sizes_dates_viewport(tmpdir):
    s = _srv(tmpdir)
    p = parse(get(s, "/pub/").body)
    vp = [m for m in p.metas if m.get("name") == "viewport"]
    assert vp and "width=device-width" in vp[0].get("content", ""), p.metas
    assert "/pub/" in p.title, p.title
    text = "".join(p.text)
    # Sizes (exact bytes or a human-readable form) and modification dates.
    assert "200000" in text or "195.3" in text or "195K" in text, text
    assert "3000" in text or "2.9" in text, text
    newest = OLD + 86400 * 30
    import time
    day = time.strftime("%d %b %Y", time.gmtime(newest))
    iso = time.strftime("%Y-%m-%d", time.gmtime(newest))
    assert day in text or iso in text, (day, text[:2000])


def test_html_listing_sorting(tmpdir):
    s = _srv(tmpdir)
    files = {n: len(d) for n, d in NAMES.items()}

    def order(q):
        r = get(s, "/pub/" + q)
        assert r.status == 200
        # By link text (the escaped name), so that this test does not depend on the hrefs.
        return [t for _, t in _file_links(parse(r.body)) if t in files]

    assert order("") == sorted(files, key=lambda n: n.encode()), order("")
    by_size = order("?sort=size&order=desc")
    assert [files[n] for n in by_size] == sorted(files.values(), reverse=True), by_size
    by_size = order("?sort=size")
    assert [files[n] for n in by_size] == sorted(files.values()), by_size
    assert order("?sort=name&order=desc") == sorted(files, key=lambda n: n.encode(),
                                                    reverse=True)
    by_mtime = order("?sort=mtime&order=desc")
    assert by_mtime[0] == "plain.txt", by_mtime


def test_subdirectory_listing(tmpdir):
    s = _srv(tmpdir)
    url = "/pub/" + urllib.parse.quote(SUBDIR) + "/"
    r = get(s, url)
    assert r.status == 200, r.status
    assert b"<&>" not in r.body
    p = parse(r.body)
    hrefs = [h for h, _ in p.links]
    assert "../" in hrefs, hrefs
    assert SUBDIR in p.title, p.title
    assert [n for n, _ in _file_links(p)] == ["inner.txt"], p.links


def test_hidden_files_listed_when_allowed(tmpdir):
    s = _srv(tmpdir, "    hidden_files allow\n")
    names = [n.rstrip("/") for n, _ in _file_links(parse(get(s, "/pub/").body))]
    assert ".hidden" in names and ".git" in names, names
    assert get(s, "/pub/.hidden").body == b"h"


@pytest.fixture(scope="module")
def listing_srv(shared_server):
    """One server for the cases that only ask it something."""
    return shared_server(_srv)


@pytest.fixture(scope="module")
def json_entries(listing_srv):
    """The entries of /pub/'s JSON listing, by name."""
    r = get(listing_srv, "/pub/", headers={"Accept": "application/json"})
    assert r.status == 200, r.status
    data = json.loads(r.body.decode("utf-8"))
    entries = data if isinstance(data, list) else data.get("entries") or data.get("files")
    assert isinstance(entries, list), data
    return {e["name"]: e for e in entries}


def test_json_listing(listing_srv, json_entries):
    r = get(listing_srv, "/pub/", headers={"Accept": "application/json"})
    assert r.status == 200, r.status
    assert r.header("Content-Type").split(";")[0].strip() == "application/json", r.headers
    assert "accept" in (r.header("Vary") or "").lower(), r.headers
    assert set(json_entries) == set(NAMES) | {SUBDIR, "withindex"}, sorted(json_entries)
    assert json_entries[SUBDIR]["type"] == "directory", json_entries[SUBDIR]
    # The HTML listing is the default; browsers' Accept gets HTML.
    r = get(listing_srv, "/pub/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert r.header("Content-Type").startswith("text/html")


@pytest.mark.parametrize("name", sorted(NAMES))
def test_json_listing_file_entry(json_entries, name):
    e = json_entries[name]
    assert e["type"] == "file", (name, e)
    assert e["size"] == len(NAMES[name]), (name, e)


def test_head_listing(tmpdir):
    s = _srv(tmpdir)
    g = get(s, "/pub/")
    h = get(s, "/pub/", "HEAD")
    assert h.status == 200 and h.body == b""
    assert h.header("Content-Type") == g.header("Content-Type")


def test_json_listing_is_valid_json_for_any_file_name(tmpdir):
    """A name that is not valid UTF-8 (the file system allows any byte but '/' and NUL) still
    gives a listing that is UTF-8 JSON: the stray byte stands as U+FFFD, a control character
    is escaped, valid UTF-8 and '<' '"' come back as they were."""
    root = os.path.join(str(tmpdir), "odd")
    os.makedirs(os.path.join(root, "pub"))
    for name in (b"bad\xff.txt", b"tab\there.txt", "h\u00e9<\"x\".txt".encode()):
        with open(os.path.join(root.encode(), b"pub", name), "wb") as f:
            f.write(b"x")
    s = ConfServer(tmpdir, "location /pub/ {\n    directory_listing on\n}\n", root=root)
    r = get(s, "/pub/", headers={"Accept": "application/json"})
    assert r.status == 200, r.status
    data = json.loads(r.body.decode("utf-8"))
    entries = data if isinstance(data, list) else data.get("entries") or data.get("files")
    names = sorted(e["name"] for e in entries)
    assert names == sorted(["bad\ufffd.txt", "tab\there.txt", "h\u00e9<\"x\".txt"]), names
