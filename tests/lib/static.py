"""Helpers for the static-site tests: configuration files, small document roots, multipart.

    make_root(dir, files, mtime=OLD)           create files {rel: bytes} with a fixed mtime
    parse_multipart(resp)                      the parts of a multipart/byteranges response
    check_config(tmpdir, conf)                 run `lfhttpd -t -c FILE`: (status, stderr)
    wait_coding(s, path, coding)               ask until the compressed variant is served
"""

import os
import re
import subprocess

from .server import REPO, T, binary, get, sanitizer_report, wait_until, write_config

MIME_TYPES = os.path.join(REPO, "conf", "mime.types")
OLD = 1700000000          # the fixture's mtime (Tue, 14 Nov 2023 22:13:20 GMT)


def check_config(tmpdir, conf, name="lfhttpd.conf", extra=()):
    """`lfhttpd -t -c FILE`: returns (exit status, stderr text, path of the file)."""
    path = write_config(tmpdir, conf, name)
    p = subprocess.run([binary(), "-t", "-c", path] + list(extra), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=T(10),
                       cwd=tmpdir)
    err = p.stderr.decode("utf-8", "replace")
    rep = sanitizer_report(err)
    assert rep is None, "sanitizer report:\n" + rep
    return p.returncode, err, path


def wait_coding(s, path, coding, value=None, timeout=60):
    """Ask for `path` with Accept-Encoding `value` (default: the coding alone) until the
    response comes in `coding` (the variant is made in the background): every answer until
    then is a 200 in identity. Returns (that response, the first one); the wait is bounded
    from the first request."""
    got = {}

    def came():
        r = get(s, path, headers={"Accept-Encoding": value or coding})
        assert r.status == 200, (path, r.status)
        assert r.header("Content-Encoding") in (None, coding), (path, coding, r.headers)
        got.setdefault("first", r)
        got["last"] = r
        return r.header("Content-Encoding") == coding
    wait_until(came, timeout, what="%s in %s" % (path, coding), step=0.05)
    return got["last"], got["first"]


def make_root(root, files, mtime=OLD):
    """Create `files` ({relative path: bytes}) under root, all with mtime `mtime`."""
    os.makedirs(root, exist_ok=True)
    for rel, data in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        if mtime is not None:
            os.utime(p, (mtime, mtime))
    return root


def set_mtime(path, t):
    os.utime(path, (t, t))


def boundary_of(resp):
    ct = resp.header("Content-Type") or ""
    m = re.match(r'(?i)^multipart/byteranges;\s*boundary=("?)([^";]+)\1\s*$', ct)
    assert m, "not a multipart/byteranges Content-Type: %r" % ct
    return m.group(2)


def parse_multipart(resp):
    """Parse a multipart/byteranges body (RFC 9110 14.6 / RFC 2046). Returns a list of
    (headers {lower name: value}, bytes). Checks the framing strictly."""
    b = boundary_of(resp).encode()
    body = resp.body
    delim = b"--" + b
    # The body may start with a CRLF (preamble) before the first delimiter.
    first = body.find(delim)
    assert first >= 0, "no boundary in body: %r" % body[:200]
    assert body[:first] in (b"", b"\r\n"), "unexpected preamble %r" % body[:first]
    pos = first
    parts = []
    while True:
        assert body[pos:pos + len(delim)] == delim, (pos, body[pos:pos + 80])
        pos += len(delim)
        if body[pos:pos + 2] == b"--":
            assert body[pos + 2:] in (b"", b"\r\n"), "data after the close delimiter: %r" \
                % body[pos + 2:pos + 100]
            return parts
        assert body[pos:pos + 2] == b"\r\n", body[pos:pos + 40]
        pos += 2
        hend = body.index(b"\r\n\r\n", pos)
        headers = {}
        for line in body[pos:hend].split(b"\r\n"):
            k, v = line.split(b":", 1)
            headers[k.decode().strip().lower()] = v.decode().strip()
        pos = hend + 4
        cr = headers.get("content-range", "")
        m = re.match(r"^bytes (\d+)-(\d+)/(\d+)$", cr)
        assert m, "part without a valid Content-Range: %r" % headers
        n = int(m.group(2)) - int(m.group(1)) + 1
        data = body[pos:pos + n]
        assert len(data) == n, "part shorter than its Content-Range"
        pos += n
        assert body[pos:pos + 2] == b"\r\n", "part not followed by CRLF: %r" % body[pos:pos + 40]
        pos += 2
        parts.append((headers, data))


def part_ranges(parts):
    """[(first, last, total)] of parsed parts."""
    out = []
    for h, _ in parts:
        m = re.match(r"^bytes (\d+)-(\d+)/(\d+)$", h["content-range"])
        out.append(tuple(int(x) for x in m.groups()))
    return out
