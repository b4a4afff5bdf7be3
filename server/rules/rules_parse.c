/* rules_parse.c — the `_redirects` and `_headers` files (see rules.h).
 *
 * `_redirects`: one rule a line, fields separated by blanks:
 *     FROM [KEY=VALUE | KEY=:name ...] TO [STATUS[!]] [Condition=value ...]
 * STATUS defaults to 301 (Netlify's default); `!` forces the rule over an existing file.
 * Conditions lfhttpd cannot evaluate (Country, Language, Role, Cookie) skip the rule with a
 * warning, as do patterns of another host (http://host/...), which need the Host to match.
 *
 * `_headers`: a path pattern on a line of its own, then indented `Name: value` lines, or
 * `! Name` to detach a header an earlier matching rule set (Cloudflare Pages' syntax).
 *
 * In both, a line whose first non-blank byte is '#' is a comment, blank lines are ignored, a
 * line may end in CRLF, a UTF-8 byte order mark at the start is skipped, and every mistake is
 * refused with "FILE:LINE: reason" (control bytes of a quoted field shown as '?').
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rules/rules_internal.h"

#define RULES_MAX_FIELDS 16     /* fields of one `_redirects` line */
#define RULES_QUOTE      60     /* bytes of a field quoted in a message */
#define RULES_BOM        "\xef\xbb\xbf" /* UTF-8's byte order mark, skipped at the start */

struct rules_parser {
    struct rules_set *set;
    const char *file;
    unsigned line;
    struct rules_diag *diag;
    struct rules_rule *cur;     /* `_headers`: the rule whose header lines follow */
    bool skipping;              /* `_headers`: the header lines of a skipped rule follow */
};

/* "FILE:LINE: reason" into out/cap (a long reason is cut). */
static void rules_format(const struct rules_parser *ps, char *out, size_t cap, const char *fmt,
                         va_list ap) __attribute__((format(printf, 4, 0)));
