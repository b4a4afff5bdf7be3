/* zstd.c — the zstd coding: whole files, and streamed responses; see codec.h. */
#include <errno.h>
#include <stdio.h>
#include <zstd.h>

#include "compress/codec.h"

/* Streamed responses: level 1, a 32 KiB window like gzip's. */
#define ZSTD_STREAM_LEVEL 1
#define ZSTD_WINDOW_LOG 15

static int zstd_encode(struct codec_source *src, struct codec_sink *out, int level,
                       _Atomic bool *stop)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    if (!z)
        return -ENOMEM;
    /* The content size in the frame header; a checksum for the decoder. Levels up to 19 use
     * windows of at most 8 MiB, what browsers accept (RFC 9659). */
    ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setPledgedSrcSize(z, src->size);
    unsigned char ob[CODEC_OUT_CHUNK];
    int rc = 0;
    bool last = false;
    while (!rc && !last) {
        const unsigned char *p;
        size_t n;
        if ((rc = codec_source_next(src, stop, &p, &n, &last)) < 0)
            break;
        ZSTD_inBuffer in = { p, n, 0 };
        for (;;) {
            ZSTD_outBuffer o = { ob, sizeof(ob), 0 };
            size_t r = ZSTD_compressStream2(z, &o, &in, last ? ZSTD_e_end : ZSTD_e_continue);
            if (ZSTD_isError(r)) {
                rc = -EIO;
                break;
            }
            if ((rc = codec_sink_put(out, ob, o.pos)) < 0)
                break;
            if (last ? r == 0 : in.pos == in.size)
                break;
        }
    }
    ZSTD_freeCCtx(z);
    return rc;
}

static void zstd_version(char *out, size_t cap)
{
    unsigned v = ZSTD_versionNumber();
    snprintf(out, cap, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
}

static int zstd_stream_init(void *ctx)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    if (!z || ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, ZSTD_STREAM_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_windowLog, ZSTD_WINDOW_LOG))) {
        ZSTD_freeCCtx(z);
        return -ENOMEM;
    }
    *(ZSTD_CCtx **)ctx = z;
    return 0;
}

static ssize_t zstd_stream_run(void *ctx, const void *in, size_t len, bool last, char *out,
                               size_t cap)
{
    ZSTD_inBuffer ib = { in, len, 0 };
    ZSTD_outBuffer ob = { out, cap, 0 };
    size_t rc = ZSTD_compressStream2(*(ZSTD_CCtx **)ctx, &ob, &ib,
                                     last ? ZSTD_e_end : ZSTD_e_flush);
    if (ZSTD_isError(rc) || rc != 0 || ib.pos != len)
        return -EIO;
    return (ssize_t)ob.pos;
}

static void zstd_stream_end(void *ctx)
{
    ZSTD_freeCCtx(*(ZSTD_CCtx **)ctx);
}

const struct codec_ops codec_zstd = {
    .encode = zstd_encode,
    .version = zstd_version,
    .stream_init = zstd_stream_init,
    .stream_run = zstd_stream_run,
    .stream_end = zstd_stream_end,
};
