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
 * memory in one writev. Nothing here blocks on a peer. */
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
#include "static/file_cache.h"
#include "exchange/handler.h"
#include "http/http_date.h"
#include "exchange/exchange.h"
#include "static/mime.h"
#include "http/path.h"
#include "conf/runtime.h"
#include "conf/site.h"

#define MAX_RANGES 16
#define ALLOW_STATIC "Allow: GET, HEAD, OPTIONS\r\n"

/* The static handler's state per configuration generation: the MIME table and the open-file
 * cache built from it. */
struct static_generation {
    struct mime_table *mime;
    struct file_cache *fc;
};

struct static_files {
    const struct loc_conf *lc;
    struct file_cache *fc;      /* its generation's */
    struct compress_loc *cl;    /* NULL: no compression on the fly here */
};

static int static_error_page(struct exchange *ex, int status);

/* Does a location of `rt` compress streamed responses? */
static bool any_compress_dynamic(const struct runtime *rt)
{
    const struct site_set *ss = &rt->cfg.sites;
    for (unsigned i = 0; i < ss->nsites; i++) {
        const struct site *s = &ss->sites[i];
        for (unsigned j = 0; j <= s->nlocs; j++)
            if ((j == 0 ? &s->base : &s->locs[j - 1])->compress_dynamic == 1)
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
    g->mime = mime_table_load(rt->cfg.mime_file[0] ? rt->cfg.mime_file : NULL, err, errlen);
    if (!g->mime)
        return -1;
    g->fc = fc_create(rt->cfg.file_cache_entries, rt->cfg.file_cache_size,
                      rt->cfg.file_cache_valid, g->mime);
    if (!g->fc) {
        snprintf(err, errlen, "lfhttpd: out of memory");
        return -1;
    }
    rt->error_page = static_error_page; /* every location's error_page is a static file */
    if (any_compress_dynamic(rt)) { /* its counters live with the compressor */
        if (!compress_process_start(env->process, err, errlen))
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

struct file_cache *static_file_cache(const struct runtime *rt)
{
    const struct static_generation *g = handler_generation_state(rt, &static_file_handler);
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
    sf->cl = compress_loc_create(env->process, sf->fc, lc, err, errlen);
    if (!sf->cl && err[0]) {
        free(sf);
        return NULL;
    }
    return sf;
}

static void static_destroy(void *inst)
{
    struct static_files *sf = inst;
    compress_loc_destroy(sf->cl);
    free(sf);
}

/* ---- header parsing helpers ------------------------------------------------------------------ */

/* Does the entity-tag list `hdr` match `etag`? Weak comparison ignores W/; strong comparison
 * never matches a weak tag. "*" matches any current representation. */
static bool etag_list_matches(struct strview hdr, const char *etag, size_t etag_len, bool weak)
{
    struct strview item;
    while (sv_list_next(&hdr, &item)) {
        if (item.len == 1 && item.ptr[0] == '*')
            return true;
        if (item.len > 2 && item.ptr[0] == 'W' && item.ptr[1] == '/') {
            if (!weak)
                continue;
            item.ptr += 2;
            item.len -= 2;
        }
        if (item.len == etag_len && !memcmp(item.ptr, etag, etag_len))
            return true;
    }
    return false;
}

struct range {
    uint64_t first, last; /* inclusive */
};

/* Parse a Range header against a representation of `size` bytes. Returns the number of
 * satisfiable ranges (sorted, overlapping and adjacent ones coalesced), 0 when none is
 * satisfiable (416), or -1 when the header is to be ignored (malformed, another unit, too many
 * ranges: RFC 9110 14.2 lets a server ignore Range). */
static int parse_ranges(struct strview hdr, uint64_t size, struct range *out)
{
    if (hdr.len < 6 || strncasecmp(hdr.ptr, "bytes=", 6))
        return -1;
    struct strview list = { hdr.ptr + 6, hdr.len - 6 };
    struct strview item;
    int n = 0, specs = 0;
    while (sv_list_next(&list, &item)) {
        if (++specs > MAX_RANGES)
            return -1;
        const char *dash = memchr(item.ptr, '-', item.len);
        if (!dash)
            return -1;
        struct strview a = sv_trim((struct strview){ item.ptr, (size_t)(dash - item.ptr) });
        struct strview b = sv_trim((struct strview){ dash + 1, (size_t)(item.ptr + item.len - dash - 1) });
        uint64_t first = 0, last = 0;
        bool has_a = a.len > 0, has_b = b.len > 0;
        if (!has_a && !has_b)
            return -1;
        for (size_t i = 0; i < a.len; i++) {
            if (a.ptr[i] < '0' || a.ptr[i] > '9' || first > (UINT64_MAX - 9) / 10)
                return -1;
            first = first * 10 + (uint64_t)(a.ptr[i] - '0');
        }
        for (size_t i = 0; i < b.len; i++) {
            if (b.ptr[i] < '0' || b.ptr[i] > '9' || last > (UINT64_MAX - 9) / 10)
                return -1;
            last = last * 10 + (uint64_t)(b.ptr[i] - '0');
        }
        if (!has_a) { /* suffix: the last `last` bytes */
            if (last == 0 || size == 0)
                continue;
            first = last >= size ? 0 : size - last;
            last = size - 1;
        } else {
            if (has_b && last < first)
                return -1; /* invalid spec: ignore the whole header */
            if (first >= size)
                continue;  /* unsatisfiable spec */
            if (!has_b || last >= size)
                last = size - 1;
        }
        out[n++] = (struct range){ first, last };
    }
    if (specs == 0)
        return -1;
    /* Coalesce overlapping or adjacent ranges into the earliest of them; the others keep the
     * order in which they were requested (as RFC 7233 4.1 asked of multipart responses). */
    int m = 0;
    for (int i = 0; i < n; i++) {
        struct range r = out[i];
        bool merged;
        do {
            merged = false;
            for (int j = 0; j < m; j++) {
                if (r.first <= out[j].last + 1 && out[j].first <= r.last + 1) {
                    r.first = r.first < out[j].first ? r.first : out[j].first;
                    r.last = r.last > out[j].last ? r.last : out[j].last;
                    for (int k = j; k < m - 1; k++) /* absorbed: r takes its place below */
                        out[k] = out[k + 1];
                    m--;
                    merged = true;
                    break;
                }
            }
        } while (merged);
        out[m++] = r;
    }
    return m;
}

/* Does If-Range (an entity-tag or an HTTP-date) still hold for `e`? (RFC 9110 13.1.5) */
static bool if_range_holds(struct strview v, const struct fc_entry *e)
{
    if (v.len && v.ptr[0] == '"')
        return v.len == e->etag_len && !memcmp(v.ptr, e->etag, v.len); /* strong comparison */
    if (v.len > 2 && v.ptr[0] == 'W' && v.ptr[1] == '/')
        return false;
    time_t t;
    return http_date_parse(v.ptr, v.len, &t) == 0 && t == e->st.st_mtim.tv_sec;
}

/* ---- responses ------------------------------------------------------------------------------- */

static void release_entry(void *ref)
{
    fc_release(ref);
}

/* Per-request headers: Expires (relative to now). */
static void add_expires(struct response *r, const struct loc_conf *lc)
{
    if (lc->expires >= 0) {
        char d[32];
        http_date_format(time(NULL) + lc->expires, d);
        RESP_HEADER(r, "Expires", d, 29);
    }
}

/* Location headers (add_header, Cache-Control) for answers not built from a cache entry. */
static void add_location_headers(struct response *r, const struct loc_conf *lc)
{
    if (lc->cache_control[0])
        RESP_HEADER_STR(r, "Cache-Control", lc->cache_control);
    for (int i = 0; i < lc->nheaders; i++)
        resp_header(r, lc->headers[i].name, lc->headers[i].name_len, lc->headers[i].value,
                    lc->headers[i].value_len);
}

/* 304: the validators and caching headers of the 200 it stands for, no body. */
static int send_not_modified(struct exchange *ex, const struct fc_entry *e)
{
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 304, ex->date);
    if (ex->loc->etag)
        RESP_HEADER(&r, "ETag", e->etag, e->etag_len);
    RESP_HEADER(&r, "Last-Modified", e->last_modified, 29);
    if (e->vary)
        RESP_LIT(&r, "Vary: Accept-Encoding\r\n");
    add_location_headers(&r, ex->loc);
    add_expires(&r, ex->loc);
    return ex_send(ex, &r, NULL, 0);
}

/* Write a multipart/byteranges body (RFC 9110 14.6) into an anonymous file and send it. */
static int send_multipart(struct exchange *ex, struct fc_entry *e, const struct range *rg,
                          int n)
{
    char boundary[40];
    snprintf(boundary, sizeof(boundary), "lfhttpd-%016llx",
             (unsigned long long)((uint64_t)(uintptr_t)e ^ (uint64_t)time(NULL) ^
                                  (uint64_t)e->st.st_ino << 17));
    int fd = memfd_create("lfhttpd-multipart", MFD_CLOEXEC);
    if (fd < 0)
        return ex_error(ex, 503);
    uint64_t size = (uint64_t)e->st.st_size;
    for (int i = 0; i < n; i++) {
        char part[512];
        int hl = snprintf(part, sizeof(part),
                          "\r\n--%s\r\nContent-Type: %s\r\nContent-Range: bytes %llu-%llu/%llu\r\n\r\n",
                          boundary, e->type, (unsigned long long)rg[i].first,
                          (unsigned long long)rg[i].last, (unsigned long long)size);
        if (write(fd, part, (size_t)hl) != hl)
            goto fail;
        uint64_t left = rg[i].last - rg[i].first + 1;
        off_t off = (off_t)rg[i].first;
        while (left) {
            ssize_t c;
            if (e->body) {
                c = write(fd, e->body + off, left);
            } else {
                c = copy_file_range(e->fd, &off, fd, NULL, left, 0);
                if (c < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS)) {
                    char buf[16384];
                    ssize_t rd = pread(e->fd, buf, left < sizeof(buf) ? left : sizeof(buf), off);
                    c = rd > 0 ? write(fd, buf, (size_t)rd) : -1;
                    if (c > 0)
                        off += c;
                }
            }
            if (c <= 0)
                goto fail;
            if (e->body)
                off += c;
            left -= (uint64_t)c;
        }
    }
    char tail[64];
    int tl = snprintf(tail, sizeof(tail), "\r\n--%s--\r\n", boundary);
    if (write(fd, tail, (size_t)tl) != tl)
        goto fail;
    off_t total = lseek(fd, 0, SEEK_CUR);

    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 206, ex->date);
    RESP_LIT(&r, "Content-Type: multipart/byteranges; boundary=");
    resp_add(&r, boundary, strlen(boundary));
    RESP_LIT(&r, "\r\n");
    /* The entry's header block starts with its Content-Type line: skip that line. */
    const char *rest = memmem(e->headers, e->headers_len, "\r\n", 2);
    resp_add(&r, rest + 2, e->headers_len - (size_t)(rest + 2 - e->headers));
    add_expires(&r, ex->loc);
    return ex_send_file(ex, &r, fd, 0, (size_t)total);
fail:
    close(fd);
    return ex_error(ex, 500);
}

