/* rules.c — the rule set: its index, matching, and the expansion of targets (see rules.h). */
#include "rules/rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "http/path.h"
#include "rules/rules_internal.h"

/* 64-bit FNV-1a: byte at a time, so that the prefixes of a path hash incrementally. */
#define RULES_FNV_OFFSET 0xcbf29ce484222325ull
#define RULES_FNV_PRIME  0x100000001b3ull

/* Bytes of a path that loop detection follows (a longer one ends the check). */
#define RULES_PROBE_MAX 256

/* First room of the growing arrays of a set being loaded (doubled when full). */
#define RULES_FIRST_RULES   16
#define RULES_FIRST_ENTRIES 64

/* One key of a table: its rules' indices are list[first .. first + count), in file order. */
struct rules_slot {
    uint64_t hash;
    const char *key;
    uint32_t klen;
    uint32_t first;
    uint32_t count;     /* 0: an empty slot */
};

struct rules_table {
    struct rules_slot *slot;
    uint32_t mask;
    uint32_t *list;
};

/* A (key, rule) pair while a table is being built. */
struct rules_entry {
    const char *key;
    uint32_t klen;
    uint32_t rule;
};

struct rules_entries {
    struct rules_entry *e;
    size_t n, cap;
};

static uint64_t rules_hash_step(uint64_t h, unsigned char c)
{
    return (h ^ c) * RULES_FNV_PRIME;
}

static uint64_t rules_hash(const char *s, size_t len)
{
    uint64_t h = RULES_FNV_OFFSET;

    for (size_t i = 0; i < len; i++)
        h = rules_hash_step(h, (unsigned char)s[i]);
    return h;
}

struct rules_set *rules_set_new(void)
{
    return calloc(1, sizeof(struct rules_set));
}

struct rules_rule *rules_append(struct rules_set *set)
{
    if (set->count == set->cap) {
        uint32_t cap = set->cap ? set->cap * 2 : RULES_FIRST_RULES;
        struct rules_rule *r = realloc(set->rule, cap * sizeof(*r));
        if (!r)
            return NULL;
        set->rule = r;
        set->cap = cap;
    }
    struct rules_rule *r = &set->rule[set->count++];
    memset(r, 0, sizeof(*r));
    r->from.splat = RULES_NO_SLOT;
    return r;
}

void rules_rule_free(struct rules_rule *r)
{
    pattern_free(&r->from);
    free(r->to);
    for (unsigned i = 0; i < r->nquery; i++) {
        free(r->query[i].key);
        free(r->query[i].value);
    }
    for (unsigned i = 0; i < r->nheader; i++) {
        free(r->header[i].name);
        free(r->header[i].value);
    }
    free(r->header);
}

static void rules_table_free(struct rules_table *t)
{
    if (t) {
        free(t->slot);
        free(t->list);
        free(t);
    }
}

void rules_free(struct rules_set *set)
{
    if (!set)
        return;
    for (uint32_t i = 0; i < set->count; i++)
        rules_rule_free(&set->rule[i]);
    free(set->rule);
    rules_table_free(set->exact);
    rules_table_free(set->prefix);
    rules_table_free(set->bucket);
    free(set->wild);
    free(set);
}

/* ---- building the index ---- */

static int rules_entry_add(struct rules_entries *es, const char *key, size_t klen, uint32_t rule)
{
    if (es->n == es->cap) {
        size_t cap = es->cap ? es->cap * 2 : RULES_FIRST_ENTRIES;
        struct rules_entry *e = realloc(es->e, cap * sizeof(*e));
        if (!e)
            return -1;
        es->e = e;
        es->cap = cap;
    }
    es->e[es->n++] = (struct rules_entry){ key, (uint32_t)klen, rule };
    return 0;
}

static int rules_entry_cmp(const void *a, const void *b)
{
    const struct rules_entry *x = a, *y = b;

    if (x->klen != y->klen)
        return x->klen < y->klen ? -1 : 1;
    int c = memcmp(x->key, y->key, x->klen);
    if (c)
        return c;
    return x->rule < y->rule ? -1 : x->rule > y->rule;
}

