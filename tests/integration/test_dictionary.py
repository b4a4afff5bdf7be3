"""Compression Dictionary Transport (RFC 9842) for static files (compress_dictionary,
static/dict_variants.c): files a pattern covers carry Use-As-Dictionary and
`Vary: Accept-Encoding, Available-Dictionary`; every version served goes into the dictionary
store (the compression cache directory's `dictionaries/`); a request that offers a stored
version of the same pattern and accepts dcz gets the dcz variant once the compressor threads
made it (the ordinary encoding until then), decoded here with python3-zstandard against the
right dictionary and failing against another. Every way a dictionary is refused, Range, HEAD,
304, ETags per dictionary, the store across a deploy and a restart, corrupt and bounded store
files, the access log and metrics, configuration errors, and headless Chromium end to end."""

import base64
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import tempfile

import pytest

import zstandard

from lib.decode import decode
from lib.server import T, ConfServer, get, wait_until
from lib.static import check_config, make_root, wait_coding

DCZ_MAGIC = bytes([0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00])
AE = "gzip, deflate, br, zstd, dcz"
FAST = "compress_level br 5\ncompress_level zstd 3\ncompress_level gzip 6\n"


def js(seed, size, marker="v1"):
    """A JavaScript bundle of `size` bytes: functions from a vocabulary, then the marker."""
    rnd = random.Random(seed)
    names = ["render", "update", "fetchData", "parse", "format", "widget", "store", "route"]
    out = []
    n = 0
    i = 0
    while n < size:
        line = "function %s_%d(a, b) { return a.%s(b) + %d; }\n" % (
            rnd.choice(names), i, rnd.choice(names), rnd.randrange(1000))
        out.append(line)
        n += len(line)
        i += 1
    body = "".join(out)   # whole functions: the browser runs it
    return (body + "\nwindow.APP_VERSION = %r;\n" % marker).encode()


V1 = js("app", 40000, "v1")
# A patch release: most of v1, a few functions changed.
V2 = V1.replace(b"return a.render", b"return a.renderAll").replace(b"'v1'", b"'v2'")
LIB = js("lib", 20000, "lib1")
OTHER = js("other", 20000, "other")
FILES = {"assets/app-v1.js": V1, "assets/app-v2.js": V2, "assets/lib-1.js": LIB,
         "assets/other.js": OTHER}
LOCATION = """location /assets/ {
    cache_control "max-age=3600"
    compress_dictionary /assets/app-*.js match-dest=script id=app
    compress_dictionary /assets/lib-*.js
}
"""


def sha(data):
    return hashlib.sha256(data).digest()


def sf_binary(data):
    return ":%s:" % base64.b64encode(data).decode()


def _srv(tmpdir, files=None, cache=None, extra=""):
    root = make_root(os.path.join(tmpdir, "root"), FILES if files is None else files)
    os.chmod(tmpdir, 0o755)
    cache = cache or os.path.join(tmpdir, "cache")
    log = os.path.join(tmpdir, "access.log")
    conf = ("file_cache_valid 0\n%scompress_cache_dir %s\naccess_log %s\n"
            "access_log_format json\n%s%s" % (FAST, cache, log, extra, LOCATION))
    s = ConfServer(tmpdir, conf, root=root)
    s.rootdir, s.cache, s.log = root, cache, log
    return s


def metric(s, name):
    body = get(s, "/metrics").body.decode()
    m = re.search(r"^%s (\d+)$" % re.escape(name), body, re.M)
    assert m, "no %s in /metrics" % name
    return int(m.group(1))


def wait_stored(s, n, timeout=60):
    """Until the store has taken n versions (bounded from the call)."""
    wait_until(lambda: metric(s, "lfhttpd_compress_dictionaries_stored_total") >= n, timeout,
               step=0.05, what="the store taking %d versions" % n)


def serve_dictionary(s, path, n):
    """A client fetches `path` (a dictionary): the store holds it as the n-th version."""
    r = get(s, path, headers={"Accept-Encoding": "gzip"})
    assert r.status == 200
    wait_stored(s, n)
    return r


def offer(s, path, dictionary, ae=AE, method="GET", extra=None):
    h = {"Accept-Encoding": ae, "Available-Dictionary": sf_binary(sha(dictionary))}
    h.update(extra or {})
    return get(s, path, method, headers=h)


