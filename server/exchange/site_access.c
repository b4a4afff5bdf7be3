/* site_access.c — allow/deny rules and CORS per location; see site_access.h. */
#include "exchange/site_access.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/directives.h"
#include "exchange/exchange.h"
#include "log/diag.h"

#define CORS_MAX_AGE_DEFAULT_MS 600000 /* a browser asks again after 10 minutes */
/* RFC 9110 5.6.2: the characters of a token (a method or a field name). */
#define TOKEN_CHARS \
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define CORS_LIST_MAX 1024             /* bytes of a joined method or header list */
#define ORIGIN_MAX 256                 /* bytes of one allowed origin */
#define ORIGINS_MAX 1024               /* origins of one block: an index fits cors_origin */
_Static_assert(ORIGINS_MAX <= UINT16_MAX, "an origin's index fits struct exchange");

unsigned site_access_conf_slot;

static struct access_conf *blk(const struct directive *d, const struct dir_ctx *x)
{
    return directive_field(d, x);
}

/* ---- directives ------------------------------------------------------------------------------ */

/* allow ADDR|CIDR|all..., deny ADDR|CIDR|all...: rules in the order written. */
static int d_rule(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct access_conf *ac = blk(d, x);
    if (ac->nrules < 0)
        ac->nrules = 0;
    struct access_rule *nr = realloc(ac->rules, sizeof(*nr) * (size_t)(ac->nrules + nargs));
    if (!nr)
        return directive_oom(x);
    ac->rules = nr;
    for (int i = 0; i < nargs; i++) {
        struct access_rule *r = &ac->rules[ac->nrules];
        if (!strcmp(args[i], "all")) {
            memset(&r->net, 0, sizeof(r->net)); /* ::/0: every address, IPv4 ones too */
        } else if (cidr_parse(args[i], &r->net) < 0) {
            diag("%s: invalid address or CIDR range '%s' for '%s' (or all)\n",
                 x->where, args[i], d->name);
            return -1;
        }
        r->allow = d->name[0] == 'a';
        ac->nrules++;
    }
    return 0;
}

