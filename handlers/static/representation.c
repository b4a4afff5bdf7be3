/* representation.c — which representation of a file a request gets: a precompressed sibling
 * (x.br, x.zst, x.gz), a variant compressed on the fly (variants.h), or the file itself, by the
 * client's Accept-Encoding; see static_file.h. */
#include "compress/accept_encoding.h"
#include "exchange/exchange.h"
#include "static/dict_variants.h"
#include "static/file_cache.h"
#include "static/static_file.h"
#include "static/variants.h"

/* Pick the representation: a variant the client accepts (a sibling the user made, else one
 * compressed on the fly), or the file. NULL when none is acceptable (406). */
struct fc_entry *static_representation(struct static_files *sf, struct exchange *ex,
                                      struct fc_entry *e, bool *otf)
{
    const struct http_request *req = ex->req;
    *otf = false;
    struct strview aeh = HTTP_KNOWN(req, H_ACCEPT_ENCODING);
    if (!aeh.ptr)
        return e;
    struct accept_enc ae;
    compress_accept_parse(aeh, &ae);
    /* A range request gets no on-the-fly variant but identity (as nginx does): the offsets a
     * client resumes from must not depend on whether compression finished. */
    bool ranged = HTTP_KNOWN(req, H_RANGE).ptr && req->method == HTTP_GET && ae.identity > 0;
    if (e->dict && !ranged && HTTP_KNOWN(req, H_AVAILABLE_DICTIONARY).ptr) {
        /* A client that offers a dictionary and dcz gets the smallest there is, once made;
         * until then (and for anything it offers that is not ours) the ordinary choice. A
         * request without Available-Dictionary (most) pays this one test. */
        struct fc_entry *d = dict_want(sf->cl, ex->rt, e, req, aeh);
        if (d) {
            *otf = true;
            return d;
        }
    }
    bool otf_ok = sf->cl && e->compressible && !ranged;
    struct fc_entry *avail[CODING_COUNT];
    /* Ties go to the better compression: br, zstd, gzip. `best`: among the available
     * representations; `want`: among those that could be, if this one is missing. */
    int best = -1, want = -1;
    for (int i = 0; i < CODING_COUNT; i++) {
        avail[i] = e->variant[i] ? e->variant[i] : otf_ok ? fc_otf(e, i) : NULL;
        if (ae.q[i] <= 0)
            continue;
        if (avail[i] && (best < 0 || ae.q[i] > ae.q[best]))
            best = i;
        if ((avail[i] || otf_ok) && (want < 0 || ae.q[i] > ae.q[want]))
            want = i;
    }
    if (want >= 0 && !avail[want] && ae.q[want] >= ae.identity) {
        /* Made in-line (small files), found in the cache directory, or queued: never waited
         * for. */
        struct fc_entry *v = otf_want(sf->cl, ex->rt, e, (enum coding)want);
        if (v) {
            avail[want] = v;
            best = want;
        }
    }
    if (best >= 0 && ae.q[best] >= ae.identity) {
        *otf = avail[best] != e->variant[best];
        return avail[best];
    }
    return ae.identity == 0 ? NULL : e; /* identity excluded, no acceptable coding: 406 */
}
