/* site_rules.h — site rules in the configuration: the directives (redirect, rewrite, rule,
 * header, site_rules_files), the `_redirects` and `_headers` files at a site's root, and the
 * rule sets every location matches against (the engine is server/rules/rules.h).
 *
 * A block's rule directives are kept as written (text, file, line), checked on their line.
 * Once the configuration is complete (site_rules_finish) every block gets its sets: its own
 * rules, then its server's, then the top level's, in file order, compiled into one set (a
 * block with no rule of its own shares its parent's), and, when the site reads its rule files,
 * the site's `_redirects` and `_headers` after them. The files are read there, with the rest
 * of the configuration: a generation has the rules of one reading, and a malformed file fails
 * the start-up (`-t`) or the reload (which keeps the running generation). */
#ifndef LF_SITE_RULES_H
#define LF_SITE_RULES_H

#include <stdbool.h>

struct directive;
struct dir_ctx;
struct loc_conf;
struct rules_set;
struct site;
struct site_set;

#define SITE_RULES_REDIRECTS "_redirects"
#define SITE_RULES_HEADERS   "_headers"

/* One rule directive of a block, as written. */
struct conf_rule {
    bool header;            /* `header`: pattern, name, value; else a `_redirects` line */
    char *text;             /* the `_redirects` line, or the pattern */
    char *name, *value;     /* `header` */
    char *file;             /* where it was written, for messages */
    unsigned line;
};

/* What a location matches a request against: the sets in order (NULL: none). */
struct loc_rules {
    const struct rules_set *redirects[2]; /* the configuration's, then the site's file */
    const struct rules_set *headers[2];
    bool files;             /* the site reads its rule files: they are never served */
};

/* The appliers of the directives (directives.c's table). */
int site_rules_redirect(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs);
int site_rules_header(const struct directive *d, const struct dir_ctx *x, char **args,
                      int nargs);

/* Compile every block's sets and read the sites' rule files (site_rules_files on). Prints
 * "FILE:LINE: reason" and returns -1 on the first error; warnings go to the log. */
int site_rules_finish(struct site_set *ss);
/* Free what a block's rules hold (its directives and the sets it owns). */
void site_rules_free(struct loc_conf *lc);
/* The site's rule files' paths (ROOT/_redirects, ROOT/_headers), for reload_on_change; NULL
 * when the site does not read them. */
const char *site_rules_file(const struct site *s, bool headers);

#endif