def wait_dcz(s, path, dictionary, timeout=60):
    """Offer `dictionary` for `path` until the answer is dcz; returns (dcz response, first)."""
    got = {}

    def came():
        r = offer(s, path, dictionary)
        assert r.status == 200, r.status
        got.setdefault("first", r)
        got["last"] = r
        assert r.header("Content-Encoding") in (None, "br", "zstd", "gzip", "dcz"), r.headers
        return r.header("Content-Encoding") == "dcz"
    wait_until(came, timeout, step=0.05, what="%s as dcz" % path)
    return got["last"], got["first"]


def get_decoded(r):
    return decode(r.header("Content-Encoding"), r.body)


def dcz_decode(dictionary, body):
    """The bytes of a dcz body decoded against `dictionary`; raises ValueError when zstd
    refuses it. The 40-byte header is checked and stripped first."""
    assert body[:8] == DCZ_MAGIC, body[:8]
    assert body[8:40] == sha(dictionary), "the header names another dictionary"
    frame = body[40:]
    d = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    try:
        return zstandard.ZstdDecompressor(dict_data=d).decompress(frame)
    except zstandard.ZstdError as e:
        raise ValueError(str(e))


def test_dcz_against_the_old_version(tmpdir):
    s = _srv(tmpdir)
    r1 = serve_dictionary(s, "/assets/app-v1.js", 1)
    assert r1.header("Use-As-Dictionary") == \
        'match="/assets/app-*.js", match-dest=("script"), id="app"', r1.headers
    assert r1.header("Vary") == "Accept-Encoding, Available-Dictionary"
    assert r1.header("Cache-Control") == "max-age=3600"
    r, first = wait_dcz(s, "/assets/app-v2.js", V1)
    # Never waited for: the first offer got an ordinary encoding.
    assert first.header("Content-Encoding") != "dcz"
    assert first.header("Vary") == "Accept-Encoding, Available-Dictionary"
    assert r.header("Vary") == "Accept-Encoding, Available-Dictionary"
    assert r.header("Use-As-Dictionary") == r1.header("Use-As-Dictionary")
    assert r.header("Content-Length") == str(len(r.body))
    assert dcz_decode(V1, r.body) == V2
    # The delta is a small part of the whole, and smaller than zstd alone.
    zr, _ = wait_coding(s, "/assets/app-v2.js", "zstd")
    assert len(r.body) < len(zr.body) / 2, (len(r.body), len(zr.body))
    # Against another dictionary the frame does not decode.
    try:
        dcz_decode(LIB, DCZ_MAGIC + sha(LIB) + r.body[40:])
        assert False, "decoded against the wrong dictionary"
    except ValueError:
        pass
    # A strong ETag of its own, naming the dictionary.
    etag = r.header("ETag")
    assert etag and not etag.startswith("W/") and "dcz" in etag, etag
    assert etag != zr.header("ETag")
    assert sha(V1).hex()[:12] in etag
    # The access log says what was sent; the metrics count it and what it saved.
    s.stop()
    lines = [json.loads(l) for l in open(s.log)]
    dcz_lines = [l for l in lines if l["content_encoding"] == "dcz"]
    assert dcz_lines and dcz_lines[-1]["uri"] == "/assets/app-v2.js"
    assert dcz_lines[-1]["bytes"] == len(r.body)
    assert any(l["content_encoding"] == "zstd" for l in lines)
    assert lines[0]["content_encoding"] in ("", "gzip")


def test_dcz_metrics(tmpdir):
    s = _srv(tmpdir)
    serve_dictionary(s, "/assets/app-v1.js", 1)
    r, _ = wait_dcz(s, "/assets/app-v2.js", V1)
    m = get(s, "/metrics").body.decode()
    sent = int(re.search(r'^lfhttpd_compress_responses_total\{coding="dcz"\} (\d+)$', m,
                         re.M).group(1))
    saved = int(re.search(r'^lfhttpd_compress_saved_bytes_total\{coding="dcz"\} (\d+)$', m,
                          re.M).group(1))
    assert sent == 1 and saved == len(V2) - len(r.body), (sent, saved)
    wait_coding(s, "/assets/app-v1.js", "gzip")
    m = get(s, "/metrics").body.decode()
    assert re.search(r'^lfhttpd_compress_responses_total\{coding="gzip"\} [1-9]', m, re.M)
    assert metric(s, "lfhttpd_compress_dcz_variants_total") == 1
    st = json.loads(get(s, "/server-status?json").body)
    assert st["compress"]["responses"]["dcz"] == 1
    assert st["compress"]["saved_bytes"]["dcz"] == saved


