/* site.c — sites and locations; see site.h. */
#include "site.h"

#include "handler.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d) {
        fprintf(stderr, "lfhttpd: out of memory\n");
        exit(2);
    }
    return d;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "lfhttpd: out of memory\n");
        exit(2);
    }
    return q;
}

void loc_conf_init(struct loc_conf *lc)
{
    memset(lc, 0, sizeof(*lc));
    lc->nindex = -1;
    lc->listing = lc->hidden_files = lc->symlinks = lc->precompressed = lc->etag = -1;
    lc->nheaders = -1;
    lc->expires = -2;
    lc->nerror_pages = -1;
    lc->root_fd = -1;
    lc->compress = -1;
    lc->ncompress_types = -1;
    lc->compress_min_size = -1;
    for (int i = 0; i < SITE_NCODINGS; i++)
        lc->compress_level[i] = -1;
    lc->compress_cache_size = -1;
}

int site_set_init(struct site_set *ss)
{
    memset(ss, 0, sizeof(*ss));
    ss->sites = calloc(1, sizeof(*ss->sites));
    if (!ss->sites)
        return -ENOMEM;
    ss->nsites = 1;
    loc_conf_init(&ss->sites[0].base);
    return 0;
}

static void loc_conf_free(struct loc_conf *lc)
{
    free(lc->prefix);
    free(lc->ext);
    free(lc->handler);
    free(lc->handler_arg);
    free(lc->root);
    free(lc->spa_fallback);
    free(lc->cache_control);
    free(lc->default_type);
    free(lc->auth_realm);
    free(lc->auth_file);
    for (int i = 0; i < lc->nheaders; i++) {
        free(lc->headers[i].name);
        free(lc->headers[i].value);
    }
    free(lc->headers);
    for (int i = 0; i < lc->nerror_pages; i++)
        free(lc->error_pages[i].path);
    free(lc->error_pages);
    for (int i = 0; i < lc->ncompress_types; i++)
        free(lc->compress_types[i]);
    free(lc->compress_types);
    free(lc->compress_cache_dir);
}

void site_set_free(struct site_set *ss)
{
    for (unsigned i = 0; i < ss->nsites; i++) {
        struct site *s = &ss->sites[i];
        for (unsigned j = 0; j < s->nnames; j++)
            free(s->names[j]);
        free(s->names);
        loc_conf_free(&s->base);
        for (unsigned j = 0; j < s->nlocs; j++)
            loc_conf_free(&s->locs[j]);
        free(s->locs);
    }
    free(ss->sites);
    memset(ss, 0, sizeof(*ss));
}

/* ---- directives ------------------------------------------------------------------------- */

static const char *const site_directives[] = {
    "root", "index", "directory_listing", "hidden_files", "follow_symlinks", "precompressed",
    "etag", "spa_fallback", "add_header", "cache_control", "expires", "error_page",
    "default_type", "handler", "auth_basic", "auth_basic_user_file",
    "compress", "compress_types", "compress_min_size", "compress_level", "compress_cache_dir",
    "compress_cache_size",
};

bool site_directive_known(const char *name)
{
    for (size_t i = 0; i < sizeof(site_directives) / sizeof(site_directives[0]); i++)
        if (!strcmp(site_directives[i], name))
            return true;
    return false;
}

static int on_off(const char *where, const char *name, const char *v, int *out)
{
    if (!strcmp(v, "on")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(v, "off")) {
        *out = 0;
        return 0;
    }
    fprintf(stderr, "%s: '%s' takes on or off, not '%s'\n", where, name, v);
    return -1;
}

static bool header_token_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
            return false;
    return true;
}

static bool header_value_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 && *s != '\t')
            return false;
    return true;
}

