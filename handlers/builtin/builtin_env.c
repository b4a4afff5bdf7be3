/* builtin_env.c — the env handler and its env_expose directive; see builtin_env.h. */
#include "builtin/builtin_env.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "base/json.h"
#include "builtin/builtin.h"
#include "conf/directives.h"
#include "conf/site.h"
#include "exchange/exchange.h"
#include "log/diag.h"
#include "static/conditional.h"

#define ENV_EXPOSE_MAX 64         /* names one location may expose */
#define ENV_NAME_MAX 128          /* bytes of a name */
#define ENV_BODY_MAX (32 * 1024)  /* the whole body: well within ex_send's in-memory limit */
#define ENV_ETAG_LEN 18           /* "16 hex digits", with the quotes */
#define ENV_JS_OPEN "window.__ENV = "

/* ---- configuration: env_expose NAME... ------------------------------------------------------ */

static unsigned env_conf_slot;

struct env_loc {
    char **names; /* the allow-list, owned */
    unsigned n;
};

static const struct env_loc *env_loc(const struct loc_conf *lc)
{
    return lc->handler_conf[env_conf_slot];
}

static bool env_name_ok(const char *s)
{
    size_t n = strlen(s);
    return n && n < ENV_NAME_MAX && !(s[0] >= '0' && s[0] <= '9') &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

/* env_expose NAME...: appended to the block's list (several lines add up). */
static int d_env_expose(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    struct env_loc *el = directive_field(d, x);
    for (int i = 0; i < nargs; i++) {
        if (!env_name_ok(args[i])) {
            diag("%s: env_expose: '%s' is not a variable name (letters, digits, _)\n",
                 x->where, args[i]);
            return -1;
        }
        if (el->n == ENV_EXPOSE_MAX) {
            diag("%s: env_expose: at most %d names\n", x->where, ENV_EXPOSE_MAX);
            return -1;
        }
        char **nn = realloc(el->names, (el->n + 1) * sizeof(*nn));
        if (!nn)
            return directive_oom(x);
        el->names = nn;
        if (!(el->names[el->n] = strdup(args[i])))
            return directive_oom(x);
        el->n++;
    }
    return 0;
}

static const struct directive env_directives[] = {
    { "env_expose", IN_ANY, 1, 0, "one or more environment variable names", d_env_expose, 0,
      0, 0, 0, 0 },
};

static void env_loc_free(void *blk)
{
    struct env_loc *el = blk;
    for (unsigned i = 0; i < el->n; i++)
        free(el->names[i]);
    free(el->names);
    el->names = NULL;
    el->n = 0;
}

/* A block that names nothing takes its parent's list (a copy: each block owns its own). */
static int env_loc_merge(void *blk, const void *parent)
{
    struct env_loc *el = blk;
    const struct env_loc *pl = parent;
    if (el->n || !pl->n)
        return 0;
    el->names = calloc(pl->n, sizeof(*el->names));
    if (!el->names)
        return -1;
    for (unsigned i = 0; i < pl->n; i++, el->n++)
        if (!(el->names[i] = strdup(pl->names[i])))
            return -1;
    return 0;
}

const struct handler_conf_ops env_conf_ops = {
    .name = "env",
    .slot = &env_conf_slot,
    .directives = env_directives,
    .ndirectives = sizeof(env_directives) / sizeof(env_directives[0]),
    .loc_size = sizeof(struct env_loc),
    .loc_merge = env_loc_merge,
    .loc_free = env_loc_free,
};

/* ---- the handler ---------------------------------------------------------------------------- */

struct env_inst {
    const char *type;              /* Content-Type */
    char etag[ENV_ETAG_LEN + 1];
    size_t len;
    char body[];
};

/* The object of the listed variables that are set, into out[ENV_BODY_MAX] after `open`.
 * Returns its length, or 0 when it does not fit. */
static size_t env_body(const struct env_loc *el, const char *open, char *out)
{
    size_t p = (size_t)snprintf(out, ENV_BODY_MAX, "%s{", open);
    bool first = true;
    for (unsigned i = 0; i < el->n; i++) {
        const char *v = getenv(el->names[i]);
        if (!v)
            continue; /* unset: left out (set but empty: "") */
        if (ENV_BODY_MAX - p < 8)
            return 0;
        out[p++] = first ? '"' : ',';
        if (!first)
            out[p++] = '"';
        first = false;
        if (!json_escape_script(out, ENV_BODY_MAX, &p, el->names[i], strlen(el->names[i])) ||
            ENV_BODY_MAX - p < 4)
            return 0;
        memcpy(out + p, "\":\"", 3);
        p += 3;
        if (!json_escape_script(out, ENV_BODY_MAX, &p, v, strlen(v)) || ENV_BODY_MAX - p < 2)
            return 0;
        out[p++] = '"';
    }
    const char *close = open[0] ? "};\n" : "}\n";
    size_t cl = strlen(close);
    if (ENV_BODY_MAX - p <= cl)
        return 0;
    memcpy(out + p, close, cl);
    return p + cl;
}

/* A strong validator: FNV-1a (64 bits) of the body, which only a new generation changes. */
static void env_etag(const char *body, size_t len, char *etag)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)body[i]) * 0x100000001b3ull;
    etag[0] = '"';
    for (int i = 0; i < 16; i++)
        etag[1 + i] = hex_lower((unsigned)(h >> (60 - 4 * i)));
    etag[17] = '"';
    etag[18] = '\0';
}