def test_dictionary_refused_gets_the_ordinary_encoding(tmpdir):
    s = _srv(tmpdir)
    serve_dictionary(s, "/assets/app-v1.js", 1)
    serve_dictionary(s, "/assets/lib-1.js", 2)
    wait_dcz(s, "/assets/app-v2.js", V1)   # the variant exists: only the offer decides now
    cases = [
        ("no Available-Dictionary", {"Accept-Encoding": AE}),
        ("malformed", {"Accept-Encoding": AE, "Available-Dictionary": "not-a-hash"}),
        ("not base64", {"Accept-Encoding": AE, "Available-Dictionary": ":" + "!" * 43 + ":"}),
        ("too short", {"Accept-Encoding": AE, "Available-Dictionary": sf_binary(b"x" * 31)}),
        ("a list", {"Accept-Encoding": AE,
                    "Available-Dictionary": sf_binary(sha(V1)) + ", " + sf_binary(sha(V1))}),
        ("unknown hash", {"Accept-Encoding": AE, "Available-Dictionary": sf_binary(sha(b"?"))}),
        ("another pattern's dictionary",
         {"Accept-Encoding": AE, "Available-Dictionary": sf_binary(sha(LIB))}),
        ("dcz not accepted", {"Accept-Encoding": "gzip, br, zstd",
                              "Available-Dictionary": sf_binary(sha(V1))}),
        ("dcz;q=0", {"Accept-Encoding": "zstd, dcz;q=0",
                     "Available-Dictionary": sf_binary(sha(V1))}),
        ("* is not dcz", {"Accept-Encoding": "*", "Available-Dictionary": sf_binary(sha(V1))}),
    ]
    for what, h in cases:
        r = get(s, "/assets/app-v2.js", headers=h)
        assert r.status == 200, what
        assert r.header("Content-Encoding") in (None, "br", "zstd", "gzip"), (what, r.headers)
        assert r.header("Vary") == "Accept-Encoding, Available-Dictionary", what
        if r.header("Content-Encoding"):
            assert get_decoded(r) == V2, what
    # A file no pattern covers: no dictionary, whatever is offered; its Vary is the usual.
    r = offer(s, "/assets/other.js", V1)
    assert r.status == 200 and r.header("Content-Encoding") != "dcz"
    assert r.header("Use-As-Dictionary") is None and r.header("Vary") == "Accept-Encoding"
    # Nothing was made for the refused offers: the one variant.
    assert metric(s, "lfhttpd_compress_dcz_variants_total") == 1


def test_dcz_head_range_and_conditionals(tmpdir):
    s = _srv(tmpdir)
    serve_dictionary(s, "/assets/app-v1.js", 1)
    serve_dictionary(s, "/assets/app-v2.js", 2)
    r, _ = wait_dcz(s, "/assets/app-v2.js", V1)
    etag = r.header("ETag")
    h = offer(s, "/assets/app-v2.js", V1, method="HEAD")
    assert h.status == 200 and h.body == b""
    assert h.header("Content-Encoding") == "dcz" and h.header("ETag") == etag
    assert h.header("Content-Length") == str(len(r.body))
    # 304 for the dcz representation, with the headers of its 200.
    n = offer(s, "/assets/app-v2.js", V1, extra={"If-None-Match": etag})
    assert n.status == 304 and n.body == b""
    assert n.header("ETag") == etag
    assert n.header("Vary") == "Accept-Encoding, Available-Dictionary"
    assert n.header("Use-As-Dictionary") == r.header("Use-As-Dictionary")
    # The same tag offered with another dictionary (v2 itself, now stored) is another
    # representation: not 304.
    r2, _ = wait_dcz(s, "/assets/app-v2.js", V2)
    assert r2.header("ETag") != etag
    assert dcz_decode(V2, r2.body) == V2
    m = offer(s, "/assets/app-v2.js", V2, extra={"If-None-Match": etag})
    assert m.status == 200 and m.header("Content-Encoding") == "dcz"
    # Ranges get identity, as for every encoding made on the fly.
    g = offer(s, "/assets/app-v2.js", V1, extra={"Range": "bytes=0-99"})
    assert g.status == 206 and g.body == V2[:100], g.status
    assert g.header("Content-Encoding") is None
    assert g.header("Vary") == "Accept-Encoding, Available-Dictionary"
    u = offer(s, "/assets/app-v2.js", V1, extra={"Range": "bytes=999999-"})
    assert u.status == 416 and u.header("Vary") == "Accept-Encoding, Available-Dictionary"