/* A serialised origin (RFC 6454 6.2): scheme "://" host [":" port], nothing after. */
static bool origin_ok(const char *s)
{
    const char *sep = strstr(s, "://");
    if (!sep || sep == s || strlen(s) >= ORIGIN_MAX)
        return false;
    for (const char *p = s; p < sep; p++)
        if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
            return false;
    const char *host = sep + 3;
    if (!*host)
        return false;
    for (const char *p = host; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-._~:[]", *p))
            return false; /* no path, query, user or trailing slash */
    return true;
}

/* Refuse `*` with credentials where one block sets both (inherited ones: loc_check). */
static int check_any_credentials(const struct dir_ctx *x, const struct access_conf *ac)
{
    if (!ac->origin_any || ac->credentials != 1)
        return 0;
    diag("%s: cors_allow_origin * with cors_allow_credentials on: browsers refuse "
         "credentials for any origin; list the origins instead\n", x->where);
    return -1;
}

/* cors_allow_origin ORIGIN...|*|off */
static int d_origins(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct access_conf *ac = blk(d, x);
    bool any = !strcmp(args[0], "*"), off = !strcmp(args[0], "off");
    if ((any || off) && nargs > 1) {
        diag("%s: '%s' takes %s ('%s' alone)\n", x->where, d->name, d->takes, args[0]);
        return -1;
    }
    if (nargs > ORIGINS_MAX) {
        diag("%s: '%s' takes at most %d origins\n", x->where, d->name, ORIGINS_MAX);
        return -1;
    }
    for (int i = 0; i < ac->norigins; i++) /* a later line replaces an earlier one */
        free(ac->origins[i]);
    ac->norigins = 0;
    ac->origin_any = any;
    for (int i = 0; i < nargs && !any && !off; i++) {
        if (!strcmp(args[i], "null") || !origin_ok(args[i])) {
            diag("%s: invalid origin '%s' for '%s' (scheme://host[:port]; never "
                 "null, which any sandboxed page sends)\n", x->where, args[i], d->name);
            return -1;
        }
        char **no = realloc(ac->origins, sizeof(*no) * (size_t)(ac->norigins + 1));
        if (!no)
            return directive_oom(x);
        ac->origins = no;
        if (!(ac->origins[ac->norigins] = strdup(args[i])))
            return directive_oom(x);
        for (char *p = ac->origins[ac->norigins]; *p; p++)
            *p = (char)tolower((unsigned char)*p); /* browsers serialise it in lower case */
        ac->norigins++;
    }
    if (directive_set_str(&ac->origin_where, x->where) < 0)
        return directive_oom(x);
    return check_any_credentials(x, ac);
}

/* cors_allow_methods, cors_allow_headers, cors_expose_headers: tokens (or `*`), or off. */
static int d_list(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    char joined[CORS_LIST_MAX];
    size_t len = 0;
    bool off = nargs == 1 && !strcmp(args[0], "off");
    for (int i = 0; i < nargs && !off; i++) {
        size_t n = strlen(args[i]);
        bool ok = n > 0 && strspn(args[i], TOKEN_CHARS) == n;
        if (!ok || len + n + 2 >= sizeof(joined)) {
            diag("%s: '%s' takes %s, not '%s'\n", x->where, d->name, d->takes, args[i]);
            return -1;
        }
        if (len) {
            memcpy(joined + len, ", ", 2);
            len += 2;
        }
        memcpy(joined + len, args[i], n);
        len += n;
    }
    joined[len] = '\0';
    return directive_set_str(directive_field(d, x), joined) < 0 ? directive_oom(x) : 0;
}

/* cors_allow_credentials on|off */
static int d_credentials(const struct directive *d, const struct dir_ctx *x, char **args,
                         int nargs)
{
    (void)nargs;
    static const char *const words[] = { "off", "on", NULL };
    struct access_conf *ac = blk(d, x);
    if ((ac->credentials = directive_one_of(d, x, args[0], words, "on or off")) < 0)
        return -1;
    if (directive_set_str(&ac->credentials_where, x->where) < 0)
        return directive_oom(x);
    return check_any_credentials(x, ac);
}

#define LOC(field) offsetof(struct access_conf, field)
#define ONE DIRECTIVE_ONE

static const struct directive access_directives[] = {
    { "allow", IN_ANY, 1, 0, "addresses, CIDR ranges or all", d_rule, 0, 0, 0, 0, 0 },
    { "deny", IN_ANY, 1, 0, "addresses, CIDR ranges or all", d_rule, 0, 0, 0, 0, 0 },
    { "cors_allow_origin", IN_ANY, 1, 0, "origins (scheme://host[:port]), * or off", d_origins,
      0, 0, 0, 0, 0 },
    { "cors_allow_methods", IN_ANY, 1, 0, "method names or off", d_list, LOC(methods), 0, 0, 0,
      0 },
    { "cors_allow_headers", IN_ANY, 1, 0, "header names, * or off", d_list, LOC(headers), 0, 0,
      0, 0 },
    { "cors_expose_headers", IN_ANY, 1, 0, "header names, * or off", d_list, LOC(expose), 0, 0,
      0, 0 },
    { "cors_allow_credentials", IN_ANY, ONE, d_credentials, 0, 0, 0, 0, 0 },
    { "cors_max_age", IN_ANY, ONE, directive_number,
      DIRECTIVE_NUM(LOC(max_age), F_I64, U_MS, 0, DIRECTIVE_DAY_MS) },
};

/* ---- the block's life ------------------------------------------------------------------------ */

static void loc_init(void *b)
{
    struct access_conf *ac = b;
    ac->nrules = ac->norigins = ac->credentials = -1;
    ac->max_age = -1;
}

static void loc_defaults(void *b)
{
    static char d_methods[] = "GET, HEAD, POST", d_empty[] = "";
    struct access_conf *ac = b;
    ac->nrules = 0;
    ac->norigins = 0;
    ac->methods = d_methods;
    ac->headers = ac->expose = d_empty;
    ac->credentials = 0;
    ac->max_age = CORS_MAX_AGE_DEFAULT_MS;
}

static int inherit_str(char **mine, const char *parent)
{
    if (*mine || !parent)
        return 0;
    *mine = strdup(parent);
    return *mine ? 0 : -1;
}

static int inherit_origins(struct access_conf *ac, const struct access_conf *p)
{
    if (ac->norigins >= 0)
        return 0;
    ac->origin_any = p->origin_any;
    if (inherit_str(&ac->origin_where, p->origin_where) < 0)
        return -1;
    if (p->norigins > 0 && !(ac->origins = calloc((size_t)p->norigins, sizeof(*ac->origins))))
        return -1;
    ac->norigins = 0;
    for (int i = 0; i < p->norigins; i++) {
        if (!(ac->origins[i] = strdup(p->origins[i])))
            return -1;
        ac->norigins++;
    }
    return 0;
}

static int loc_merge(void *b, const void *parent)
{
    struct access_conf *ac = b;
    const struct access_conf *p = parent;
    if (ac->nrules < 0) { /* like nginx: a block with rules of its own replaces the parent's */
        if (p->nrules > 0 && !(ac->rules = malloc(sizeof(*ac->rules) * (size_t)p->nrules)))
            return -1;
        if (p->nrules > 0)
            memcpy(ac->rules, p->rules, sizeof(*ac->rules) * (size_t)p->nrules);
        ac->nrules = p->nrules;
    }
    if (ac->credentials < 0)
        ac->credentials = p->credentials;
    if (ac->max_age < 0)
        ac->max_age = p->max_age;
    if (inherit_str(&ac->credentials_where, p->credentials_where) < 0 ||
        inherit_str(&ac->methods, p->methods) < 0 || inherit_str(&ac->headers, p->headers) < 0 ||
        inherit_str(&ac->expose, p->expose) < 0)
        return -1;
    return inherit_origins(ac, p);
}

/* `*` from one block, credentials from another: seen once both are inherited. */
static int loc_check(void *b, const struct loc_conf *lc)
{
    (void)lc;
    const struct access_conf *ac = b;
    if (!ac->origin_any || ac->credentials != 1)
        return 0;
    diag("%s: cors_allow_credentials on with cors_allow_origin * (%s): browsers "
         "refuse credentials for any origin; list the origins instead\n",
         ac->credentials_where ? ac->credentials_where : "lfhttpd",
         ac->origin_where ? ac->origin_where : "inherited");
    return -1;
}

/* The admin site: the built-ins answer everyone who reaches admin_listen. */
static void loc_admin(void *b)
{
    struct access_conf *ac = b;
    ac->nrules = 0;
    ac->norigins = 0;
    ac->origin_any = false;
}

static void loc_free(void *b)
{
    struct access_conf *ac = b;
    free(ac->rules);
    for (int i = 0; i < ac->norigins; i++)
        free(ac->origins[i]);
    free(ac->origins);
    free(ac->methods);
    free(ac->headers);
    free(ac->expose);
    free(ac->origin_where);
    free(ac->credentials_where);
}

const struct handler_conf_ops site_access_conf_ops = {
    .name = "access",
    .slot = &site_access_conf_slot,
    .directives = access_directives,
    .ndirectives = sizeof(access_directives) / sizeof(access_directives[0]),
    .loc_size = sizeof(struct access_conf),
    .loc_init = loc_init,
    .loc_defaults = loc_defaults,
    .loc_merge = loc_merge,
    .loc_check = loc_check,
    .loc_admin = loc_admin,
    .loc_free = loc_free,
};

/* ---- per request ----------------------------------------------------------------------------- */

/* The first rule holding `a` decides; none: allowed. */
static bool address_allowed(const struct access_conf *ac, const struct in6_addr *a)
{
    for (int i = 0; i < ac->nrules; i++) {
        struct cidr_list one = { (struct cidr *)&ac->rules[i].net, 1 };
        if (cidr_list_match(&one, a))
            return ac->rules[i].allow;
    }
    return true;
}

/* 204 to a preflight, with what this location allows when the origin may ask. */
static int answer_preflight(struct exchange *ex, const struct access_conf *ac)
{
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 204, ex->date);
    if (ex->cors >= EX_CORS_ANY) {
        RESP_HEADER_STR(&r, "Access-Control-Allow-Methods", ac->methods);
        if (ac->headers[0])
            RESP_HEADER_STR(&r, "Access-Control-Allow-Headers", ac->headers);
        if (ac->max_age >= 1000)
            resp_header_u64(&r, "Access-Control-Max-Age", 22, (uint64_t)ac->max_age / 1000);
    }
    int rc = ex_send(ex, &r, NULL, 0);
    return rc < 0 ? rc : 1;
}