static bool rules_same_key(const struct rules_entry *x, const struct rules_entry *y)
{
    return x->klen == y->klen && memcmp(x->key, y->key, x->klen) == 0;
}

static const struct rules_slot *rules_table_find(const struct rules_table *t, const char *key,
                                                 size_t klen, uint64_t hash)
{
    if (!t)
        return NULL;
    for (uint32_t i = (uint32_t)hash & t->mask;; i = (i + 1) & t->mask) {
        const struct rules_slot *s = &t->slot[i];
        if (s->count == 0)
            return NULL;
        if (s->hash == hash && s->klen == klen && memcmp(s->key, key, klen) == 0)
            return s;
    }
}

/* A table of the entries es (sorted here), or NULL when es is empty (*fail set on no memory).
 * Open addressing at a load of at most one half. */
static struct rules_table *rules_table_build(struct rules_entries *es, bool *fail)
{
    size_t keys = 0, size = 2;
    struct rules_table *t;

    if (es->n == 0)
        return NULL;
    qsort(es->e, es->n, sizeof(*es->e), rules_entry_cmp);
    for (size_t i = 0; i < es->n; i++)
        keys += i == 0 || !rules_same_key(&es->e[i - 1], &es->e[i]);
    while (size < 2 * keys)
        size *= 2;
    t = calloc(1, sizeof(*t));
    if (t) {
        t->slot = calloc(size, sizeof(*t->slot));
        t->list = malloc(es->n * sizeof(*t->list));
    }
    if (!t || !t->slot || !t->list) {
        rules_table_free(t);
        *fail = true;
        return NULL;
    }
    t->mask = (uint32_t)size - 1;
    uint32_t n = 0;
    for (size_t i = 0; i < es->n;) {
        const struct rules_entry *e = &es->e[i];
        uint64_t h = rules_hash(e->key, e->klen);
        uint32_t at = (uint32_t)h & t->mask;
        while (t->slot[at].count)
            at = (at + 1) & t->mask;
        struct rules_slot *s = &t->slot[at];
        *s = (struct rules_slot){ h, e->key, e->klen, n, 0 };
        for (; i < es->n && rules_same_key(&es->e[i], e); i++)
            if (s->count == 0 || t->list[n - 1] != es->e[i].rule) {
                t->list[n++] = es->e[i].rule;
                s->count++;
            }
    }
    return t;
}

/* File every alternative of rule i under its class. */
static int rules_index_rule(struct rules_set *set, uint32_t i, struct rules_entries es[3])
{
    const struct pattern *p = &set->rule[i].from;

    for (unsigned a = 0; a < p->nalt; a++) {
        const char *key;
        size_t klen;
        bool bucketed;
        enum pattern_class c = pattern_classify(p, a, &key, &klen, &bucketed);
        if (c == PATTERN_DYNAMIC && !bucketed) {
            if (set->nwild == 0 || set->wild[set->nwild - 1] != i)
                set->wild[set->nwild++] = i;
            const struct pattern_alt *alt = &p->alt[a];
            unsigned char last = (unsigned char)p->text[alt->text_off + alt->text_len - 1];
            if (alt->tail_len == 0)
                set->wild_any = true;
            else
                set->wild_last[last >> 6] |= UINT64_C(1) << (last & 63);
            continue;
        }
        uint64_t *f = c == PATTERN_EXACT ? set->exact_f : c == PATTERN_PREFIX ? set->prefix_f
                                                                                 : set->bucket_f;
        /* Exact and prefix keys by their last byte (the path's byte at the probe), bucket
         * keys (first segments) by their first. */
        char by = klen == 0 ? 0 : c == PATTERN_DYNAMIC ? key[0] : key[klen - 1];
        f[RULES_FILTER_CLASS(by)] |= RULES_LEN_BIT(klen);
        if (c == PATTERN_PREFIX)
            set->prefix_any |= RULES_LEN_BIT(klen);
        if (rules_entry_add(&es[c], key, klen, i) < 0)
            return -1;
    }
    return 0;
}