/* Durations for `expires`: like the rest of the file (s default; m, h, d). */
static int parse_seconds(const char *s, int64_t *out)
{
    char *end;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || v < 0)
        return -1;
    long long mul = !*end || !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60
                    : !strcmp(end, "h")               ? 3600
                    : !strcmp(end, "d")               ? 86400
                                                      : 0;
    if (!mul || v > (long long)(INT64_MAX / mul))
        return -1;
    *out = v * mul;
    return 0;
}

/* Sizes for the compress_* directives: bytes, or k, m, g (powers of 1024). */
static int parse_size(const char *s, int64_t *out)
{
    char *end;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    long long mul = !*end ? 1 : !strcasecmp(end, "k") ? 1024
                    : !strcasecmp(end, "m")          ? 1024 * 1024
                    : !strcasecmp(end, "g")          ? 1024 * 1024 * 1024
                                                     : 0;
    if (errno || v < 0 || !mul || v > (long long)(INT64_MAX / mul))
        return -1;
    *out = v * mul;
    return 0;
}

/* A compress_types pattern: a media type "type/subtype" without parameters, where the subtype
 * may hold one star (text/ANY, application/ANY+json). */
static bool media_pattern_ok(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
        return false;
    int stars = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '*' && p > slash)
            stars++;
        else if (p != slash && !isalnum((unsigned char)*p) && !strchr("!#$&^_.+-", *p))
            return false;
    }
    return stars <= 1;
}

/* compress_level CODING N */
static int apply_compress_level(struct loc_conf *lc, const char *where, char **args, int nargs)
{
    static const char *const names[SITE_NCODINGS] = { "br", "zstd", "gzip" };
    static const int lo[SITE_NCODINGS] = { 0, 1, 1 }, hi[SITE_NCODINGS] = { 11, 19, 9 };
    int c = -1;
    for (int i = 0; nargs == 2 && i < SITE_NCODINGS; i++)
        if (!strcmp(args[0], names[i]))
            c = i;
    if (c < 0) {
        fprintf(stderr, "%s: 'compress_level' takes a coding (br, zstd, gzip) and a level\n", where);
        return -1;
    }
    char *end;
    long v = strtol(args[1], &end, 10);
    if (!isdigit((unsigned char)args[1][0]) || *end || v < lo[c] || v > hi[c]) {
        fprintf(stderr, "%s: compress_level %s takes %d to %d, not '%s'\n", where, names[c],
                lo[c], hi[c], args[1]);
        return -1;
    }
    lc->compress_level[c] = (int)v;
    return 0;
}

