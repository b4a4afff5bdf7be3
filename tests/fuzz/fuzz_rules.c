/* fuzz_rules.c — libFuzzer harness over server/rules: the `_redirects` and `_headers`
 * parsers, the rule set's index and the pattern matcher.
 *
 * Input: [mode byte][file text]\0[requests], requests one a line ("path" or "path?query").
 * Mode bit 0 chooses the file (`_redirects` or `_headers`); with bit 1 set, the first line of
 * the file text is compiled as one pattern and matched against the requests directly.
 * Invariants:
 *   - never a crash, a leak or undefined behaviour (ASan, LSan, UBSan);
 *   - a refused file gives one "_redirects:LINE: reason" line (no control byte), LINE a line
 *     of it;
 *     every warning has the same form;
 *   - on a loaded set, for every request: the index's first match is a linear scan's (rule
 *     and captures), every match of a `_headers` set is the scan's list, captures lie inside
 *     the path or query, and an expanded target or header value holds no control byte (no
 *     CR, LF, NUL), a path target never starts with "//", a rewrite never climbs above '/'.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rules/rules.h"

#define FZ_MAX_REQUESTS 16

static unsigned fz_lines;   /* lines of the current file, as the parser counts them */
static const char *fz_file; /* its name */

/* "FILE:LINE: reason" with LINE in 1..fz_lines, on one line. */
static void fz_check_message(const char *msg)
{
    size_t n = strlen(fz_file);
    char *end = NULL;

    FZ_CHECK(strncmp(msg, fz_file, n) == 0 && msg[n] == ':');
    unsigned long line = strtoul(msg + n + 1, &end, 10);
    FZ_CHECK(end > msg + n + 1 && end[0] == ':' && end[1] == ' ' && end[2] != '\0');
    FZ_CHECK(line >= 1 && line <= fz_lines);
    for (const char *c = msg; *c; c++)
        FZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
}

static void fz_warn(void *arg, const char *msg)
{
    (void)arg;
    fz_check_message(msg);
}

static unsigned fz_count_lines(const char *text, size_t len)
{
    unsigned lines = 0;

    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    return lines + (len && text[len - 1] != '\n');
}

static void fz_check_captures(const struct rules_match *m, size_t plen, size_t qlen)
{
    for (unsigned s = 0; s < RULES_MAX_CAPTURES; s++)
        if (m->cap[s].set)
            FZ_CHECK((uint64_t)m->cap[s].off + m->cap[s].len <= (m->cap[s].in_query ? qlen
                                                                                     : plen));
}

static void fz_check_value(const char *v, size_t len, bool tab_ok)
{
    FZ_CHECK(strlen(v) == len);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        FZ_CHECK((c >= 0x20 && c != 0x7f) || (tab_ok && c == '\t'));
    }
}

/* The expanded target of a first match. */
static void fz_check_target(const struct rules_set *set, const struct rules_match *m,
                            const char *path, const char *q, size_t qlen)
{
    static char out[RULES_MAX_EXPANDED];
    const struct rules_rule *r = &set->rule[m->rule];
    size_t n;

    if (rules_expand(set, m, path, q, qlen, out, sizeof(out), &n) < 0)
        return;
    fz_check_value(out, n, false);
    if (r->absolute)
        return;
    FZ_CHECK(out[0] == '/' && out[1] != '/' && out[1] != '\\');
    if (r->kind == RULES_REDIRECT)
        return;
    out[strcspn(out, "?")] = '\0'; /* the path part: normalised, never "/../" nor ending "/.." */
    n = strlen(out);
    FZ_CHECK(strstr(out, "/../") == NULL && (n < 3 || strcmp(out + n - 3, "/..") != 0));
}

static void fz_redirects(const struct rules_set *set, const char *path, size_t plen,
                         const char *q, size_t qlen, unsigned flags)
{
    struct rules_match fast, slow;
    uint32_t naive = UINT32_MAX;

    for (uint32_t i = 0; i < set->count && naive == UINT32_MAX; i++)
        if (rules_match_rule(set, i, path, plen, q, qlen, flags, &slow))
            naive = i;
    bool hit = rules_match(set, path, plen, q, qlen, flags, &fast);
    FZ_CHECK(hit == (naive != UINT32_MAX));
    if (!hit)
        return;
    FZ_CHECK(fast.rule == naive && memcmp(fast.cap, slow.cap, sizeof(fast.cap)) == 0);
    fz_check_captures(&fast, plen, qlen);
    fz_check_target(set, &fast, path, q, qlen);
}