def test_store_survives_a_deploy_and_a_restart(tmpdir):
    s = _srv(tmpdir, files={"assets/app-v1.js": V1})
    serve_dictionary(s, "/assets/app-v1.js", 1)
    s.stop()
    store = os.path.join(s.cache, "dictionaries")
    names = [n for n in os.listdir(store) if n.endswith(".dict")]
    assert len(names) == 1 and sha(V1).hex() in names[0], names
    # The deploy replaces v1 by v2; a client that kept v1 asks for v2.
    root = os.path.join(tmpdir, "root")
    shutil.rmtree(root)
    s2 = _srv(tmpdir, files={"assets/app-v2.js": V2})
    assert get(s2, "/assets/app-v1.js").status == 404
    r, _ = wait_dcz(s2, "/assets/app-v2.js", V1)
    assert dcz_decode(V1, r.body) == V2


def test_corrupt_store_file_is_dropped(tmpdir):
    s = _srv(tmpdir)
    serve_dictionary(s, "/assets/app-v1.js", 1)
    s.stop()
    store = os.path.join(s.cache, "dictionaries")
    (name,) = [n for n in os.listdir(store) if n.endswith(".dict")]
    with open(os.path.join(store, name), "r+b") as f:   # same size, other bytes
        f.seek(100)
        f.write(b"XXXX")
    s2 = _srv(tmpdir)

    def dropped():   # the job that reads it drops it
        r = offer(s2, "/assets/app-v2.js", V1)
        assert r.status == 200 and r.header("Content-Encoding") != "dcz", r
        return not os.path.exists(os.path.join(store, name))
    wait_until(dropped, 60, step=0.05, what="the corrupt dictionary dropped")

    # Identity until the file's ordinary variants are made (in the background), then one of
    # them; never dcz against the dropped dictionary.
    def ordinary():
        r = offer(s2, "/assets/app-v2.js", V1)
        enc = r.header("Content-Encoding")
        assert r.status == 200 and enc != "dcz", r
        return enc in ("br", "zstd", "gzip")
    wait_until(ordinary, 60, step=0.05, what="an ordinary variant")
    assert metric(s2, "lfhttpd_compress_dcz_variants_total") == 0


def test_store_is_bounded_per_pattern(tmpdir):
    files = {"assets/app-%d.js" % i: js("app", 20000, "r%d" % i) for i in range(7)}
    s = _srv(tmpdir, files=files)
    for i in range(7):
        serve_dictionary(s, "/assets/app-%d.js" % i, i + 1)
    store = os.path.join(s.cache, "dictionaries")
    names = sorted(n for n in os.listdir(store) if n.endswith(".dict"))
    assert len(names) == 4, names   # DICT_STORE_PER_PATTERN_DEFAULT: the newest four
    kept = {n.split("-")[1][:64] for n in names}
    assert kept == {sha(files["assets/app-%d.js" % i]).hex() for i in range(3, 7)}
    # An evicted version is no dictionary any more.
    r = offer(s, "/assets/app-6.js", files["assets/app-0.js"])
    assert r.header("Content-Encoding") != "dcz"


