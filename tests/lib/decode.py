"""Decoders for the compression tests: gzip from Python's standard library, Brotli and zstd
from Debian's python3-brotli and python3-zstandard (tools/deps.sh, set `test`), imported as
any module: the suite runs in Debian's interpreter, /usr/bin/python3 (tests/suite.sh), which
has them.

    decode(coding, data)          the decoded bytes ("br", "zstd", "gzip", or None: data)
    decode_many([(coding, data)]) the same for a batch
"""

import gzip

import brotli
import zstandard


def _decode_one(coding, data):
    if coding is None:
        return data
    if coding == "gzip":
        return gzip.decompress(data)
    if coding == "br":
        return brotli.decompress(data)
    assert coding == "zstd", "unknown coding %r" % coding
    # a stream's frames do not say their size: decode as a stream
    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


def decode_many(items):
    """[(coding, bytes)] -> [bytes]; raises AssertionError naming the item that fails."""
    out = []
    for i, (coding, data) in enumerate(items):
        try:
            out.append(_decode_one(coding, data))
        except (OSError, EOFError, brotli.error, zstandard.ZstdError) as e:
            raise AssertionError("%s body %d does not decode: %s: %s"
                                 % (coding, i, type(e).__name__, e))
    return out


def decode(coding, data):
    return decode_many([(coding, data)])[0]