int site_apply(struct loc_conf *lc, const char *where, const char *name, char **args, int nargs)
{
    bool multi = !strcmp(name, "index") || !strcmp(name, "add_header") ||
                 !strcmp(name, "error_page") || !strcmp(name, "handler") ||
                 !strcmp(name, "compress_types") || !strcmp(name, "compress_level");
    if (nargs < 1 || (!multi && nargs != 1)) {
        fprintf(stderr, "%s: '%s' takes %s\n", where, name, multi ? "more values" : "exactly one value");
        return -1;
    }
    const char *v = args[0];
    if (!strcmp(name, "root")) {
        struct stat st;
        int rc = stat(v, &st);
        if (rc < 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "%s: root %s: %s\n", where, v, rc < 0 ? strerror(errno) : "not a directory");
            return -1;
        }
        free(lc->root);
        lc->root = xstrdup(v);
    } else if (!strcmp(name, "index")) {
        if (nargs > SITE_MAX_INDEX) {
            fprintf(stderr, "%s: at most %d index files\n", where, SITE_MAX_INDEX);
            return -1;
        }
        for (int i = 0; i < nargs; i++) {
            if (strlen(args[i]) >= sizeof(lc->index[0]) || strchr(args[i], '/') || args[i][0] == '.') {
                fprintf(stderr, "%s: invalid index file name '%s'\n", where, args[i]);
                return -1;
            }
            snprintf(lc->index[i], sizeof(lc->index[i]), "%s", args[i]);
        }
        lc->nindex = nargs;
    } else if (!strcmp(name, "directory_listing")) {
        return on_off(where, name, v, &lc->listing);
    } else if (!strcmp(name, "hidden_files")) {
        if (strcmp(v, "deny") && strcmp(v, "allow")) {
            fprintf(stderr, "%s: 'hidden_files' takes deny or allow, not '%s'\n", where, v);
            return -1;
        }
        lc->hidden_files = !strcmp(v, "allow");
    } else if (!strcmp(name, "follow_symlinks")) {
        if (!strcmp(v, "off"))
            lc->symlinks = SYMLINKS_OFF;
        else if (!strcmp(v, "inside"))
            lc->symlinks = SYMLINKS_INSIDE;
        else if (!strcmp(v, "any"))
            lc->symlinks = SYMLINKS_ANY;
        else {
            fprintf(stderr, "%s: 'follow_symlinks' takes inside, any or off, not '%s'\n", where, v);
            return -1;
        }
    } else if (!strcmp(name, "precompressed")) {
        return on_off(where, name, v, &lc->precompressed);
    } else if (!strcmp(name, "etag")) {
        return on_off(where, name, v, &lc->etag);
    } else if (!strcmp(name, "spa_fallback")) {
        if (strcmp(v, "off") && v[0] != '/') {
            fprintf(stderr, "%s: 'spa_fallback' takes a path starting with '/' or off\n", where);
            return -1;
        }
        free(lc->spa_fallback);
        lc->spa_fallback = xstrdup(strcmp(v, "off") ? v : "");
    } else if (!strcmp(name, "add_header")) {
        if (nargs != 2 || !header_token_ok(args[0]) || !header_value_ok(args[1])) {
            fprintf(stderr, "%s: 'add_header' takes a header name and one (quoted) value\n", where);
            return -1;
        }
        if (lc->nheaders < 0)
            lc->nheaders = 0;
        lc->headers = xrealloc(lc->headers, sizeof(*lc->headers) * (size_t)(lc->nheaders + 1));
        struct header_kv *h = &lc->headers[lc->nheaders++];
        h->name = xstrdup(args[0]);
        h->value = xstrdup(args[1]);
        h->name_len = strlen(h->name);
        h->value_len = strlen(h->value);
    } else if (!strcmp(name, "cache_control")) {
        if (!header_value_ok(v)) {
            fprintf(stderr, "%s: invalid 'cache_control' value\n", where);
            return -1;
        }
        free(lc->cache_control);
        lc->cache_control = xstrdup(strcmp(v, "off") ? v : "");
    } else if (!strcmp(name, "expires")) {
        if (!strcmp(v, "off")) {
            lc->expires = -1;
        } else if (parse_seconds(v, &lc->expires) < 0) {
            fprintf(stderr, "%s: 'expires' takes a duration (s, m, h, d) or off, not '%s'\n", where, v);
            return -1;
        }
    } else if (!strcmp(name, "error_page")) {
        if (nargs < 2 || args[nargs - 1][0] != '/') {
            fprintf(stderr, "%s: 'error_page' takes STATUS... /PATH\n", where);
            return -1;
        }
        if (lc->nerror_pages < 0)
            lc->nerror_pages = 0;
        for (int i = 0; i < nargs - 1; i++) {
            char *end;
            long st = strtol(args[i], &end, 10);
            if (*end || st < 400 || st > 599) {
                fprintf(stderr, "%s: invalid status '%s' for 'error_page' (400..599)\n", where, args[i]);
                return -1;
            }
            lc->error_pages = xrealloc(lc->error_pages,
                                       sizeof(*lc->error_pages) * (size_t)(lc->nerror_pages + 1));
            lc->error_pages[lc->nerror_pages].status = (int)st;
            lc->error_pages[lc->nerror_pages].path = xstrdup(args[nargs - 1]);
            lc->nerror_pages++;
        }
    } else if (!strcmp(name, "default_type")) {
        if (!strchr(v, '/') || !header_value_ok(v)) {
            fprintf(stderr, "%s: invalid media type '%s'\n", where, v);
            return -1;
        }
        free(lc->default_type);
        lc->default_type = xstrdup(v);
    } else if (!strcmp(name, "auth_basic")) {
        if (strpbrk(v, "\"\\") || !header_value_ok(v)) {
            fprintf(stderr, "%s: invalid realm (no quotes, backslashes or control characters)\n", where);
            return -1;
        }
        free(lc->auth_realm);
        lc->auth_realm = xstrdup(strcmp(v, "off") ? v : "");
    } else if (!strcmp(name, "auth_basic_user_file")) {
        if (access(v, R_OK) < 0) {
            fprintf(stderr, "%s: auth_basic_user_file %s: %s\n", where, v, strerror(errno));
            return -1;
        }
        free(lc->auth_file);
        lc->auth_file = xstrdup(v);
    } else if (!strcmp(name, "handler")) {
        if (nargs > 2) {
            fprintf(stderr, "%s: 'handler' takes a type and an optional argument\n", where);
            return -1;
        }
        if (!handler_lookup(v, NULL)) {
            fprintf(stderr, "%s: unknown handler '%s'\n", where, v);
            return -1;
        }
        free(lc->handler);
        free(lc->handler_arg);
        lc->handler = xstrdup(v);
        lc->handler_arg = nargs == 2 ? xstrdup(args[1]) : NULL;
    } else if (!strcmp(name, "compress")) {
        return on_off(where, name, v, &lc->compress);
    } else if (!strcmp(name, "compress_types")) {
        for (int i = 0; i < nargs; i++)
            if (!media_pattern_ok(args[i])) {
                fprintf(stderr, "%s: invalid media type '%s' for 'compress_types' (type/subtype, "
                                "one '*' allowed in the subtype)\n", where, args[i]);
                return -1;
            }
        for (int i = 0; i < lc->ncompress_types; i++)
            free(lc->compress_types[i]);
        free(lc->compress_types);
        lc->compress_types = xrealloc(NULL, sizeof(char *) * (size_t)nargs);
        for (int i = 0; i < nargs; i++) {
            lc->compress_types[i] = xstrdup(args[i]);
            for (char *p = lc->compress_types[i]; *p; p++)
                *p = (char)tolower((unsigned char)*p);
        }
        lc->ncompress_types = nargs;
    } else if (!strcmp(name, "compress_min_size")) {
        if (parse_size(v, &lc->compress_min_size) < 0) {
            fprintf(stderr, "%s: 'compress_min_size' takes a size (bytes, k, m), not '%s'\n",
                    where, v);
            return -1;
        }
    } else if (!strcmp(name, "compress_level")) {
        return apply_compress_level(lc, where, args, nargs);
    } else if (!strcmp(name, "compress_cache_dir")) {
        if (strcmp(v, "off") && v[0] != '/') {
            fprintf(stderr, "%s: 'compress_cache_dir' takes an absolute path or off\n", where);
            return -1;
        }
        if (strlen(v) >= 2048) {
            fprintf(stderr, "%s: 'compress_cache_dir' path too long\n", where);
            return -1;
        }
        free(lc->compress_cache_dir);
        lc->compress_cache_dir = xstrdup(strcmp(v, "off") ? v : "");
    } else if (!strcmp(name, "compress_cache_size")) {
        if (parse_size(v, &lc->compress_cache_size) < 0 || lc->compress_cache_size < 64 * 1024) {
            fprintf(stderr, "%s: 'compress_cache_size' takes a size of at least 64k (k, m, g), "
                            "not '%s'\n", where, v);
            return -1;
        }
    } else {
        fprintf(stderr, "%s: unknown directive '%s'\n", where, name);
        return -1;
    }
    return 0;
}

