/* pattern.c — path patterns of site rules (see pattern.h). */
#include "rules/pattern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http/path.h"

/* Check the `{..}` groups of src (balanced, not nested, not empty) and count the
 * alternatives they make. Returns the count, or 0 with *why set. */
static unsigned pattern_count_alternatives(const char *src, size_t len, const char **why)
{
    unsigned total = 1;

    for (size_t i = 0; i < len; i++) {
        if (src[i] == '}') {
            *why = "'}' without '{'";
            return 0;
        }
        if (src[i] != '{')
            continue;
        unsigned options = 1;
        size_t j = i + 1;
        for (; j < len && src[j] != '}'; j++) {
            if (src[j] == '{' || src[j] == '/') {
                *why = "'{' alternatives hold text of one segment, without '{' or '/'";
                return 0;
            }
            options += src[j] == ',';
        }
        if (j == len) {
            *why = "'{' without '}'";
            return 0;
        }
        if (j == i + 1) {
            *why = "empty '{}'";
            return 0;
        }
        total *= options;
        if (total > RULES_MAX_ALTERNATIVES) {
            *why = "more than " RULES_STR(RULES_MAX_ALTERNATIVES) " alternatives in '{..}'";
            return 0;
        }
        i = j;
    }
    return total;
}

/* Write alternative k of src (each group picks option (k / radix) % options) to out, which
 * has room for len bytes (an alternative is never longer than src). Returns its length. */
static size_t pattern_expand_one(const char *src, size_t len, unsigned k, char *out)
{
    unsigned radix = 1;
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (src[i] != '{') {
            out[n++] = src[i];
            continue;
        }
        size_t j = i + 1;
        unsigned options = 1;
        while (src[j] != '}')
            options += src[j++] == ',';
        unsigned pick = (k / radix) % options;
        radix *= options;
        size_t o = i + 1;
        for (unsigned c = 0; c < pick; o++)
            c += src[o] == ',';
        while (src[o] != ',' && src[o] != '}')
            out[n++] = src[o++];
        i = j;
    }
    return n;
}

/* Slot of name in names, added if new; RULES_NO_SLOT when full. */
static uint8_t pattern_slot(struct rules_names *names, const char *name, size_t len)
{
    for (unsigned i = 0; i < names->count; i++)
        if (strlen(names->name[i]) == len && memcmp(names->name[i], name, len) == 0)
            return (uint8_t)i;
    if (names->count == RULES_MAX_CAPTURES)
        return RULES_NO_SLOT;
    memcpy(names->name[names->count], name, len);
    names->name[names->count][len] = '\0';
    return (uint8_t)names->count++;
}

/* Kind of segment s/len, the last one of its alternative or not; -1 with *why if invalid. */
static int pattern_seg_kind(const char *s, size_t len, bool last, const char **why)
{
    if (len == 2 && s[0] == '*' && s[1] == '*')
        return PATTERN_ANY;
    if (len == 1 && s[0] == '*')
        return last ? PATTERN_ANY : PATTERN_GLOB;
    if (len > 1 && s[0] == ':') {
        for (size_t i = 1; i < len; i++)
            if (!pattern_name_char((unsigned char)s[i])) {
                *why = "a placeholder's name has letters, digits and '_' only";
                return -1;
            }
        if (len - 1 > RULES_MAX_NAME) {
            *why = "a placeholder's name is longer than " RULES_STR(RULES_MAX_NAME) " bytes";
            return -1;
        }
        if (len == 6 && memcmp(s + 1, "splat", 5) == 0) {
            *why = "':splat' is the name of the '*' capture, not a placeholder";
            return -1;
        }
        return PATTERN_PARAM;
    }
    if (memmem(s, len, "**", 2)) {
        *why = "'**' must be a whole segment";
        return -1;
    }
    return memchr(s, '*', len) ? PATTERN_GLOB : PATTERN_LITERAL;
}

/* The bytes that end every path alternative a matches (see struct pattern_alt). */
static uint16_t pattern_tail(const struct pattern *p, const struct pattern_alt *a)
{
    if (a->seg_count == 0)
        return 0;
    const struct pattern_seg *last = &p->seg[a->seg_first + a->seg_count - 1];
    if (last->kind == PATTERN_LITERAL)
        return (uint16_t)(last->len + 1);
    if (last->kind != PATTERN_GLOB)
        return 0;
    uint16_t n = 0;
    while (n < last->len && p->text[last->off + last->len - 1 - n] != '*')
        n++;
    return n;
}

/* Append alternative a (raw text in[0..len), starting with '/') to p: canonical text at
 * text + *text_len, segments at p->seg + *nseg. Returns 0 or -1 with *why. */
