/* ex_rules.c — site rules in a request's life; see ex_rules.h and rules/rules.h. */
#include "exchange/ex_rules.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conf/site.h"
#include "exchange/exchange.h"
#include "log/log.h"
#include "rules/rules.h"

/* The index file whose presence makes a directory "a file at the path" (Netlify's shadowing). */
#define INDEX_NAME "/index.html"

/* ---- header rules --------------------------------------------------------------------------- */

/* The header lines being built: "Name: value\r\n" (set) and "!Name\r\n" (detach). */
struct hdr_block {
    char *p;
    size_t n, cap;
};

/* The line of `name` in b (set or detach): its offset, or -1. */
static long hdr_find(const struct hdr_block *b, const char *name, size_t nlen, bool *set)
{
    for (size_t i = 0; i < b->n;) {
        const char *nl = memchr(b->p + i, '\n', b->n - i);
        size_t end = (size_t)(nl - b->p) + 1, at = i + (b->p[i] == '!');
        if (end - at > nlen && !strncasecmp(b->p + at, name, nlen) &&
            (b->p[at + nlen] == ':' || b->p[at + nlen] == '\r')) {
            *set = b->p[i] != '!';
            return (long)i;
        }
        i = end;
    }
    return -1;
}

static int hdr_put(struct hdr_block *b, size_t at, const char *s, size_t len)
{
    if (len > b->cap - b->n)
        return -ENAMETOOLONG;
    memmove(b->p + at + len, b->p + at, b->n - at);
    memcpy(b->p + at, s, len);
    b->n += len;
    return 0;
}

/* Header `name` set to value: joined with ", " to what an earlier rule set (Cloudflare
 * Pages' combination), else a line of its own. */
static int hdr_set(struct hdr_block *b, const char *name, const char *value, size_t vlen)
{
    size_t nlen = strlen(name);
    bool set;
    long at = hdr_find(b, name, nlen, &set);
    int rc;

    if (at >= 0 && set) {
        size_t end = (size_t)((const char *)memchr(b->p + at, '\n', b->n - (size_t)at) - b->p) - 1;
        if ((rc = hdr_put(b, end, ", ", 2)) < 0)
            return rc;
        return hdr_put(b, end + 2, value, vlen);
    }
    if (at >= 0) { /* detached earlier, set again: the detach line becomes the set line */
        size_t end = (size_t)((const char *)memchr(b->p + at, '\n', b->n - (size_t)at) - b->p) + 1;
        memmove(b->p + at, b->p + end, b->n - end);
        b->n -= end - (size_t)at;
    }
    if ((rc = hdr_put(b, b->n, name, nlen)) < 0 || (rc = hdr_put(b, b->n, ": ", 2)) < 0 ||
        (rc = hdr_put(b, b->n, value, vlen)) < 0)
        return rc;
    return hdr_put(b, b->n, "\r\n", 2);
}

/* `! Name`: what earlier rules set is gone, and so is the response's own header. */
static int hdr_detach(struct hdr_block *b, const char *name)
{
    size_t nlen = strlen(name);
    bool set;
    long at = hdr_find(b, name, nlen, &set);
    int rc;

    if (at >= 0 && !set)
        return 0;
    if (at >= 0) {
        size_t end = (size_t)((const char *)memchr(b->p + at, '\n', b->n - (size_t)at) - b->p) + 1;
        memmove(b->p + at, b->p + end, b->n - end);
        b->n -= end - (size_t)at;
    }
    if ((rc = hdr_put(b, b->n, "!", 1)) < 0 || (rc = hdr_put(b, b->n, name, nlen)) < 0)
        return rc;
    return hdr_put(b, b->n, "\r\n", 2);
}