static int rules_index(struct rules_set *set)
{
    struct rules_entries es[3] = { { 0 }, { 0 }, { 0 } };
    bool fail = false;

    set->wild = malloc((set->count ? set->count : 1) * sizeof(*set->wild));
    if (!set->wild)
        return -1;
    for (uint32_t i = 0; i < set->count && !fail; i++)
        fail = rules_index_rule(set, i, es) < 0;
    if (!fail) {
        set->exact = rules_table_build(&es[PATTERN_EXACT], &fail);
        set->prefix = rules_table_build(&es[PATTERN_PREFIX], &fail);
        set->bucket = rules_table_build(&es[PATTERN_DYNAMIC], &fail);
    }
    for (int c = 0; c < 3; c++)
        free(es[c].e);
    return fail ? -1 : 0;
}

/* ---- matching ---- */

/* Find key=... in the raw query q/qlen: true with the view of its value (empty for a bare
 * key) at q[*voff .. *voff + *vlen). */
static bool rules_query_find(const char *q, size_t qlen, const char *key, size_t klen,
                             size_t *voff, size_t *vlen)
{
    for (size_t i = 0; i < qlen;) {
        const char *amp = memchr(q + i, '&', qlen - i);
        size_t end = amp ? (size_t)(amp - q) : qlen;
        const char *eq = memchr(q + i, '=', end - i);
        size_t kend = eq ? (size_t)(eq - q) : end;
        if (kend - i == klen && memcmp(q + i, key, klen) == 0) {
            *voff = eq ? kend + 1 : end;
            *vlen = end - *voff;
            return true;
        }
        i = end + 1;
    }
    return false;
}

/* Query conditions and flags of rule r; query captures go to cap. */
static bool rules_conditions(const struct rules_rule *r, const char *q, size_t qlen,
                             unsigned flags, struct rules_capture *cap)
{
    if ((flags & RULES_MATCH_FORCED_ONLY) && !r->force)
        return false;
    for (unsigned i = 0; i < r->nquery; i++) {
        const struct rules_query *c = &r->query[i];
        size_t off, len;
        if (!q || !rules_query_find(q, qlen, c->key, strlen(c->key), &off, &len))
            return false;
        if (c->value && (strlen(c->value) != len || memcmp(c->value, q + off, len) != 0))
            return false;
        if (!c->value)
            cap[c->slot] = (struct rules_capture){ (uint32_t)off, (uint32_t)len, true, true };
    }
    return true;
}

bool rules_match_rule(const struct rules_set *set, uint32_t i, const char *path, size_t plen,
                      const char *q, size_t qlen, unsigned flags, struct rules_match *m)
{
    const struct rules_rule *r = &set->rule[i];

    if (!pattern_match(&r->from, path, plen, m->cap) ||
        !rules_conditions(r, q, qlen, flags, m->cap))
        return false;
    m->rule = i;
    return true;
}

/* What one lookup needs to know of the request. */
struct rules_request {
    const char *path, *q;
    size_t plen, end, qlen;
    unsigned flags;
};

/* The first rule of list[0..n) before *best that holds (its pattern too when dynamic). */
static void rules_scan(const struct rules_set *set, const uint32_t *list, size_t n,
                       bool dynamic, const struct rules_request *rq, uint32_t *best)
{
    struct rules_match scratch;

    for (size_t k = 0; k < n && list[k] < *best; k++) {
        bool ok = dynamic ? rules_match_rule(set, list[k], rq->path, rq->plen, rq->q, rq->qlen,
                                             rq->flags, &scratch)
                          : rules_conditions(&set->rule[list[k]], rq->q, rq->qlen, rq->flags,
                                             scratch.cap);
        if (ok) {
            *best = list[k];
            return;
        }
    }
}