static int pattern_add_alt(struct pattern *p, const char *in, size_t len, size_t *text_len,
                           unsigned *nseg, struct rules_names *names, const char **why)
{
    struct pattern_alt *a = &p->alt[p->nalt];
    bool splat_taken = false;

    a->text_off = (uint16_t)*text_len;
    a->seg_first = (uint16_t)*nseg;
    for (size_t i = 0; i < len;) {
        while (i < len && in[i] == '/')
            i++;
        size_t start = i;
        while (i < len && in[i] != '/')
            i++;
        if (i == start)
            break;
        size_t j = i;
        while (j < len && in[j] == '/')
            j++;
        int kind = pattern_seg_kind(in + start, i - start, j == len, why);
        if (kind < 0)
            return -1;
        if (*nseg - a->seg_first == RULES_MAX_SEGMENTS) {
            *why = "more than " RULES_STR(RULES_MAX_SEGMENTS) " segments";
            return -1;
        }
        struct pattern_seg *s = &p->seg[(*nseg)++];
        p->text[(*text_len)++] = '/';
        s->kind = (uint8_t)kind;
        s->off = (uint16_t)*text_len;
        s->len = (uint16_t)(i - start);
        s->slot = RULES_NO_SLOT;
        memcpy(p->text + *text_len, in + start, i - start);
        *text_len += i - start;
        bool captures = kind == PATTERN_PARAM || (kind != PATTERN_LITERAL && !splat_taken);
        if (kind == PATTERN_PARAM)
            s->slot = pattern_slot(names, in + start + 1, i - start - 1);
        else if (captures)
            s->slot = p->splat = pattern_slot(names, "splat", 5);
        splat_taken |= kind == PATTERN_ANY || kind == PATTERN_GLOB;
        if (captures && s->slot == RULES_NO_SLOT) {
            *why = "more than " RULES_STR(RULES_MAX_CAPTURES) " captures";
            return -1;
        }
    }
    a->text_len = (uint16_t)(*text_len - a->text_off);
    a->seg_count = (uint16_t)(*nseg - a->seg_first);
    a->tail_len = pattern_tail(p, a);
    p->nalt++;
    return 0;
}

/* Percent-decode src into dec (RULES_MAX_PATTERN + 1 bytes); 0 or -1 with *why. */
static int pattern_decode(const char *src, size_t len, char *dec, size_t *dlen, const char **why)
{
    int rc = path_percent_decode(src, len, dec, RULES_MAX_PATTERN + 1, dlen);

    if (rc == -ENAMETOOLONG) {
        *why = "pattern longer than " RULES_STR(RULES_MAX_PATTERN) " bytes";
        return -1;
    }
    if (rc < 0) {
        *why = "invalid percent-escape in the pattern";
        return -1;
    }
    for (size_t i = 0; i < *dlen; i++)
        if ((unsigned char)dec[i] < 0x20 || dec[i] == 0x7f) {
            *why = "control byte in the pattern";
            return -1;
        }
    if (*dlen == 0 || dec[0] != '/') {
        *why = "a pattern starts with '/'";
        return -1;
    }
    return 0;
}

int pattern_compile(struct pattern *p, const char *src, size_t len, struct rules_names *names,
                    const char **why)
{
    char dec[RULES_MAX_PATTERN + 1], alt[RULES_MAX_PATTERN + 1];
    size_t dlen, text_len = 0;
    unsigned nseg = 0, n;

    memset(p, 0, sizeof(*p));
    p->splat = RULES_NO_SLOT;
    if (pattern_decode(src, len, dec, &dlen, why) < 0)
        return -1;
    n = pattern_count_alternatives(dec, dlen, why);
    if (n == 0)
        return -1;
    /* An alternative's canonical text is never longer than the decoded pattern plus one '/'
     * per segment that had none before it (none: every segment had one). */
    p->text = malloc(n * (dlen + 1));
    p->seg = malloc(n * RULES_MAX_SEGMENTS * sizeof(*p->seg));
    if (!p->text || !p->seg) {
        *why = "out of memory";
        goto fail;
    }
    for (unsigned k = 0; k < n; k++) {
        size_t alen = pattern_expand_one(dec, dlen, k, alt);
        if (pattern_add_alt(p, alt, alen, &text_len, &nseg, names, why) < 0)
            goto fail;
    }
    return 0;
fail:
    pattern_free(p);
    return -1;
}

void pattern_free(struct pattern *p)
{
    free(p->text);
    free(p->seg);
    memset(p, 0, sizeof(*p));
    p->splat = RULES_NO_SLOT;
}

/* Glob g/k (bytes and `*`) against segment s/m. With cap, the first `*`'s run is stored there
 * (off relative to s). Backtracks only to the latest `*`: a later `*` can absorb whatever an
 * earlier one would have taken beyond its shortest run. */
static bool pattern_glob(const char *g, size_t k, const char *s, size_t m,
                         struct rules_capture *cap)
{
    size_t i = 0, j = 0, mark = 0, star = SIZE_MAX, first = SIZE_MAX;

    while (i < m) {
        if (j < k && g[j] == '*') {
            if (first == SIZE_MAX) {
                first = j;
                if (cap)
                    *cap = (struct rules_capture){ (uint32_t)i, 0, false, true };
            }
            star = j++;
            mark = i;
        } else if (j < k && g[j] == s[i]) {
            i++;
            j++;
        } else if (star != SIZE_MAX) {
            j = star + 1;
            i = ++mark;
            if (cap && star == first)
                cap->len = (uint32_t)(mark - cap->off);
        } else {
            return false;
        }
    }
    while (j < k && g[j] == '*') {
        if (first == SIZE_MAX && cap)
            *cap = (struct rules_capture){ (uint32_t)m, 0, false, true };
        first = j++;
    }
    return j == k;
}

