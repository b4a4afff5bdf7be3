"""Decoders for the compression tests: gzip from Python's standard library, Brotli and zstd
from Debian's python3-brotli and python3-zstandard (tools/deps.sh, set `test`).

Debian's modules live where Debian's interpreter finds them. When the interpreter running the
tests is another build of the same Python version (a pyenv build, say), Debian's directory is
appended to its path (after its own), since the extension modules fit its ABI; otherwise the
decoders run in /usr/bin/python3, one process for a whole batch.

    decode(coding, data)          the decoded bytes ("br", "zstd", "gzip", or None: data)
    decode_many([(coding, data)]) the same for a batch, one child process at most
"""

import base64
import glob
import gzip
import json
import subprocess
import sys

DEBIAN_PYTHON = "/usr/bin/python3"

_CHILD = r"""
import base64, json, sys
import brotli, zstandard
out = []
for coding, data in json.load(sys.stdin):
    data = base64.b64decode(data)
    try:
        if coding == "br":
            d = brotli.decompress(data)
        else:
            d = zstandard.ZstdDecompressor().decompressobj().decompress(data)
        out.append(base64.b64encode(d).decode())
    except Exception as e:
        out.append({"error": "%s: %s" % (type(e).__name__, e)})
json.dump(out, sys.stdout)
"""


DEBIAN_PACKAGES = "/usr/lib/python3/dist-packages"
if glob.glob("%s/_brotli.cpython-%d%d-*.so" % ((DEBIAN_PACKAGES,) + sys.version_info[:2])) \
        and DEBIAN_PACKAGES not in sys.path:
    sys.path.append(DEBIAN_PACKAGES)


def _in_process(coding, data):
    if coding == "br":
        import brotli  # noqa: F401  (ImportError: use Debian's interpreter)
        return brotli.decompress(data)
    import zstandard
    # a stream's frames do not say their size: decode as a stream
    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


def decode_many(items):
    """[(coding, bytes)] -> [bytes]; raises AssertionError naming the item that fails."""
    out = [None] * len(items)
    rest = []
    for i, (coding, data) in enumerate(items):
        if coding is None:
            out[i] = data
        elif coding == "gzip":
            out[i] = gzip.decompress(data)
        else:
            try:
                out[i] = _in_process(coding, data)
            except ImportError:
                rest.append(i)
    if rest:
        payload = json.dumps([(items[i][0], base64.b64encode(items[i][1]).decode())
                              for i in rest])
        p = subprocess.run([DEBIAN_PYTHON, "-c", _CHILD], input=payload.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        assert p.returncode == 0, ("decoders (python3-brotli, python3-zstandard; `make deps`) "
                                   "failed:\n" + p.stderr.decode(errors="replace"))
        for i, d in zip(rest, json.loads(p.stdout)):
            assert not isinstance(d, dict), "%s body %d does not decode: %s" % (
                items[i][0], i, d["error"])
            out[i] = base64.b64decode(d)
    return out


def decode(coding, data):
    return decode_many([(coding, data)])[0]
