"""Compression on the fly, paid once (compress/compress.c): gzip, Brotli and zstd variants of
static files, byte-identical once decoded (Python's gzip, Debian's python3-brotli and
python3-zstandard), negotiated like the precompressed siblings (which win for their coding),
Vary on every response of a compressible resource, a strong ETag per representation (stable
across restarts and replicas), 304 per representation, the documented range policy
(identity), small files in-line, large ones in the background without any request waiting,
the cache directory across a restart, unwritable and full."""

import gzip
import os
import random
import re
import shutil
import tempfile
import time

from lib.decode import decode
from lib.server import ConfServer, Conn, Server, curl, get, req, wait_until
from lib.static import OLD, make_root, set_mtime, wait_coding

IS_ROOT = os.geteuid() == 0
CODINGS = ("br", "zstd", "gzip")
SUFFIX = {"br": ".br", "zstd": ".zst", "gzip": ".gz"}


def text(seed, size):
    """Compressible, self-identifying text of `size` bytes (words from a small vocabulary)."""
    rnd = random.Random(seed)
    words = [b"lorem", b"ipsum", b"dolor", b"sit", b"amet", b"consectetur", b"adipiscing",
             b"elit", b"sed", b"do", b"eiusmod", b"tempor", b"<p>", b"</p>", b"{", b"}"]
    out = [("%s\n" % seed).encode()]
    n = len(out[0])
    while n < size:
        w = rnd.choice(words) + (b"\n" if rnd.random() < 0.1 else b" ")
        out.append(w)
        n += len(w)
    return b"".join(out)[:size]


SMALL = text("small", 3000)           # compressed in-line (<= 4 KiB)
PAGE = text("page", 60000)            # compressed in the background
TINY = b"<p>tiny</p>\n" * 20          # below compress_min_size (1 KiB)
NOISE = random.Random(5).randbytes(20000)   # never smaller compressed
FILES = {"small.html": SMALL, "page.html": PAGE, "tiny.html": TINY, "noise.txt": NOISE,
         "app.js": text("js", 9000), "data.json": text("json", 5000),
         "img.png": text("png", 8000), "font.woff2": text("woff2", 8000),
         "pic.svg": text("svg", 5000), "dir/index.html": text("index", 2500)}
# Fast levels for the tests' large files (sanitizer builds are slow); the defaults have their
# own test.
FAST = "compress_level br 5\ncompress_level zstd 3\ncompress_level gzip 6\n"


def _root(tmpdir, files=None):
    root = make_root(os.path.join(tmpdir, "root"), FILES if files is None else files)
    os.chmod(tmpdir, 0o755)
    return root


def _srv(tmpdir, conf=FAST, files=None, threads=2, **kw):
    root = _root(tmpdir, files)
    s = ConfServer(tmpdir, "file_cache_valid 0\n" + conf, root=root, threads=threads, **kw)
    s.rootdir = root
    return s


def ae(s, path, value, method="GET", extra=None, conn=None):
    h = {} if value is None else {"Accept-Encoding": value}
    h.update(extra or {})
    if conn is not None:
        conn.send(req(method, path, h))
        return conn.read_response(method)
    return get(s, path, method, headers=h)


def check_variant(r, coding, original):
    assert r.status == 200, r.status
    assert r.header("Content-Encoding") == coding, r.headers
    assert r.header("Vary") == "Accept-Encoding", r.headers
    assert r.header("Content-Length") == str(len(r.body)), r.headers
    assert len(r.body) < len(original)
    etag = r.header("ETag")
    assert etag and not etag.startswith("W/"), etag
    assert decode(coding, r.body) == original, coding


def test_each_coding_byte_identical(tmpdir):
    s = _srv(tmpdir)
    for path in ("/small.html", "/page.html", "/app.js", "/data.json", "/pic.svg"):
        original = FILES[path[1:]]
        tags = {None: ae(s, path, None).header("ETag")}
        for coding in CODINGS:
            r, _ = wait_coding(s, path, coding)
            check_variant(r, coding, original)
            tags[coding] = r.header("ETag")
            # Content-Type is the file's; HEAD says the same as GET, without a body.
            g = ae(s, path, coding)
            h = ae(s, path, coding, "HEAD")
            assert h.status == 200 and h.body == b"", path
            for name in ("Content-Type", "Content-Length", "Content-Encoding", "ETag", "Vary"):
                assert h.header(name) == g.header(name), (path, coding, name)
        assert len(set(tags.values())) == 4, (path, tags)