def test_compress_dictionary_configuration_errors(tmpdir):
    bad = [
        ("compress_dictionary app-*.js\n", r"lfhttpd\.conf:1: dictionary match 'app-\*\.js' "
                                           r"must be a path that starts with '/'"),
        ("compress_dictionary /a/:id.js\n", r"lfhttpd\.conf:1: dictionary match .* URLPattern"),
        ("compress_dictionary /a/*.js match-dest=nowhere\n",
         r"lfhttpd\.conf:1: unknown dictionary destination 'nowhere'"),
        ("compress_dictionary /a/*.js colour=blue\n",
         r"lfhttpd\.conf:1: compress_dictionary: 'colour=blue' is not an option"),
        ("compress_dictionary /a/*.js id=a id=b\n",
         r"lfhttpd\.conf:1: compress_dictionary: 'id=b' is not an option"),
        ("compress_dictionary\n", r"lfhttpd\.conf:1: .*compress_dictionary"),
    ]
    for conf, want in bad:
        rc, err, _ = check_config(tmpdir, conf)
        assert rc != 0 and re.search(want, err), (conf, err)
    # A store needs the cache directory: refused, naming the directive's line.
    root = make_root(os.path.join(tmpdir, "r"), {"a.js": b"x"})
    rc, err, _ = check_config(tmpdir, "root %s\n\ncompress_dictionary /a-*.js\n" % root)
    assert rc != 0 and re.search(r"compress_dictionary \(.*lfhttpd\.conf:3\) needs "
                                 r"compress_cache_dir", err), err
    rc, err, _ = check_config(tmpdir, "root %s\ncompress_dictionary /a-*.js\n"
                                      "compress_dictionary off\n" % root)
    assert rc == 0, err


# ---- a real browser ------------------------------------------------------------------------

PAGE = b"""<!doctype html>
<html><head><title>dcz</title></head><body>
<div id="out">none</div>
<script src="/assets/%s"></script>
<script>document.getElementById("out").textContent = "ran:" + window.APP_VERSION;</script>
</body></html>
"""


def _chromium():
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    raise AssertionError("chromium not installed (tools/deps.sh installs Debian's chromium)")


def _dump_dom(url, profile):
    cmd = [_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", "--disable-crash-reporter", "--user-data-dir=" + profile,
           "--virtual-time-budget=5000", "--dump-dom", url]
    env = dict(os.environ, HOME=profile)
    for k in list(env):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            del env[k]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=T(90))
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")[-2000:]
    return p.stdout.decode("utf-8", "replace")


@pytest.mark.timeout(200)
def test_chromium_reloads_the_new_release_as_dcz(tmpdir):
    # The page itself is revalidated on every load; the bundles are cached for an hour (what
    # makes Chromium keep a dictionary).
    s = _srv(tmpdir, files={"index.html": PAGE % b"app-v1.js", "assets/app-v1.js": V1},
             extra='cache_control "no-cache"\n')
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmpdir)
    url = "http://127.0.0.1:%d/index.html" % s.port
    dom = _dump_dom(url, profile)
    assert "ran:v1" in dom, dom[-500:]
    wait_stored(s, 1)
    # The release: the page now loads app-v2.js.
    make_root(s.rootdir, {"index.html": PAGE % b"app-v2.js", "assets/app-v2.js": V2},
              mtime=None)
    # The variant against v1 is made when first asked for: ask as the browser will, then
    # wait until it is ready, so that the browser's own request is answered with it.
    wait_dcz(s, "/assets/app-v2.js", V1)
    before = metric(s, 'lfhttpd_compress_responses_total{coding="dcz"}')
    dom = _dump_dom(url, profile)
    assert "ran:v2" in dom, dom[-500:]
    assert metric(s, 'lfhttpd_compress_responses_total{coding="dcz"}') == before + 1
    s.stop()
    lines = [json.loads(l) for l in open(s.log)]
    browser = [l for l in lines if l["uri"] == "/assets/app-v2.js" and
               "Chrome" in l["user_agent"]]
    assert browser and browser[-1]["content_encoding"] == "dcz", browser