static void rules_format(const struct rules_parser *ps, char *out, size_t cap, const char *fmt,
                         va_list ap)
{
    int n = snprintf(out, cap, "%s:%u: ", ps->file, ps->line);

    if (n >= 0 && (size_t)n < cap)
        vsnprintf(out + n, cap - (size_t)n, fmt, ap);
    /* A quoted field may hold any byte of the file: never a control byte in a log line. */
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

static int rules_error(struct rules_parser *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int rules_error(struct rules_parser *ps, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rules_format(ps, ps->diag->error, sizeof(ps->diag->error), fmt, ap);
    va_end(ap);
    return -1;
}

static void rules_warn(struct rules_parser *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rules_warn(struct rules_parser *ps, const char *fmt, ...)
{
    char msg[RULES_ERR_MAX];
    va_list ap;

    va_start(ap, fmt);
    rules_format(ps, msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (ps->diag->warn)
        ps->diag->warn(ps->diag->arg, msg);
}

static bool rules_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* True for a condition lfhttpd cannot evaluate (it needs geography, identity or cookies). */
static bool rules_unsupported_condition(const char *f)
{
    static const char *const names[] = { "Country=", "Language=", "Role=", "Cookie=" };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strncasecmp(f, names[i], strlen(names[i])) == 0)
            return true;
    return false;
}

static bool rules_is_url(const char *f)
{
    static const char http[] = "http://", https[] = "https://";

    return strncmp(f, http, sizeof(http) - 1) == 0 || strncmp(f, https, sizeof(https) - 1) == 0;
}

/* STATUS[!]: true with *status and *force when f is one. */
static bool rules_status_field(const char *f, unsigned *status, bool *force)
{
    size_t d = strspn(f, "0123456789");

    if (d == 0 || d > 3 || (f[d] != '\0' && strcmp(f + d, "!") != 0))
        return false;
    *status = (unsigned)atoi(f);
    *force = f[d] == '!';
    return true;
}

static char *rules_strdup(const char *s, size_t len)
{
    char *d = malloc(len + 1);

    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

/* `KEY=VALUE` or `KEY=:name` of a rule's query conditions. */
static int rules_query_field(struct rules_parser *ps, struct rules_rule *r, const char *f)
{
    const char *eq = strchr(f, '=');
    struct rules_query *c = &r->query[r->nquery];

    if (eq == f || eq[1] == '\0')
        return rules_error(ps, "query condition '%.*s' is not KEY=VALUE or KEY=:name",
                           RULES_QUOTE, f);
    if (r->nquery == RULES_MAX_QUERY)
        return rules_error(ps, "more than %d query conditions", RULES_MAX_QUERY);
    const char *v = eq + 1;
    size_t vlen = strlen(v);
    c->slot = RULES_NO_SLOT;
    if (v[0] == ':') {
        size_t n = 0;
        while (pattern_name_char((unsigned char)v[1 + n]))
            n++;
        if (n == 0 || n != vlen - 1 || n > RULES_MAX_NAME || strcmp(v, ":splat") == 0)
            return rules_error(ps, "query capture '%.*s' is not ':name'", RULES_QUOTE, v);
        unsigned before = r->names.count;
        for (unsigned i = 0; i < before; i++)
            if (strcmp(r->names.name[i], v + 1) == 0)
                return rules_error(ps, "'%s' is captured twice", v);
        if (before == RULES_MAX_CAPTURES)
            return rules_error(ps, "more than %d captures", RULES_MAX_CAPTURES);
        memcpy(r->names.name[before], v + 1, n + 1);
        c->slot = (uint8_t)r->names.count++;
    }
    c->key = rules_strdup(f, (size_t)(eq - f));
    c->value = c->slot == RULES_NO_SLOT ? rules_strdup(v, vlen) : NULL;
    r->nquery++;
    if (!c->key || (c->slot == RULES_NO_SLOT && !c->value))
        return rules_error(ps, "out of memory");
    return 0;
}

/* The kind of a status, or -1. */
static int rules_kind_of(unsigned status)
{
    if (status == 200)
        return RULES_REWRITE;
    if (status == 301 || status == 302 || status == 303 || status == 307 || status == 308)
        return RULES_REDIRECT;
    if (status >= 400 && status <= 599)
        return RULES_STATUS;
    return -1;
}

/* TO of a `_redirects` rule, with its status known. */
static int rules_target(struct rules_parser *ps, struct rules_rule *r, const char *to)
{
    size_t len = strlen(to);

    r->absolute = rules_is_url(to);
    if (to[0] != '/' && !r->absolute)
        return rules_error(ps, "target '%.*s' is neither a path nor an http(s) URL",
                           RULES_QUOTE, to);
    if (len >= RULES_MAX_TARGET)
        return rules_error(ps, "target longer than %d bytes", RULES_MAX_TARGET - 1);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)to[i] < 0x20 || to[i] == 0x7f)
            return rules_error(ps, "control byte in the target");
    if (to[0] == '/' && (to[1] == '/' || to[1] == '\\'))
        return rules_error(ps, "target '%.*s' names another host: write http(s)://",
                           RULES_QUOTE, to);
    if (r->kind != RULES_REDIRECT && r->absolute)
        return rules_error(ps, "status %u needs a path of this site as target (lfhttpd does "
                           "not proxy)", r->status);
    if (r->kind != RULES_REDIRECT && strchr(to, '#'))
        return rules_error(ps, "a rewrite or error page target has no fragment ('#')");
    r->to = rules_strdup(to, len);
    r->keep_query = r->nquery == 0 && !strchr(to, '?');
    return r->to ? 0 : rules_error(ps, "out of memory");
}

/* STATUS[!] and conditions after TO (f[0..n)). */
static int rules_tail(struct rules_parser *ps, struct rules_rule *r, char **f, unsigned n)
{
    unsigned k = 0;

    r->status = 301;
    if (k < n && rules_status_field(f[k], &r->status, &r->force))
        k++;
    int kind = rules_kind_of(r->status);
    if (kind < 0)
        return rules_error(ps, "status %u is neither a redirect (301, 302, 303, 307, 308), a "
                           "rewrite (200) nor an error (4xx, 5xx)", r->status);
    r->kind = (enum rules_kind)kind;
    if (k < n && strchr(f[k], '='))
        return rules_error(ps, "unknown condition '%.*s'", RULES_QUOTE, f[k]);
    if (k < n)
        return rules_error(ps, "unexpected '%.*s' after the target", RULES_QUOTE, f[k]);
    return 0;
}

/* Count the rule as static (exact, prefix) or dynamic, within the bounds. */
static int rules_count(struct rules_parser *ps, const struct rules_rule *r)
{
    bool dynamic = false;

    for (unsigned a = 0; a < r->from.nalt; a++) {
        const char *key;
        size_t klen;
        bool bucketed;
        dynamic |= pattern_classify(&r->from, a, &key, &klen, &bucketed) == PATTERN_DYNAMIC;
    }
    if (dynamic && ++ps->set->ndynamic > RULES_MAX_DYNAMIC)
        return rules_error(ps, "more than %d rules with placeholders or wildcards",
                           RULES_MAX_DYNAMIC);
    if (!dynamic && ++ps->set->nstatic > RULES_MAX_STATIC)
        return rules_error(ps, "more than %d exact and prefix rules", RULES_MAX_STATIC);
    return 0;
}

/* Split line into blank-separated fields (in place). Returns the count, or -1 if too many. */
static int rules_fields(char *line, char **f)
{
    int n = 0;

    for (char *p = line; *p;) {
        while (rules_blank(*p))
            p++;
        if (!*p)
            break;
        if (n == RULES_MAX_FIELDS)
            return -1;
        f[n++] = p;
        while (*p && !rules_blank(*p))
            p++;
        if (*p)
            *p++ = '\0';
    }
    return n;
}

/* Whether the rule is one lfhttpd skips (with a warning): a pattern of a host, a proxy (a 200
 * to another server's URL: Netlify's and Cloudflare's files have them, and lfhttpd serves
 * files), or a condition it cannot evaluate after the target (or after the status of a rule
 * without one). */
static bool rules_skipped(struct rules_parser *ps, char **f, int n)
{
    unsigned status;
    bool force;
    int t = 1;

    if (rules_is_url(f[0])) {
        rules_warn(ps, "pattern '%.*s' is for a host: rules of a host are not supported; rule "
                   "skipped", RULES_QUOTE, f[0]);
        return true;
    }
    while (t < n && f[t][0] != '/' && !rules_is_url(f[t]) &&
           !rules_status_field(f[t], &status, &force))
        t++;
    if (t + 1 < n && rules_is_url(f[t]) && rules_status_field(f[t + 1], &status, &force) &&
        status == 200) {
        rules_warn(ps, "status 200 to '%.*s' is a proxy, and lfhttpd does not proxy; rule "
                   "skipped", RULES_QUOTE, f[t]);
        return true;
    }
    for (int k = t + 1; k < n; k++)
        if (rules_unsupported_condition(f[k])) {
            rules_warn(ps, "condition '%.*s' cannot be evaluated by lfhttpd; rule skipped",
                       RULES_QUOTE, f[k]);
            return true;
        }
    return false;
}

static int rules_redirect_line(struct rules_parser *ps, char *line, size_t len)
{
    char *f[RULES_MAX_FIELDS];
    size_t lead = strspn(line, " \t");
    int n, k = 1;
    const char *why;
    (void)len;

    if (line[lead] == '\0' || line[lead] == '#')
        return 0; /* before splitting: a comment may have any number of words */
    n = rules_fields(line, f);
    if (n < 0)
        return rules_error(ps, "more than %d fields", RULES_MAX_FIELDS);
    if (n == 0)
        return 0; /* not reached: the line has a non-blank byte */
    if (rules_skipped(ps, f, n))
        return 0;
    struct rules_rule *r = rules_append(ps->set);
    if (!r)
        return rules_error(ps, "out of memory");
    r->line = ps->line;
    if (pattern_compile(&r->from, f[0], strlen(f[0]), &r->names, &why) < 0)
        return rules_error(ps, "pattern '%.*s': %s", RULES_QUOTE, f[0], why);
    for (; k < n && f[k][0] != '/' && !rules_is_url(f[k]) && strchr(f[k], '='); k++)
        if (rules_query_field(ps, r, f[k]) < 0)
            return -1;
    if (k == n || rules_status_field(f[k], &r->status, &r->force))
        return rules_error(ps, "missing target after '%.*s'", RULES_QUOTE, f[k - 1]);
    if (rules_tail(ps, r, f + k + 1, (unsigned)(n - k - 1)) < 0 ||
        rules_target(ps, r, f[k]) < 0)
        return -1;
    return rules_count(ps, r);
}

/* Feed every line of text to fn, with its number in ps->line; CRLF ends a line too. */
static int rules_lines(struct rules_parser *ps, const char *text, size_t len,
                       int (*fn)(struct rules_parser *, char *, size_t))
{
    char buf[RULES_MAX_LINE + 1];

    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - i;
        ps->line++;
        if (n > 0 && text[end - 1] == '\r')
            n--;
        if (n > RULES_MAX_LINE)
            return rules_error(ps, "line longer than %d bytes", RULES_MAX_LINE);
        if (memchr(text + i, '\0', n))
            return rules_error(ps, "NUL byte in the line");
        memcpy(buf, text + i, n);
        buf[n] = '\0';
        if (fn(ps, buf, n) < 0)
            return -1;
        i = end + 1;
    }
    return 0;
}

static struct rules_set *rules_parse(const char *file, const char *text, size_t len,
                                     struct rules_diag *diag,
                                     int (*fn)(struct rules_parser *, char *, size_t),
                                     int (*end)(struct rules_parser *))
{
    struct rules_parser ps = { rules_set_new(), file, 0, diag, NULL, false };

    diag->error[0] = '\0';
    if (len >= sizeof(RULES_BOM) - 1 && memcmp(text, RULES_BOM, sizeof(RULES_BOM) - 1) == 0) {
        text += sizeof(RULES_BOM) - 1; /* editors that save UTF-8 with a mark */
        len -= sizeof(RULES_BOM) - 1;
    }
    if (!ps.set) {
        snprintf(diag->error, sizeof(diag->error), "%s: out of memory", file);
        return NULL;
    }
    if (rules_lines(&ps, text, len, fn) < 0 || (end && end(&ps) < 0) ||
        rules_finish(ps.set, file, diag) < 0) {
        rules_free(ps.set);
        return NULL;
    }
    return ps.set;
}

struct rules_set *rules_parse_redirects(const char *file, const char *text, size_t len,
                                        struct rules_diag *diag)
{
    return rules_parse(file, text, len, diag, rules_redirect_line, NULL);
}

/* ---- `_headers` ---- */

static bool rules_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Headers that frame the message or belong to the connection: the server's alone. */
static bool rules_reserved_header(const char *name)
{
    static const char *const reserved[] = {
        "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "TE",
        "Trailer", "Proxy-Connection",
    };

    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcasecmp(name, reserved[i]) == 0)
            return true;
    return false;
}

