/* rules.h — site rules: redirects, rewrites, error pages and headers chosen by path pattern,
 * loaded from Netlify-style `_redirects` and `_headers` files.
 *
 * What it does. A rule set is loaded once (rules_parse_redirects, rules_parse_headers) and is
 * then immutable: any number of threads may match against it at once. Matching a request (a
 * decoded, normalised path and the raw query string) never allocates and never locks; the
 * answer is a rule index and its captures, views into the caller's path and query held in a
 * fixed array of the caller's struct rules_match. rules_expand then writes the rule's target
 * (a Location, or the internal path of a rewrite or an error page) into the caller's buffer,
 * and rules_expand_header a header value of a `_headers` rule.
 *
 * Matching order. `_redirects`: the first rule in file order whose pattern matches, whose query
 * conditions hold and which is not shadowed (RULES_MATCH_FORCED_ONLY: a file exists at the
 * path, so only rules written with `!` apply). `_headers`: every matching rule, in file order.
 *
 * Data structures (built at load, read-only afterwards). Every alternative of every pattern is
 * classified (pattern.h): an exact path goes into a hash table keyed by the path; a literal
 * prefix followed by a splat (`/old/ *`) into a second table keyed by the prefix; everything
 * else (globs, placeholders) into buckets keyed by its first segment when that is literal, or
 * into one list of "wild" rules. A table slot holds the indices of its rules in file order.
 * A match hashes the whole path once (exact), every prefix of it at a segment boundary
 * (prefixes: the hash is computed incrementally, so the path is read once), and its first
 * segment (buckets); the candidates of each list are taken in file order and the best one so
 * far bounds the rest, so that the result is the first match of a linear scan (a property
 * test checks exactly that). Only dynamic candidates run the pattern matcher, and that first
 * compares the literal end of a pattern's last segment with the end of the path, which keeps
 * rules that begin with a wildcard cheap to pass over; the winner runs the matcher once more
 * to fill its captures.
 *
 * Bounds (the limits of Cloudflare Pages, which keeps files portable): RULES_MAX_STATIC exact
 * and prefix rules plus RULES_MAX_DYNAMIC others per `_redirects` file, RULES_MAX_HEADER_RULES
 * rules and RULES_MAX_HEADERS headers per rule in `_headers`, RULES_MAX_LINE bytes per line,
 * RULES_MAX_QUERY query conditions, the pattern bounds of pattern.h, RULES_MAX_TARGET bytes
 * of a target as written and RULES_MAX_EXPANDED of a rewrite's target as expanded.
 *
 * Chains and loops. A redirect sends the browser back with a new path: a new request, matched
 * afresh. A rewrite's target is matched again by the caller, at most RULES_MAX_CHAIN times
 * per request, except against the rule that rewrote it: a rule whose target falls under its
 * own pattern (`/app/ *` to /app/index.html) serves its target. Loops are refused at load
 * where they can be seen: every redirect or forced rewrite without query conditions is
 * followed, from a probe path that it matches (its wildcards and placeholders filled with one
 * word), through the rules themselves for up to RULES_MAX_CHAIN steps (a rewrite without `!`
 * ends a chain: its target is meant to be a file, and a file shadows such rules).
 *
 * Files: pattern.[ch] (compiling and matching one pattern), rules.c (the set, its index, the
 * targets, loops), rules_parse.c (the two file formats), rules_internal.h (between the two).
 */
#ifndef LF_RULES_RULES_H
#define LF_RULES_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rules/pattern.h"

#define RULES_MAX_STATIC       2000 /* exact and prefix rules of one file */
#define RULES_MAX_DYNAMIC      100  /* other rules (globs, placeholders) of one file */
#define RULES_MAX_HEADER_RULES 100  /* rules of one `_headers` file */
#define RULES_MAX_HEADERS      32   /* header lines of one `_headers` rule */
#define RULES_MAX_LINE         2000 /* bytes of one line, without its end */
#define RULES_MAX_QUERY        4    /* query conditions of one rule */
#define RULES_MAX_TARGET       1024 /* bytes of a target as written, with its NUL */
#define RULES_MAX_EXPANDED     4096 /* bytes of an expanded rewrite target, with its NUL */
#define RULES_MAX_CHAIN        8    /* rewrites a caller follows for one request, at most;
                                     * also how far loops are looked for at load */
