/* static_conf.c — the static file handler's directives and settings; see static_conf.h. */
#include "static/static_conf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/directives.h"
#include "log/diag.h"

unsigned static_conf_slot;

/* The block a directive of this table applies to (its offset is 0: the whole block). */
static struct static_conf *blk(const struct directive *d, const struct dir_ctx *x)
{
    return directive_field(d, x);
}

/* Durations for `expires`, in seconds: s (default), m, h, d. */
static int parse_seconds(const char *s, int64_t *out)
{
    char *end;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || v < 0)
        return -1;
    long long mul = !*end || !strcmp(end, "s") ? 1
                    : !strcmp(end, "m")         ? 60
                    : !strcmp(end, "h")         ? 3600
                    : !strcmp(end, "d")         ? 86400
                                                : 0;
    if (!mul || v > (long long)(INT64_MAX / mul))
        return -1;
    *out = v * mul;
    return 0;
}

static int d_index(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct static_conf *sl = blk(d, x);
    for (int i = 0; i < nargs; i++) {
        if (strlen(args[i]) >= sizeof(sl->index[0]) || strchr(args[i], '/') || args[i][0] == '.') {
            diag("%s: invalid index file name '%s'\n", x->where, args[i]);
            return -1;
        }
        snprintf(sl->index[i], sizeof(sl->index[i]), "%s", args[i]);
    }
    sl->nindex = nargs;
    return 0;
}

static int d_hidden(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    static const char *const words[] = { "deny", "allow", NULL };
    int v = directive_one_of(d, x, args[0], words, "deny or allow");
    return v < 0 ? -1 : (blk(d, x)->hidden_files = v, 0);
}

static int d_symlinks(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    static const char *const words[] = { "off", "inside", "any", NULL };
    _Static_assert(SYMLINKS_OFF == 0 && SYMLINKS_INSIDE == 1 && SYMLINKS_ANY == 2,
                   "the words follow enum symlinks_policy");
    int v = directive_one_of(d, x, args[0], words, "inside, any or off");
    return v < 0 ? -1 : (blk(d, x)->symlinks = v, 0);
}

/* spa_fallback /PATH|off */
static int d_spa(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    return directive_path_or_off(d, x, args[0], "a path starting with '/'");
}

static int d_expires(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    struct static_conf *sl = blk(d, x);
    if (!strcmp(args[0], "off")) {
        sl->expires = -1;
    } else if (parse_seconds(args[0], &sl->expires) < 0) {
        diag("%s: '%s' takes a duration (s, m, h, d) or off, not '%s'\n", x->where,
                d->name, args[0]);
        return -1;
    }
    return 0;
}

/* error_page STATUS... /PATH */
static int d_error_page(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    struct static_conf *sl = blk(d, x);
    if (args[nargs - 1][0] != '/') {
        diag("%s: '%s' takes %s\n", x->where, d->name, d->takes);
        return -1;
    }
    if (sl->nerror_pages < 0)
        sl->nerror_pages = 0;
    for (int i = 0; i < nargs - 1; i++) {
        char *end;
        long st = strtol(args[i], &end, 10);
        if (*end || st < 400 || st > 599) {
            diag("%s: invalid status '%s' for '%s' (400..599)\n", x->where, args[i],
                    d->name);
            return -1;
        }
        struct error_page *ne =
            realloc(sl->error_pages, sizeof(*ne) * (size_t)(sl->nerror_pages + 1));
        if (!ne)
            return directive_oom(x);
        sl->error_pages = ne;
        char *path = strdup(args[nargs - 1]);
        if (!path)
            return directive_oom(x);
        sl->error_pages[sl->nerror_pages].status = (int)st;
        sl->error_pages[sl->nerror_pages].path = path;
        sl->nerror_pages++;
    }
    return 0;
}

/* default_type TYPE/SUBTYPE */
static int d_default_type(const struct directive *d, const struct dir_ctx *x, char **args,
                          int nargs)
{
    (void)nargs;
    const char *v = args[0];
    if (!directive_header_value_ok(v) || !strchr(v, '/')) {
        diag("%s: invalid '%s' value '%s'\n", x->where, d->name, v);
        return -1;
    }
    return directive_set_str(&blk(d, x)->default_type, v) < 0 ? directive_oom(x) : 0;
}

/* clean_urls on|off|redirect */
static int d_clean_urls(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    (void)nargs;
    static const char *const words[] = { "off", "on", "redirect", NULL };
    _Static_assert(CLEAN_OFF == 0 && CLEAN_ON == 1 && CLEAN_REDIRECT == 2,
                   "the words follow enum clean_urls");
    int v = directive_one_of(d, x, args[0], words, "on, off or redirect");
    return v < 0 ? -1 : (blk(d, x)->clean_urls = v, 0);
}