static int rules_header_name(struct rules_parser *ps, const char *name, size_t len)
{
    if (len == 0)
        return rules_error(ps, "header line without a name");
    for (size_t i = 0; i < len; i++)
        if (!rules_tchar((unsigned char)name[i]))
            return rules_error(ps, "invalid header name '%.*s'", (int)(len < RULES_QUOTE ?
                               len : RULES_QUOTE), name);
    return 0;
}

/* An indented line: `Name: value` or `! Name`, added to the current rule. */
static int rules_header_line(struct rules_parser *ps, char *s)
{
    struct rules_rule *r = ps->cur;
    char *value = NULL, *name = s;
    size_t nlen;

    if (r->nheader == RULES_MAX_HEADERS)
        return rules_error(ps, "more than %d headers for one pattern", RULES_MAX_HEADERS);
    if (s[0] == '!') {
        name = s + 1 + strspn(s + 1, " \t");
        nlen = strlen(name);
    } else {
        char *colon = strchr(s, ':');
        if (!colon)
            return rules_error(ps, "header line without ':' (Name: value, or ! Name)");
        nlen = (size_t)(colon - s);
        value = colon + 1 + strspn(colon + 1, " \t");
        if (*value == '\0')
            return rules_error(ps, "header '%.*s' without a value", (int)nlen, s);
        for (char *v = value; *v; v++)
            if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f)
                return rules_error(ps, "control byte in the value of header '%.*s'",
                                   (int)nlen, s);
    }
    if (rules_header_name(ps, name, nlen) < 0)
        return -1;
    name[nlen] = '\0';
    if (rules_reserved_header(name))
        return rules_error(ps, "header '%s' is the server's to send", name);
    struct rules_header *h = realloc(r->header, (r->nheader + 1) * sizeof(*h));
    if (!h)
        return rules_error(ps, "out of memory");
    r->header = h;
    h += r->nheader++;
    h->name = rules_strdup(name, nlen);
    h->value = value ? rules_strdup(value, strlen(value)) : NULL;
    if (!h->name || (value && !h->value))
        return rules_error(ps, "out of memory");
    return 0;
}