struct site *site_add_server(struct site_set *ss, const char *where, char **names, int nnames)
{
    if (nnames < 1) {
        fprintf(stderr, "%s: 'server' takes one or more names\n", where);
        return NULL;
    }
    ss->sites = xrealloc(ss->sites, sizeof(*ss->sites) * (ss->nsites + 1));
    struct site *s = &ss->sites[ss->nsites];
    memset(s, 0, sizeof(*s));
    loc_conf_init(&s->base);
    s->names = calloc((size_t)nnames, sizeof(char *));
    for (int i = 0; i < nnames; i++) {
        if (!strcmp(names[i], "default")) {
            s->is_default = true;
            continue;
        }
        const char *n = names[i];
        if ((n[0] == '*' && n[1] != '.') || strchr(n + 1, '*') || strchr(n, '/') || strchr(n, ':')) {
            fprintf(stderr, "%s: invalid server name '%s' (a host name or *.suffix)\n", where, n);
            free(s->names);
            return NULL;
        }
        char *lc = xstrdup(n);
        for (char *p = lc; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        s->names[s->nnames++] = lc;
    }
    if (s->is_default)
        ss->default_site = ss->nsites;
    ss->nsites++;
    return s;
}

struct loc_conf *site_add_location(struct site *s, const char *where, const char *match)
{
    bool ext = match[0] == '*' && match[1] == '.' && match[2] && !strchr(match + 1, '/');
    if (!ext && match[0] != '/') {
        fprintf(stderr, "%s: 'location' takes a path prefix (/assets/) or *.EXT\n", where);
        return NULL;
    }
    s->locs = xrealloc(s->locs, sizeof(*s->locs) * (s->nlocs + 1));
    struct loc_conf *lc = &s->locs[s->nlocs++];
    loc_conf_init(lc);
    if (ext) {
        lc->ext = xstrdup(match + 1);
        lc->ext_len = strlen(lc->ext);
    } else {
        lc->prefix = xstrdup(match);
        lc->prefix_len = strlen(match);
    }
    return lc;
}

int site_add_builtins(struct site_set *ss, const char *test_prefix)
{
    static const char *const builtins[][3] = {
        { "/healthz", "health", NULL },
        { "/livez", "health", "live" },
        { "/readyz", "health", "ready" },
        { "/server-status", "status", NULL },
        { "/metrics", "metrics", NULL },
        { NULL, "test", NULL },
    };
    for (unsigned i = 0; i < ss->nsites; i++) {
        struct site *s = &ss->sites[i];
        for (size_t b = 0; b < sizeof(builtins) / sizeof(builtins[0]); b++) {
            const char *prefix = builtins[b][0] ? builtins[b][0] : test_prefix;
            if (!prefix || !prefix[0])
                continue;
            bool defined = false;
            for (unsigned j = 0; j < s->nlocs; j++)
                defined |= s->locs[j].prefix && !strcmp(s->locs[j].prefix, prefix);
            if (defined)
                continue; /* the site's own location wins */
            struct loc_conf *lc = site_add_location(s, "built-in location", prefix);
            char *args[2] = { (char *)(uintptr_t)builtins[b][1], (char *)(uintptr_t)builtins[b][2] };
            if (!lc || site_apply(lc, "built-in location", "handler", args, args[1] ? 2 : 1) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- inheritance ---------------------------------------------------------------------------- */

static char *inherit_str(char *mine, const char *parent)
{
    return mine ? mine : parent ? xstrdup(parent) : NULL;
}

static void inherit(struct loc_conf *lc, const struct loc_conf *p)
{
    lc->handler = inherit_str(lc->handler, p->handler);
    if (!lc->handler_arg && p->handler_arg && !strcmp(lc->handler, p->handler))
        lc->handler_arg = xstrdup(p->handler_arg);
    lc->root = inherit_str(lc->root, p->root);
    if (lc->nindex < 0) {
        memcpy(lc->index, p->index, sizeof(lc->index));
        lc->nindex = p->nindex;
    }
    if (lc->listing < 0)
        lc->listing = p->listing;
    if (lc->hidden_files < 0)
        lc->hidden_files = p->hidden_files;
    if (lc->symlinks < 0)
        lc->symlinks = p->symlinks;
    if (lc->precompressed < 0)
        lc->precompressed = p->precompressed;
    if (lc->etag < 0)
        lc->etag = p->etag;
    lc->spa_fallback = inherit_str(lc->spa_fallback, p->spa_fallback);
    lc->cache_control = inherit_str(lc->cache_control, p->cache_control);
    if (lc->expires == -2)
        lc->expires = p->expires;
    lc->default_type = inherit_str(lc->default_type, p->default_type);
    lc->auth_realm = inherit_str(lc->auth_realm, p->auth_realm);
    lc->auth_file = inherit_str(lc->auth_file, p->auth_file);
    if (lc->compress < 0)
        lc->compress = p->compress;
    if (lc->ncompress_types < 0) {
        lc->ncompress_types = p->ncompress_types;
        lc->compress_types = xrealloc(NULL, sizeof(char *) * (size_t)(p->ncompress_types + 1));
        for (int i = 0; i < p->ncompress_types; i++)
            lc->compress_types[i] = xstrdup(p->compress_types[i]);
    }
    if (lc->compress_min_size < 0)
        lc->compress_min_size = p->compress_min_size;
    for (int i = 0; i < SITE_NCODINGS; i++)
        if (lc->compress_level[i] < 0)
            lc->compress_level[i] = p->compress_level[i];
    lc->compress_cache_dir = inherit_str(lc->compress_cache_dir, p->compress_cache_dir);
    if (lc->compress_cache_size < 0)
        lc->compress_cache_size = p->compress_cache_size;
    /* Like nginx: a level that sets any add_header / error_page replaces the parent's list. */
    if (lc->nheaders < 0) {
        lc->nheaders = p->nheaders;
        lc->headers = p->nheaders ? xrealloc(NULL, sizeof(*lc->headers) * (size_t)p->nheaders) : NULL;
        for (int i = 0; i < p->nheaders; i++) {
            lc->headers[i] = p->headers[i];
            lc->headers[i].name = xstrdup(p->headers[i].name);
            lc->headers[i].value = xstrdup(p->headers[i].value);
        }
    }
    if (lc->nerror_pages < 0) {
        lc->nerror_pages = p->nerror_pages;
        lc->error_pages =
            p->nerror_pages ? xrealloc(NULL, sizeof(*lc->error_pages) * (size_t)p->nerror_pages) : NULL;
        for (int i = 0; i < p->nerror_pages; i++) {
            lc->error_pages[i].status = p->error_pages[i].status;
            lc->error_pages[i].path = xstrdup(p->error_pages[i].path);
        }
    }
}

void site_set_finish(struct site_set *ss)
{
    static char d_static[] = "static", d_root[] = "./www", d_empty[] = "",
                d_type[] = "application/octet-stream";
    struct loc_conf defaults;
    loc_conf_init(&defaults);
    defaults.handler = d_static;
    defaults.root = d_root;
    snprintf(defaults.index[0], sizeof(defaults.index[0]), "%s", "index.html");
    defaults.nindex = 1;
    defaults.listing = 0;
    defaults.hidden_files = 0;
    defaults.symlinks = SYMLINKS_INSIDE;
    defaults.precompressed = 1;
    defaults.etag = 1;
    defaults.spa_fallback = d_empty;
    defaults.nheaders = 0;
    defaults.cache_control = d_empty;
    defaults.expires = -1;
    defaults.nerror_pages = 0;
    defaults.default_type = d_type;
    defaults.auth_realm = d_empty;
    /* Compression: what browsers' audits expect compressed, never what is compressed already
     * (images but SVG, audio, video, archives, woff/woff2). Levels for compress-once, chosen
     * by measurement (docs/PERFORMANCE.md, "Compression levels"). */
    static const char *const d_types[] = {
        "text/*", "application/javascript", "application/x-javascript", "application/json",
        "application/*+json", "application/xml", "application/*+xml", "image/svg+xml",
        "application/wasm", "font/ttf", "font/otf", "font/collection", "font/sfnt",
        "application/vnd.ms-fontobject",
    };
    defaults.compress = 1;
    defaults.compress_types = (char **)(uintptr_t)d_types; /* only read: copied by inherit() */
    defaults.ncompress_types = (int)(sizeof(d_types) / sizeof(d_types[0]));
    defaults.compress_min_size = 1024;
    defaults.compress_level[0] = 11; /* br */
    defaults.compress_level[1] = 19; /* zstd */
    defaults.compress_level[2] = 9;  /* gzip */
    defaults.compress_cache_dir = d_empty;
    defaults.compress_cache_size = 256 * 1024 * 1024;

    inherit(&ss->sites[0].base, &defaults);
    for (unsigned i = 1; i < ss->nsites; i++)
        inherit(&ss->sites[i].base, &ss->sites[0].base);
    for (unsigned i = 0; i < ss->nsites; i++)
        for (unsigned j = 0; j < ss->sites[i].nlocs; j++)
            inherit(&ss->sites[i].locs[j], &ss->sites[i].base);
}

/* ---- matching ------------------------------------------------------------------------------- */

const struct site *site_select(const struct site_set *ss, struct strview host)
{
    if (ss->nsites == 1 || !host.ptr || !host.len)
        return &ss->sites[ss->default_site]; /* HTTP/1.0 without Host: the default site */
    /* Strip the port ("[v6]:port" keeps its brackets) and one trailing dot. */
    size_t len = host.len;
    if (len && host.ptr[0] == '[') {
        const char *rb = memchr(host.ptr, ']', len);
        len = rb ? (size_t)(rb - host.ptr) + 1 : len;
    } else {
        const char *colon = memchr(host.ptr, ':', len);
        if (colon)
            len = (size_t)(colon - host.ptr);
    }
    if (len && host.ptr[len - 1] == '.')
        len--;
    const struct site *best = NULL;
    size_t best_len = 0;
    for (unsigned i = 1; i < ss->nsites; i++) {
        const struct site *s = &ss->sites[i];
        for (unsigned j = 0; j < s->nnames; j++) {
            const char *n = s->names[j];
            size_t nl = strlen(n);
            if (n[0] != '*') {
                if (nl == len && !strncasecmp(n, host.ptr, len))
                    return s;
            } else if (len > nl - 1 && nl - 1 > best_len &&
                       !strncasecmp(n + 1, host.ptr + len - (nl - 1), nl - 1)) {
                best = s; /* "*.example.com" matches "a.example.com", not "example.com" */
                best_len = nl - 1;
            }
        }
    }
    return best ? best : &ss->sites[ss->default_site];
}

const struct loc_conf *site_location(const struct site *s, struct strview path)
{
    if (s->nlocs == 0)
        return &s->base;
    const char *q = memchr(path.ptr, '?', path.len);
    size_t plen = q ? (size_t)(q - path.ptr) : path.len;
    const struct loc_conf *best = NULL;
    for (unsigned i = 0; i < s->nlocs; i++) {
        const struct loc_conf *lc = &s->locs[i];
        if (lc->ext && plen >= lc->ext_len &&
            !strncasecmp(path.ptr + plen - lc->ext_len, lc->ext, lc->ext_len))
            return lc;
        /* (the second byte first: most prefixes differ from most paths right after the '/') */
        if (lc->prefix && plen >= lc->prefix_len &&
            (lc->prefix_len < 2 || path.ptr[1] == lc->prefix[1]) &&
            !memcmp(path.ptr, lc->prefix, lc->prefix_len) &&
            (!best || lc->prefix_len > best->prefix_len))
            best = lc;
    }
    return best ? best : &s->base;
}
