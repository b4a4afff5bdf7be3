/* codec.c — what the codecs share: where input comes from and where output goes; see
 * codec.h. */
#include "compress/codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fdio.h"

const char *const coding_names[CODING_COUNT] = { "br", "zstd", "gzip" };

const struct codec_ops *const codecs[CODING_COUNT] = {
    [CODING_BR] = &codec_brotli,
    [CODING_ZSTD] = &codec_zstd,
    [CODING_GZIP] = &codec_gzip,
};

int codec_sink_put(struct codec_sink *s, const void *p, size_t n)
{
    if (!n)
        return 0;
    if (s->total + n >= s->limit)
        return -EFBIG;
    if (s->fd >= 0) {
        int rc = fd_write_all(s->fd, p, n);
        if (rc < 0)
            return rc;
    } else {
        if (s->total + n > s->cap) {
            size_t nc = s->cap ? s->cap * 2 : 4096;
            while (nc < s->total + n)
                nc *= 2;
            char *m = realloc(s->mem, nc);
            if (!m)
                return -ENOMEM;
            s->mem = m;
            s->cap = nc;
        }
        memcpy(s->mem + s->total, p, n);
    }
    s->total += n;
    return 0;
}

int codec_source_next(struct codec_source *src, _Atomic bool *stop, const unsigned char **p,
                      size_t *n, bool *last)
{
    if (stop && atomic_load_explicit(stop, memory_order_relaxed))
        return -ECANCELED;
    uint64_t left = src->size - src->off;
    size_t want = left < CODEC_CHUNK ? (size_t)left : CODEC_CHUNK;
    if (src->mem) {
        *p = (const unsigned char *)src->mem + src->off;
    } else if (want) {
        ssize_t r;
        do
            r = pread(src->fd, src->buf, want, (off_t)src->off);
        while (r < 0 && errno == EINTR);
        if (r < 0)
            return -errno;
        if ((size_t)r != want)
            return -ESTALE;
        *p = (const unsigned char *)src->buf;
    } else {
        *p = (const unsigned char *)"";
    }
    *n = want;
    src->off += want;
    *last = src->off == src->size;
    return 0;
}

int codec_encode(enum coding enc, int level, struct codec_source *src, struct codec_sink *out,
                 _Atomic bool *stop)
{
    if ((unsigned)enc >= CODING_COUNT)
        return -EINVAL;
    return codecs[enc]->encode(src, out, level, stop);
}