/* The end of a rule's header lines: it must have had one. */
static int rules_headers_end(struct rules_parser *ps)
{
    if (ps->cur && ps->cur->nheader == 0) {
        ps->line = ps->cur->line;
        return rules_error(ps, "no header lines under the pattern");
    }
    ps->cur = NULL;
    return 0;
}

/* A pattern line of `_headers`: starts a rule. */
static int rules_headers_pattern(struct rules_parser *ps, char *s, size_t len)
{
    const char *why;

    if (rules_headers_end(ps) < 0)
        return -1;
    ps->skipping = false;
    while (len > 0 && rules_blank(s[len - 1]))
        s[--len] = '\0';
    if (strpbrk(s, " \t"))
        return rules_error(ps, "a path pattern is one field: '%.*s'", RULES_QUOTE, s);
    if (rules_is_url(s)) {
        rules_warn(ps, "pattern '%.*s' is for a host: rules of a host are not supported; "
                   "rule skipped", RULES_QUOTE, s);
        ps->skipping = true;
        return 0;
    }
    if (ps->set->count == RULES_MAX_HEADER_RULES)
        return rules_error(ps, "more than %d rules", RULES_MAX_HEADER_RULES);
    struct rules_rule *r = rules_append(ps->set);
    if (!r)
        return rules_error(ps, "out of memory");
    r->kind = RULES_HEADERS;
    r->line = ps->line;
    if (pattern_compile(&r->from, s, len, &r->names, &why) < 0)
        return rules_error(ps, "pattern '%.*s': %s", RULES_QUOTE, s, why);
    ps->cur = r;
    return 0;
}

