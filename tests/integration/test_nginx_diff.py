"""Differential test against nginx (Debian's nginx-light, installed by `make deps`).

Both servers serve the same fixture directory; the same several hundred requests (sizes,
ranges incl. multiple, conditionals with each server's own validators, encodings, odd paths,
HEAD, methods, 404s, directories with and without slash, percent-encoding) go to both, and the
answers are compared: status, body digest (multipart bodies part by part, since boundaries
differ), and the headers that matter: Content-Length, Content-Type (modulo the charset
parameter, which nginx adds only when configured), Content-Range, Content-Encoding,
Accept-Ranges, Location, and the presence of Last-Modified and ETag (not their values: nginx's
ETag format differs).

nginx is configured as a nginx user moving to lfhttpd would have it: sendfile, etag,
gzip_static, the Debian mime.types, `absolute_redirect off` (lfhttpd's Locations are relative),
`if_modified_since before` (lfhttpd answers 304 for any date not older than the file, RFC 9110
13.1.3), and dot-files denied with 404 (lfhttpd's default).

Every remaining difference is intentional and listed in DIFFERENCES below with its reason; a
difference not in the table fails the test, and so does a table entry that no request exercises
any more (the table must stay true).
"""

import gzip
import hashlib
import os
import random

from lib.server import ConfServer, Conn, ConnectionClosed, fixture_tree, req
from lib.static import MIME_TYPES, OLD, parse_multipart, part_ranges, set_mtime

NGINX_MIME = "/etc/nginx/mime.types"
MAX_REPORT = 40         # mismatches shown in the failure message


# ---- intentional differences ---------------------------------------------------------------

def _path(rq):
    return rq[1].split("?")[0]


def _hdr(rq, name):
    for k, v in rq[2]:
        if k.lower() == name.lower():
            return v
    return None


def _ranges(rq):
    r = _hdr(rq, "Range")
    return r[6:].split(",") if r and r.startswith("bytes=") else []


class Diff:
    def __init__(self, name, fields, match, why):
        self.name, self.fields, self.match, self.why = name, set(fields), match, why
        self.seen = 0


ALL = {"status", "body", "content-length", "content-type", "content-range", "content-encoding",
       "accept-ranges", "last-modified", "etag", "location"}
RANGE_FIELDS = {"status", "body", "content-length", "content-type", "content-range",
                "accept-ranges"}


def _ae(rq):
    return (_hdr(rq, "Accept-Encoding") or "").strip()