/* Answer GET/HEAD for a regular file (conditionals, ranges, precompressed and on-the-fly
 * variants). */
/* Pick the representation: a variant the client accepts (a sibling the user made, else one
 * compressed on the fly), or the file. NULL when none is acceptable (406). */
static struct fc_entry *pick_representation(struct static_files *sf, struct exchange *ex,
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
    bool otf_ok = sf->cl && e->compressible && !ranged;
    struct fc_entry *avail[FC_NENC];
    /* Ties go to the better compression: br, zstd, gzip. `best`: among the available
     * representations; `want`: among those that could be, if this one is missing. */
    int best = -1, want = -1;
    for (int i = 0; i < FC_NENC; i++) {
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
        struct fc_entry *v = compress_want(sf->cl, ex->rt, e, (enum fc_encoding)want);
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

static int serve_file(struct static_files *sf, struct exchange *ex, struct fc_entry *e)
{
    const struct http_request *req = ex->req;
    const struct loc_conf *lc = ex->loc;
    bool rep_otf;
    struct fc_entry *rep = pick_representation(sf, ex, e, &rep_otf);
    if (!rep)
        return ex_error(ex, 406);

    /* Preconditions, in RFC 9110 13.2.2 order. */
    struct strview im = HTTP_KNOWN(req, H_IF_MATCH);
    struct strview inm = HTTP_KNOWN(req, H_IF_NONE_MATCH);
    time_t t;
    if (im.ptr) {
        if (!etag_list_matches(im, rep->etag, rep->etag_len, false))
            return ex_error(ex, 412);
    } else {
        struct strview ius = HTTP_KNOWN(req, H_IF_UNMODIFIED_SINCE);
        if (ius.ptr && http_date_parse(ius.ptr, ius.len, &t) == 0 && rep->st.st_mtim.tv_sec > t)
            return ex_error(ex, 412);
    }
    if (inm.ptr) {
        if (etag_list_matches(inm, rep->etag, rep->etag_len, true))
            return send_not_modified(ex, rep);
    } else {
        struct strview ims = HTTP_KNOWN(req, H_IF_MODIFIED_SINCE);
        if (ims.ptr && http_date_parse(ims.ptr, ims.len, &t) == 0 && rep->st.st_mtim.tv_sec <= t)
            return send_not_modified(ex, rep);
    }

    uint64_t size = (uint64_t)rep->st.st_size;
    struct range rg[MAX_RANGES];
    int nr = -1;
    struct strview range = HTTP_KNOWN(req, H_RANGE);
    if (range.ptr && req->method == HTTP_GET && !rep_otf) {
        struct strview ifr = HTTP_KNOWN(req, H_IF_RANGE);
        if (!ifr.ptr || if_range_holds(ifr, rep))
            nr = parse_ranges(range, size, rg);
    }

    char head[RESP_HEAD_MAX];
    struct response r;
    if (nr == 0) {
        resp_begin(&r, head, sizeof(head), 416, ex->date);
        char cr[48];
        int n = snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)size);
        RESP_HEADER(&r, "Content-Range", cr, (size_t)n);
        if (rep->vary)
            RESP_LIT(&r, "Vary: Accept-Encoding\r\n");
        RESP_LIT(&r, "Content-Type: text/html; charset=utf-8\r\n");
        char page[256];
        size_t plen = http_error_page(416, page, sizeof(page));
        return ex_send(ex, &r, page, plen);
    }
    if (nr > 1)
        return send_multipart(ex, rep, rg, nr);

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
    }
    add_expires(&r, lc);
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
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~/!$&'()*+,;=:@", c)) {
            resp_add(r, (const char *)&path[i], 1);
        } else {
            char esc[3] = { '%', hex_upper(c >> 4), hex_upper(c) };
            resp_add(r, esc, 3);
        }
    }
}

