/* static_file.c — the static file handler: what a user of nginx or lighttpd expects.
 *
 * The exchange hands over the decoded, normalised path (no "..", so it cannot climb out), and the
 * open-file cache (file_cache.c) resolves it strictly beneath the location's root with
 * openat2(RESOLVE_BENEATH): a symlink can only lead out when `follow_symlinks any` says so.
 * Then, per RFC 9110: validators and conditional requests (304/412), byte ranges (206, 416,
 * multipart/byteranges), precompressed representations chosen by Accept-Encoding, directory
 * redirects with a relative Location, index files, directory listings (HTML and JSON), a
 * single-page-application fallback, Cache-Control/Expires and extra headers per location.
 * Hot files are answered from the cache: no open/fstat per request, and small files from
 * memory in one writev. Nothing here blocks on a peer.
 *
 * This file: the type's generations and instances, the answer to a request (by the entry the
 * cache gives), directory redirects, the SPA fallback and error pages. Beside it: the cache
 * (file_cache.c), representations (representation.c, variants.c), conditionals
 * (conditional.c), ranges (range.c), listings (listing.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/hex.h"
#include "compress/compress.h"
#include "compress/compress_conf.h"
#include "static/conditional.h"
#include "static/dict_variants.h"
#include "static/file_cache.h"
#include "static/headers.h"
#include "static/previous_root.h"
#include "static/range.h"
#include "static/static_conf.h"
#include "static/static_file.h"
#include "static/variants.h"
#include "exchange/handler.h"
#include "http/http_date.h"
#include "exchange/exchange.h"
#include "static/mime.h"
#include "http/path.h"
#include "conf/runtime.h"
#include "conf/site.h"

#define ALLOW_STATIC "Allow: GET, HEAD, OPTIONS\r\n"

/* The static handler's state per configuration generation: the MIME table and the open-file
 * cache built from it. */
struct static_generation {
    struct mime_table *mime;
    struct file_cache *fc;
};

static int static_error_page(struct exchange *ex, int status);

/* Does a location of `rt` compress streamed responses? */
static bool any_compress_dynamic(const struct runtime *rt)
{
    const struct site_set *ss = &rt->cfg.sites;
    for (unsigned i = 0; i < ss->nsites; i++) {
        const struct site *s = &ss->sites[i];
        for (unsigned j = 0; j <= s->nlocs; j++)
            if (compress_conf(j == 0 ? &s->base : &s->locs[j - 1])->dynamic == 1)
                return true;
    }
    return false;
}

static int static_generation_init(const struct handler_env *env, void **state, char *err,
                                  size_t errlen)
{
    struct runtime *rt = env->rt;
    struct static_generation *g = calloc(1, sizeof(*g));
    if (!g)
        return -1;
    *state = g;
    const struct static_top *st = static_top(&rt->cfg);
    g->mime = mime_table_load(st->mime_file[0] ? st->mime_file : NULL, err, errlen);
    if (!g->mime)
        return -1;
    g->fc = fc_create(st->file_cache_entries, st->file_cache_size, st->file_cache_valid,
                      g->mime);
    if (!g->fc) {
        snprintf(err, errlen, "lfhttpd: out of memory");
        return -1;
    }
    rt->serve_error_page = static_error_page; /* every location's error_page is a static file */
    rt->error_page_state = g;
    if (any_compress_dynamic(rt)) { /* its counters live with the compressor */
        if (!(rt->stream_filter_state = compress_process_start(env->process, err, errlen)))
            return -1;
        rt->stream_filter = &compress_stream_filter;
    }
    return 0;
}

static void static_generation_free(void *state)
{
    struct static_generation *g = state;
    if (g->fc)
        fc_destroy(g->fc);
    if (g->mime)
        mime_table_free(g->mime);
    free(g);
}

struct file_cache *static_file_cache(const void *generation)
{
    const struct static_generation *g = generation;
    return g ? g->fc : NULL;
}

static void *static_create(const struct handler_env *env, const struct loc_conf *lc, char *err,
                           size_t errlen)
{
    struct static_files *sf = calloc(1, sizeof(*sf));
    if (!sf) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    sf->lc = lc;
    sf->fc = ((struct static_generation *)env->generation)->fc;
    sf->cl = otf_create(env->process, sf->fc, lc, err, errlen);
    if (!sf->cl && err[0]) {
        free(sf);
        return NULL;
    }
    return sf;
}

static void static_destroy(void *inst)
{
    struct static_files *sf = inst;
    otf_destroy(sf->cl);
    free(sf);
}

/* ---- responses ------------------------------------------------------------------------------- */

static void release_entry(void *ref)
{
    fc_release(ref);
}

/* A whole compressed representation goes out: count it, and what it saved, by coding. */
static void count_sent(struct static_files *sf, const struct exchange *ex,
                       const struct fc_entry *e, const struct fc_entry *rep)
{
    uint64_t saved = ex->head_only || rep->st.st_size >= e->st.st_size
                         ? 0 : (uint64_t)(e->st.st_size - rep->st.st_size);
    compress_count_sent(sf->cl->cz, rep->sent_as, saved);
}