DIFFERENCES = [
    Diff("content-types", {"content-type"},
         lambda rq: _path(rq).rsplit(".", 1)[-1] in ("js", "mjs", "xml", "ico", "md", "map",
                                                       "gz"),
         "lfhttpd's mime.types follows the IANA registry and current browsers: .js/.mjs are "
         "text/javascript (RFC 9239; nginx 1.22: application/javascript, .mjs unknown), .xml "
         "application/xml (nginx: text/xml), .ico image/vnd.microsoft.icon (nginx: "
         "image/x-icon), .gz application/gzip, .md text/markdown and .map application/json "
         "(nginx: application/octet-stream)."),
    Diff("symlink-outside-root", ALL,
         lambda rq: _path(rq).startswith(("/passwd-link", "/etc-link")),
         "lfhttpd follows a symlink only while it stays inside the root (follow_symlinks "
         "inside, the default); nginx follows every symlink (disable_symlinks off): 404 vs "
         "200/403."),
    Diff("options", ALL, lambda rq: rq[0] == "OPTIONS",
         "lfhttpd answers OPTIONS on static resources with 204 and Allow (RFC 9110 9.3.7); "
         "nginx's static module answers 405."),
    Diff("post-before-lookup", {"status", "location"}, lambda rq: rq[0] == "POST",
         "nginx looks the path up before refusing POST (404 for a missing file, 301 for a "
         "directory without slash); lfhttpd refuses methods it does not implement with 405 "
         "first."),
    Diff("fragment-in-target", ALL, lambda rq: "#" in rq[1],
         "'#' cannot appear in a request-target (RFC 9112 3.2, RFC 3986): lfhttpd answers 400; "
         "nginx drops the fragment and serves the file."),
    Diff("backslash", {"status"}, lambda rq: "\\" in rq[1] or "%5C" in rq[1].upper(),
         "lfhttpd refuses backslashes in paths with 400 (a separator on some platforms and to "
         "some proxies); nginx treats them as ordinary file-name bytes (404)."),
    Diff("raw-non-ascii-target", {"status"}, lambda rq: any(ord(ch) > 0x7e for ch in rq[1]),
         "A request-target is ASCII (RFC 9112 3.2, RFC 3986): raw bytes >= 0x80 must be "
         "percent-encoded. lfhttpd's llhttp runs in strict mode and answers 400; nginx accepts "
         "the raw bytes (404 here)."),
    Diff("fifo", {"status"}, lambda rq: _path(rq) == "/fifo",
         "A FIFO is not a regular file: lfhttpd 403, nginx 404 (neither serves it)."),
    Diff("gzip-star-and-x-gzip", {"content-encoding", "content-length", "body"},
         lambda rq: _ae(rq) in ("*", "x-gzip"),
         "Accept-Encoding '*' (any coding, RFC 9110 12.5.3) and 'x-gzip' (an alias of gzip, "
         "RFC 9110 8.4.1.3) select the .gz file in lfhttpd; nginx's gzip_static only looks for "
         "the token 'gzip'."),
    Diff("gzip-static-accept-ranges", {"accept-ranges"}, lambda rq: "gzip" in _ae(rq).lower(),
         "nginx sends no Accept-Ranges with gzip_static files; lfhttpd serves ranges of every "
         "representation, so it advertises them."),
    Diff("ranges-of-precompressed", RANGE_FIELDS,
         lambda rq: "gzip" in _ae(rq).lower() and _hdr(rq, "Range") is not None,
         "Ranges apply to the selected representation (RFC 9110 14.1.2): lfhttpd answers 206 "
         "with bytes of the .gz file; nginx ignores Range for gzip_static responses (200)."),
    Diff("adjacent-ranges-coalesced", RANGE_FIELDS,
         lambda rq: _hdr(rq, "Range") in ("bytes=0-4,5-9", "bytes=0-9,10-19,20-29",
                                          "bytes=0-0,1-1"),
         "lfhttpd coalesces adjacent ranges (RFC 9110 14.6 allows it), here into one single-"
         "part 206; nginx sends multipart/byteranges with one part per range-spec."),
    Diff("overlapping-ranges-coalesced", RANGE_FIELDS,
         lambda rq: _hdr(rq, "Range") in ("bytes=0-9,5-14", "bytes=0-99,50-149,500-599",
                                          "bytes=-5,0-", "bytes=0-,0-"),
         "lfhttpd merges overlapping ranges (RFC 9110 14.6 allows it; never the same bytes "
         "twice); nginx sends each range as requested, or the whole 200 when their sum "
         "exceeds the length."),
    Diff("invalid-ranges-set", ALL,
         lambda rq: _hdr(rq, "Range") in ("bytes=5-1", "bytes=10-5,0-1", "bytes=abc",
                                          "bytes=0-5;x", "bytes=1-2-3"),
         "An invalid ranges-set (last < first, garbage) makes lfhttpd ignore Range and send "
         "the 200 (RFC 9110 14.2: 206 needs a valid ranges-set, 416 is for unsatisfiable "
         "ones); nginx answers 416, or serves the valid specs."),
    Diff("head-with-range", RANGE_FIELDS, lambda rq: rq[0] == "HEAD" and _hdr(rq, "Range"),
         "Range handling is defined for GET only (RFC 9110 14.2): lfhttpd answers HEAD with "
         "200; nginx applies the range to HEAD (206)."),
    Diff("empty-file-range", ALL,
         lambda rq: _path(rq) == "/empty.txt" and _hdr(rq, "Range") is not None,
         "No range of an empty representation is satisfiable (RFC 9110 14.1.1): lfhttpd 416 "
         "with 'bytes */0'; nginx skips range processing for empty files (200)."),
    Diff("if-none-match-beats-if-modified-since", ALL,
         lambda rq: _hdr(rq, "If-None-Match") and _hdr(rq, "If-Modified-Since"),
         "RFC 9110 13.2.2: If-Modified-Since is ignored when If-None-Match is present "
         "(lfhttpd: 304 on a matching tag); nginx requires both to agree (200)."),
    Diff("if-match-beats-if-unmodified-since", ALL,
         lambda rq: _hdr(rq, "If-Match") and _hdr(rq, "If-Unmodified-Since"),
         "RFC 9110 13.2.2: If-Unmodified-Since is ignored when If-Match is present (lfhttpd: "
         "200 on a matching tag); nginx evaluates both (412)."),
]