/* 301 to the directory URL with a trailing slash. The Location is relative (path and query
 * only), so a server behind a proxy never leaks its own host and port; it is built from the
 * normalised path, so "//evil.example" can never become a protocol-relative redirect. */
static int redirect_to_dir(struct exchange *ex)
{
    const struct http_request *req = ex->req;
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 301, ex->date);
    RESP_LIT(&r, "Location: ");
    resp_add_encoded_path(&r, ex->path, ex->path_len);
    RESP_LIT(&r, "/");
    if (req->query.ptr) {
        RESP_LIT(&r, "?");
        resp_add(&r, req->query.ptr, req->query.len);
    }
    RESP_LIT(&r, "\r\nContent-Type: text/html; charset=utf-8\r\n");
    add_location_headers(&r, ex->loc);
    char page[256];
    size_t n = http_error_page(301, page, sizeof(page));
    return ex_send(ex, &r, page, n);
}

/* ---- directory listings ---------------------------------------------------------------------- */

struct dirent_info {
    char *name;
    bool dir;
    off_t size;
    time_t mtime;
};

/* qsort has no context argument: the sort order of the listing being built on this thread. */
static _Thread_local int tl_sort_key, tl_sort_desc;

static int cmp_entries(const void *a, const void *b)
{
    const struct dirent_info *x = a, *y = b;
    int c;
    if (x->dir != y->dir)
        return x->dir ? -1 : 1; /* directories first */
    if (tl_sort_key == 1)
        c = x->size < y->size ? -1 : x->size > y->size;
    else if (tl_sort_key == 2)
        c = x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
    else
        c = 0;
    if (c == 0)
        c = strcmp(x->name, y->name);
    return tl_sort_desc ? -c : c;
}