static int cors_check(struct exchange *ex, const struct access_conf *ac)
{
    const struct http_request *req = ex->req;
    struct strview origin = HTTP_HEADER(req, "Origin");
    if (ac->origin_any) {
        ex->cors = EX_CORS_ANY; /* the same fields for every request: nothing varies */
    } else {
        ex->vary |= EX_VARY_ORIGIN;
        ex->cors = EX_CORS_REFUSED;
        for (int i = 0; origin.ptr && i < ac->norigins; i++)
            if (strlen(ac->origins[i]) == origin.len &&
                !strncasecmp(ac->origins[i], origin.ptr, origin.len)) {
                ex->cors = EX_CORS_ORIGIN;
                ex->cors_origin = (uint16_t)i;
                break;
            }
    }
    if (req->method == HTTP_OPTIONS && origin.ptr &&
        HTTP_HEADER(req, "Access-Control-Request-Method").ptr)
        return answer_preflight(ex, ac);
    return 0;
}

int site_access_check(struct exchange *ex)
{
    const struct access_conf *ac = access_conf(ex->loc);
    if (ac->nrules > 0 && !address_allowed(ac, &ex->client_addr)) {
        int rc = ex_error(ex, 403);
        return rc < 0 ? rc : 1;
    }
    if (ac->norigins == 0 && !ac->origin_any)
        return 0;
    return cors_check(ex, ac);
}