#define RULES_ERR_MAX          320  /* bytes of a "FILE:LINE: reason" message */

enum rules_kind {
    RULES_REDIRECT,   /* 301, 302, 303, 307, 308: Location = the target */
    RULES_REWRITE,    /* 200: serve the target path instead, the client sees nothing */
    RULES_STATUS,     /* 4xx, 5xx (404, 410 gone, ...): that status, with the target page */
    RULES_HEADERS,    /* a `_headers` rule */
};

/* A query condition: `key=:name` (present; its raw value captured) or `key=value` (present
 * with exactly that raw value). */
struct rules_query {
    char *key;
    char *value;          /* NULL for a capture */
    uint8_t slot;
};

/* A header of a `_headers` rule: set (value) or detach (`! Name`: value NULL). */
struct rules_header {
    char *name;
    char *value;
};

/* One rule; read-only once loaded. */
struct rules_rule {
    enum rules_kind kind;
    unsigned status;       /* 0 for RULES_HEADERS */
    bool force;            /* `!`: applies even where a file exists */
    bool keep_query;       /* append the request's query to the target */
    bool absolute;         /* the target is an http(s) URL */
    unsigned line;         /* in its file, for messages */
    const char *file;      /* its file, when rules of several files share a set (rules_add_*);
                            * NULL: the set's one file. Not owned: it outlives the load */
    struct pattern from;
    struct rules_names names;
    char *to;              /* target as written (NULL for RULES_HEADERS) */
    struct rules_query query[RULES_MAX_QUERY];
    unsigned nquery;
    struct rules_header *header;
    unsigned nheader;
};

/* Bit of a key length in a set's filters: one bit per length up to 62, bit 63 for all longer
 * ones; and the class of a key's byte (eight, by its low bits: a key of the set and a path
 * must agree on both before a table is hashed into). */
#define RULES_LEN_BIT(n)        (UINT64_C(1) << ((n) < 63 ? (n) : 63))
#define RULES_FILTER_CLASSES    8
#define RULES_FILTER_CLASS(c)   ((unsigned char)(c) & (RULES_FILTER_CLASSES - 1))

struct rules_table;

struct rules_set {
    struct rules_rule *rule;
    uint32_t count, cap;
    uint32_t nstatic, ndynamic;
    struct rules_table *exact, *prefix, *bucket;
    uint32_t *wild;         /* dynamic rules without a literal first segment, in order */
    uint32_t nwild;
    /* Filters that spare most requests the lookups: for the exact and prefix keys, by their
     * last byte's class (RULES_FILTER_CLASS) the lengths present (RULES_LEN_BIT); the same for
     * bucket keys by their first byte; prefix_any, every prefix key's length; and the last
     * bytes the wild rules' paths end with (wild_any: one whose paths may end with anything). */
    uint64_t exact_f[RULES_FILTER_CLASSES], prefix_f[RULES_FILTER_CLASSES];
    uint64_t bucket_f[RULES_FILTER_CLASSES];
    uint64_t prefix_any;
    uint64_t wild_last[4];
    bool wild_any;
};

/* The outcome of a match: the rule and its captures (views into the path, or the query). */
struct rules_match {
    uint32_t rule;
    struct rules_capture cap[RULES_MAX_CAPTURES];
};

/* A file exists at the path: rules without `!` step aside (Netlify's shadowing). A caller that
 * would rather not look for the file on every request matches without it first, and only
 * when the rule found is not forced looks for the file and, if there is one, matches again
 * with this flag. */
#define RULES_MATCH_FORCED_ONLY 1u

/* Diagnostics of a load: the error (one "FILE:LINE: reason", NUL-terminated) and, for every
 * rule skipped because lfhttpd cannot evaluate its conditions, one call of warn (may be NULL)
 * with a "FILE:LINE: reason" line. Nothing is printed. */
struct rules_diag {
    char error[RULES_ERR_MAX];
    void (*warn)(void *arg, const char *message);
    void *arg;
};