static void *env_create(const struct handler_env *env, const struct loc_conf *lc, char *err,
                        size_t errlen)
{
    (void)env;
    const char *arg = lc->handler_arg; /* (the caller prefixes the messages with the line) */
    bool js = arg && !strcmp(arg, "js");
    if (arg && *arg && !js && strcmp(arg, "json")) {
        snprintf(err, errlen, "takes json (the default) or js, not '%s'", arg);
        return NULL;
    }
    const struct env_loc *el = env_loc(lc);
    if (!el->n) {
        snprintf(err, errlen, "needs env_expose NAME... (the variables it may show)");
        return NULL;
    }
    struct env_inst *in = malloc(sizeof(*in) + ENV_BODY_MAX);
    if (!in) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    in->len = env_body(el, js ? ENV_JS_OPEN : "", in->body);
    if (!in->len) {
        snprintf(err, errlen, "the exposed variables make more than %d bytes", ENV_BODY_MAX);
        free(in);
        return NULL;
    }
    in->type = js ? "text/javascript; charset=utf-8" : "application/json";
    env_etag(in->body, in->len, in->etag);
    return in;
}

static void env_destroy(void *inst)
{
    free(inst);
}

/* The location's own path only (`location /env.js` would otherwise answer /env.jsx). */
static bool env_exact_path(const struct exchange *ex)
{
    const struct loc_conf *lc = ex->loc;
    return !lc->prefix || ex->path_len == lc->prefix_len;
}

static int env_handle(void *inst, struct exchange *ex)
{
    const struct env_inst *in = inst;
    const struct http_request *req = ex->req;
    if (!env_exact_path(ex))
        return ex_error(ex, 404);
    if (req->method != HTTP_GET && req->method != HTTP_HEAD)
        return ex_error(ex, 405);
    struct strview inm = HTTP_KNOWN(req, H_IF_NONE_MATCH);
    bool fresh = inm.ptr && etag_list_match(inm, in->etag, ENV_ETAG_LEN, true);
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), fresh ? 304 : 200, ex->date);
    if (!fresh)
        RESP_HEADER_STR(&r, "Content-Type", in->type);
    RESP_HEADER(&r, "ETag", in->etag, ENV_ETAG_LEN);
    RESP_LIT(&r, "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n");
    ex_add_location_headers(&r, ex->loc);
    return ex_send(ex, &r, fresh ? NULL : in->body, fresh ? 0 : in->len);
}

const struct handler_ops env_handler = {
    .name = "env",
    .create = env_create,
    .handle = env_handle,
    .destroy = env_destroy,
};