def test_small_file_compressed_by_the_first_request(tmpdir):
    # <= 4 KiB: compressed in-line, so the very first request already gets its coding.
    s = _srv(tmpdir)
    for coding in CODINGS:
        r = ae(s, "/small.html", coding)
        check_variant(r, coding, SMALL)
    r = ae(s, "/dir/", "br")
    check_variant(r, "br", FILES["dir/index.html"])


def test_default_levels_and_curl_compressed(tmpdir):
    # No compress_* directive at all: on, with the documented levels (in the ETag).
    s = _srv(tmpdir, conf="")
    for coding, level in (("br", 11), ("zstd", 19), ("gzip", 9)):
        r = ae(s, "/small.html", coding)
        check_variant(r, coding, SMALL)
        assert re.search(r"-%s%d\." % (coding, level), r.header("ETag")), r.header("ETag")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        for _ in range(2):
            p = curl(["--compressed", "-o", out, "-w", "%{size_download}", "-D",
                      os.path.join(d, "h"), s.url + "/small.html"])
            assert p.returncode == 0, p.stderr
            assert open(out, "rb").read() == SMALL
            assert int(p.stdout) < len(SMALL), p.stdout
            head = open(os.path.join(d, "h"), "rb").read().decode("latin-1").lower()
            assert re.search(r"content-encoding: (br|zstd|gzip)", head), head
            assert "vary: accept-encoding" in head, head


def test_cli_only_start_compresses(tmpdir):
    # No configuration file at all: compression is on.
    root = _root(tmpdir)
    s = Server(root=root)
    r = ae(s, "/small.html", "gzip, deflate, br, zstd")
    check_variant(r, "br", SMALL)


def test_q_values(tmpdir):
    s = _srv(tmpdir)
    cases = [("gzip", "gzip"), ("x-gzip", "gzip"), ("br", "br"), ("zstd", "zstd"),
             ("gzip, deflate, br, zstd", "br"), ("zstd, gzip", "zstd"),
             ("gzip;q=1, br;q=0.5", "gzip"), ("br;q=0.2, zstd;q=0.3, gzip;q=0.1", "zstd"),
             ("gzip;q=0.5, identity", None), ("deflate", None), ("identity", None),
             (None, None), ("br;q=0, zstd;q=0, gzip", "gzip"), ("*", "br"),
             ("*;q=0.5, gzip", "gzip"), ("gzip, identity;q=0", "gzip")]
    with Conn(s) as c:
        for value, coding in cases:
            r = ae(s, "/small.html", value, conn=c)
            assert r.status == 200, (value, r.status)
            assert r.header("Content-Encoding") == coding, (value, r.headers)
            assert r.header("Vary") == "Accept-Encoding", (value, r.headers)
            assert decode(coding, r.body) == SMALL, value
    # identity excluded and nothing acceptable: 406, as for the siblings
    assert ae(s, "/small.html", "deflate, identity;q=0").status == 406


def test_what_is_not_compressed(tmpdir):
    s = _srv(tmpdir, conf=FAST + "location /plain/ {\n    compress off\n}\n",
             files=dict(FILES, **{"plain/a.html": SMALL}))
    everything = "gzip, deflate, br, zstd"
    # Already-compressed types, below compress_min_size, and a location with compress off:
    # identity, and no Vary (nothing varies).
    for path in ("/img.png", "/font.woff2", "/tiny.html", "/plain/a.html"):
        r = ae(s, path, everything)
        assert r.status == 200 and r.header("Content-Encoding") is None, (path, r.headers)
        assert r.header("Vary") is None, (path, r.headers)
    # Compressible but not smaller compressed (random bytes): identity, Vary kept.
    r, _ = None, None
    for coding in CODINGS:
        r = ae(s, "/noise.txt", coding)
    time.sleep(0.3)
    r = ae(s, "/noise.txt", everything)
    assert r.header("Content-Encoding") is None and r.body == NOISE, r.headers
    assert r.header("Vary") == "Accept-Encoding", r.headers