/* Write `s` HTML-escaped. */
static void html_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Write `s` percent-encoded for use as a relative URL path segment inside an HTML attribute:
 * only unreserved characters stay, so nothing in the result needs HTML escaping. */
static void url_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c))
            fputc(c, f);
        else
            fprintf(f, "%%%02X", c);
    }
}

static void json_escape(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void human_size(char *out, size_t cap, off_t size)
{
    static const char units[] = "BKMGTP";
    double v = (double)size;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, cap, "%lld B", (long long)size);
    else
        snprintf(out, cap, "%.1f %ciB", v, units[u]);
}

/* The entries of directory `d` (dot-files only when the location shows hidden files), or NULL
 * when out of memory (a listing that leaves entries out would be a lie: 503 instead). */
static struct dirent_info *read_entries(DIR *d, const struct loc_conf *lc, size_t *count)
{
    size_t n = 0, cap = 64;
    struct dirent_info *ents = malloc(cap * sizeof(*ents));
    bool short_of_memory = !ents;
    struct dirent *de;
    while (!short_of_memory && (de = readdir(d))) {
        if (de->d_name[0] == '.' && (!lc->hidden_files || !strcmp(de->d_name, ".") ||
                                     !strcmp(de->d_name, "..")))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, 0) < 0)
            continue; /* dangling symlink or vanished */
        if (n == cap) {
            struct dirent_info *ne = realloc(ents, (cap *= 2) * sizeof(*ents));
            if (!ne) {
                short_of_memory = true;
                break;
            }
            ents = ne;
        }
        ents[n++] = (struct dirent_info){ strdup(de->d_name), S_ISDIR(st.st_mode), st.st_size,
                                          st.st_mtim.tv_sec };
        if (!ents[n - 1].name) {
            n--;
            short_of_memory = true;
        }
    }
    if (short_of_memory) {
        for (size_t i = 0; i < n; i++)
            free(ents[i].name);
        free(ents);
        ents = NULL;
        n = 0;
    }
    *count = n;
    return ents;
}

