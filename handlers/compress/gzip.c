/* gzip.c — the gzip coding (zlib): whole files, and streamed responses; see codec.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "compress/codec.h"

/* Streamed responses: nginx's gzip_comp_level 1, a 32 KiB window, gzip framing. */
#define GZIP_STREAM_LEVEL 1
#define GZIP_WINDOW_BITS (15 + 16)
#define GZIP_MEM_LEVEL 8

static int gzip_encode(struct codec_source *src, struct codec_sink *out, int level,
                       _Atomic bool *stop)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    /* 15 + 16: a gzip wrapper (mtime 0, no name: the same bytes on every run and replica) */
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    unsigned char ob[CODEC_OUT_CHUNK];
    int rc = 0;
    bool last = false;
    while (!rc && !last) {
        const unsigned char *p;
        size_t n;
        if ((rc = codec_source_next(src, stop, &p, &n, &last)) < 0)
            break;
        z.next_in = (unsigned char *)(uintptr_t)p;
        z.avail_in = (unsigned)n;
        do {
            z.next_out = ob;
            z.avail_out = sizeof(ob);
            if (deflate(&z, last ? Z_FINISH : Z_NO_FLUSH) == Z_STREAM_ERROR) {
                rc = -EIO;
                break;
            }
            rc = codec_sink_put(out, ob, sizeof(ob) - z.avail_out);
        } while (!rc && z.avail_out == 0);
    }
    deflateEnd(&z);
    return rc;
}

static void gzip_version(char *out, size_t cap)
{
    snprintf(out, cap, "%s", zlibVersion());
}

_Static_assert(sizeof(z_stream) <= CODEC_STREAM_CTX, "a z_stream fits a stream's context");

static int gzip_stream_init(void *ctx)
{
    z_stream *z = ctx;
    memset(z, 0, sizeof(*z));
    return deflateInit2(z, GZIP_STREAM_LEVEL, Z_DEFLATED, GZIP_WINDOW_BITS, GZIP_MEM_LEVEL,
                        Z_DEFAULT_STRATEGY) == Z_OK
               ? 0
               : -ENOMEM;
}

static ssize_t gzip_stream_run(void *ctx, const void *in, size_t len, bool last, char *out,
                               size_t cap)
{
    z_stream *z = ctx;
    z->next_in = (Bytef *)(uintptr_t)in;
    z->avail_in = (uInt)len;
    z->next_out = (Bytef *)out;
    z->avail_out = (uInt)cap;
    int rc = deflate(z, last ? Z_FINISH : Z_SYNC_FLUSH);
    /* Room left means everything was taken and flushed (zlib's contract). */
    if (rc == Z_STREAM_ERROR || z->avail_in || z->avail_out == 0 || (last && rc != Z_STREAM_END))
        return -EIO;
    return (ssize_t)(cap - z->avail_out);
}

static void gzip_stream_end(void *ctx)
{
    deflateEnd(ctx);
}

const struct codec_ops codec_gzip = {
    .encode = gzip_encode,
    .version = gzip_version,
    .stream_init = gzip_stream_init,
    .stream_run = gzip_stream_run,
    .stream_end = gzip_stream_end,
};