def test_types_min_size_and_levels_configurable(tmpdir):
    conf = ("compress_types application/json\ncompress_min_size 4k\n"
            "compress_level gzip 1\n")
    s = _srv(tmpdir, conf=conf)
    # small.html is not a listed type; data.json (5000 bytes) is, and above 4k.
    assert ae(s, "/small.html", "gzip").header("Content-Encoding") is None
    r, _ = wait_coding(s, "/data.json", "gzip")
    check_variant(r, "gzip", FILES["data.json"])
    assert "-gzip1." in r.header("ETag"), r.header("ETag")
    best = len(gzip.compress(FILES["data.json"], 9))
    assert len(r.body) > best - 20, (len(r.body), best)   # level 1: not level 9's size


def test_sibling_wins_for_its_coding(tmpdir):
    fake_gz = gzip.compress(b"the user's own gzip, not the file\n", mtime=0)
    files = dict(FILES)
    files["small.html.gz"] = fake_gz
    root = make_root(os.path.join(tmpdir, "root"), files)
    set_mtime(os.path.join(root, "small.html.gz"), OLD + 10)
    os.chmod(tmpdir, 0o755)
    s = ConfServer(tmpdir, "file_cache_valid 0\n" + FAST, root=root)
    r = ae(s, "/small.html", "gzip")
    assert r.header("Content-Encoding") == "gzip" and r.body == fake_gz, r.headers
    sib_tag = r.header("ETag")
    # Other codings are made on the fly, and br still wins the tie over the sibling's gzip.
    r = ae(s, "/small.html", "gzip, br")
    check_variant(r, "br", SMALL)
    assert r.header("ETag") != sib_tag
    r = ae(s, "/small.html", "gzip;q=1, br;q=0.5")
    assert r.body == fake_gz


def test_304_and_conditionals_per_representation(tmpdir):
    s = _srv(tmpdir)
    tags = {}
    for coding in (None,) + CODINGS:
        tags[coding] = (wait_coding(s, "/page.html", coding)[0] if coding
                        else ae(s, "/page.html", None)).header("ETag")
    assert len(set(tags.values())) == 4, tags
    for coding in CODINGS:
        r = ae(s, "/page.html", coding, extra={"If-None-Match": tags[coding]})
        assert r.status == 304 and r.header("ETag") == tags[coding], (coding, r.headers)
        assert r.header("Vary") == "Accept-Encoding", coding
        # another representation's tag validates nothing here
        r = ae(s, "/page.html", coding, extra={"If-None-Match": tags[None]})
        assert r.status == 200 and r.header("Content-Encoding") == coding
        r = ae(s, "/page.html", coding, extra={"If-Match": tags[None]})
        assert r.status == 412, (coding, r.status)
        r = ae(s, "/page.html", coding, extra={"If-Match": tags[coding]}, method="HEAD")
        assert r.status == 200 and r.header("Content-Encoding") == coding
    r = ae(s, "/page.html", None, extra={"If-None-Match": tags["br"]})
    assert r.status == 200 and r.header("Content-Encoding") is None and r.body == PAGE


def test_range_requests_get_identity(tmpdir):
    # The documented policy: a range request never gets an on-the-fly variant; it gets the
    # identity bytes (with Vary), so offsets mean the same before and after compression.
    s = _srv(tmpdir)
    br, _ = wait_coding(s, "/page.html", "br")
    r = ae(s, "/page.html", "br", extra={"Range": "bytes=100-199"})
    assert r.status == 206 and r.header("Content-Encoding") is None, r.headers
    assert r.body == PAGE[100:200]
    assert r.header("Content-Range") == "bytes 100-199/%d" % len(PAGE)
    assert r.header("Vary") == "Accept-Encoding"
    # If-Range with the br ETag: not the identity's, so the whole identity representation.
    r = ae(s, "/page.html", "br", extra={"Range": "bytes=0-9", "If-Range": br.header("ETag")})
    assert r.status == 200 and r.header("Content-Encoding") is None and r.body == PAGE
    # 416 varies too.
    r = ae(s, "/page.html", "br", extra={"Range": "bytes=%d-" % len(PAGE)})
    assert r.status == 416 and r.header("Vary") == "Accept-Encoding", r.headers
    # identity excluded: the variant, whole (the Range is ignored).
    r = ae(s, "/page.html", "br, identity;q=0", extra={"Range": "bytes=0-9"})
    assert r.status == 200, r.status
    check_variant(r, "br", PAGE)