/* The headers of one matching rule i of set. */
static int hdr_rule(struct hdr_block *b, const struct rules_set *set, uint32_t i,
                    const char *path, size_t plen)
{
    const struct rules_rule *r = &set->rule[i];
    struct rules_match m;
    char value[RULES_MAX_LINE + 1];
    size_t vlen;
    int rc = 0;

    if (!rules_match_rule(set, i, path, plen, NULL, 0, 0, &m))
        return 0;
    for (unsigned h = 0; h < r->nheader && rc == 0; h++) {
        if (!r->header[h].value)
            rc = hdr_detach(b, r->header[h].name);
        else if ((rc = rules_expand_header(set, &m, h, path, NULL, value, sizeof(value),
                                           &vlen)) == 0)
            rc = hdr_set(b, r->header[h].name, value, vlen);
    }
    return rc;
}

/* Every header rule matching the request's path, in order: the configuration's, then the
 * site's `_headers`. Matched on the path the client asked for (a rewrite does not change
 * what a cache stores under that URL). Out of line, as follow() is. */
static __attribute__((noinline)) int collect_headers(struct exchange *ex,
                                                     const struct loc_conf *lc)
{
    struct hdr_block b = { ex->rules_hdr, 0, EX_RULES_HDR_MAX };
    uint32_t idx[RULES_MAX_HEADER_RULES];

    for (int s = 0; s < 2; s++) {
        const struct rules_set *set = lc->rules.headers[s];
        size_t n = set ? rules_match_all(set, ex->path, ex->path_len, idx, RULES_MAX_HEADER_RULES)
                       : 0;
        for (size_t k = 0; k < n; k++) {
            int rc = hdr_rule(&b, set, idx[k], ex->path, ex->path_len);
            if (rc < 0)
                return rc;
        }
    }
    ex->rules_hdr_len = (uint16_t)b.n;
    return 0;
}

void ex_rules_headers(const struct exchange *ex, struct response *r)
{
    const char *p = ex->rules_hdr, *end = p + ex->rules_hdr_len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl + 1;
        if (*p == '!') {
            resp_remove_header(r, p + 1, (size_t)(nl - 1 - (p + 1)));
        } else {
            resp_remove_header(r, p, (size_t)((const char *)memchr(p, ':', (size_t)(nl - p)) - p));
            resp_add(r, p, (size_t)(next - p));
        }
        p = next;
    }
}

/* ---- redirect rules ------------------------------------------------------------------------- */

/* Is there a file at the path (a regular file, or a directory with an index page), under the
 * location's root? Asked only when a rule without `!` matched. */
static bool file_at(const struct loc_conf *lc, const char *path, size_t plen)
{
    char rel[EX_PATH_MAX + sizeof(INDEX_NAME)];
    struct stat st;

    if (lc->root_fd < 0 || plen >= EX_PATH_MAX)
        return false;
    if (plen <= 1)
        memcpy(rel, ".", 2);
    else
        memcpy(rel, path + 1, plen); /* with its NUL */
    if (fstatat(lc->root_fd, rel, &st, 0) < 0)
        return false;
    if (S_ISREG(st.st_mode))
        return true;
    if (!S_ISDIR(st.st_mode))
        return false;
    size_t n = strlen(rel);
    memcpy(rel + n, INDEX_NAME, sizeof(INDEX_NAME));
    return fstatat(lc->root_fd, rel, &st, 0) == 0 && S_ISREG(st.st_mode);
}

/* The first rule of lc's sets for the path (ex->path) and query q: a rule without `!` steps
 * aside when a file exists at the path. */
static const struct rules_set *find_rule(const struct exchange *ex, const struct loc_conf *lc,
                                         const char *q, size_t qlen, struct rules_match *m)
{
    unsigned flags = 0;

    for (int s = 0; s < 2; s++) {
        const struct rules_set *set = lc->rules.redirects[s];
        if (!set || !rules_match(set, ex->path, ex->path_len, q, qlen, flags, m))
            continue;
        if (flags || set->rule[m->rule].force || !file_at(lc, ex->path, ex->path_len))
            return set;
        flags = RULES_MATCH_FORCED_ONLY; /* shadowed: only forced rules, from the first */
        s = -1;
    }
    return NULL;
}

/* An expansion that failed: the request's values made a target the rules refuse (a control
 * byte, leaving the root) or one too long. */