/* Segment pattern s against the path's segment path[off..off+m). */
static bool pattern_seg_match(const struct pattern *p, const struct pattern_seg *s,
                              const char *path, size_t off, size_t m, struct rules_capture *cap)
{
    const char *t = p->text + s->off;

    switch (s->kind) {
    case PATTERN_LITERAL:
        return m == s->len && memcmp(t, path + off, m) == 0;
    case PATTERN_PARAM:
        if (m == 0)
            return false;
        cap[s->slot] = (struct rules_capture){ (uint32_t)off, (uint32_t)m, false, true };
        return true;
    default: {
        struct rules_capture *c = s->slot == RULES_NO_SLOT ? NULL : &cap[s->slot];
        if (!pattern_glob(t, s->len, path + off, m, c))
            return false;
        if (c)
            c->off += (uint32_t)off;
        return true;
    }
    }
}

/* End of the segment that starts after the '/' at pos. */
static size_t pattern_next(const char *path, size_t end, size_t pos)
{
    const char *slash = memchr(path + pos + 1, '/', end - pos - 1);

    return slash ? (size_t)(slash - path) : end;
}

/* Alternative a against path[0..end) (end from pattern_path_end). A `**` records where it
 * began; on backtracking it takes one more segment. */
static bool pattern_alt_match(const struct pattern *p, const struct pattern_alt *a,
                              const char *path, size_t end, struct rules_capture *cap)
{
    const struct pattern_seg *seg = p->seg + a->seg_first;
    size_t pos = 0, star_pos = 0, star_begin = 0;
    unsigned pi = 0, n = a->seg_count, star = UINT32_MAX;

    for (;;) {
        if (pi < n && seg[pi].kind == PATTERN_ANY) {
            if (seg[pi].slot != RULES_NO_SLOT)
                cap[seg[pi].slot] = (struct rules_capture){ (uint32_t)pos, 0, false, true };
            star = pi++;
            star_pos = star_begin = pos;
            continue;
        }
        if (pos >= end && pi == n)
            return true;
        if (pos < end && pi < n) {
            size_t next = pattern_next(path, end, pos);
            if (pattern_seg_match(p, &seg[pi], path, pos + 1, next - pos - 1, cap)) {
                pos = next;
                pi++;
                continue;
            }
        }
        if (star == UINT32_MAX || star_pos >= end)
            return false;
        pos = star_pos = pattern_next(path, end, star_pos);
        pi = star + 1;
        if (seg[star].slot != RULES_NO_SLOT)
            cap[seg[star].slot] = (struct rules_capture){ (uint32_t)star_begin + 1,
                                                          (uint32_t)(pos - star_begin - 1),
                                                          false, true };
    }
}

bool pattern_match(const struct pattern *p, const char *path, size_t len,
                   struct rules_capture *cap)
{
    if (len == 0 || path[0] != '/')
        return false;
    size_t end = len == 1 ? 0 : pattern_path_end(path, len);

    for (unsigned i = 0; i < p->nalt; i++) {
        const struct pattern_alt *a = &p->alt[i];
        const char *tail = p->text + a->text_off + a->text_len - a->tail_len;
        if (end < a->tail_len || memcmp(path + end - a->tail_len, tail, a->tail_len) != 0)
            continue;
        memset(cap, 0, RULES_MAX_CAPTURES * sizeof(*cap));
        if (!pattern_alt_match(p, a, path, end, cap))
            continue;
        /* A splat that runs to the end keeps the path's trailing '/', so that a directory
         * stays a directory in the target. */
        struct rules_capture *splat = p->splat == RULES_NO_SLOT ? NULL : &cap[p->splat];
        if (splat && splat->set && splat->len && splat->off + splat->len == end && end < len)
            splat->len++;
        return true;
    }
    return false;
}

enum pattern_class pattern_classify(const struct pattern *p, unsigned i, const char **key,
                                    size_t *key_len, bool *bucketed)
{
    const struct pattern_alt *a = &p->alt[i];
    const struct pattern_seg *seg = p->seg + a->seg_first;
    unsigned n = a->seg_count, lit = 0;

    while (lit < n && seg[lit].kind == PATTERN_LITERAL)
        lit++;
    *bucketed = false;
    *key = p->text + a->text_off;
    if (lit == n) {
        *key_len = a->text_len;
        return PATTERN_EXACT;
    }
    if (lit == n - 1 && seg[lit].kind == PATTERN_ANY) {
        *key_len = seg[lit].off - 1 - a->text_off;
        return PATTERN_PREFIX;
    }
    *key_len = 0;
    if (lit > 0) {
        *key = p->text + seg[0].off;
        *key_len = seg[0].len;
        *bucketed = true;
    }
    return PATTERN_DYNAMIC;
}
