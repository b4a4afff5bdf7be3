/* compress_stream.c — compression of streamed responses (`compress_dynamic on`): a filter of the
 * exchange's stream (exchange.h: struct ex_filter_ops) that gzip- or zstd-compresses what a
 * handler writes with ex_stream_write(), CGI output and the test endpoints' streams alike.
 *
 * Unlike a static file's variants (static/variants.c), a dynamic body is compressed per
 * request, on the thread that writes it, as it is written: each piece is compressed and
 * flushed at once (Z_SYNC_FLUSH, ZSTD_e_flush; the codecs' stream_run), so a client sees a
 * slow stream's bytes as they come, and nothing of the body is kept once it is sent. The cost
 * is bounded per response and for the process:
 *   - memory: one compression context per response, with a 32 KiB window (gzip level 1, as
 *     nginx's gzip_comp_level; zstd level 1): 262 KiB for gzip, 305 KiB for zstd (measured
 *     with the libraries' allocators, docs/ARCHITECTURE.md), and no buffer of the body;
 *   - count: at most compress_dynamic_max responses are compressed at once; the rest go out
 *     identity (counted), so a burst cannot make the server hold more than that many contexts;
 *   - output: a piece of EX_STREAM_MAX bytes compresses into at most EX_FILTER_OUT bytes (the
 *     codings' bound for incompressible input), so one piece in gives one piece out.
 *
 * What is compressed: a 200, 403 or 404 (as nginx's gzip) whose Content-Type matches the
 * location's compress_types, that has no Content-Encoding of its own and is not known to be
 * shorter than compress_min_size, for a client whose Accept-Encoding takes zstd or gzip (zstd
 * first on a tie; Brotli's streaming contexts cost several times more, so dynamic responses are
 * never Brotli). Every such response carries `Vary: Accept-Encoding`, compressed or not; a
 * strong ETag of a compressed one is made weak (the bytes differ from the identity's). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "compress/accept_encoding.h"
#include "compress/codec.h"
#include "compress/compress.h"
#include "compress/compress_conf.h"
#include "exchange/exchange.h"
#include "conf/runtime.h"
#include "conf/site.h"

/* offer: bit 0 — the response may be compressed here (Vary); bits 1-2 — the coding + 1. */
#define OFFER_HERE 1u
#define OFFER_CODING(o) ((int)((o) >> 1) - 1)

struct cstream {
    struct compress_streams *st;
    enum coding enc;          /* CODING_ZSTD or CODING_GZIP */
    const struct codec_ops *codec;
    _Alignas(max_align_t) unsigned char ctx[CODEC_STREAM_CTX]; /* the codec's (codec.h) */
};

static struct compress_streams *streams(const struct exchange *ex)
{
    return compress_streams_of(ex->rt->stream_filter_state); /* the compressor (runtime.h) */
}

static unsigned offer(const struct exchange *ex)
{
    if (!ex->loc || compress_conf(ex->loc)->dynamic != 1 || !streams(ex))
        return 0;
    struct accept_enc ae;
    compress_accept_parse(HTTP_KNOWN(ex->req, H_ACCEPT_ENCODING), &ae);
    int best = -1;
    static const enum coding order[] = { CODING_ZSTD, CODING_GZIP }; /* preference on a tie */
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        int q = ae.q[order[i]];
        if (q > 0 && q >= ae.identity && (best < 0 || q > ae.q[best]))
            best = (int)order[i];
    }
    return OFFER_HERE | (unsigned)(best + 1) << 1;
}

/* ---- the head ------------------------------------------------------------------------------- */

struct head_fields {
    struct strview type, encoding;
    size_t etag_at;                /* offset of a strong ETag's opening quote, or 0 */
    bool vary_ae;                  /* a Vary field already names Accept-Encoding (or *) */
};

/* Find the fields the decision needs in the head built so far (the status line, then fields
 * each ending in CRLF). */
