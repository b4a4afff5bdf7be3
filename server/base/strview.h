/* strview.h — non-owning string views (ptr + len), never NUL-terminated.
 *
 * Requests are parsed in place in the processing thread's stack buffer; every field of a
 * request is a view into that buffer and is valid only while the event is being processed. */
#ifndef LF_STRVIEW_H
#define LF_STRVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

struct strview {
    const char *ptr;
    size_t len;
};

#define SV(lit) ((struct strview){ (lit), sizeof(lit) - 1 })
#define SV_NULL ((struct strview){ NULL, 0 })

static inline bool sv_eq(struct strview a, const char *lit, size_t litlen)
{
    return a.len == litlen && memcmp(a.ptr, lit, litlen) == 0;
}

static inline bool sv_case_eq(struct strview a, const char *lit, size_t litlen)
{
    return a.len == litlen && strncasecmp(a.ptr, lit, litlen) == 0;
}

#define SV_EQ(sv, lit) sv_eq((sv), (lit), sizeof(lit) - 1)
#define SV_CASE_EQ(sv, lit) sv_case_eq((sv), (lit), sizeof(lit) - 1)

/* Trim optional whitespace (SP / HTAB) at both ends. */
static inline struct strview sv_trim(struct strview s)
{
    while (s.len && (s.ptr[0] == ' ' || s.ptr[0] == '\t')) {
        s.ptr++;
        s.len--;
    }
    while (s.len && (s.ptr[s.len - 1] == ' ' || s.ptr[s.len - 1] == '\t'))
        s.len--;
    return s;
}

/* Take the next element of a comma-separated header value (quoted strings respected), trimmed;
 * false at the end. */
static inline bool sv_list_next(struct strview *list, struct strview *item)
{
    while (list->len && (list->ptr[0] == ',' || list->ptr[0] == ' ' || list->ptr[0] == '\t')) {
        list->ptr++;
        list->len--;
    }
    if (!list->len)
        return false;
    const char *start = list->ptr;
    bool quoted = false;
    while (list->len && (quoted || list->ptr[0] != ',')) {
        if (list->ptr[0] == '"')
            quoted = !quoted;
        list->ptr++;
        list->len--;
    }
    *item = sv_trim((struct strview){ start, (size_t)(list->ptr - start) });
    return true;
}

/* Does the comma-separated token list `s` contain `tok` (case-insensitive)? */
static inline bool sv_list_has_token(struct strview s, const char *tok, size_t toklen)
{
    size_t i = 0;
    while (i < s.len) {
        size_t start = i;
        while (i < s.len && s.ptr[i] != ',')
            i++;
        struct strview item = sv_trim((struct strview){ s.ptr + start, i - start });
        if (sv_case_eq(item, tok, toklen))
            return true;
        i++;
    }
    return false;
}

/* Split a request-target "/path?query" at its first '?' (query: ptr NULL when there is none). */
static inline void sv_split_target(struct strview t, struct strview *path, struct strview *query)
{
    const char *q = t.len ? memchr(t.ptr, '?', t.len) : NULL;
    *path = (struct strview){ t.ptr, q ? (size_t)(q - t.ptr) : t.len };
    *query = q ? (struct strview){ q + 1, t.len - path->len - 1 } : SV_NULL;
}

/* The parameters of a query string ("a=1&b&c=3"), in order; names and values are raw (not
 * percent-decoded). Empty parameters ("a=1&&b") are skipped; a parameter without "=" has an
 * empty value.
 *
 *     struct sv_query q = { query };
 *     struct strview name, value;
 *     while (sv_query_next(&q, &name, &value)) ...
 */
struct sv_query {
    struct strview rest;
};

static inline bool sv_query_next(struct sv_query *q, struct strview *name, struct strview *value)
{
    while (q->rest.len) {
        const char *p = q->rest.ptr;
        const char *amp = memchr(p, '&', q->rest.len);
        size_t len = amp ? (size_t)(amp - p) : q->rest.len;
        q->rest.ptr += amp ? len + 1 : len;
        q->rest.len -= amp ? len + 1 : len;
        if (len == 0)
            continue;
        const char *eq = memchr(p, '=', len);
        *name = (struct strview){ p, eq ? (size_t)(eq - p) : len };
        *value = eq ? (struct strview){ eq + 1, len - name->len - 1 } : (struct strview){ p + len, 0 };
        return true;
    }
    return false;
}

/* The first parameter called `name` (raw value), or false. */
static inline bool sv_query_get(struct strview query, const char *name, size_t name_len,
                                struct strview *value)
{
    struct sv_query q = { query };
    struct strview n, v;
    while (sv_query_next(&q, &n, &v))
        if (sv_eq(n, name, name_len)) {
            *value = v;
            return true;
        }
    return false;
}

#endif