def test_etags_stable_across_restart_and_replicas(tmpdir):
    s = _srv(tmpdir)
    first = {c: ae(s, "/small.html", c).header("ETag") for c in (None,) + CODINGS}
    s.stop()
    s2 = ConfServer(tmpdir, "file_cache_valid 0\n" + FAST, root=s.rootdir)
    assert {c: ae(s2, "/small.html", c).header("ETag") for c in (None,) + CODINGS} == first
    # A replica: the same files copied elsewhere (same size and mtime).
    other = os.path.join(tmpdir, "replica")
    shutil.copytree(s.rootdir, other)
    for path in ("small.html",):
        st = os.stat(os.path.join(s.rootdir, path))
        os.utime(os.path.join(other, path), ns=(st.st_atime_ns, st.st_mtime_ns))
    d3 = os.path.join(tmpdir, "r3")
    os.makedirs(d3)
    s3 = ConfServer(d3, "file_cache_valid 0\n" + FAST, root=other)
    got = {c: ae(s3, "/small.html", c) for c in (None,) + CODINGS}
    assert {c: r.header("ETag") for c, r in got.items()} == first
    for c in CODINGS:   # the same tag, the same bytes
        assert got[c].body == ae(s2, "/small.html", c).body, c


def test_large_file_never_waited_for(tmpdir):
    # One pool thread; a file large enough that Brotli at quality 11 takes seconds. The
    # request that queues it gets identity at once, and the pool thread serves others while
    # the compressor works; the faster codings arrive meanwhile.
    big = text("big", 2 * 1024 * 1024)
    files = dict(FILES, **{"big.html": big})
    s = _srv(tmpdir, conf="compress_level br 11\ncompress_level gzip 1\n", files=files,
             threads=1)
    r = ae(s, "/big.html", "br")
    assert r.status == 200 and r.header("Content-Encoding") is None and r.body == big
    with Conn(s) as c:
        for _ in range(5):
            r = ae(s, "/small.html", "gzip", conn=c)
            assert r.status == 200 and decode("gzip", r.body) == SMALL
        r = ae(s, "/big.html", "gzip", conn=c)   # queued beside br: the other thread takes it
        assert r.status == 200 and r.header("Content-Encoding") is None
    r, _ = wait_coding(s, "/big.html", "gzip")
    check_variant(r, "gzip", big)
    # Stopping does not wait for Brotli to finish the file (it stops at its next chunk).
    assert s.stop() == 0 and not s.killed


def test_changed_file_never_gets_a_stale_variant(tmpdir):
    s = _srv(tmpdir)
    p = os.path.join(s.rootdir, "small.html")
    new_small = text("small-v2", 2800)
    check_variant(ae(s, "/small.html", "br"), "br", SMALL)
    with open(p, "wb") as f:          # in place, new size
        f.write(new_small)
    for coding in CODINGS:
        check_variant(ae(s, "/small.html", coding), coding, new_small)
    # replaced (rename), same size, mtime restored: still a new version (inode, ctime)
    r, _ = wait_coding(s, "/page.html", "zstd")
    page2 = bytearray(PAGE)
    page2[10:20] = b"0123456789"
    tmp = os.path.join(s.rootdir, ".new")
    with open(tmp, "wb") as f:
        f.write(bytes(page2))
    st = os.stat(os.path.join(s.rootdir, "page.html"))
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.rename(tmp, os.path.join(s.rootdir, "page.html"))

    def new_variant():
        r = ae(s, "/page.html", "zstd")
        body = decode(r.header("Content-Encoding"), r.body)
        assert body == bytes(page2), "an old variant for a replaced file"
        return r.header("Content-Encoding") == "zstd"
    wait_until(new_variant, 60, what="the replaced file's zstd variant", step=0.05)
    # truncated in place
    with open(os.path.join(s.rootdir, "app.js"), "r+b") as f:
        f.truncate(1500)
    r = ae(s, "/app.js", "gzip")
    assert decode(r.header("Content-Encoding"), r.body) == FILES["app.js"][:1500]