# ---- fixture -------------------------------------------------------------------------------

def build_root(tmpdir):
    t = fixture_tree(tmpdir)
    root = t.root
    rnd = random.Random(1234)
    files = t.files

    def put(rel, data, mtime=OLD):
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        set_mtime(p, mtime)
        files["/" + rel] = data

    put("medium.bin", rnd.randbytes(100 * 1024 + 7))
    put("page.html", b"<!doctype html>\n" + b"<p>paragraph</p>\n" * 300)
    for ext in ["json", "svg", "wasm", "png", "woff2", "mjs", "js", "xml", "webp", "avif",
                "mp4", "pdf", "ico", "css", "txt", "md", "map", "jpg"]:
        put("types/x." + ext, ("content of x.%s\n" % ext).encode() * 3)
    # Precompressed: variants newer than their originals (gzip_static needs only existence).
    for rel, data in [("gz/app.js", b"function app() { return 42; }\n" * 200),
                      ("gz/style.css", b".a { color: red; }\n" * 300),
                      ("gz/index.html", b"<!doctype html><p>gz index</p>\n" * 50)]:
        put(rel, data)
        put(rel + ".gz", gzip.compress(data, mtime=0), mtime=OLD + 60)
    put("gz/only.txt", b"no gzip sibling\n" * 20)
    put("gz/x.gz", gzip.compress(b"a gzip file\n", mtime=0))
    put("dir/index.html", b"<p>dir index</p>\n")
    put("dir/inner/leaf.txt", b"leaf\n")
    put(".hidden", b"hidden\n")
    put("sub/.hidden", b"hidden in sub\n")
    put(".git/config", b"[core]\n")
    put("a+b.txt", b"plus\n")
    put("semi;c.txt", b"semicolon\n")
    put("with space.txt", b"space\n")
    put("UPPER.TXT", b"upper\n")
    os.chmod(os.path.join(root, "secret.txt"), 0o644)   # readable by both servers
    return t


# ---- servers ---------------------------------------------------------------------------------

NGINX_CONF = """
pid %(tmp)s/nginx.pid;
error_log %(tmp)s/error.log warn;
worker_rlimit_nofile 1024;
events { worker_connections 256; }
http {
    include %(mime)s;
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path %(tmp)s/client_body;
    proxy_temp_path %(tmp)s/proxy;
    fastcgi_temp_path %(tmp)s/fastcgi;
    uwsgi_temp_path %(tmp)s/uwsgi;
    scgi_temp_path %(tmp)s/scgi;
    sendfile on;
    etag on;
    gzip off;
    gzip_static on;
    if_modified_since before;
    absolute_redirect off;
    server_tokens off;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:%(port)d;
        root %(root)s;
        index index.html;
        location ~ /\\. { return 404; }
    }
}
"""


# ---- requests --------------------------------------------------------------------------------

