/* clean_urls.c — clean URLs and the trailing-slash policy: what a request path resolves to,
 * and which of its URLs is the canonical one; and which requests are navigations.
 *
 * With clean_urls on, a path also finds PATH.html and PATH/index.html (GitHub Pages, Netlify,
 * Cloudflare Pages): nginx's `try_files $uri $uri.html $uri/index.html`. trailing_slash then
 * says which URL of a page is canonical, and the other one answers 301 to it:
 *
 *   request   the site has        keep (default)   add             remove
 *   /about    about.html          about.html       301 /about/     about.html
 *   /about    about/index.html    301 /about/      301 /about/     about/index.html
 *   /about/   about.html          404              about.html      301 /about
 *   /about/   about/index.html    about/index.html about/index.html 301 /about
 *
 * `keep` answers /about/ with 404 when only about.html exists: its relative links would
 * resolve below /about/. A path naming a file as it is (/app.js) is never moved; with
 * clean_urls redirect, /about.html and /about/index.html answer 301 to their clean URL when
 * that URL leads to the same file. Every lookup goes through the open-file cache, misses
 * included, so a hot clean URL costs no system call. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "static/file_cache.h"
#include "static/static_conf.h"
#include "static/static_file.h"

#define HTML_EXT ".html"
#define HTML_EXT_LEN (sizeof(HTML_EXT) - 1)
#define INDEX_HTML "/index.html"
#define INDEX_HTML_LEN (sizeof(INDEX_HTML) - 1)

static bool is_file(const struct fc_entry *e)
{
    return e && e->kind == FC_FILE;
}

/* Nothing there: not a failure that says something about the path (EACCES, ELOOP...). */
static bool absent(const struct fc_entry *e)
{
    return e->kind == FC_MISSING && (e->err == ENOENT || e->err == ENOTDIR);
}

static bool ends_with(const char *p, size_t n, const char *s, size_t sn)
{
    return n >= sn && !memcmp(p + n - sn, s, sn);
}

/* The entry of p[0..n) followed by `suffix`, or NULL (out of memory, or too long). */
static struct fc_entry *lookup(struct static_files *sf, const struct exchange *ex,
                               const char *p, size_t n, const char *suffix)
{
    char buf[EX_PATH_MAX + 16];
    size_t sn = strlen(suffix);
    if (n + sn >= sizeof(buf))
        return NULL;
    memcpy(buf, p, n);
    memcpy(buf + n, suffix, sn + 1);
    return fc_get(sf->fc, ex->loc, buf, n + sn);
}

/* Give up `e` (and `other`, may be NULL) for a redirect to p[0..n) (and a '/'). */
static struct fc_entry *redirect(struct static_route *rt, struct fc_entry *e,
                                 struct fc_entry *other, const char *p, size_t n, bool slash)
{
    fc_release(e);
    fc_release(other);
    memcpy(rt->to, p, n);
    rt->to_len = n;
    rt->to_slash = slash;
    return NULL;
}

/* clean_urls redirect: /x.html and /x/index.html move to /x (or /x/) when that URL leads to
 * this very file. */
static struct fc_entry *route_html(struct static_files *sf, struct exchange *ex,
                                   struct fc_entry *e, struct static_route *rt, int slash)
{
    const char *p = ex->path;
    size_t n = ex->path_len;
    if (ends_with(p, n, INDEX_HTML, INDEX_HTML_LEN)) {
        size_t dir = n - INDEX_HTML_LEN + 1; /* "/x/" */
        struct fc_entry *d = lookup(sf, ex, p, dir, "");
        bool same = is_file(d) && d->st.st_ino == e->st.st_ino && d->st.st_dev == e->st.st_dev;
        fc_release(d);
        if (!same)
            return e;
        bool drop = slash == SLASH_REMOVE && dir > 1;
        return redirect(rt, e, NULL, p, drop ? dir - 1 : dir, false);
    }
    if (n <= HTML_EXT_LEN + 1 || !ends_with(p, n, HTML_EXT, HTML_EXT_LEN))
        return e;
    size_t clean = n - HTML_EXT_LEN;
    struct fc_entry *c = lookup(sf, ex, p, clean, "");
    bool free_url = c && absent(c); /* /x itself is nothing: it would find x.html */
    fc_release(c);
    return free_url ? redirect(rt, e, NULL, p, clean, slash == SLASH_ADD) : e;
}