def test_two_sites_sharing_a_cache_directory_keep_their_dictionaries_apart(tmpdir):
    """Two server blocks, one compress_cache_dir, the same pattern: a version a.test served
    is no dictionary for b.test, and b's own is."""
    b_v1 = V1.replace(b"'v1'", b"'b1'")
    a = make_root(os.path.join(tmpdir, "a"), {"assets/app-v1.js": V1, "assets/app-v2.js": V2})
    b = make_root(os.path.join(tmpdir, "b"), {"assets/app-v1.js": b_v1, "assets/app-v2.js": V2})
    os.chmod(tmpdir, 0o755)
    block = "server %s {\n    root %s\n    " + LOCATION.replace("\n", "\n    ") + "\n}\n"
    conf = ("file_cache_valid 0\n%scompress_cache_dir %s\n" % (FAST, os.path.join(tmpdir, "c"))
            + block % ("a.test", a) + block % ("b.test", b))
    s = ConfServer(tmpdir, conf, root=a)
    ha, hb = {"Host": "a.test"}, {"Host": "b.test"}

    def dcz_from(host, dictionary):
        """Offer `dictionary` for app-v2.js to `host` until it answers dcz (bounded)."""
        got = {}

        def came():
            got["r"] = offer(s, "/assets/app-v2.js", dictionary, extra=host)
            return got["r"].header("Content-Encoding") == "dcz"
        wait_until(came, 60, what="dcz from %s" % host["Host"], step=0.05)
        return got["r"]

    r = get(s, "/assets/app-v1.js", headers=dict(ha, **{"Accept-Encoding": "gzip"}))
    assert r.status == 200 and r.header("Use-As-Dictionary")
    wait_stored(s, 1)
    # Offered a's v1, b would queue its dcz job now if that version were its dictionary ...
    assert offer(s, "/assets/app-v2.js", V1, extra=hb).header("Content-Encoding") != "dcz"
    # ... and it would be made by the time a's, asked for after it, is.
    assert dcz_decode(V1, dcz_from(ha, V1).body) == V2
    assert metric(s, "lfhttpd_compress_dcz_variants_total") == 1
    r = offer(s, "/assets/app-v2.js", V1, extra=hb)
    assert r.status == 200 and r.header("Content-Encoding") != "dcz"
    assert r.header("Vary") == "Accept-Encoding, Available-Dictionary"
    # b's own v1, once served, is b's dictionary.
    get(s, "/assets/app-v1.js", headers=dict(hb, **{"Accept-Encoding": "gzip"}))
    wait_stored(s, 2)
    assert dcz_decode(b_v1, dcz_from(hb, b_v1).body) == V2


@pytest.mark.parametrize("path,vary", [
    ("/assets/app-v1.js", "Accept-Encoding, Available-Dictionary"),   # a pattern covers it
    ("/assets/other.js", "Accept-Encoding"),                          # compressible only
])
def test_a_412_or_406_names_what_it_varies_by(tmpdir, path, vary):
    """412 (If-Match of another representation's tag) and 406 (no acceptable coding) depend on
    the request's Accept-Encoding (and, where a pattern covers the file, on its dictionaries)
    as the 200 does: their Vary says so, or a cache could reuse them for other clients."""
    s = _srv(tmpdir)
    ok = get(s, path, headers={"Accept-Encoding": "gzip"})
    assert ok.status == 200 and ok.header("Vary") == vary
    gz, _ = wait_coding(s, path, "gzip")
    # The identity tag does not match the gzip representation: 412.
    ident = get(s, path)
    assert ident.header("ETag") != gz.header("ETag")
    r = get(s, path, headers={"Accept-Encoding": "gzip", "If-Match": ident.header("ETag")})
    assert r.status == 412 and r.header_all("Vary") == [vary], r.headers
    r = get(s, path, headers={"If-Match": ident.header("ETag")})
    assert r.status == 200
    # Nothing acceptable: 406.
    r = get(s, path, headers={"Accept-Encoding": "identity;q=0, compress"})
    assert r.status == 406 and r.header_all("Vary") == [vary], r.headers


def test_compress_off_announces_no_dictionary(tmpdir):
    """dcz is made on the fly: where `compress off` holds, a covered file is no dictionary."""
    s = _srv(tmpdir, extra="compress off\n")
    r = get(s, "/assets/app-v1.js", headers={"Accept-Encoding": AE})
    assert r.status == 200 and r.body == V1
    assert r.header("Use-As-Dictionary") is None
    assert r.header("Content-Encoding") is None


def test_if_match_with_the_dcz_tag(tmpdir):
    """If-Match names a representation: the dcz tag holds for the dcz representation (200,
    dcz), and fails for the request that would get another (412, with the resource's Vary)."""
    s = _srv(tmpdir)
    serve_dictionary(s, "/assets/app-v1.js", 1)
    r, _ = wait_dcz(s, "/assets/app-v2.js", V1)
    etag = r.header("ETag")
    ok = offer(s, "/assets/app-v2.js", V1, extra={"If-Match": etag})
    assert ok.status == 200 and ok.header("Content-Encoding") == "dcz"
    assert dcz_decode(V1, ok.body) == V2
    no = get(s, "/assets/app-v2.js", headers={"Accept-Encoding": "gzip", "If-Match": etag})
    assert no.status == 412, no.status
    assert no.header("Vary") == "Accept-Encoding, Available-Dictionary"