void site_access_headers(const struct exchange *ex, struct response *r)
{
    if (ex->vary & EX_VARY_ORIGIN)
        RESP_LIT(r, "Vary: Origin\r\n");
    if (ex->vary & EX_VARY_FETCH)
        RESP_LIT(r, "Vary: Sec-Fetch-Mode, Sec-Fetch-Dest, Accept\r\n");
    if (ex->vary & EX_VARY_DICTIONARY)
        RESP_LIT(r, "Vary: Accept-Encoding, Available-Dictionary\r\n");
    else if (ex->vary & EX_VARY_ENCODING)
        RESP_LIT(r, "Vary: Accept-Encoding\r\n");
    if (ex->cors < EX_CORS_ANY)
        return;
    const struct access_conf *ac = access_conf(ex->loc);
    if (ex->cors == EX_CORS_ANY)
        RESP_LIT(r, "Access-Control-Allow-Origin: *\r\n");
    else
        RESP_HEADER_STR(r, "Access-Control-Allow-Origin", ac->origins[ex->cors_origin]);
    if (ac->credentials == 1)
        RESP_LIT(r, "Access-Control-Allow-Credentials: true\r\n");
    if (ac->expose[0])
        RESP_HEADER_STR(r, "Access-Control-Expose-Headers", ac->expose);
}