# ---- the cache directory -----------------------------------------------------------------------

def _cache_conf(d, size=None):
    return FAST + "compress_cache_dir %s\n" % d + (
        "compress_cache_size %s\n" % size if size else "")


def _cache_files(d):
    return sorted(n for n in os.listdir(d) if re.match(r"^[0-9a-f]{40}\.(br|zst|gz)$", n))


def test_cache_dir_survives_restart(tmpdir):
    cache = os.path.join(tmpdir, "cache")
    s = _srv(tmpdir, conf=_cache_conf(cache))
    made = {}
    for coding in CODINGS:
        made[coding], first = wait_coding(s, "/page.html", coding)
        assert first.header("Content-Encoding") is None, coding   # the first run had to compress
        check_variant(made[coding], coding, PAGE)
    check_variant(ae(s, "/small.html", "br"), "br", SMALL)
    # the small file's copy is written in the background
    wait_until(lambda: len(_cache_files(cache)) >= 4, 30, step=0.05,
               what="4 cache files (%s)" % cache)
    files = _cache_files(cache)
    assert len(files) == 4, files
    inodes = {n: os.stat(os.path.join(cache, n)).st_ino for n in files}
    assert s.stop() == 0
    s2 = ConfServer(tmpdir, "file_cache_valid 0\n" + _cache_conf(cache), root=s.rootdir)
    # The first request after the restart finds the variant made by the first run.
    for coding in CODINGS:
        r = ae(s2, "/page.html", coding)
        check_variant(r, coding, PAGE)
        assert r.body == made[coding].body and r.header("ETag") == made[coding].header("ETag")
    assert {n: os.stat(os.path.join(cache, n)).st_ino for n in _cache_files(cache)} == inodes
    # A new version of the file: its own cache files, never the old ones.
    with open(os.path.join(s.rootdir, "page.html"), "ab") as f:
        f.write(b"<p>appended</p>\n")
    r, first = wait_coding(s2, "/page.html", "br")
    assert first.header("Content-Encoding") is None
    check_variant(r, "br", PAGE + b"<p>appended</p>\n")


def test_cache_dir_unwritable_serves_identity_with_one_log_line(tmpdir):
    cache = os.path.join(tmpdir, "cache")
    os.makedirs(cache)
    kw = {}
    if IS_ROOT:
        kw["user"] = "nobody"       # root writes anywhere: run as nobody, dir is root's 0755
        os.chmod(cache, 0o755)
    else:
        os.chmod(cache, 0o555)
    files = dict(FILES)
    s = _srv(tmpdir, conf=_cache_conf(cache), files=files, **kw)
    for name in files:
        os.chmod(os.path.join(s.rootdir, name), 0o644)
    for d in ("", "dir"):
        os.chmod(os.path.join(s.rootdir, d), 0o755)
    r = ae(s, "/page.html", "br")
    assert r.status == 200 and r.header("Content-Encoding") is None
    line = "compress_cache_dir %s" % cache
    wait_until(lambda: line in s.stderr, 30, step=0.05, what=line)
    for _ in range(3):
        for path in ("/page.html", "/small.html", "/app.js"):
            for coding in CODINGS:
                r = ae(s, path, coding)
                assert r.status == 200 and r.header("Content-Encoding") is None, (path, coding)
                assert r.header("Vary") == "Accept-Encoding", path
    assert s.stderr.count(line) == 1, s.stderr
    assert os.listdir(cache) == []


def test_cache_dir_full_keeps_its_bound(tmpdir):
    cache = os.path.join(tmpdir, "cache")
    os.makedirs(cache)
    with open(os.path.join(cache, "notes.txt"), "wb") as f:   # not ours: never touched
        f.write(b"x" * 100000)
    files = {"f%02d.html" % i: random.Random(i).randbytes(9000) + text("f%d" % i, 40000)
             for i in range(12)}
    s = _srv(tmpdir, conf=_cache_conf(cache, "64k"), files=files)
    sizes = []
    for name in sorted(files):
        r, _ = wait_coding(s, "/" + name, "gzip")
        check_variant(r, "gzip", files[name])
        sizes.append(len(r.body))
    assert sum(sizes) > 2 * 65536, sizes    # more than fits: some were evicted
    ours = _cache_files(cache)
    total = sum(os.path.getsize(os.path.join(cache, n)) for n in ours)
    assert 0 < total <= 65536, (total, ours)
    assert os.path.getsize(os.path.join(cache, "notes.txt")) == 100000
    # what is served is still right (from the cache entries)
    for name in sorted(files):
        r = ae(s, "/" + name, "gzip")
        assert decode(r.header("Content-Encoding"), r.body) == files[name]


