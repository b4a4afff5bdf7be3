/* compress_conf.c — the compression directives and settings; see compress_conf.h. */
#include "compress/compress_conf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/directives.h"
#include "conf/site.h"
#include "log/diag.h"

unsigned compress_conf_slot;

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

/* The patterns and their array (n < 0: unset, nothing but the array to free). */
static void free_types(char **types, int n)
{
    for (int i = 0; i < n; i++)
        free(types[i]);
    free(types);
}

static int d_types(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct compress_conf *cl = directive_field(d, x);
    for (int i = 0; i < nargs; i++)
        if (!media_pattern_ok(args[i])) {
            diag("%s: invalid media type '%s' for '%s' (type/subtype, one '*' "
                 "allowed in the subtype)\n", x->where, args[i], d->name);
            return -1;
        }
    char **types = calloc(nargs > 0 ? (size_t)nargs : 1, sizeof(char *));
    if (!types)
        return directive_oom(x);
    for (int i = 0; i < nargs; i++) {
        if (!(types[i] = strdup(args[i]))) {
            free_types(types, i);
            return directive_oom(x);
        }
        for (char *p = types[i]; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    free_types(cl->types, cl->ntypes);
    cl->types = types;
    cl->ntypes = nargs;
    return 0;
}

/* compress_level CODING N */
static int d_level(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    static const char *const words[] = { "br", "zstd", "gzip", NULL };
    static const int lo[CODING_COUNT] = { 0, 1, 1 }, hi[CODING_COUNT] = { 11, 19, 9 };
    int c = directive_one_of(d, x, args[0], words, "a coding: br, zstd or gzip");
    if (c < 0)
        return -1;
    char *end;
    long v = strtol(args[1], &end, 10);
    if (!isdigit((unsigned char)args[1][0]) || *end || v < lo[c] || v > hi[c]) {
        diag("%s: %s %s takes %d to %d, not '%s'\n", x->where, d->name, words[c],
             lo[c], hi[c], args[1]);
        return -1;
    }
    ((struct compress_conf *)directive_field(d, x))->level[c] = (int)v;
    return 0;
}

/* compress_cache_dir /DIR|off */
static int d_cache_dir(const struct directive *d, const struct dir_ctx *x, char **args,
                       int nargs)
{
    (void)nargs;
    return directive_path_or_off(d, x, args[0], "an absolute path");
}

/* The patterns and their array (n < 0: unset). */
static void free_dicts(struct dict_pattern *dicts, int n)
{
    for (int i = 0; i < n; i++)
        dict_pattern_free(&dicts[i]);
    free(dicts);
}

/* The options after a compress_dictionary pattern: match-dest=D[,D...] and id=NAME, each at
 * most once. Fills dests (pointers into args, commas made NULs), *ndests and *id. */
static int dictionary_options(const struct directive *d, const struct dir_ctx *x, char **args,
                              int nargs, const char **dests, int *ndests, const char **id)
{
    *ndests = 0;
    *id = NULL;
    bool seen_dest = false;
    for (int i = 1; i < nargs; i++) {
        char *a = args[i];
        if (!strncmp(a, "match-dest=", 11) && !seen_dest && a[11]) {
            seen_dest = true;
            for (char *tok = strtok(a + 11, ","); tok; tok = strtok(NULL, ",")) {
                if (*ndests == DICT_DESTS_MAX) {
                    diag("%s: %s: at most %d destinations in match-dest\n",
                         x->where, d->name, DICT_DESTS_MAX);
                    return -1;
                }
                dests[(*ndests)++] = tok;
            }
        } else if (!strncmp(a, "id=", 3) && !*id && a[3]) {
            *id = a + 3;
        } else {
            diag("%s: %s: '%s' is not an option (match-dest=DEST[,DEST...] or "
                 "id=NAME, each once)\n", x->where, d->name, a);
            return -1;
        }
    }
    return 0;
}

/* compress_dictionary PATTERN [match-dest=DEST[,DEST...]] [id=NAME] | off: a pattern of this
 * place, added to those written before it in the same place (not to inherited ones). */
static int d_dictionary(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    struct compress_conf *cl = directive_field(d, x);
    if (nargs == 1 && !strcmp(args[0], "off")) {
        free_dicts(cl->dicts, cl->ndicts);
        cl->dicts = NULL;
        cl->ndicts = 0;
        return 0;
    }
    if (cl->ndicts >= COMPRESS_DICTIONARIES_MAX) {
        diag("%s: at most %d %s patterns in one place\n", x->where,
             COMPRESS_DICTIONARIES_MAX, d->name);
        return -1;
    }
    const char *dests[DICT_DESTS_MAX], *id;
    int ndests;
    if (dictionary_options(d, x, args, nargs, dests, &ndests, &id) < 0)
        return -1;
    int n = cl->ndicts < 0 ? 0 : cl->ndicts;
    struct dict_pattern *nd = realloc(cl->dicts, (size_t)(n + 1) * sizeof(*nd));
    if (!nd)
        return directive_oom(x);
    cl->dicts = nd;
    cl->ndicts = n;
    char err[512];
    if (dict_pattern_init(&nd[n], x->where, args[0], dests, ndests, id, err, sizeof(err)) < 0) {
        diag("%s\n", err);
        return -1;
    }
    if (!cl->dicts_where && !(cl->dicts_where = strdup(x->where)))
        return directive_oom(x);
    cl->ndicts = n + 1;
    return 0;
}

const struct dict_pattern *compress_dictionary_for(const struct loc_conf *lc, const char *path,
                                                   size_t len)
{
    const struct compress_conf *cc = compress_conf(lc);
    if (cc->compress != 1)
        return NULL; /* dcz is made on the fly: without compression, nothing to announce */
    for (int i = 0; i < cc->ndicts; i++)
        if (dict_path_matches(&cc->dicts[i], (struct strview){ path, len }))
            return &cc->dicts[i];
    return NULL;
}

/* A copy of pattern `p` (its header owned anew). */
static int copy_pattern(struct dict_pattern *to, const struct dict_pattern *p)
{
    *to = *p;
    if (!(to->header = malloc(p->header_len + 1)))
        return -1;
    memcpy(to->header, p->header, p->header_len + 1);
    to->match = to->header + (p->match - p->header);
    return 0;
}

#define LOC(field) offsetof(struct compress_conf, field)
#define TOP(field) offsetof(struct compress_top, field)
#define ONE DIRECTIVE_ONE
#define NUM DIRECTIVE_NUM

static const struct directive compress_directives[] = {
    { "compress", IN_ANY, ONE, directive_onoff, LOC(compress), F_INT, 0, 0, 0 },
    { "compress_types", IN_ANY, 1, 0, "one or more media types", d_types, 0, 0, 0, 0, 0 },
    { "compress_min_size", IN_ANY, ONE, directive_number,
      NUM(LOC(min_size), F_I64, U_SIZE, 0, INT64_MAX / 1024) },
    { "compress_level", IN_ANY, 2, 2, "a coding (br, zstd, gzip) and a level", d_level,
      0, 0, 0, 0, 0 },
    { "compress_cache_dir", IN_ANY, ONE, d_cache_dir, LOC(cache_dir), 0, 0, 0, 0 },
    { "compress_cache_size", IN_ANY, ONE, directive_number,
      NUM(LOC(cache_size), F_I64, U_SIZE, 64 * 1024, INT64_MAX / 1024) },
    { "compress_dictionary", IN_ANY, 1, 3, "a path pattern, then match-dest=DEST[,DEST] and "
      "id=NAME if wanted (or off)", d_dictionary, 0, 0, 0, 0, 0 },
    { "compress_dynamic", IN_ANY, ONE, directive_onoff, LOC(dynamic), F_INT, 0, 0, 0 },
    { "compress_dynamic_max", IN_TOP, ONE, directive_number,
      NUM(TOP(dynamic_max), F_UNSIGNED, U_COUNT, 0, 100000) },
};

/* ---- the blocks' life ------------------------------------------------------------------------ */

static void loc_init(void *b)
{
    struct compress_conf *cl = b;
    cl->compress = -1;
    cl->ntypes = -1;
    cl->min_size = -1;
    for (int i = 0; i < CODING_COUNT; i++)
        cl->level[i] = -1;
    cl->cache_size = -1;
    cl->dynamic = -1;
    cl->ndicts = -1;
}

static void loc_defaults(void *b)
{
    static char d_empty[] = "";
    /* What browsers' audits expect compressed, never what is compressed already (images but
     * SVG, audio, video, archives, woff/woff2). Levels for compress-once, chosen by
     * measurement (docs/PERFORMANCE.md, "Compression levels"). */
    static const char *const d_types[] = {
        "text/*", "application/javascript", "application/x-javascript", "application/json",
        "application/*+json", "application/xml", "application/*+xml", "image/svg+xml",
        "application/wasm", "font/ttf", "font/otf", "font/collection", "font/sfnt",
        "application/vnd.ms-fontobject",
    };
    struct compress_conf *cl = b;
    cl->compress = 1;
    cl->types = (char **)(uintptr_t)d_types; /* only read: copied by loc_merge() */
    cl->ntypes = (int)(sizeof(d_types) / sizeof(d_types[0]));
    cl->min_size = 1024;
    cl->level[0] = 11; /* br */
    cl->level[1] = 19; /* zstd */
    cl->level[2] = 9;  /* gzip */
    cl->cache_dir = d_empty;
    cl->cache_size = 256 * 1024 * 1024;
    cl->dynamic = 0; /* per-request work: asked for, never assumed */
    cl->ndicts = 0;  /* dictionaries: asked for, per pattern */
}

static int loc_merge(void *b, const void *parent)
{
    struct compress_conf *cl = b;
    const struct compress_conf *p = parent;
    if (cl->compress < 0)
        cl->compress = p->compress;
    if (cl->ntypes < 0) {
        if (!(cl->types = calloc((size_t)p->ntypes + 1, sizeof(char *))))
            return -1;
        cl->ntypes = 0;
        for (int i = 0; i < p->ntypes; i++) {
            char *t = strdup(p->types[i]);
            if (!t)
                return -1;
            cl->types[cl->ntypes++] = t;
        }
    }
    if (cl->min_size < 0)
        cl->min_size = p->min_size;
    for (int i = 0; i < CODING_COUNT; i++)
        if (cl->level[i] < 0)
            cl->level[i] = p->level[i];
    if (!cl->cache_dir && p->cache_dir && !(cl->cache_dir = strdup(p->cache_dir)))
        return -1;
    if (cl->cache_size < 0)
        cl->cache_size = p->cache_size;
    if (cl->dynamic < 0)
        cl->dynamic = p->dynamic;
    if (cl->ndicts < 0 && p->ndicts > 0) {
        if (!(cl->dicts = calloc((size_t)p->ndicts, sizeof(*cl->dicts))))
            return -1;
        for (cl->ndicts = 0; cl->ndicts < p->ndicts; cl->ndicts++)
            if (copy_pattern(&cl->dicts[cl->ndicts], &p->dicts[cl->ndicts]) < 0)
                return -1;
        if (p->dicts_where && !(cl->dicts_where = strdup(p->dicts_where)))
            return -1;
    } else if (cl->ndicts < 0) {
        cl->ndicts = 0;
    }
    return 0;
}

/* The dictionaries' store keys name the tree they cover: two sites that share a cache
 * directory and a pattern keep their versions apart. */
static int loc_check(void *b, const struct loc_conf *lc)
{
    struct compress_conf *cl = b;
    for (int i = 0; i < cl->ndicts; i++)
        dict_pattern_scope(&cl->dicts[i], lc->root ? lc->root : "");
    return 0;
}

/* The admin site: its answers are never compressed on the fly. */
static void loc_admin(void *b)
{
    ((struct compress_conf *)b)->dynamic = 0;
}

static void loc_free(void *b)
{
    struct compress_conf *cl = b;
    free_types(cl->types, cl->ntypes);
    free(cl->cache_dir);
    free_dicts(cl->dicts, cl->ndicts);
    free(cl->dicts_where);
}

static int top_init(void *b)
{
    ((struct compress_top *)b)->dynamic_max = 64;
    return 0;
}

const struct handler_conf_ops compress_conf_ops = {
    .name = "compress",
    .slot = &compress_conf_slot,
    .directives = compress_directives,
    .ndirectives = sizeof(compress_directives) / sizeof(compress_directives[0]),
    .loc_size = sizeof(struct compress_conf),
    .loc_init = loc_init,
    .loc_defaults = loc_defaults,
    .loc_merge = loc_merge,
    .loc_check = loc_check,
    .loc_admin = loc_admin,
    .loc_free = loc_free,
    .top_size = sizeof(struct compress_top),
    .top_init = top_init,
};
