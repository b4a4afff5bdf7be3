/* codec.h — one content coding's compressor, behind one ops struct (gzip.c, brotli.c, zstd.c),
 * shared by the static files' variants (a whole input, made once: static/variants.c) and the
 * streamed responses (piece by piece, each flushed: compress_stream.c). */
#ifndef LF_CODEC_H
#define LF_CODEC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compress/coding.h"

#define CODEC_CHUNK (64 * 1024)     /* input read per step (background jobs) */
#define CODEC_OUT_CHUNK (16 * 1024) /* output per step */
/* Room for a streamed context (a z_stream; a pointer to a ZSTD_CCtx), inside the stream's
 * own allocation. */
#define CODEC_STREAM_CTX 128

/* Where compressed bytes go: a descriptor, or memory. Reaching `limit` bytes aborts the work
 * (-EFBIG): the variant would not be smaller than the file, or would not fit. */
struct codec_sink {
    int fd;
    char *mem;
    size_t cap;
    uint64_t total, limit;
};

/* What is compressed: memory, or `size` bytes of a descriptor read with pread. */
struct codec_source {
    const char *mem;
    int fd;
    uint64_t size, off;
    char *buf;              /* CODEC_CHUNK bytes for reads from fd */
};

/* Append n bytes to `s`. Returns 0, -EFBIG (the limit), -ENOMEM or -errno. */
int codec_sink_put(struct codec_sink *s, const void *p, size_t n);
/* The next piece of input: *p, *n (0 at the end); *last when it is the input's last piece.
 * Returns 0, -ECANCELED when *stop is set (the compressor is stopping; stop may be NULL),
 * -ESTALE when the file is shorter than it was (truncated meanwhile), or -errno. */
int codec_source_next(struct codec_source *src, _Atomic bool *stop, const unsigned char **p,
                      size_t *n, bool *last);

struct codec_ops {
    /* Compress all of `src` into `out` at `level`, checking `stop` (may be NULL) between
     * pieces. Returns 0, -EFBIG (reached out->limit), -ESTALE (the file shrank), -ECANCELED
     * (stopping) or -errno. */
    int (*encode)(struct codec_source *src, struct codec_sink *out, int level,
                  _Atomic bool *stop);
    /* The library's version, "major.minor.patch": part of a variant's ETag and cache key. */
    void (*version)(char *out, size_t cap);
    /* Streamed responses (NULL: never streamed, Brotli). init: a context in `ctx`
     * (CODEC_STREAM_CTX bytes, aligned), 0 or -ENOMEM; run: compress `len` bytes and flush
     * them (finish the stream when `last`) into out[0..cap), the bytes written or -EIO; end:
     * free what init allocated. */
    int (*stream_init)(void *ctx);
    ssize_t (*stream_run)(void *ctx, const void *in, size_t len, bool last, char *out,
                          size_t cap);
    void (*stream_end)(void *ctx);
};

/* The codecs (brotli.c, zstd.c, gzip.c), and each coding's, by enum coding. */
extern const struct codec_ops codec_brotli, codec_zstd, codec_gzip;
extern const struct codec_ops *const codecs[CODING_COUNT];

/* codecs[enc]->encode(), -EINVAL for an unknown coding. */
int codec_encode(enum coding enc, int level, struct codec_source *src, struct codec_sink *out,
                 _Atomic bool *stop);

#endif
