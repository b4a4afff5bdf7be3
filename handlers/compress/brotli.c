/* brotli.c — the br coding: whole files only (a streaming context costs several times gzip's,
 * so streamed responses are never Brotli); see codec.h. */
#include <brotli/encode.h>
#include <errno.h>
#include <stdio.h>

#include "compress/codec.h"

static int brotli_encode(struct codec_source *src, struct codec_sink *out, int level,
                         _Atomic bool *stop)
{
    BrotliEncoderState *b = BrotliEncoderCreateInstance(NULL, NULL, NULL);
    if (!b)
        return -ENOMEM;
    /* The window: the smallest that holds the whole file (less memory, the same result). */
    int lgwin = BROTLI_MIN_WINDOW_BITS;
    while (lgwin < BROTLI_MAX_WINDOW_BITS && ((uint64_t)1 << lgwin) - 16 < src->size)
        lgwin++;
    BrotliEncoderSetParameter(b, BROTLI_PARAM_QUALITY, (uint32_t)level);
    BrotliEncoderSetParameter(b, BROTLI_PARAM_LGWIN, (uint32_t)lgwin);
    BrotliEncoderSetParameter(b, BROTLI_PARAM_SIZE_HINT,
                              src->size < (1u << 30) ? (uint32_t)src->size : 1u << 30);
    unsigned char ob[CODEC_OUT_CHUNK];
    const unsigned char *p = NULL;
    size_t avail_in = 0;
    int rc = 0;
    bool last = false;
    while (!rc) {
        if (!avail_in && !last) {
            if ((rc = codec_source_next(src, stop, &p, &avail_in, &last)) < 0)
                break;
        }
        size_t avail_out = sizeof(ob);
        unsigned char *next_out = ob;
        if (!BrotliEncoderCompressStream(b, last ? BROTLI_OPERATION_FINISH
                                                 : BROTLI_OPERATION_PROCESS,
                                         &avail_in, &p, &avail_out, &next_out, NULL)) {
            rc = -EIO;
            break;
        }
        rc = codec_sink_put(out, ob, sizeof(ob) - avail_out);
        if (BrotliEncoderIsFinished(b))
            break;
    }
    BrotliEncoderDestroyInstance(b);
    return rc;
}

static void brotli_version(char *out, size_t cap)
{
    uint32_t v = BrotliEncoderVersion();
    snprintf(out, cap, "%u.%u.%u", v >> 24, (v >> 12) & 0xfff, v & 0xfff);
}

const struct codec_ops codec_brotli = {
    .encode = brotli_encode,
    .version = brotli_version,
};