/* trailing_slash keep|add|remove */
static int d_trailing_slash(const struct directive *d, const struct dir_ctx *x, char **args,
                            int nargs)
{
    (void)nargs;
    static const char *const words[] = { "keep", "add", "remove", NULL };
    _Static_assert(SLASH_KEEP == 0 && SLASH_ADD == 1 && SLASH_REMOVE == 2,
                   "the words follow enum trailing_slash");
    int v = directive_one_of(d, x, args[0], words, "keep, add or remove");
    return v < 0 ? -1 : (blk(d, x)->trailing_slash = v, 0);
}

/* cache_policy auto|off */
static int d_cache_policy(const struct directive *d, const struct dir_ctx *x, char **args,
                          int nargs)
{
    (void)nargs;
    static const char *const words[] = { "off", "auto", NULL };
    int v = directive_one_of(d, x, args[0], words, "auto or off");
    return v < 0 ? -1 : (blk(d, x)->cache_policy = v, 0);
}

/* mime_types FILE: readable now (the table is read when a generation is built). */
static int d_mime_types(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    (void)nargs;
    struct static_top *st = directive_field(d, x);
    const char *v = args[0];
    if (strlen(v) >= sizeof(st->mime_file)) {
        diag("%s: '%s' value too long\n", x->where, d->name);
        return -1;
    }
    if (access(v, R_OK) < 0) {
        diag("%s: mime_types %s: %s\n", x->where, v, strerror(errno));
        return -1;
    }
    snprintf(st->mime_file, sizeof(st->mime_file), "%s", v);
    return 0;
}

#define LOC(field) offsetof(struct static_conf, field)
#define TOP(field) offsetof(struct static_top, field)
#define ONE DIRECTIVE_ONE
#define NUM DIRECTIVE_NUM

static const struct directive static_directives[] = {
    { "index", IN_ANY, 1, STATIC_MAX_INDEX, "one to eight file names", d_index, 0, 0, 0, 0, 0 },
    { "directory_listing", IN_ANY, ONE, directive_onoff, LOC(listing), F_INT, 0, 0, 0 },
    { "hidden_files", IN_ANY, ONE, d_hidden, 0, 0, 0, 0, 0 },
    { "follow_symlinks", IN_ANY, ONE, d_symlinks, 0, 0, 0, 0, 0 },
    { "precompressed", IN_ANY, ONE, directive_onoff, LOC(precompressed), F_INT, 0, 0, 0 },
    { "etag", IN_ANY, ONE, directive_onoff, LOC(etag), F_INT, 0, 0, 0 },
    { "spa_fallback", IN_ANY, ONE, d_spa, LOC(spa_fallback), 0, 0, 0, 0 },
    { "cache_control", IN_ANY, ONE, directive_header_value, LOC(cache_control), 0, 0, 0, 0 },
    { "expires", IN_ANY, ONE, d_expires, 0, 0, 0, 0, 0 },
    { "error_page", IN_ANY, 2, 0, "STATUS... /PATH", d_error_page, 0, 0, 0, 0, 0 },
    { "default_type", IN_ANY, ONE, d_default_type, 0, 0, 0, 0, 0 },
    { "clean_urls", IN_ANY, ONE, d_clean_urls, 0, 0, 0, 0, 0 },
    { "trailing_slash", IN_ANY, ONE, d_trailing_slash, 0, 0, 0, 0, 0 },
    { "cache_policy", IN_ANY, ONE, d_cache_policy, 0, 0, 0, 0, 0 },
    { "mime_types", IN_TOP, ONE, d_mime_types, 0, 0, 0, 0, 0 },
    { "file_cache_entries", IN_TOP, ONE, directive_number,
      NUM(TOP(file_cache_entries), F_UNSIGNED, U_COUNT, 64, 10000000) },
    { "file_cache_size", IN_TOP, ONE, directive_number,
      NUM(TOP(file_cache_size), F_SIZE, U_SIZE, 0, UINT64_C(1) << 40) },
    { "file_cache_valid", IN_TOP, ONE, directive_number,
      NUM(TOP(file_cache_valid), F_UNSIGNED, U_MS, 0, DIRECTIVE_DAY_MS) },
};

/* ---- the block's life ------------------------------------------------------------------------ */

static void loc_init(void *b)
{
    struct static_conf *sl = b;
    sl->nindex = -1;
    sl->listing = sl->hidden_files = sl->symlinks = sl->precompressed = sl->etag = -1;
    sl->expires = -2;
    sl->nerror_pages = -1;
    sl->clean_urls = sl->trailing_slash = sl->cache_policy = -1;
}