static void rules_scan_slot(const struct rules_set *set, const struct rules_table *t,
                            const struct rules_slot *s, bool dynamic,
                            const struct rules_request *rq, uint32_t *best)
{
    if (s)
        rules_scan(set, t->list + s->first, s->count, dynamic, rq, best);
}

/* The path's first segment (what buckets are keyed by): path[1 .. *len + 1). */
static const char *rules_first_segment(const struct rules_request *rq, size_t *len)
{
    const char *slash = rq->end > 1 ? memchr(rq->path + 1, '/', rq->end - 1) : NULL;

    *len = rq->end == 0 ? 0 : (slash ? (size_t)(slash - rq->path) : rq->end) - 1;
    return rq->path + 1;
}

/* Could a wild rule match a path ending at end? Every path one matches ends with its tail,
 * so the last byte must be one of theirs (the filter built with the index). */
static bool rules_wild_possible(const struct rules_set *set, const struct rules_request *rq)
{
    if (set->nwild == 0)
        return false;
    if (set->wild_any)
        return true;
    unsigned char last = rq->end ? (unsigned char)rq->path[rq->end - 1] : 0;
    return rq->end && (set->wild_last[last >> 6] >> (last & 63)) & 1;
}

/* May a key of filter f be path[0..len) (by its byte `by` and its length)? */
static bool rules_may(const uint64_t *f, char by, size_t len)
{
    return (f[RULES_FILTER_CLASS(by)] & RULES_LEN_BIT(len)) != 0;
}

/* The exact and prefix rules of the path: the path is hashed once, incrementally, and only
 * when the filters leave a key to look for. */
static void rules_match_static(const struct rules_set *set, const struct rules_request *rq,
                               uint32_t *best)
{
    const char *path = rq->path;
    uint64_t upto = rq->end < 63 ? (UINT64_C(2) << rq->end) - 1 : UINT64_MAX;
    bool exact = rules_may(set->exact_f, rq->end ? path[rq->end - 1] : 0, rq->end);
    uint64_t h = RULES_FNV_OFFSET;

    if (!(set->prefix_any & upto) && !exact)
        return;
    for (size_t i = 0;; i++) {
        if ((i == 0 || i == rq->end || path[i] == '/') &&
            rules_may(set->prefix_f, i ? path[i - 1] : 0, i))
            rules_scan_slot(set, set->prefix, rules_table_find(set->prefix, path, i, h), false,
                            rq, best);
        if (i == rq->end)
            break;
        h = rules_hash_step(h, (unsigned char)path[i]);
    }
    /* h is now the hash of the whole path: the exact table's key. */
    if (exact)
        rules_scan_slot(set, set->exact, rules_table_find(set->exact, path, rq->end, h), false,
                        rq, best);
}

/* The lookups of rules_match, once the filters have left something to look for. */
static __attribute__((noinline)) bool rules_lookup(const struct rules_set *set,
                                                   const struct rules_request *rq,
                                                   struct rules_match *m)
{
    const char *path = rq->path;
    uint32_t best = UINT32_MAX;

    rules_match_static(set, rq, &best);
    /* Buckets: the first segment's first byte picks a filter row before it is measured. */
    if (set->bucket && rq->end > 0 && set->bucket_f[RULES_FILTER_CLASS(path[1])]) {
        size_t flen;
        const char *first = rules_first_segment(rq, &flen);
        if (rules_may(set->bucket_f, path[1], flen))
            rules_scan_slot(set, set->bucket,
                            rules_table_find(set->bucket, first, flen, rules_hash(first, flen)),
                            true, rq, &best);
    }
    if (rules_wild_possible(set, rq))
        rules_scan(set, set->wild, set->nwild, true, rq, &best);
    return best != UINT32_MAX &&
           rules_match_rule(set, best, path, rq->plen, rq->q, rq->qlen, rq->flags, m);
}