static int serve_file(struct static_files *sf, struct exchange *ex, struct fc_entry *e)
{
    const struct http_request *req = ex->req;
    const struct loc_conf *lc = ex->loc;
    bool rep_otf;
    struct fc_entry *rep = static_representation(sf, ex, e, &rep_otf);
    if (!rep) {
        ex->vary |= fc_vary_bits(e);
        return ex_error(ex, 406);
    }
    if (e->dict) /* this version is now a dictionary some client may offer */
        dict_note_served(sf->cl, ex->rt, e);

    int rc;
    if (conditional_answered(ex, e, rep, &rc))
        return rc;

    uint64_t size = (uint64_t)rep->st.st_size;
    struct range rg[RANGE_MAX];
    int nr = -1;
    struct strview range = HTTP_KNOWN(req, H_RANGE);
    if (range.ptr && req->method == HTTP_GET && !rep_otf) {
        struct strview ifr = HTTP_KNOWN(req, H_IF_RANGE);
        if (!ifr.ptr || if_range_holds(ifr, rep))
            nr = range_parse(range, size, rg);
    }

    char head[RESP_HEAD_MAX];
    struct response r;
    if (nr == 0) {
        resp_begin(&r, head, sizeof(head), 416, ex->date);
        char cr[48];
        int n = snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)size);
        RESP_HEADER(&r, "Content-Range", cr, (size_t)n);
        const char *vary = fc_vary_line(rep);
        if (vary)
            resp_add(&r, vary, strlen(vary));
        RESP_LIT(&r, "Content-Type: text/html; charset=utf-8\r\n");
        char page[256];
        size_t plen = http_error_page(416, page, sizeof(page));
        return ex_send(ex, &r, page, plen);
    }
    if (nr > 1)
        return range_send_multipart(ex, rep, rg, nr);

    uint64_t off = 0, len = size;
    if (nr == 1) {
        off = rg[0].first;
        len = rg[0].last - rg[0].first + 1;
        resp_begin(&r, head, sizeof(head), 206, ex->date);
        char cr[80];
        int n = snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)rg[0].first,
                         (unsigned long long)rg[0].last, (unsigned long long)size);
        RESP_HEADER(&r, "Content-Range", cr, (size_t)n);
        resp_add(&r, rep->headers, rep->headers_len);
    } else {
        /* The whole representation: its precomputed block already says Content-Length. */
        resp_begin(&r, head, sizeof(head), 200, ex->date);
        resp_add(&r, rep->headers, rep->headers_200_len);
        r.has_length = true;
        if (rep != e && sf->cl)
            count_sent(sf, ex, e, rep);
    }
    if (rep != e)
        ex->content_encoding = compress_sent_names[rep->sent_as];
    static_add_expires(&r, lc);
    if (rep->body)
        return ex_send(ex, &r, rep->body + off, (size_t)len);
    atomic_fetch_add_explicit(&rep->refs, 1, memory_order_relaxed); /* held by the connection */
    return ex_send_file_ref(ex, &r, rep->fd, (off_t)off, (size_t)len, release_entry, rep);
}

/* Append `path` percent-encoded for a Location header: unreserved characters, '/' and the
 * sub-delims that are safe in a path stay, everything else becomes %XX. */
static void resp_add_encoded_path(struct response *r, const char *path, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)path[i];
        if (hex_pct_keeps(c, "/!$&'()*+,;=:@")) {
            resp_add(r, (const char *)&path[i], 1);
        } else {
            char esc[3];
            hex_pct(c, esc);
            resp_add(r, esc, sizeof(esc));
        }
    }
}

/* 301 to `path` (`slash`: with a '/' appended) and the request's query. The Location is
 * relative (path and query only), so a server behind a proxy never leaks its own host and
 * port; it is built from the normalised path, so "//evil.example" can never become a
 * protocol-relative redirect. */
static int redirect_to(struct exchange *ex, const char *path, size_t len, bool slash)
{
    const struct http_request *req = ex->req;
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 301, ex->date);
    RESP_LIT(&r, "Location: ");
    resp_add_encoded_path(&r, path, len);
    if (slash)
        RESP_LIT(&r, "/");
    if (req->query.ptr) {
        RESP_LIT(&r, "?");
        resp_add(&r, req->query.ptr, req->query.len);
    }
    RESP_LIT(&r, "\r\nContent-Type: text/html; charset=utf-8\r\n");
    static_add_location_headers(&r, ex->loc);
    char page[256];
    size_t n = http_error_page(301, page, sizeof(page));
    return ex_send(ex, &r, page, n);
}

/* 301 to the directory URL with a trailing slash. */
static int redirect_to_dir(struct exchange *ex)
{
    return redirect_to(ex, ex->path, ex->path_len, true);
}