static void scan_head(const struct response *r, struct head_fields *h)
{
    memset(h, 0, sizeof(*h));
    const char *p = r->buf, *end = r->buf + r->len;
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    while (eol && (p = eol + 1) < end) {
        eol = memchr(p, '\n', (size_t)(end - p));
        const char *colon = memchr(p, ':', (size_t)((eol ? eol : end) - p));
        if (!colon)
            continue;
        struct strview name = { p, (size_t)(colon - p) };
        struct strview value = sv_trim((struct strview){ colon + 1,
                                                         (size_t)((eol ? eol : end) - colon - 1) });
        if (value.len && value.ptr[value.len - 1] == '\r')
            value = sv_trim((struct strview){ value.ptr, value.len - 1 });
        if (SV_CASE_EQ(name, "content-type"))
            h->type = value;
        else if (SV_CASE_EQ(name, "content-encoding"))
            h->encoding = value;
        else if (SV_CASE_EQ(name, "etag") && value.len && value.ptr[0] == '"')
            h->etag_at = (size_t)(value.ptr - r->buf);
        else if (SV_CASE_EQ(name, "vary"))
            h->vary_ae |= sv_list_has_token(value, "accept-encoding", 15) ||
                          sv_list_has_token(value, "*", 1);
    }
}

/* The body is compressed: say so, and make a strong validator weak. */
static void mark_compressed(struct response *r, const struct head_fields *h, enum coding enc)
{
    if (h->etag_at) {
        if (r->len + 2 > r->cap) {
            r->overflow = true;
            return;
        }
        memmove(r->buf + h->etag_at + 2, r->buf + h->etag_at, r->len - h->etag_at);
        memcpy(r->buf + h->etag_at, "W/", 2);
        r->len += 2;
    }
    RESP_HEADER_STR(r, "Content-Encoding", coding_names[enc]);
}

/* ---- the contexts --------------------------------------------------------------------------- */

static struct cstream *cstream_new(enum coding enc)
{
    struct cstream *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return NULL;
    cs->enc = enc;
    cs->codec = codecs[enc];
    if (cs->codec->stream_init && cs->codec->stream_init(cs->ctx) == 0)
        return cs;
    free(cs);
    return NULL;
}

static int begin(const struct exchange *ex, unsigned off, struct response *r, int64_t length,
                 void **state)
{
    const struct loc_conf *lc = ex->loc;
    if ((r->status != 200 && r->status != 403 && r->status != 404) || r->has_length ||
        (length >= 0 && (length == 0 || length < compress_conf(lc)->min_size)))
        return 0;
    struct head_fields h;
    scan_head(r, &h);
    if (!h.type.ptr || h.encoding.ptr || !compress_type_ok(lc, h.type.ptr, h.type.len))
        return 0;
    if (!h.vary_ae)
        RESP_LIT(r, "Vary: Accept-Encoding\r\n");
    int enc = OFFER_CODING(off);
    if (enc < 0)
        return 0;
    if (ex->head_only) { /* the head a GET would get; no body to compress */
        mark_compressed(r, &h, (enum coding)enc);
        *state = NULL;
        return 1;
    }
    struct compress_streams *st = streams(ex);
    if (atomic_fetch_add_explicit(&st->active, 1, memory_order_relaxed) >=
        compress_top(&ex->rt->cfg)->dynamic_max) {
        atomic_fetch_sub_explicit(&st->active, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&st->busy, 1, memory_order_relaxed);
        return 0; /* enough contexts held already: this one goes out identity */
    }
    struct cstream *cs = cstream_new((enum coding)enc);
    if (!cs) {
        atomic_fetch_sub_explicit(&st->active, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&st->failed, 1, memory_order_relaxed);
        return 0; /* out of memory: identity still works */
    }
    cs->st = st;
    atomic_fetch_add_explicit(&st->made[enc], 1, memory_order_relaxed);
    mark_compressed(r, &h, (enum coding)enc);
    *state = cs;
    return 1;
}

static ssize_t run(void *state, const void *in, size_t len, bool last, char *out, size_t cap)
{
    struct cstream *cs = state;
    ssize_t n = cs->codec->stream_run(cs->ctx, in, len, last, out, cap);
    if (n < 0) {
        atomic_fetch_add_explicit(&cs->st->failed, 1, memory_order_relaxed);
        return -EIO;
    }
    atomic_fetch_add_explicit(&cs->st->bytes_in, len, memory_order_relaxed);
    atomic_fetch_add_explicit(&cs->st->bytes_out, (uint64_t)n, memory_order_relaxed);
    return n;
}

static void cstream_free(void *state)
{
    struct cstream *cs = state;
    cs->codec->stream_end(cs->ctx);
    atomic_fetch_sub_explicit(&cs->st->active, 1, memory_order_relaxed);
    free(cs);
}

const struct ex_filter_ops compress_stream_filter = {
    .offer = offer,
    .begin = begin,
    .run = run,
    .free = cstream_free,
};