bool rules_match(const struct rules_set *set, const char *path, size_t plen, const char *q,
                 size_t qlen, unsigned flags, struct rules_match *m)
{
    if (!set || set->count == 0 || plen == 0 || path[0] != '/')
        return false;
    size_t end = plen == 1 ? 0 : pattern_path_end(path, plen);
    char last = end ? path[end - 1] : 0;
    uint64_t upto = end < 63 ? (UINT64_C(2) << end) - 1 : UINT64_MAX;
    /* Most paths of a site match no rule: the filters say so without a hash or a call. */
    if (!(set->prefix_any & upto) && !rules_may(set->exact_f, last, end) &&
        !(set->bucket && end > 0 && set->bucket_f[RULES_FILTER_CLASS(path[1])]) &&
        !(set->nwild && (set->wild_any || (end && (set->wild_last[(unsigned char)last >> 6] >>
                                                   ((unsigned char)last & 63)) & 1))))
        return false;
    struct rules_request rq = { path, q, plen, end, qlen, flags };
    return rules_lookup(set, &rq, m);
}

/* Insert rule i into the sorted, distinct out[0..*n) of at most cap entries (the largest
 * falls off when it is full). */
static void rules_insert(uint32_t *out, size_t *n, size_t cap, uint32_t i)
{
    size_t at = *n;

    while (at > 0 && out[at - 1] > i)
        at--;
    if ((at > 0 && out[at - 1] == i) || at == cap)
        return;
    size_t keep = *n < cap ? *n : cap - 1;
    memmove(out + at + 1, out + at, (keep - at) * sizeof(*out));
    out[at] = i;
    *n = keep + 1;
}

static void rules_collect(const struct rules_set *set, const struct rules_table *t,
                          const struct rules_slot *s, bool dynamic,
                          const struct rules_request *rq, uint32_t *out, size_t *n, size_t cap)
{
    struct rules_match scratch;

    for (uint32_t k = 0; s && k < s->count; k++) {
        uint32_t i = t->list[s->first + k];
        if (!dynamic || rules_match_rule(set, i, rq->path, rq->plen, NULL, 0, 0, &scratch))
            rules_insert(out, n, cap, i);
    }
}

size_t rules_match_all(const struct rules_set *set, const char *path, size_t plen,
                       uint32_t *out, size_t cap)
{
    size_t n = 0;

    if (!set || set->count == 0 || plen == 0 || path[0] != '/' || cap == 0)
        return 0;
    struct rules_request rq = { path, NULL, plen, plen == 1 ? 0 : pattern_path_end(path, plen),
                                0, 0 };
    uint64_t h = RULES_FNV_OFFSET;
    for (size_t i = 0;; i++) {
        if (set->prefix && (i == 0 || i == rq.end || path[i] == '/'))
            rules_collect(set, set->prefix, rules_table_find(set->prefix, path, i, h), false,
                          &rq, out, &n, cap);
        if (i == rq.end)
            break;
        h = rules_hash_step(h, (unsigned char)path[i]);
    }
    rules_collect(set, set->exact, rules_table_find(set->exact, path, rq.end, h), false, &rq,
                  out, &n, cap);
    size_t flen;
    const char *first = rules_first_segment(&rq, &flen);
    if (set->bucket && rq.end > 0)
        rules_collect(set, set->bucket,
                      rules_table_find(set->bucket, first, flen, rules_hash(first, flen)), true,
                      &rq, out, &n, cap);
    struct rules_match scratch;
    for (uint32_t k = 0; k < set->nwild; k++)
        if (rules_match_rule(set, set->wild[k], path, plen, NULL, 0, 0, &scratch))
            rules_insert(out, &n, cap, set->wild[k]);
    return n;
}

/* ---- targets ---- */

/* An output buffer: p[0..n), always with room left for a NUL. */
struct rules_out {
    char *p;
    size_t cap, n;
};

static int rules_put(struct rules_out *o, const char *s, size_t len)
{
    if (len >= o->cap - o->n)
        return -ENAMETOOLONG;
    memcpy(o->p + o->n, s, len);
    o->n += len;
    return 0;
}