static void listing_json(FILE *f, const struct dirent_info *ents, size_t n)
{
    fputs("[", f);
    for (size_t i = 0; i < n; i++) {
        char date[32];
        http_date_format(ents[i].mtime, date);
        fputs(i ? ",\n {\"name\":" : "\n {\"name\":", f);
        json_escape(f, ents[i].name);
        fprintf(f, ",\"type\":\"%s\",\"size\":%lld,\"mtime\":\"%s\"}",
                ents[i].dir ? "directory" : "file", (long long)ents[i].size, date);
    }
    fputs("\n]\n", f);
}

static void listing_html(FILE *f, const char *path, size_t path_len,
                         const struct dirent_info *ents, size_t n)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
          "<title>Index of ", f);
    html_escape(f, path);
    fputs("</title><style>body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:"
          "60rem;padding:1rem}table{width:100%;border-collapse:collapse}th,td{text-align:"
          "left;padding:.35rem .5rem;border-bottom:1px solid #ddd}td.s,th.s{text-align:right;"
          "white-space:nowrap}a{text-decoration:none}@media(max-width:40rem){td.m,th.m"
          "{display:none}}@media(prefers-color-scheme:dark){body{background:#111;color:#ddd}"
          "a{color:#8bf}th,td{border-color:#333}}</style></head>\n<body><h1>Index of ", f);
    html_escape(f, path);
    fputs("</h1>\n<table><thead><tr><th><a href=\"?sort=name\">Name</a></th>"
          "<th class=\"s\"><a href=\"?sort=size&amp;order=desc\">Size</a></th>"
          "<th class=\"m\"><a href=\"?sort=mtime&amp;order=desc\">Modified</a></th></tr>"
          "</thead><tbody>\n", f);
    if (path_len > 1)
        fputs("<tr><td><a href=\"../\">../</a></td><td class=\"s\">-</td>"
              "<td class=\"m\"></td></tr>\n", f);
    for (size_t i = 0; i < n; i++) {
        char date[32], sz[32];
        http_date_format(ents[i].mtime, date);
        human_size(sz, sizeof(sz), ents[i].size);
        fputs("<tr><td><a href=\"./", f);
        url_escape(f, ents[i].name);
        fputs(ents[i].dir ? "/\">" : "\">", f);
        html_escape(f, ents[i].name);
        fprintf(f, "%s</a></td><td class=\"s\">%s</td><td class=\"m\">%s</td></tr>\n",
                ents[i].dir ? "/" : "", ents[i].dir ? "-" : sz, date);
    }
    fputs("</tbody></table></body></html>\n", f);
}

