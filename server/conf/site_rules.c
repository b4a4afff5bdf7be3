/* site_rules.c — site rules in the configuration; see site_rules.h. */
#include "conf/site_rules.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"
#include "conf/directives.h"
#include "conf/site.h"
#include "log/diag.h"
#include "log/log.h"
#include "rules/rules.h"

/* A rule's error, as the rules engine wrote it (FILE:LINE: reason), through diag(): called
 * where a local `diag` (struct rules_diag) hides the function. */
static void rules_error(const char *msg)
{
    diag("%s\n", msg);
}

/* The largest rule file read: the bounds of rules.h (2,100 rules of at most RULES_MAX_LINE
 * bytes) with room for comments; a larger file is refused rather than read. */
#define SITE_RULES_FILE_MAX (8u * 1024 * 1024)

/* Bytes of a rule directive's values joined into one `_redirects` line. */
#define SITE_RULES_TEXT_MAX (RULES_MAX_LINE + 1)

static void warn_log(void *arg, const char *message)
{
    (void)arg;
    log_warn("%s", message);
}

/* The file part of "FILE:LINE" (x->where), as a new string. */
static char *where_file(const struct dir_ctx *x)
{
    const char *colon = strrchr(x->where, ':');
    size_t n = colon && x->line ? (size_t)(colon - x->where) : strlen(x->where);
    char *f = malloc(n + 1);
    if (f) {
        memcpy(f, x->where, n);
        f[n] = '\0';
    }
    return f;
}

/* Check one rule alone on its line (its loops are looked for once the blocks are merged),
 * then keep it as written. */
static int keep_rule(const struct dir_ctx *x, struct conf_rule *r)
{
    struct rules_diag diag = { .warn = NULL };
    struct rules_set *set = rules_new();
    int rc = -1;

    r->file = where_file(x);
    r->line = x->line;
    if (!set || !r->file || !r->text || (r->header && (!r->name || !r->value))) {
        directive_oom(x);
        goto out;
    }
    rc = r->header ? rules_add_header(set, r->file, r->line, r->text, r->name, r->value, &diag)
                   : rules_add_redirect(set, r->file, r->line, r->text, &diag);
    if (rc < 0) {
        rules_error(diag.error);
        goto out;
    }
    struct loc_conf *lc = x->lc;
    struct conf_rule *n = realloc(lc->conf_rules, (lc->nconf_rules + 1) * sizeof(*n));
    if (!n) {
        rc = directive_oom(x);
        goto out;
    }
    lc->conf_rules = n;
    n[lc->nconf_rules++] = *r;
    rules_free(set);
    return 0;
out:
    rules_free(set);
    free(r->file);
    free(r->text);
    free(r->name);
    free(r->value);
    return -1;
}

static bool redirect_status(const char *s)
{
    static const char *const ok[] = { "301", "302", "303", "307", "308" };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (!strncmp(s, ok[i], 3) && (!s[3] || !strcmp(s + 3, "!")))
            return true;
    return false;
}

/* redirect FROM TO [STATUS[!]], rewrite FROM TO [force], rule FROM [KEY=VALUE...] TO
 * [STATUS[!]]: one `_redirects` line. */
int site_rules_redirect(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    char text[SITE_RULES_TEXT_MAX];
    size_t n = 0;
    bool redirect = !strcmp(d->name, "redirect"), rewrite = !strcmp(d->name, "rewrite");

    if (redirect && nargs == 3 && !redirect_status(args[2])) {
        diag("%s: 'redirect' takes a status 301, 302, 303, 307 or 308 (with '!' "
             "to apply over an existing file), not '%s'\n", x->where, args[2]);
        return -1;
    }
    if (rewrite && nargs == 3 && strcmp(args[2], "force")) {
        diag("%s: 'rewrite' takes FROM TO [force], not '%s'\n", x->where, args[2]);
        return -1;
    }
    for (int i = 0; i < nargs && n < sizeof(text); i++) {
        const char *a = rewrite && i == 2 ? "200!" : args[i];
        if (strpbrk(a, " \t")) {
            diag("%s: '%s' values are single words: '%s'\n", x->where, d->name, a);
            return -1;
        }
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s", i ? " " : "", a);
    }
    if (rewrite && nargs == 2 && n < sizeof(text))
        n += (size_t)snprintf(text + n, sizeof(text) - n, " 200");
    if (n >= sizeof(text)) {
        diag("%s: '%s' longer than %d bytes\n", x->where, d->name, RULES_MAX_LINE);
        return -1;
    }
    struct conf_rule r = { .text = strdup(text) };
    return keep_rule(x, &r);
}