# ---- the differential against nginx `gzip on` --------------------------------------------------


NGINX_CONF = """
pid %(tmp)s/nginx.pid;
error_log %(tmp)s/error.log warn;
events { worker_connections 64; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path %(tmp)s/client_body;
    proxy_temp_path %(tmp)s/proxy;
    fastcgi_temp_path %(tmp)s/fastcgi;
    uwsgi_temp_path %(tmp)s/uwsgi;
    scgi_temp_path %(tmp)s/scgi;
    gzip on;
    gzip_vary on;
    gzip_min_length 1024;
    gzip_types text/css text/javascript application/javascript application/json image/svg+xml;
    server {
        listen 127.0.0.1:%(port)d;
        root %(root)s;
    }
}
"""


def test_differential_against_nginx_gzip_on(tmpdir, nginx_peer):
    """The headers that matter, nginx `gzip on` (gzip_vary on, gzip_min_length 1k) against
    lfhttpd's defaults: whether gzip is chosen, Vary, Content-Type, the decoded body. Kept
    apart on purpose: nginx weakens the ETag of what it compresses and sends it chunked;
    lfhttpd has a strong ETag per representation and a Content-Length (checked above); .js is
    text/javascript in lfhttpd (RFC 9239), application/javascript in Debian's nginx."""
    files = {"small.html": SMALL, "page.html": PAGE, "app.js": FILES["app.js"],
             "data.json": FILES["data.json"], "pic.svg": FILES["pic.svg"],
             "img.png": FILES["img.png"], "tiny.html": TINY}
    root = _root(tmpdir, files)
    lf = ConfServer(tmpdir, "compress_level gzip 6\n", root=root)
    ngx = nginx_peer(NGINX_CONF, root=root)
    checked = 0
    for name in files:
        if name not in ("img.png", "tiny.html"):
            wait_coding(lf, "/" + name, "gzip")   # made once, in the background
        for value in ("gzip", "gzip, deflate", "identity", None, "gzip;q=0", "deflate"):
            a = ae(lf, "/" + name, value)
            b = ae(ngx.addr, "/" + name, value)
            for r in (a, b):
                assert r.status == 200, (name, value, r.status)
            fa, fb = [(r.header("Content-Encoding"), r.header("Vary"),
                       "" if name.endswith(".js") else
                       (r.header("Content-Type") or "").split(";")[0],
                       decode(r.header("Content-Encoding"), r.body)) for r in (a, b)]
            assert fa == fb, (name, value, fa[:3], fb[:3])
            assert fa[3] == files[name], value
            checked += 1
    assert checked == len(files) * 6
    assert ngx.alive(), "nginx died:\n" + ngx.log()


def test_status_and_metrics_count_variants(tmpdir):
    import json
    s = _srv(tmpdir)
    for coding in CODINGS:
        check_variant(ae(s, "/small.html", coding), coding, SMALL)
    wait_coding(s, "/page.html", "br")
    ae(s, "/noise.txt", "gzip")       # in the background: not smaller

    def compress_status():
        return json.loads(get(s, "/server-status?json").body)["compress"]
    wait_until(lambda: compress_status()["not_smaller"] >= 1, 30, step=0.05,
               what="not_smaller >= 1 in /server-status")
    z = compress_status()
    assert z["made"] == {"br": 2, "zstd": 1, "gzip": 1}, z
    assert z["bytes_in"] == 3 * len(SMALL) + len(PAGE) and 0 < z["bytes_out"] < z["bytes_in"], z
    m = get(s, "/metrics").body.decode()
    assert 'lfhttpd_compress_variants_total{coding="br"} 2' in m, m
    assert re.search(r"(?m)^lfhttpd_compress_not_smaller_total 1$", m), m