static int expand_failed(struct exchange *ex, const struct rules_set *set,
                         const struct rules_match *m, int rc)
{
    const struct rules_rule *r = &set->rule[m->rule];
    log_info("site rules: %s:%u: target refused for %s (%s)", r->file ? r->file : "_redirects",
             r->line, ex->path, rc == -ENAMETOOLONG ? "too long" : "invalid");
    return ex_error(ex, rc == -ENAMETOOLONG ? 414 : 400);
}

static int send_redirect(struct exchange *ex, const struct rules_set *set,
                         const struct rules_match *m, const char *q, size_t qlen)
{
    char target[RULES_MAX_EXPANDED], head[RESP_HEAD_MAX], page[512];
    size_t n;
    struct response r;
    int status = (int)set->rule[m->rule].status;
    int rc = rules_expand(set, m, ex->path, q, qlen, target, sizeof(target), &n);

    if (rc < 0)
        return expand_failed(ex, set, m, rc);
    /* As the directory-slash redirect: the target as written, a path (relative reference,
     * RFC 9110 10.2.2) or an absolute URL. */
    resp_begin(&r, head, sizeof(head), status, ex->date);
    RESP_LIT(&r, "Location: ");
    resp_add(&r, target, n);
    RESP_LIT(&r, "\r\nContent-Type: text/html; charset=utf-8\r\n");
    size_t len = http_error_page(status, page, sizeof(page));
    return ex_send(ex, &r, page, len);
}

/* A status rule (404, 410, ...): its target page, an HTML file under the root of the target's
 * location (no symbolic link followed, never above the root), else the built-in page. */
static int send_status(struct exchange *ex, const struct site *site,
                       const struct rules_set *set, const struct rules_match *m, const char *q,
                       size_t qlen)
{
    char target[RULES_MAX_EXPANDED], head[RESP_HEAD_MAX];
    size_t n;
    int status = (int)set->rule[m->rule].status;
    int rc = rules_expand(set, m, ex->path, q, qlen, target, sizeof(target), &n);

    if (rc < 0)
        return expand_failed(ex, set, m, rc);
    target[strcspn(target, "?")] = '\0';
    const struct loc_conf *lc = site_location(site, (struct strview){ target, strlen(target) });
    struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                            .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS };
    int fd = lc->root_fd < 0 || !target[1] ? -1
             : (int)syscall(SYS_openat2, lc->root_fd, target + 1, &how, sizeof(how));
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return ex_error(ex, status);
    }
    struct response r;
    resp_begin(&r, head, sizeof(head), status, ex->date);
    RESP_LIT(&r, "Content-Type: text/html; charset=utf-8\r\n");
    return ex_send_file(ex, &r, fd, 0, (size_t)st.st_size);
}

/* A rewrite: the target's path becomes the request's path (ex->path), its query the query of
 * the next match (qbuf). */
static int rewrite(struct exchange *ex, const struct rules_set *set, const struct rules_match *m,
                   char *qbuf, const char **q, size_t *qlen)
{
    char target[RULES_MAX_EXPANDED];
    size_t n;
    int rc = rules_expand(set, m, ex->path, *q, *qlen, target, sizeof(target), &n);

    if (rc < 0)
        return rc;
    size_t plen = strcspn(target, "?");
    if (plen >= EX_PATH_MAX)
        return -ENAMETOOLONG;
    if (plen < n) {
        *qlen = n - plen - 1;
        memcpy(qbuf, target + plen + 1, *qlen);
        *q = qbuf;
    }
    memcpy(ex->path, target, plen);
    ex->path[plen] = '\0';
    ex->path_len = plen;
    ex->path_plain = !strstr(ex->path, "/.");
    return 0;
}

/* 1 for a request answered (rc 0), or the connection's error. */
static int answered(int rc)
{
    return rc < 0 ? rc : 1;
}

/* After the last rewrite: the query it left (its own, or the client's when its target had
 * none) becomes the exchange's, copied after the path's NUL (qbuf is follow's). */
static int keep_query(struct exchange *ex, const char *q, size_t qlen)
{
    if (q == ex->req->query.ptr)
        return 0;
    if (ex->path_len + 1 + qlen >= EX_PATH_MAX)
        return answered(ex_error(ex, 414));
    char *dst = ex->path + ex->path_len + 1;
    memcpy(dst, q, qlen);
    dst[qlen] = '\0';
    ex->query = (struct strview){ dst, qlen };
    return 0;
}