/* ---- the handler ----------------------------------------------------------------------------- */

static int answer_entry(struct static_files *sf, struct exchange *ex, struct fc_entry *e)
{
    switch (e->kind) {
    case FC_FILE:
        return serve_file(sf, ex, e);
    case FC_DIR_REDIRECT:
        return redirect_to_dir(ex);
    case FC_DIR:
        return static_conf(ex->loc)->listing ? static_list_directory(ex) : ex_error(ex, 403);
    case FC_OTHER:
        return ex_error(ex, 403);
    case FC_MISSING:
    default:
        return ex_error(ex, ex_status_for_errno(e->err));
    }
}

/* Single-page application: an unknown path a person navigates to gets the app's entry page,
 * which routes it in the browser; anything else (a script, a style, an image, a fetch) gets
 * 404, so that a deploy that removed an asset fails loudly instead of feeding HTML to a
 * <script>. Both answers depend on the request's fetch metadata, and say so. */
static int spa_fallback(struct static_files *sf, struct exchange *ex, const char *page)
{
    ex->vary |= EX_VARY_FETCH;
    if (!static_is_navigation(ex))
        return ex_error(ex, 404);
    struct fc_entry *e = fc_get(sf->fc, ex->loc, page, strlen(page));
    if (!e)
        return ex_error(ex, 503);
    int rc = e->kind == FC_FILE ? serve_file(sf, ex, e) : ex_error(ex, 404);
    fc_release(e);
    return rc;
}

static int static_handle(void *inst, struct exchange *ex)
{
    struct static_files *sf = inst;
    const struct http_request *req = ex->req;
    const struct loc_conf *lc = ex->loc;

    if (req->method == HTTP_OPTIONS) {
        char head[RESP_HEAD_MAX];
        struct response r;
        resp_begin(&r, head, sizeof(head), 204, ex->date);
        resp_add(&r, ALLOW_STATIC, sizeof(ALLOW_STATIC) - 1);
        static_add_location_headers(&r, lc);
        return ex_send(ex, &r, NULL, 0);
    }
    if (req->method != HTTP_GET && req->method != HTTP_HEAD)
        return ex_error(ex, 405);
    const struct static_conf *sc = static_conf(lc);
    if (!sc->hidden_files && !ex->path_plain && path_has_hidden_segment(ex->path, ex->path_len))
        return ex_error(ex, 404);

    struct static_route rt;
    struct fc_entry *e = static_route(sf, ex, &rt);
    if (!e && rt.to_len)
        return redirect_to(ex, rt.to, rt.to_len, rt.to_slash);
    if (!e)
        return ex_error(ex, 503);
    if (e->kind == FC_MISSING && lc->prev) /* root_grace: the previous tree's hashed asset */
        e = static_previous_root(sf->fc, ex, e);
    if (e->kind == FC_MISSING && ex_status_for_errno(e->err) == 404 && sc->spa_fallback[0] &&
        strcmp(ex->path, sc->spa_fallback)) {
        fc_release(e);
        return spa_fallback(sf, ex, sc->spa_fallback);
    }
    int rc = answer_entry(sf, ex, e);
    fc_release(e);
    return rc;
}

/* rt->serve_error_page: the location's own page for `status` (`error_page`), served from its root.
 * 0 when sent, -ENOENT when it has none (or the file is missing), or -errno. */
static int static_error_page(struct exchange *ex, int status)
{
    const struct loc_conf *lc = ex->loc;
    const struct static_conf *sc = static_conf(lc);
    for (int i = 0; i < sc->nerror_pages; i++) {
        if (sc->error_pages[i].status != status)
            continue;
        const char *p = sc->error_pages[i].path;
        struct fc_entry *e = fc_get(static_file_cache(ex->rt->error_page_state), lc, p, strlen(p));
        if (!e)
            return -ENOENT;
        if (e->kind != FC_FILE) {
            fc_release(e);
            return -ENOENT;
        }
        char head[RESP_HEAD_MAX];
        struct response r;
        resp_begin(&r, head, sizeof(head), status, ex->date);
        RESP_HEADER_STR(&r, "Content-Type", e->type);
        if (status == 405)
            resp_add(&r, ALLOW_STATIC, sizeof(ALLOW_STATIC) - 1);
        if (e->body) {
            int rc = ex_send(ex, &r, e->body, (size_t)e->st.st_size);
            fc_release(e);
            return rc;
        }
        return ex_send_file_ref(ex, &r, e->fd, 0, (size_t)e->st.st_size, release_entry, e);
    }
    return -ENOENT;
}

const struct handler_ops static_file_handler = {
    .name = "static",
    .generation_init = static_generation_init,
    .generation_free = static_generation_free,
    .release = compress_release, /* the compressor's threads; its jobs hold runtimes */
    .create = static_create,
    .handle = static_handle,
    .destroy = static_destroy,
    .stats = static_file_stats,
};