static void fz_headers(const struct rules_set *set, const char *path, size_t plen)
{
    uint32_t idx[RULES_MAX_HEADER_RULES];
    size_t n = rules_match_all(set, path, plen, idx, RULES_MAX_HEADER_RULES), k = 0;
    struct rules_match m;
    static char out[RULES_MAX_EXPANDED];

    for (uint32_t i = 0; i < set->count; i++) {
        if (!rules_match_rule(set, i, path, plen, NULL, 0, 0, &m))
            continue;
        FZ_CHECK(k < n && idx[k++] == i);
        fz_check_captures(&m, plen, 0);
        for (unsigned h = 0; h < set->rule[i].nheader; h++) {
            size_t len;
            if (rules_expand_header(set, &m, h, path, NULL, out, sizeof(out), &len) == 0)
                fz_check_value(out, len, true);
        }
    }
    FZ_CHECK(k == n);
}

/* Each request line: "path" or "path?query". */
static void fz_requests(const struct rules_set *set, const struct pattern *p, const char *req,
                        size_t len, bool headers)
{
    unsigned count = 0;

    for (size_t i = 0; i < len && count < FZ_MAX_REQUESTS; count++) {
        const char *nl = memchr(req + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - req) : len;
        const char *qm = memchr(req + i, '?', end - i);
        size_t plen = (qm ? (size_t)(qm - req) : end) - i;
        const char *q = qm ? qm + 1 : NULL;
        size_t qlen = qm ? end - (size_t)(qm - req) - 1 : 0;
        if (p) {
            struct rules_capture cap[RULES_MAX_CAPTURES];
            struct rules_match m;
            if (pattern_match(p, req + i, plen, cap)) {
                memcpy(m.cap, cap, sizeof(cap));
                fz_check_captures(&m, plen, 0);
            }
        } else if (headers) {
            fz_headers(set, req + i, plen);
        } else {
            fz_redirects(set, req + i, plen, q, qlen, count & 1 ? RULES_MATCH_FORCED_ONLY : 0);
        }
        i = end + 1;
    }
}

static void fz_pattern(const char *text, size_t len, const char *req, size_t rlen)
{
    const char *nl = memchr(text, '\n', len);
    struct rules_names names = { 0 };
    struct pattern p;
    const char *why;

    if (pattern_compile(&p, text, nl ? (size_t)(nl - text) : len, &names, &why) < 0) {
        FZ_CHECK(why != NULL && why[0] != '\0');
        return;
    }
    FZ_CHECK(p.nalt >= 1 && p.nalt <= RULES_MAX_ALTERNATIVES);
    FZ_CHECK(names.count <= RULES_MAX_CAPTURES);
    fz_requests(NULL, &p, req, rlen, false);
    pattern_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0];
    const char *text = (const char *)data + 1;
    const char *nul = memchr(text, '\0', size - 1);
    size_t tlen = nul ? (size_t)(nul - text) : size - 1;
    const char *req = nul ? nul + 1 : text + tlen;
    size_t rlen = (size_t)((const char *)data + size - req);
    bool headers = mode & 1;

    if (mode & 2) {
        fz_pattern(text, tlen, req, rlen);
        return 0;
    }
    struct rules_diag diag = { .warn = fz_warn };
    fz_file = headers ? "_headers" : "_redirects";
    fz_lines = fz_count_lines(text, tlen);
    struct rules_set *set = headers ? rules_parse_headers(fz_file, text, tlen, &diag)
                                    : rules_parse_redirects(fz_file, text, tlen, &diag);
    if (!set) {
        fz_check_message(diag.error);
        return 0;
    }
    fz_requests(set, NULL, req, rlen, headers);
    rules_free(set);
    return 0;
}