/* The path names a file (or, ending in '/', a directory's index). */
static struct fc_entry *route_file(struct static_files *sf, struct exchange *ex,
                                   struct fc_entry *e, struct static_route *rt)
{
    const struct static_conf *sc = static_conf(ex->loc);
    const char *p = ex->path;
    size_t n = ex->path_len;
    if (n > 1 && p[n - 1] == '/')
        return sc->trailing_slash == SLASH_REMOVE ? redirect(rt, e, NULL, p, n - 1, false) : e;
    if (sc->clean_urls == CLEAN_REDIRECT)
        return route_html(sf, ex, e, rt, sc->trailing_slash);
    return e;
}

/* The path names a directory without its slash: 301 to it, unless trailing_slash remove
 * serves its index file here (a listing needs the slash: its links are relative). */
static struct fc_entry *route_dir(struct static_files *sf, struct exchange *ex,
                                  struct fc_entry *e)
{
    if (static_conf(ex->loc)->trailing_slash != SLASH_REMOVE)
        return e;
    struct fc_entry *index = lookup(sf, ex, ex->path, ex->path_len, "/");
    if (!is_file(index)) {
        fc_release(index);
        return e;
    }
    fc_release(e);
    return index;
}

/* Nothing at the path: PATH.html, for /PATH or /PATH/. */
static struct fc_entry *route_missing(struct static_files *sf, struct exchange *ex,
                                      struct fc_entry *e, struct static_route *rt)
{
    int slash = static_conf(ex->loc)->trailing_slash;
    const char *p = ex->path;
    size_t n = ex->path_len;
    bool dir_url = p[n - 1] == '/';
    if ((dir_url && (n == 1 || slash == SLASH_KEEP)) || ends_with(p, n, HTML_EXT, HTML_EXT_LEN))
        return e;
    size_t base = dir_url ? n - 1 : n;
    struct fc_entry *html = lookup(sf, ex, p, base, HTML_EXT);
    if (!is_file(html)) {
        fc_release(html);
        return e;
    }
    if (dir_url && slash == SLASH_REMOVE)
        return redirect(rt, e, html, p, base, false);
    if (!dir_url && slash == SLASH_ADD)
        return redirect(rt, e, html, p, base, true);
    fc_release(e);
    return html;
}

struct fc_entry *static_route(struct static_files *sf, struct exchange *ex,
                              struct static_route *rt)
{
    rt->to_len = 0;
    struct fc_entry *e = fc_get(sf->fc, ex->loc, ex->path, ex->path_len);
    if (!e)
        return NULL;
    switch (e->kind) {
    case FC_FILE:
        return route_file(sf, ex, e, rt);
    case FC_DIR_REDIRECT:
        return route_dir(sf, ex, e);
    case FC_MISSING:
        return static_conf(ex->loc)->clean_urls != CLEAN_OFF && absent(e)
                   ? route_missing(sf, ex, e, rt)
                   : e;
    default:
        return e;
    }
}

/* Does the last segment of the path have a file extension? */
static bool has_extension(const char *p, size_t n)
{
    for (size_t i = n; i > 0 && p[i - 1] != '/'; i--)
        if (p[i - 1] == '.')
            return true;
    return false;
}

bool static_is_navigation(const struct exchange *ex)
{
    const struct http_request *req = ex->req;
    struct strview mode = HTTP_HEADER(req, "Sec-Fetch-Mode");
    if (mode.ptr)
        return sv_case_eq(mode, "navigate", 8);
    struct strview dest = HTTP_HEADER(req, "Sec-Fetch-Dest");
    if (dest.ptr)
        return sv_case_eq(dest, "document", 8);
    /* No fetch metadata (an older browser, a crawler, curl): a page is asked for as HTML, at
     * a path without an extension. */
    struct strview accept = HTTP_KNOWN(req, H_ACCEPT);
    return !has_extension(ex->path, ex->path_len) && accept.ptr &&
           memmem(accept.ptr, accept.len, "text/html", 9) != NULL;
}