/* The listing into an anonymous file: its descriptor (at its end), or -1. */
static int write_listing(const struct exchange *ex, bool json, const struct dirent_info *ents,
                         size_t n)
{
    int fd = memfd_create("lfhttpd-listing", MFD_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (json)
        listing_json(f, ents, n);
    else
        listing_html(f, ex->path, ex->path_len, ents, n);
    /* stdio allocates its buffer on the first write: a listing it could not write is not
     * sent half-written. */
    bool written = fflush(f) == 0 && !ferror(f);
    int out = written ? dup(fd) : -1;
    fclose(f);
    return out;
}

/* An HTML (or JSON, for Accept: application/json) listing of the directory ex->path, written
 * into an anonymous file and sent from it. Not a hot path: allocation is fine here. */
static int list_directory(struct exchange *ex)
{
    const struct loc_conf *lc = ex->loc;
    const struct http_request *req = ex->req;
    const char *rel = ex->path_len > 1 ? ex->path + 1 : ".";
    int dfd = fc_open_beneath(lc->root_fd, rel, lc->symlinks, O_DIRECTORY);
    if (dfd < 0)
        return ex_error(ex, dfd == -ENOENT ? 404 : 403);
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return ex_error(ex, 500);
    }
    size_t n;
    struct dirent_info *ents = read_entries(d, lc, &n);
    closedir(d);
    if (!ents)
        return ex_error(ex, 503);

    /* ?sort=name|size|mtime&order=asc|desc */
    tl_sort_key = 0;
    tl_sort_desc = 0;
    struct strview q = req->query;
    if (q.ptr) {
        if (memmem(q.ptr, q.len, "sort=size", 9))
            tl_sort_key = 1;
        else if (memmem(q.ptr, q.len, "sort=mtime", 10))
            tl_sort_key = 2;
        tl_sort_desc = memmem(q.ptr, q.len, "order=desc", 10) != NULL;
    }
    qsort(ents, n, sizeof(*ents), cmp_entries);
    struct strview accept = HTTP_KNOWN(req, H_ACCEPT);
    bool json = accept.ptr && memmem(accept.ptr, accept.len, "application/json", 16);
    int out = write_listing(ex, json, ents, n);
    for (size_t i = 0; i < n; i++)
        free(ents[i].name);
    free(ents);
    if (out < 0)
        return ex_error(ex, 503);
    off_t total = lseek(out, 0, SEEK_END);

    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 200, ex->date);
    if (json)
        RESP_LIT(&r, "Content-Type: application/json\r\n");
    else
        RESP_LIT(&r, "Content-Type: text/html; charset=utf-8\r\n");
    RESP_LIT(&r, "Vary: Accept\r\n");
    add_location_headers(&r, lc);
    return ex_send_file(ex, &r, out, 0, (size_t)total);
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
        return ex->loc->listing ? list_directory(ex) : ex_error(ex, 403);
    case FC_OTHER:
        return ex_error(ex, 403);
    case FC_MISSING:
    default:
        return ex_error(ex, ex_status_for_errno(e->err));
    }
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
        add_location_headers(&r, lc);
        return ex_send(ex, &r, NULL, 0);
    }
    if (req->method != HTTP_GET && req->method != HTTP_HEAD)
        return ex_error(ex, 405);
    if (!lc->hidden_files && !ex->path_plain && path_has_hidden_segment(ex->path, ex->path_len))
        return ex_error(ex, 404);

    struct fc_entry *e = fc_get(sf->fc, lc, ex->path, ex->path_len);
    if (!e)
        return ex_error(ex, 503);
    if (e->kind == FC_MISSING && ex_status_for_errno(e->err) == 404 && lc->spa_fallback[0] &&
        strcmp(ex->path, lc->spa_fallback)) {
        /* Single-page application: unknown paths get the app's entry page. */
        fc_release(e);
        e = fc_get(sf->fc, lc, lc->spa_fallback, strlen(lc->spa_fallback));
        if (!e)
            return ex_error(ex, 503);
        if (e->kind != FC_FILE) {
            fc_release(e);
            return ex_error(ex, 404);
        }
    }
    int rc = answer_entry(sf, ex, e);
    fc_release(e);
    return rc;
}

/* rt->error_page: the location's own page for `status` (`error_page`), served from its root.
 * 0 when sent, -ENOENT when it has none (or the file is missing), or -errno. */
static int static_error_page(struct exchange *ex, int status)
{
    const struct loc_conf *lc = ex->loc;
    for (int i = 0; i < lc->nerror_pages; i++) {
        if (lc->error_pages[i].status != status)
            continue;
        const char *p = lc->error_pages[i].path;
        struct fc_entry *e = fc_get(static_file_cache(ex->rt), lc, p, strlen(p));
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
};