def build_requests(files):
    """[(method, target, [(name, value)])]; header values "$etag", "$lm" are replaced with
    the validators each server gave for that path."""
    R = []

    def add(method, target, *headers):
        R.append((method, target, list(headers)))

    sized = ["/one.txt", "/small.html", "/kib.txt", "/medium.bin", "/big.bin", "/page.html",
             "/sub/file.css", "/gz/only.txt"]
    plain = sized + ["/empty.txt", "/noext", "/data.zzunknown", "/h%C3%A9llo%20w%C3%B6rld.txt",
                     "/100%25.txt", "/a+b.txt", "/semi;c.txt", "/with%20space.txt",
                     "/UPPER.TXT", "/secret.txt", "/link-small.html", "/link-sub/file.css",
                     "/sub/", "/dir/", "/gz/app.js", "/gz/style.css"]
    plain += sorted(p for p in files if p.startswith("/types/"))
    for p in plain:
        add("GET", p)
        add("HEAD", p)
        add("GET", p + "?v=1&x=%20")
    # Ranges.
    for p in sized:
        n = len(files[p])
        specs = ["0-0", "0-1", "1-1", "-1", "0-", "%d-" % (n - 1), "%d-" % n, "%d-%d" % (n, n + 5),
                 "0-%d" % (n * 3), "-%d" % (n * 2), "-%d" % max(1, n // 2)]
        if n > 40:
            specs += ["10-20", "3-%d" % (n - 4), "-30", "0-9,20-29", "20-29,0-9",
                      "0-0,-1", "5-9,100000000-"]
        if n > 1000:
            specs += ["0-99,200-299,900-999", "%d-%d" % (n // 2, n // 2 + 999)]
        if n > 3000000:
            specs += ["1000000-1999999", "2999999-3000000", "0-0,1048576-1048577,-1"]
        for s in specs:
            add("GET", p, ("Range", "bytes=" + s))
        add("HEAD", p, ("Range", "bytes=0-1"))
    for s in ["0-4,5-9", "0-9,10-19,20-29", "0-0,1-1", "0-9,5-14", "0-99,50-149,500-599",
              "-5,0-", "0-,0-", "5-1", "10-5,0-1", "abc", "", "0-5;x", "1-2-3"]:
        add("GET", "/kib.txt", ("Range", "bytes=" + s))
    for h in ["items=0-5", "bytes 0-5", "BYTES=0-5"]:
        add("GET", "/kib.txt", ("Range", h))
    add("GET", "/empty.txt", ("Range", "bytes=0-"))
    add("GET", "/empty.txt", ("Range", "bytes=-5"))
    # Conditionals with each server's own validators.
    for p in ["/small.html", "/kib.txt", "/big.bin", "/sub/", "/gz/only.txt", "/empty.txt"]:
        for hs in [[("If-None-Match", "$etag")], [("If-None-Match", '"nope"')],
                   [("If-None-Match", "*")], [("If-None-Match", '"a", $etag')],
                   [("If-None-Match", "W/$etag")],
                   [("If-Modified-Since", "$lm")],
                   [("If-Modified-Since", "Sun, 01 Jan 2040 00:00:00 GMT")],
                   [("If-Modified-Since", "Mon, 01 Jan 2001 00:00:00 GMT")],
                   [("If-Modified-Since", "garbage")],
                   [("If-Match", "$etag")], [("If-Match", '"nope"')], [("If-Match", "*")],
                   [("If-Unmodified-Since", "$lm")],
                   [("If-Unmodified-Since", "Mon, 01 Jan 2001 00:00:00 GMT")],
                   [("If-None-Match", '"nope"'), ("If-Modified-Since", "$lm")],
                   [("If-None-Match", "$etag"), ("If-Modified-Since",
                                                 "Mon, 01 Jan 2001 00:00:00 GMT")],
                   [("If-Match", "$etag"), ("If-Unmodified-Since",
                                            "Mon, 01 Jan 2001 00:00:00 GMT")],
                   [("Range", "bytes=0-0"), ("If-Range", "$etag")],
                   [("Range", "bytes=0-0"), ("If-Range", "$lm")],
                   [("Range", "bytes=0-0"), ("If-Range", '"stale"')],
                   [("Range", "bytes=0-0"), ("If-Range", "Mon, 01 Jan 2001 00:00:00 GMT")]]:
            add("GET", p, *hs)
        add("HEAD", p, ("If-None-Match", "$etag"))
    # Encodings (gzip_static).
    for p in ["/gz/app.js", "/gz/style.css", "/gz/only.txt", "/gz/", "/small.html"]:
        for ae in ["gzip", "gzip, deflate", "deflate, gzip;q=1.0", "deflate", "identity",
                   "gzip;q=0", "*", "x-gzip", "GZIP"]:
            add("GET", p, ("Accept-Encoding", ae))
        add("HEAD", p, ("Accept-Encoding", "gzip"))
        add("GET", p, ("Accept-Encoding", "gzip"), ("Range", "bytes=0-9"))
        add("GET", p, ("Accept-Encoding", "gzip"), ("Range", "bytes=-9"))
        add("GET", p, ("Accept-Encoding", "gzip"), ("If-None-Match", "$etag"))
        add("GET", p, ("Accept-Encoding", "gzip"), ("If-Modified-Since", "$lm"))
    add("GET", "/gz/app.js.gz")
    add("GET", "/gz/x.gz")
    add("GET", "/gz/x.gz", ("Accept-Encoding", "gzip"))
    # Odd paths, directories, errors.
    for t in ["/", "/sub", "/sub/", "/sub?x=1", "/sub/?x=1", "/emptydir", "/emptydir/", "/dir",
              "/dir/", "/dir/inner", "/dir/inner/", "/dir/index.html", "/gz", "/link-sub",
              "/link-sub/", "/nope", "/nope/", "/nope.html", "/sub/nope", "/nodir/x",
              "/small.html/", "/small.html/x", "//small.html", "///sub/file.css",
              "/sub/../small.html", "/./small.html", "/sub/./file.css", "/sub//file.css",
              "/%73mall.html", "/%73ub/%66ile.css", "/sub%2Ffile.css", "/sub%2ffile.css",
              "/SMALL.HTML", "/Small.html", "/100%.txt", "/100%25.txt", "/%zz", "/%",
              "/../small.html", "/../../etc/passwd", "/%2e%2e/small.html",
              "/sub/%2e%2e/small.html", "/sub/..%2fsmall.html", "/.hidden", "/sub/.hidden",
              "/.git/config", "/.git/", "/%2ehidden", "/sub/%2Ehidden", "/fifo",
              "/passwd-link", "/etc-link/hostname", "/etc-link/", "/link-small.html",
              "/sub\\file.css", "/sub%5Cfile.css", "/small.html%00", "/small.html%20",
              "/h\u00e9llo", "/with%20space.txt", "/a%2Bb.txt", "/semi%3Bc.txt",
              "//sub", "//evil.example/..//sub", "/small.html#frag", "/?", "/sub/?",
              "/index.html", "/dir/inner/leaf.txt?a=b#"]:
        target = t
        if "\u00e9" in target:
            target = target.encode("utf-8").decode("latin-1")
        add("GET", target)
    for m in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"]:
        for p in ["/small.html", "/nope", "/sub/", "/sub"]:
            add(m, p)
    return R


# ---- running ---------------------------------------------------------------------------------

class Answer:
    def __init__(self, status, headers, body, error=None):
        self.status, self.headers, self.body, self.error = status, headers, body, error

    def h(self, name):
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None


def run_all(target, requests, validators):
    """Send every request (keep-alive; reconnect when the server closes). validators:
    {path: (etag, lm)} (or {} for the first pass)."""
    out = []
    conn = None
    for method, tgt, headers in requests:
        p = tgt.split("?")[0]
        etag, lm = validators.get((p, _hdr((method, tgt, headers), "Accept-Encoding") or ""),
                                  validators.get((p, ""), ("", "")))
        hs = [(k, v.replace("$etag", etag or '"none"').replace("$lm", lm or "x"))
              for k, v in headers]
        data = req(method, tgt, hs)
        for attempt in range(2):
            if conn is None:
                conn = Conn(target, timeout=10)
            try:
                conn.send(data)
                r = conn.read_response(method)
                out.append(Answer(r.status, r.headers, r.body))
                if (r.header("Connection") or "").lower() == "close":
                    conn.close()
                    conn = None
                break
            except (ConnectionClosed, ConnectionResetError, BrokenPipeError) as e:
                conn.close()
                conn = None
                if attempt == 1:
                    out.append(Answer(None, [], b"", error=repr(e)))
    if conn:
        conn.close()
    return out


def collect_validators(target, paths):
    """{(path, accept-encoding): (ETag, Last-Modified)} as this server gives them."""
    probes = [("GET", p, [("Accept-Encoding", ae)] if ae else []) for p in paths
              for ae in ["", "gzip"]]
    answers = run_all(target, probes, {})
    return {(p, _hdr(rq, "Accept-Encoding") or ""): (a.h("etag"), a.h("last-modified"))
            for rq, a, p in zip(probes, answers, [rq[1] for rq in probes])}


def base_type(v):
    return (v or "").split(";")[0].strip().lower() or None


def summarize(a):
    """The comparable facts of one answer: {field: value}."""
    if a.error:
        return {"status": "error " + a.error}
    f = {"status": a.status}
    st = a.status
    if st in (301, 302, 307, 308):
        f["location"] = a.h("location")
    if st == 416:
        f["content-range"] = a.h("content-range")
    if 200 <= st < 300 or st == 304:
        f["last-modified"] = a.h("last-modified") is not None
        f["etag"] = a.h("etag") is not None
    if st in (200, 206):
        f["content-type"] = base_type(a.h("content-type"))
        f["content-encoding"] = a.h("content-encoding")
        if st == 200:     # nginx sends Accept-Ranges on 200 only; both are allowed
            f["accept-ranges"] = a.h("accept-ranges")
        f["content-range"] = a.h("content-range")
        ct = a.h("content-type") or ""
        if st == 206 and ct.lower().startswith("multipart/byteranges"):
            f["content-type"] = "multipart/byteranges"
            try:
                parts = parse_multipart(_Resp(a))
                f["body"] = [(r, hashlib.sha256(d).hexdigest()[:16], base_type(h.get(
                    "content-type"))) for r, (h, d) in zip(part_ranges(parts), parts)]
            except AssertionError as e:
                f["body"] = "bad multipart: %s" % e
        else:
            f["content-length"] = a.h("content-length")
            f["body"] = hashlib.sha256(a.body).hexdigest()[:16]
    return f


class _Resp:
    def __init__(self, a):
        self.body = a.body
        self._a = a

    def header(self, name):
        return self._a.h(name.lower())


def test_nginx_differential(tmpdir, nginx_peer):
    assert os.path.exists(NGINX_MIME), "%s missing (package nginx-common)" % NGINX_MIME
    tree = build_root(tmpdir)
    ngx = nginx_peer(NGINX_CONF, root=tree.root, mime=NGINX_MIME)
    lf = ConfServer(tmpdir, "mime_types %s\n" % MIME_TYPES, root=tree.root)
    requests = build_requests(tree.files)
    assert len(requests) >= 300, len(requests)
    paths = sorted({_path(rq) for rq in requests if any("$" in v for _, v in rq[2])})
    nginx_addr = ngx.addr
    ans_lf = run_all(lf, requests, collect_validators(lf, paths))
    ans_ngx = run_all(nginx_addr, requests, collect_validators(nginx_addr, paths))
    assert ngx.alive(), "nginx died:\n" + ngx.log()

    unexplained = []
    for rq, a, b in zip(requests, ans_lf, ans_ngx):
        fa, fb = summarize(a), summarize(b)
        fields = sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))
        if not fields:
            continue
        left = set(fields)
        for d in DIFFERENCES:
            if d.match(rq) and left & d.fields:
                d.seen += 1
                left -= d.fields
        if left:
            unexplained.append((rq, {k: (fa.get(k), fb.get(k)) for k in sorted(left)}))
    lines = ["%s %s %s\n      %s" % (m, t, h, "; ".join("%s: lfhttpd=%r nginx=%r" % (k, x, y)
                                                        for k, (x, y) in diff.items()))
             for (m, t, h), diff in unexplained]
    unused = [d.name for d in DIFFERENCES if not d.seen]
    msg = ""
    if unexplained:
        msg += "%d of %d requests differ from nginx in ways not listed in DIFFERENCES:\n  %s\n" \
            % (len(unexplained), len(requests), "\n  ".join(lines[:MAX_REPORT]))
    if unused:
        msg += "DIFFERENCES entries no request exercises any more (remove them): %s\n" % unused
    assert not msg, msg