/* Load a `_redirects` (resp. `_headers`) file: text/len, named file in messages. Returns a new
 * set, or NULL with diag->error set (a malformed line, a bound passed, a loop, no memory). */
struct rules_set *rules_parse_redirects(const char *file, const char *text, size_t len,
                                        struct rules_diag *diag);
struct rules_set *rules_parse_headers(const char *file, const char *text, size_t len,
                                      struct rules_diag *diag);
void rules_free(struct rules_set *set);

/* Building a set rule by rule, as a configuration's directives write them (each rule with its
 * own file and line): rules_new, then rules_add_redirect (one `_redirects` line, text) or
 * rules_add_header (one `_headers` rule of one header: pattern, name, value), then
 * rules_done, which indexes the set and looks for loops. `file` must outlive rules_done.
 * Errors and warnings as above ("FILE:LINE: reason"); each returns 0 or -1. A set that failed
 * is still freed with rules_free. */
struct rules_set *rules_new(void);
int rules_add_redirect(struct rules_set *set, const char *file, unsigned line, const char *text,
                       struct rules_diag *diag);
int rules_add_header(struct rules_set *set, const char *file, unsigned line,
                     const char *pattern, const char *name, const char *value,
                     struct rules_diag *diag);
int rules_done(struct rules_set *set, struct rules_diag *diag);

/* Look for loops through sets[0..n) together, tried in that order as a request tries them
 * (a location's configuration rules, then its site's `_redirects`): each set alone was
 * checked when it was built; a loop that needs rules of two sets is found here. 0, or -1
 * with diag->error set ("FILE:LINE: redirect loop: ..."; `file` names the rules that carry
 * no file of their own). NULL sets are skipped. */
int rules_check_loops(const struct rules_set *const *sets, unsigned n, const char *file,
                      struct rules_diag *diag);

/* First matching rule of a `_redirects` set for path/plen (decoded, normalised, starting with
 * '/') and the raw query q/qlen (without '?'; may be NULL). True with *m filled, or false. */
bool rules_match(const struct rules_set *set, const char *path, size_t plen, const char *q,
                 size_t qlen, unsigned flags, struct rules_match *m);

/* Whether rule i alone matches (pattern, query conditions, flags), filling *m: the naive
 * per-rule check that rules_match must agree with, and the captures of a `_headers` rule. */
bool rules_match_rule(const struct rules_set *set, uint32_t i, const char *path, size_t plen,
                      const char *q, size_t qlen, unsigned flags, struct rules_match *m);

/* Every matching rule of a `_headers` set, in file order: their indices in out[0..cap).
 * Returns how many (at most cap). Combining them is the caller's: as Cloudflare Pages does,
 * a header two rules set gets both values joined with ", ", and a detach (`! Name`) removes
 * what the rules before it set, and the header the server would send. */
size_t rules_match_all(const struct rules_set *set, const char *path, size_t plen,
                       uint32_t *out, size_t cap);

/* Write the target of matched rule m into out/cap (NUL-terminated; *out_len its length):
 *   RULES_REDIRECT  the Location: the target with `:name` and `:splat` substituted (captured
 *                   path bytes percent-encoded as a URI needs), then `?` and the request's
 *                   query when the rule keeps it (the target has no query of its own and the
 *                   rule has no query conditions);
 *   RULES_REWRITE, RULES_STATUS  the internal path, decoded and normalised as path_normalize
 *                   does, then `?query` as above.
 * Returns 0; -EINVAL when a value would put a control byte (CR, LF, NUL, ...) into the result,
 * when a rewrite would leave the site's root or a path target would name another host ("//");
 * -ENAMETOOLONG when out is too small. No allocation. */
int rules_expand(const struct rules_set *set, const struct rules_match *m, const char *path,
                 const char *q, size_t qlen, char *out, size_t cap, size_t *out_len);

/* Write the value of header h of matched `_headers` rule m (captures substituted as they are,
 * control bytes but HTAB refused) into out/cap. Returns as rules_expand. */
int rules_expand_header(const struct rules_set *set, const struct rules_match *m, unsigned h,
                        const char *path, const char *q, char *out, size_t cap,
                        size_t *out_len);

#endif /* LF_RULES_RULES_H */