/* Go on from rule m of set, the first that matched: answer (1, or -errno), or leave ex->path
 * and ex->loc rewritten (0). Out of line: its buffers stay off the stack of the requests that
 * no rule matches. */
static __attribute__((noinline)) int follow(struct exchange *ex, const struct site *site,
                                            const struct rules_set *set, struct rules_match *m)
{
    const struct loc_conf *lc = ex->loc;
    const char *q = ex->req->query.ptr;
    size_t qlen = ex->req->query.len;
    char qbuf[RULES_MAX_EXPANDED];

    for (unsigned rewrites = 0;; rewrites++) {
        const struct rules_rule *r = &set->rule[m->rule];
        if (r->kind == RULES_REDIRECT)
            return answered(send_redirect(ex, set, m, q, qlen));
        if (r->kind == RULES_STATUS)
            return answered(send_status(ex, site, set, m, q, qlen));
        if (rewrites == RULES_MAX_CHAIN) {
            log_error("site rules: %s:%u: more than %d rewrites for %.*s: answered 500",
                      r->file ? r->file : "_redirects", r->line, RULES_MAX_CHAIN,
                      (int)ex->req->path.len, ex->req->path.ptr);
            return answered(ex_error(ex, 500));
        }
        int rc = rewrite(ex, set, m, qbuf, &q, &qlen);
        if (rc < 0)
            return answered(expand_failed(ex, set, m, rc));
        lc = site_location(site, (struct strview){ ex->path, ex->path_len });
        const struct rules_set *by = set;
        uint32_t by_rule = m->rule;
        /* None, or the rule that rewrote to here: its target falls under its own pattern. */
        if (!lc->rules_on || !(set = find_rule(ex, lc, q, qlen, m)) ||
            (set == by && m->rule == by_rule))
            break;
    }
    ex->loc = lc;
    return keep_query(ex, q, qlen);
}

/* A rule matched the request: the first that applies (shadowing), and on from it. */
static __attribute__((noinline)) int follow_first(struct exchange *ex, const struct site *site)
{
    struct rules_match m;
    const struct rules_set *set = find_rule(ex, ex->loc, ex->req->query.ptr,
                                            ex->req->query.len, &m);
    return set ? follow(ex, site, set, &m) : 0;
}

/* "/_redirects" or "/_headers" (sizeof counts the NUL where the path has its '/'). */
static bool rule_file(const char *path, size_t len)
{
    return (len == sizeof(SITE_RULES_REDIRECTS) &&
            !memcmp(path + 1, SITE_RULES_REDIRECTS, len - 1)) ||
           (len == sizeof(SITE_RULES_HEADERS) && !memcmp(path + 1, SITE_RULES_HEADERS, len - 1));
}

int ex_rules_apply(struct exchange *ex, const struct site *site)
{
    const struct loc_conf *lc = ex->loc;
    int rc;

    if (lc->rules.files && rule_file(ex->path, ex->path_len))
        return answered(ex_error(ex, 404)); /* configuration, not content */
    if ((lc->rules.headers[0] || lc->rules.headers[1]) && (rc = collect_headers(ex, lc)) < 0) {
        /* A value the path made invalid (a control byte), or more than the head can hold. */
        log_info("site rules: the headers for %s: %s", ex->path,
                 rc == -ENAMETOOLONG ? "more than " RULES_STR(EX_RULES_HDR_MAX) " bytes"
                                     : "a value with a control byte");
        ex->rules_hdr_len = 0;
        return answered(ex_error(ex, rc == -ENAMETOOLONG ? 500 : 400));
    }
    /* Most requests match no rule: asked plainly first, the shadowing and the rest after. */
    struct rules_match m;
    struct strview q = ex->req->query;
    for (int s = 0; s < 2; s++)
        if (rules_match(lc->rules.redirects[s], ex->path, ex->path_len, q.ptr, q.len, 0, &m))
            return follow_first(ex, site);
    return 0;
}