/* header PATTERN NAME VALUE */
int site_rules_header(const struct directive *d, const struct dir_ctx *x, char **args,
                      int nargs)
{
    (void)d;
    (void)nargs;
    struct conf_rule r = { .header = true, .text = strdup(args[0]), .name = strdup(args[1]),
                           .value = strdup(args[2]) };
    return keep_rule(x, &r);
}

void site_rules_free(struct loc_conf *lc)
{
    for (unsigned i = 0; i < lc->nconf_rules; i++) {
        struct conf_rule *r = &lc->conf_rules[i];
        free(r->text);
        free(r->name);
        free(r->value);
        free(r->file);
    }
    free(lc->conf_rules);
    rules_free(lc->own_redirects);
    rules_free(lc->own_headers);
    lc->conf_rules = NULL;
    lc->nconf_rules = 0;
    lc->own_redirects = lc->own_headers = NULL;
}

const char *site_rules_file(const struct site *s, bool headers)
{
    return s->rules_path[headers];
}

/* ---- compiling ------------------------------------------------------------------------------ */

/* Add the rules of `from` (its directives, of one kind) to *set (made on the first). */
static int add_block(struct rules_set **set, const struct loc_conf *from, bool header,
                     struct rules_diag *diag)
{
    for (unsigned i = 0; i < from->nconf_rules; i++) {
        const struct conf_rule *r = &from->conf_rules[i];
        if (r->header != header)
            continue;
        if (!*set && !(*set = rules_new())) {
            snprintf(diag->error, sizeof(diag->error), "%s:%u: out of memory", r->file,
                     r->line);
            return -1;
        }
        int rc = header ? rules_add_header(*set, r->file, r->line, r->text, r->name, r->value,
                                           diag)
                        : rules_add_redirect(*set, r->file, r->line, r->text, diag);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The sets of `lc`: its own rules, then those of chain[0..n) (its parents, nearest first). A
 * block without rules of its own shares its parent's sets. */
static int compile_block(struct loc_conf *lc, const struct loc_conf *parent,
                         const struct loc_conf *const *chain, int n, struct rules_diag *diag)
{
    if (lc->nconf_rules == 0 && parent) {
        lc->rules.redirects[0] = parent->rules.redirects[0];
        lc->rules.headers[0] = parent->rules.headers[0];
        return 0;
    }
    for (int kind = 0; kind < 2; kind++) {
        struct rules_set **set = kind ? &lc->own_headers : &lc->own_redirects;
        if (add_block(set, lc, kind, diag) < 0)
            return -1;
        for (int i = 0; i < n; i++)
            if (add_block(set, chain[i], kind, diag) < 0)
                return -1;
        if (*set && rules_done(*set, diag) < 0)
            return -1;
    }
    lc->rules.redirects[0] = lc->own_redirects;
    lc->rules.headers[0] = lc->own_headers;
    return 0;
}

/* Read one rule file of site s (k: 0 `_redirects`, 1 `_headers`) from its root `dirfd`
 * (AT_FDCWD: by path): no file, no rules. */
static int load_file(struct site *s, int dirfd, int k, struct rules_diag *diag)
{
    static const char *const names[2] = { SITE_RULES_REDIRECTS, SITE_RULES_HEADERS };
    const char *root = s->base.root;
    size_t len = strlen(root) + 1 + strlen(names[k]) + 1;
    char *path = malloc(len), *text = NULL;
    struct stat st;
    int fd = -1, rc = -1;

    if (!path) {
        snprintf(diag->error, sizeof(diag->error), "%s: out of memory", root);
        return -1;
    }
    snprintf(path, len, "%s%s%s", root, root[strlen(root) - 1] == '/' ? "" : "/", names[k]);
    s->rules_path[k] = path;
    fd = openat(dirfd, dirfd == AT_FDCWD ? path : names[k],
                O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT)
        return 0;
    const char *why = fd < 0 || fstat(fd, &st) < 0 ? strerror(errno)
                      : !S_ISREG(st.st_mode)              ? "not a regular file"
                      : (uint64_t)st.st_size > SITE_RULES_FILE_MAX ? "larger than 8 MiB"
                                                                   : NULL;
    if (why) {
        snprintf(diag->error, sizeof(diag->error), "%s: %s", path, why);
        goto out;
    }
    text = malloc((size_t)st.st_size + 1);
    ssize_t got = text ? read(fd, text, (size_t)st.st_size) : -1;
    if (got < 0) {
        snprintf(diag->error, sizeof(diag->error), "%s: %s", path,
                 text ? strerror(errno) : "out of memory");
        goto out;
    }
    s->file_rules[k] = k ? rules_parse_headers(path, text, (size_t)got, diag)
                         : rules_parse_redirects(path, text, (size_t)got, diag);
    rc = s->file_rules[k] ? 0 : -1;
out:
    free(text);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Both rule files of site s, from one opening of its root, whose identity is kept: a root
 * that a deploy switches (root_follow) between this reading and the generation's opening of
 * it would otherwise mix one tree's rules with another's files (runtime_build compares). */
static int load_files(struct site *s, struct rules_diag *diag)
{
    int dirfd = open(s->base.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    s->rules_dev = 0;
    s->rules_ino = 0;
    if (dirfd >= 0 && fstat(dirfd, &st) == 0) {
        s->rules_dev = st.st_dev;
        s->rules_ino = st.st_ino;
    }
    /* No root to open: read by path (nothing there), and the root's own check says why. */
    int rc = load_file(s, dirfd < 0 ? AT_FDCWD : dirfd, 0, diag) < 0 ||
                     load_file(s, dirfd < 0 ? AT_FDCWD : dirfd, 1, diag) < 0 ? -1 : 0;
    if (dirfd >= 0)
        close(dirfd);
    return rc;
}

/* What `lc` matches against, once its sets and its site's files are known; a loop through
 * its configuration's rules and the site's `_redirects` together is refused (each alone was
 * checked when it was built). */
static int settle(struct loc_conf *lc, const struct site *s, struct rules_diag *diag)
{
    lc->rules.redirects[1] = s->file_rules[0];
    lc->rules.headers[1] = s->file_rules[1];
    lc->rules.files = s->base.rules_files == 1;
    lc->rules_on = !lc->builtin && (lc->rules.files || lc->rules.redirects[0] ||
                                    lc->rules.headers[0]);
    if (!lc->rules.redirects[0] || !lc->rules.redirects[1] ||
        (lc != &s->base && lc->rules.redirects[0] == s->base.rules.redirects[0]))
        return 0; /* nothing to join, or the pair its server block's check saw */
    const struct rules_set *const sets[2] = { lc->rules.redirects[0], lc->rules.redirects[1] };
    return rules_check_loops(sets, 2, s->rules_path[0], diag);
}

static int finish_site(struct site_set *ss, unsigned i, struct rules_diag *diag)
{
    struct site *s = &ss->sites[i];
    const struct loc_conf *top = &ss->sites[0].base;
    const struct loc_conf *chain[2] = { &s->base, top };

    if (s->is_admin)
        return 0; /* the built-ins only: no rules reach it */
    if (s->base.rules_files < 0)
        s->base.rules_files = top->rules_files;
    if (s->base.rules_files == 1 && load_files(s, diag) < 0)
        return -1;
    if (compile_block(&s->base, i ? top : NULL, chain + 1, i ? 1 : 0, diag) < 0)
        return -1;
    if (settle(&s->base, s, diag) < 0)
        return -1;
    for (unsigned j = 0; j < s->nlocs; j++) {
        struct loc_conf *lc = &s->locs[j];
        if (compile_block(lc, &s->base, chain, i ? 2 : 1, diag) < 0 || settle(lc, s, diag) < 0)
            return -1;
    }
    return 0;
}

int site_rules_finish(struct site_set *ss)
{
    struct rules_diag diag = { .warn = warn_log };

    if (ss->sites[0].base.rules_files < 0)
        ss->sites[0].base.rules_files = 0; /* off unless asked: see README, "Site rules" */
    for (unsigned i = 0; i < ss->nsites; i++)
        if (finish_site(ss, i, &diag) < 0) {
            rules_error(diag.error);
            return -1;
        }
    return 0;
}