static void loc_defaults(void *b)
{
    static char d_empty[] = "", d_type[] = "application/octet-stream";
    struct static_conf *sl = b;
    snprintf(sl->index[0], sizeof(sl->index[0]), "%s", "index.html");
    sl->nindex = 1;
    sl->listing = 0;
    sl->hidden_files = 0;
    sl->symlinks = SYMLINKS_INSIDE;
    sl->precompressed = 1;
    sl->etag = 1;
    sl->spa_fallback = d_empty;
    sl->cache_control = d_empty;
    sl->expires = -1;
    sl->nerror_pages = 0;
    sl->default_type = d_type;
    sl->clean_urls = CLEAN_ON;        /* GitHub Pages: /about finds about.html */
    sl->trailing_slash = SLASH_KEEP;  /* and /dir answers 301 to /dir/, as before */
    sl->cache_policy = 1;
}

/* *mine, or else a copy of `parent`. 0, or -1 when out of memory. */
static int inherit_str(char **mine, const char *parent)
{
    if (*mine || !parent)
        return 0;
    *mine = strdup(parent);
    return *mine ? 0 : -1;
}

/* Like nginx: a level that sets any error_page replaces the parent's list. The count is set
 * as entries are copied, so a failure leaves only what can be freed. */
static int inherit_error_pages(struct static_conf *sl, const struct static_conf *p)
{
    if (sl->nerror_pages >= 0)
        return 0;
    if (p->nerror_pages > 0 &&
        !(sl->error_pages = calloc((size_t)p->nerror_pages, sizeof(*sl->error_pages))))
        return -1;
    sl->nerror_pages = 0;
    for (int i = 0; i < p->nerror_pages; i++) {
        char *path = strdup(p->error_pages[i].path);
        if (!path)
            return -1;
        sl->error_pages[i].status = p->error_pages[i].status;
        sl->error_pages[i].path = path;
        sl->nerror_pages++;
    }
    return 0;
}

static int loc_merge(void *b, const void *parent)
{
    struct static_conf *sl = b;
    const struct static_conf *p = parent;
    if (sl->nindex < 0) {
        memcpy(sl->index, p->index, sizeof(sl->index));
        sl->nindex = p->nindex;
    }
    int *const mine[] = { &sl->listing,    &sl->hidden_files,   &sl->symlinks,
                          &sl->precompressed, &sl->etag,       &sl->clean_urls,
                          &sl->trailing_slash, &sl->cache_policy };
    const int theirs[] = { p->listing,    p->hidden_files,   p->symlinks,    p->precompressed,
                           p->etag,       p->clean_urls,     p->trailing_slash, p->cache_policy };
    for (size_t i = 0; i < sizeof(theirs) / sizeof(theirs[0]); i++)
        if (*mine[i] < 0)
            *mine[i] = theirs[i];
    if (sl->expires == -2)
        sl->expires = p->expires;
    if (inherit_str(&sl->spa_fallback, p->spa_fallback) < 0 ||
        inherit_str(&sl->cache_control, p->cache_control) < 0 ||
        inherit_str(&sl->default_type, p->default_type) < 0)
        return -1;
    return inherit_error_pages(sl, p);
}

/* The admin site: no error pages of the top level's (a probe gets the plain answer). */
static void loc_admin(void *b)
{
    ((struct static_conf *)b)->nerror_pages = 0;
}

static void loc_free(void *b)
{
    struct static_conf *sl = b;
    free(sl->spa_fallback);
    free(sl->cache_control);
    free(sl->default_type);
    for (int i = 0; i < sl->nerror_pages; i++)
        free(sl->error_pages[i].path);
    free(sl->error_pages);
}

static int top_init(void *b)
{
    struct static_top *st = b;
    st->file_cache_entries = 10000;
    st->file_cache_size = 64 * 1024 * 1024;
    st->file_cache_valid = 1000;
    return 0;
}

/* reload_on_change follows the MIME table's file too. */
static void watch_files(const void *b, void (*fn)(const char *path, void *arg), void *arg)
{
    fn(((const struct static_top *)b)->mime_file, arg);
}

const struct handler_conf_ops static_conf_ops = {
    .name = "static",
    .slot = &static_conf_slot,
    .directives = static_directives,
    .ndirectives = sizeof(static_directives) / sizeof(static_directives[0]),
    .loc_size = sizeof(struct static_conf),
    .loc_init = loc_init,
    .loc_defaults = loc_defaults,
    .loc_merge = loc_merge,
    .loc_admin = loc_admin,
    .loc_free = loc_free,
    .top_size = sizeof(struct static_top),
    .top_init = top_init,
    .watch_files = watch_files,
};