static int rules_headers_line(struct rules_parser *ps, char *line, size_t len)
{
    size_t lead = strspn(line, " \t");

    if (line[lead] == '\0' || line[lead] == '#')
        return 0;
    if (lead == 0)
        return rules_headers_pattern(ps, line, len);
    if (ps->skipping)
        return 0;
    if (!ps->cur)
        return rules_error(ps, "header line before any path pattern");
    while (len > lead && rules_blank(line[len - 1]))
        line[--len] = '\0';
    return rules_header_line(ps, line + lead);
}

struct rules_set *rules_parse_headers(const char *file, const char *text, size_t len,
                                      struct rules_diag *diag)
{
    return rules_parse(file, text, len, diag, rules_headers_line, rules_headers_end);
}

/* ---- one rule at a time (a configuration's directives) ---- */

struct rules_set *rules_new(void)
{
    return rules_set_new();
}

int rules_add_redirect(struct rules_set *set, const char *file, unsigned line, const char *text,
                       struct rules_diag *diag)
{
    struct rules_parser ps = { set, file, line, diag, NULL, false };
    char buf[RULES_MAX_LINE + 1];
    size_t len = strlen(text);
    uint32_t before = set->count;

    diag->error[0] = '\0';
    if (len > RULES_MAX_LINE)
        return rules_error(&ps, "rule longer than %d bytes", RULES_MAX_LINE);
    memcpy(buf, text, len + 1);
    if (rules_redirect_line(&ps, buf, len) < 0)
        return -1;
    if (set->count > before)
        set->rule[set->count - 1].file = file;
    return 0;
}

int rules_add_header(struct rules_set *set, const char *file, unsigned line,
                     const char *pattern, const char *name, const char *value,
                     struct rules_diag *diag)
{
    struct rules_parser ps = { set, file, line, diag, NULL, false };
    char pat[RULES_MAX_LINE + 1], hdr[RULES_MAX_LINE + 1];
    size_t plen = strlen(pattern), nlen = strlen(name), vlen = strlen(value);

    diag->error[0] = '\0';
    if (plen > RULES_MAX_LINE || nlen + vlen + 2 > RULES_MAX_LINE)
        return rules_error(&ps, "rule longer than %d bytes", RULES_MAX_LINE);
    if (rules_header_name(&ps, name, nlen) < 0)
        return -1;
    memcpy(pat, pattern, plen + 1);
    memcpy(hdr, name, nlen);
    memcpy(hdr + nlen, ": ", 2);
    memcpy(hdr + nlen + 2, value, vlen + 1);
    if (rules_headers_pattern(&ps, pat, plen) < 0)
        return -1;
    if (ps.skipping)
        return 0;
    ps.cur->file = file;
    if (rules_header_line(&ps, hdr) < 0)
        return -1;
    return rules_headers_end(&ps);
}

int rules_done(struct rules_set *set, struct rules_diag *diag)
{
    return rules_finish(set, "", diag);
}