static bool rules_control(unsigned char c, bool tab_ok)
{
    return (c < 0x20 && !(tab_ok && c == '\t')) || c == 0x7f;
}

/* Bytes a captured path value may keep in a URI besides the unreserved ones: the
 * sub-delimiters and ':' '@' '/' that mean nothing in a query either. Everything else is
 * percent-encoded. */
#define RULES_URI_KEEPS "!$'()*,:@/"

/* A captured path value: percent-encoded for a URI, or as it is for a header value. */
static int rules_put_path_value(struct rules_out *o, const char *s, size_t len, bool header)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[3];
        int rc;
        if (rules_control(c, header))
            return -EINVAL;
        if (header || hex_pct_keeps(c, RULES_URI_KEEPS)) {
            rc = rules_put(o, s + i, 1);
        } else {
            hex_pct(c, esc);
            rc = rules_put(o, esc, sizeof(esc));
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A raw query value (as the request wrote it): copied, but never a control byte, a space
 * (which a request line cannot hold anyway) or a '#'. */
static int rules_put_query_value(struct rules_out *o, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (rules_control((unsigned char)s[i], false) || s[i] == ' ' || s[i] == '#')
            return -EINVAL;
    return rules_put(o, s, len);
}

static int rules_slot_of(const struct rules_rule *r, const char *name, size_t len)
{
    for (unsigned i = 0; i < r->names.count; i++)
        if (strlen(r->names.name[i]) == len && memcmp(r->names.name[i], name, len) == 0)
            return (int)i;
    return -1;
}

/* Template tpl with every `:name` of a capture slot of r replaced by its value (an unset one
 * by nothing); other text as written (checked when loaded). */
static int rules_subst(const struct rules_rule *r, const struct rules_match *m, const char *tpl,
                       const char *path, const char *q, bool header, struct rules_out *o)
{
    for (size_t i = 0; tpl[i];) {
        size_t j = i + 1;
        int slot = -1, rc;
        if (tpl[i] == ':' && pattern_name_char((unsigned char)tpl[j])) {
            while (pattern_name_char((unsigned char)tpl[j]))
                j++;
            slot = rules_slot_of(r, tpl + i + 1, j - i - 1);
        }
        if (slot < 0) {
            rc = rules_put(o, tpl + i, j - i);
        } else {
            const struct rules_capture *c = &m->cap[slot];
            if (!c->set)
                rc = 0;
            else if (c->in_query)
                rc = q ? rules_put_query_value(o, q + c->off, c->len) : -EINVAL;
            else
                rc = rules_put_path_value(o, path + c->off, c->len, header);
        }
        if (rc < 0)
            return rc;
        i = j;
    }
    return 0;
}

/* Append "?query" to a redirect's Location, before its fragment if it has one. */
static int rules_put_query(struct rules_out *o, const char *q, size_t qlen)
{
    const char *hash = memchr(o->p, '#', o->n);
    size_t at = hash ? (size_t)(hash - o->p) : o->n, tail = o->n - at;
    char frag[RULES_MAX_EXPANDED];

    if (tail > sizeof(frag))
        return -ENAMETOOLONG;
    memcpy(frag, o->p + at, tail);
    o->n = at;
    int rc = rules_put(o, "?", 1);
    if (rc == 0)
        rc = rules_put_query_value(o, q, qlen);
    if (rc == 0)
        rc = rules_put(o, frag, tail);
    return rc;
}

/* Replace the path part of an internal target (before '?') by its normal form: decoded,
 * '.' and '..' resolved, never above the root (path_normalize). */
static int rules_normalize(struct rules_out *o)
{
    char tmp[RULES_MAX_EXPANDED];
    const char *qm = memchr(o->p, '?', o->n);
    size_t plen = qm ? (size_t)(qm - o->p) : o->n, tn;
    int rc = path_normalize(o->p, plen, tmp, sizeof(tmp), &tn);

    if (rc < 0)
        return rc;
    if (tn + (o->n - plen) >= o->cap)
        return -ENAMETOOLONG;
    memmove(o->p + tn, o->p + plen, o->n - plen);
    memcpy(o->p, tmp, tn);
    o->n = tn + (o->n - plen);
    return 0;
}

int rules_expand(const struct rules_set *set, const struct rules_match *m, const char *path,
                 const char *q, size_t qlen, char *out, size_t cap, size_t *out_len)
{
    const struct rules_rule *r = &set->rule[m->rule];
    struct rules_out o = { out, cap, 0 };
    int rc;

    if (cap == 0)
        return -ENAMETOOLONG;
    if (r->kind == RULES_HEADERS)
        return -EINVAL;
    rc = rules_subst(r, m, r->to, path, q, false, &o);
    /* "//host" or "/\host" is a URL of another host to a browser, whatever the rule meant. */
    if (rc == 0 && !r->absolute && o.n >= 2 && (out[1] == '/' || out[1] == '\\'))
        rc = -EINVAL;
    if (rc == 0 && r->kind != RULES_REDIRECT)
        rc = rules_normalize(&o);
    if (rc == 0 && r->keep_query && q && qlen)
        rc = rules_put_query(&o, q, qlen);
    if (rc < 0)
        return rc;
    out[o.n] = '\0';
    *out_len = o.n;
    return 0;
}

int rules_expand_header(const struct rules_set *set, const struct rules_match *m, unsigned h,
                        const char *path, const char *q, char *out, size_t cap,
                        size_t *out_len)
{
    const struct rules_rule *r = &set->rule[m->rule];
    struct rules_out o = { out, cap, 0 };

    if (cap == 0)
        return -ENAMETOOLONG;
    if (r->kind != RULES_HEADERS || h >= r->nheader || !r->header[h].value)
        return -EINVAL;
    int rc = rules_subst(r, m, r->header[h].value, path, q, true, &o);
    if (rc < 0)
        return rc;
    out[o.n] = '\0';
    *out_len = o.n;
    return 0;
}

/* ---- loops ---- */

/* Whether a request that matches r goes on to the rules again with r's target: a redirect to
 * a path of this site (the browser comes back), or a forced rewrite. A rewrite that is not
 * forced ends a chain: its target is meant to be a file, and a file shadows such rules. */
static bool rules_follows(const struct rules_rule *r)
{
    return r->nquery == 0 && !r->absolute &&
           (r->kind == RULES_REDIRECT || (r->kind == RULES_REWRITE && r->force));
}

/* A path that rule r matches without query: its first alternative with every wildcard and
 * placeholder filled with one word ("/old/ *" gives /old/probe). False when that does not
 * fit or does not match (a rule then goes unchecked). */
static bool rules_probe(const struct rules_rule *r, char *buf, size_t cap, size_t *len)
{
    static const char word[] = "probe";
    const size_t wlen = sizeof(word) - 1;
    const struct pattern *p = &r->from;
    const struct pattern_alt *a = &p->alt[0];
    struct rules_capture scratch[RULES_MAX_CAPTURES];
    size_t n = 0;

    for (unsigned i = 0; i < a->seg_count; i++) {
        const struct pattern_seg *s = &p->seg[a->seg_first + i];
        const char *t = p->text + s->off;
        if (n + 1 + (size_t)(s->len + 1) * wlen >= cap)
            return false;
        buf[n++] = '/';
        if (s->kind == PATTERN_PARAM || s->kind == PATTERN_ANY) {
            memcpy(buf + n, word, wlen);
            n += wlen;
            continue;
        }
        for (unsigned k = 0; k < s->len; k++) {
            if (t[k] != '*') {
                buf[n++] = t[k];
                continue;
            }
            memcpy(buf + n, word, wlen);
            n += wlen;
        }
    }
    if (n == 0)
        buf[n++] = '/';
    *len = n;
    return pattern_match(p, buf, n, scratch);
}

/* The path of the next request after m (a Location is decoded and normalised first). */
static bool rules_next_path(const struct rules_set *set, const struct rules_match *m,
                            const char *path, char *next, size_t cap, size_t *len)
{
    char target[RULES_MAX_EXPANDED];
    size_t tlen;

    if (rules_expand(set, m, path, NULL, 0, target, sizeof(target), &tlen) < 0)
        return false;
    tlen = strcspn(target, "?#");
    if (set->rule[m->rule].kind != RULES_REDIRECT) {
        memcpy(next, target, tlen);
        *len = tlen;
        return true;
    }
    return path_normalize(target, tlen, next, cap, len) == 0;
}

/* The first rule of sets[0..n) that matches path, in their order (a request tries the
 * configuration's set before the site's file): its set's index, or -1. */
static int rules_match_sets(const struct rules_set *const *sets, unsigned n, const char *path,
                            size_t plen, struct rules_match *m)
{
    for (unsigned s = 0; s < n; s++)
        if (sets[s] && rules_match(sets[s], path, plen, NULL, 0, 0, m))
            return (int)s;
    return -1;
}

/* Follow the probe path of rule i of sets[start] through sets[0..n); a path met twice is a
 * loop. (A rule met twice is not: /x/ * to /y/:splat and /y/a/ * to /x/:splat end, having
 * applied /x/ * twice.) Paths longer than RULES_PROBE_MAX are not followed. */
static int rules_check_loop(const struct rules_set *const *sets, unsigned n, unsigned start,
                            uint32_t i, const char *file, struct rules_diag *diag)
{
    char path[RULES_MAX_EXPANDED], trail[RULES_ERR_MAX / 2];
    char seen[RULES_MAX_CHAIN][RULES_PROBE_MAX];
    const struct rules_rule *by[RULES_MAX_CHAIN];
    size_t plen, tn;
    struct rules_match m;
    const struct rules_rule *first = &sets[start]->rule[i];

    if (!rules_follows(first) || !rules_probe(first, path, sizeof(path), &plen))
        return 0;
    tn = (size_t)snprintf(trail, sizeof(trail), "%.*s", (int)plen, path);
    for (unsigned step = 0; step < RULES_MAX_CHAIN && plen < RULES_PROBE_MAX; step++) {
        int s = rules_match_sets(sets, n, path, plen, &m);
        const struct rules_rule *r = s < 0 ? NULL : &sets[s]->rule[m.rule];
        if (!r || !rules_follows(r))
            return 0;
        /* A rewrite whose target falls under its own pattern serves it (see rules.h). */
        if (step > 0 && by[step - 1] == r && r->kind == RULES_REWRITE)
            return 0;
        for (unsigned k = 0; k < step; k++)
            if (strlen(seen[k]) == plen && memcmp(seen[k], path, plen) == 0) {
                snprintf(diag->error, sizeof(diag->error), "%s:%u: redirect loop: %s",
                         by[k]->file ? by[k]->file : file, by[k]->line, trail);
                return -1;
            }
        memcpy(seen[step], path, plen);
        seen[step][plen] = '\0';
        by[step] = r;
        if (!rules_next_path(sets[s], &m, path, path, sizeof(path), &plen))
            return 0;
        if (tn < sizeof(trail))
            tn += (size_t)snprintf(trail + tn, sizeof(trail) - tn, " -> %.*s", (int)plen, path);
    }
    return 0;
}

int rules_check_loops(const struct rules_set *const *sets, unsigned n, const char *file,
                      struct rules_diag *diag)
{
    for (unsigned s = 0; s < n; s++)
        for (uint32_t i = 0; sets[s] && i < sets[s]->count; i++)
            if (rules_check_loop(sets, n, s, i, file, diag) < 0)
                return -1;
    return 0;
}

int rules_finish(struct rules_set *set, const char *file, struct rules_diag *diag)
{
    if (rules_index(set) < 0) {
        snprintf(diag->error, sizeof(diag->error), "%s: out of memory", file);
        return -1;
    }
    const struct rules_set *one[1] = { set };
    return rules_check_loops(one, 1, file, diag);
}
