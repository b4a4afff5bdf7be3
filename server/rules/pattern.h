/* pattern.h — path patterns of site rules: compile once, match without allocating.
 *
 * A pattern is a path with wildcards, as Netlify's and Cloudflare Pages' `_redirects` and
 * `_headers` files write them, plus shell-style globs (below, a '/' before a '*' is written
 * "/ " because a C comment cannot hold the two bytes together):
 *
 *   /about                exact path
 *   /old/ *               a trailing `*` segment: the path itself and everything under it (the
 *                         "splat"; /old, /old/, /old/a/b)
 *   /news/:year/:slug     `:name` placeholders: one whole segment each
 *   /img/ *.png           `*` inside a segment, or as a middle segment: any bytes but '/'
 *   /assets/ **           `**` (a whole segment): zero or more segments, at any place
 *   /a/ *.{js,css}        `{x,y}` alternatives of literal text (expanded when compiled, at most
 *                         RULES_MAX_ALTERNATIVES in all; no nesting)
 *
 * The first wildcard of a pattern (a `**`, a trailing `*`, or the first `*` of a segment) is
 * captured as `splat`; placeholders are captured under their names. A trailing '/' is not
 * significant (neither in the pattern nor in the path: /a and /a/ match the same rules), and
 * empty segments of a pattern are dropped. Matching compares bytes (case-sensitive) of the
 * decoded path the caller gives (path_normalize's output in practice).
 *
 * Matching is the classic wildcard algorithm at two levels: segments against segment patterns,
 * with backtracking only to the latest `**`; and, inside one segment, bytes against a glob,
 * with backtracking only to the latest `*`. Both are O(length × pattern length) in the worst
 * case and never recurse.
 */
#ifndef LF_RULES_PATTERN_H
#define LF_RULES_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds of one pattern (documented limits of the rule files). */
#define RULES_MAX_PATTERN      512  /* bytes of a pattern, after percent-decoding */
#define RULES_MAX_ALTERNATIVES 16   /* patterns that one `{..}` expansion may produce */
#define RULES_MAX_SEGMENTS     32   /* segments of one alternative */
#define RULES_MAX_CAPTURES     8    /* placeholders, the splat and query captures of a rule */
#define RULES_MAX_NAME         31   /* bytes of a placeholder's name */
#define RULES_NO_SLOT          0xff /* a segment that captures nothing */

/* Bounds in the static reasons of pattern_compile. */
#define RULES_STR_(x) #x
#define RULES_STR(x)  RULES_STR_(x)

/* True if c may be part of a placeholder's name (after its ':'). */
static inline bool pattern_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* One captured value: a view (offset, length) into the path, or into the query string when
 * in_query is set. Unset slots (a placeholder of another alternative) have set == false. */
struct rules_capture {
    uint32_t off;
    uint32_t len;
    bool in_query;
    bool set;
};

/* The names of a rule's capture slots, shared by its pattern and its query conditions. */
struct rules_names {
    unsigned count;
    char name[RULES_MAX_CAPTURES][RULES_MAX_NAME + 1];
};

enum pattern_seg_kind {
    PATTERN_LITERAL,  /* the segment's bytes */
    PATTERN_GLOB,     /* bytes with `*` (any run of bytes but '/') */
    PATTERN_PARAM,    /* `:name`: any non-empty segment */
    PATTERN_ANY,      /* `**` or a trailing `*`: zero or more segments */
};

struct pattern_seg {
    uint8_t kind;     /* enum pattern_seg_kind */
    uint8_t slot;     /* capture slot, or RULES_NO_SLOT */
    uint16_t off;     /* the segment's bytes in pattern.text */
    uint16_t len;
};

/* One alternative: its canonical text ("/a/b/ **", "" for the root) and its segments. The
 * last tail_len bytes of its text are bytes every path it matches ends with (the literal end
 * of its last segment, with its '/' when the whole segment is literal): a cheap first test. */
struct pattern_alt {
    uint16_t text_off, text_len;
    uint16_t seg_first, seg_count;
    uint16_t tail_len;
};

/* What the rule set's index may do with an alternative. */
enum pattern_class {
    PATTERN_EXACT,    /* literal segments only: key = the whole text */
    PATTERN_PREFIX,   /* literal segments then one final `**`: key = the text before it */
    PATTERN_DYNAMIC,  /* anything else: bucketed by its first segment when that is literal */
};

struct pattern {
    char *text;                 /* every alternative's canonical text (heap, at load) */
    struct pattern_seg *seg;    /* every alternative's segments (heap, at load) */
    struct pattern_alt alt[RULES_MAX_ALTERNATIVES];
    unsigned nalt;
    uint8_t splat;              /* the splat's slot, or RULES_NO_SLOT */
};

/* Compile the pattern src/len (raw text of a rules file: percent-escapes are decoded first).
 * Placeholder names (and `splat`) get slots in names, which may already hold names. Returns 0,
 * or -1 with *why set to a static reason (for "FILE:LINE: reason"); -ENOMEM is not separate:
 * an allocation failure is a reason too. */
int pattern_compile(struct pattern *p, const char *src, size_t len, struct rules_names *names,
                    const char **why);
void pattern_free(struct pattern *p);

/* Length of path that matching looks at: without one trailing '/', and 0 for "/" itself. */
static inline size_t pattern_path_end(const char *path, size_t len)
{
    return len > 0 && path[len - 1] == '/' ? len - 1 : len; /* inline: every match asks */
}

/* Match path/len (starting with '/'). On a match, cap[0..RULES_MAX_CAPTURES) holds the slots
 * the matching alternative (the first in order) set, others unset. No allocation. */
bool pattern_match(const struct pattern *p, const char *path, size_t len,
                   struct rules_capture *cap);

/* Class of alternative i and its index key (text_off/len of a prefix of its text, or, for a
 * dynamic one, its first literal segment: *key_len 0 and *bucketed false when it has none). */
enum pattern_class pattern_classify(const struct pattern *p, unsigned i, const char **key,
                                    size_t *key_len, bool *bucketed);

#endif /* LF_RULES_PATTERN_H */
