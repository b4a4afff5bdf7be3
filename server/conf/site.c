/* site.c — sites and locations; see site.h. */
#include "conf/site.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hostport.h"
#include "log/diag.h"
#include "rules/rules.h"

/* Running out of memory while building a configuration fails the start-up, or the reload
 * (which keeps the running configuration): never the process. Every function below leaves
 * what it was building consistent for site_set_free when it gives up. */
static int oom(const char *where)
{
    diag("%s: out of memory\n", where);
    return -1;
}

/* Replace *slot with a copy of `v`. 0, or -1 with *slot unchanged. */
static int set_str(char **slot, const char *v)
{
    char *d = strdup(v);
    if (!d)
        return -1;
    free(*slot);
    *slot = d;
    return 0;
}

int loc_conf_init(struct loc_conf *lc)
{
    memset(lc, 0, sizeof(*lc));
    lc->nheaders = -1;
    lc->root_fd = -1;
    lc->limit_conn = -1;
    lc->limit_req_burst = -1;
    lc->root_follow = -1;
    lc->root_grace = -1;
    lc->rules_files = -1;
    return conf_loc_init(lc);
}

int site_set_init(struct site_set *ss)
{
    memset(ss, 0, sizeof(*ss));
    ss->sites = calloc(1, sizeof(*ss->sites));
    if (!ss->sites)
        return -ENOMEM;
    if (loc_conf_init(&ss->sites[0].base) < 0) {
        free(ss->sites);
        ss->sites = NULL;
        return -ENOMEM;
    }
    ss->nsites = 1;
    return 0;
}

static void loc_conf_free(struct loc_conf *lc)
{
    free(lc->prefix);
    free(lc->ext);
    free(lc->handler);
    free(lc->handler_arg);
    free(lc->root);
    free(lc->auth_realm);
    free(lc->auth_file);
    free(lc->auth_where);
    free(lc->handler_where);
    for (int i = 0; i < lc->nheaders; i++) {
        free(lc->headers[i].name);
        free(lc->headers[i].value);
    }
    free(lc->headers);
    site_rules_free(lc);
    conf_loc_free(lc);
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
        for (int k = 0; k < 2; k++) {
            free(s->rules_path[k]);
            rules_free(s->file_rules[k]);
        }
    }
    free(ss->sites);
    memset(ss, 0, sizeof(*ss));
}

struct site *site_add_server(struct site_set *ss, const char *where, char **names, int nnames)
{
    if (nnames < 1) {
        diag("%s: 'server' takes one or more names\n", where);
        return NULL;
    }
    struct site *sites = realloc(ss->sites, sizeof(*ss->sites) * (ss->nsites + 1));
    if (!sites) {
        oom(where);
        return NULL;
    }
    ss->sites = sites;
    struct site *s = &ss->sites[ss->nsites];
    memset(s, 0, sizeof(*s));
    if (loc_conf_init(&s->base) < 0) {
        oom(where);
        return NULL;
    }
    s->names = calloc((size_t)nnames, sizeof(char *));
    if (!s->names) {
        loc_conf_free(&s->base); /* the site was not counted: nothing else frees it */
        oom(where);
        return NULL;
    }
    for (int i = 0; i < nnames; i++) {
        if (!strcmp(names[i], "default")) {
            s->is_default = true;
            continue;
        }
        const char *n = names[i];
        if ((n[0] == '*' && n[1] != '.') || strchr(n + 1, '*') || strchr(n, '/') || strchr(n, ':')) {
            diag("%s: invalid server name '%s' (a host name or *.suffix)\n", where, n);
            for (unsigned k = 0; k < s->nnames; k++)
                free(s->names[k]); /* the site was not counted: nothing else frees them */
            free(s->names);
            loc_conf_free(&s->base);
            return NULL;
        }
        char *lc = strdup(n);
        if (!lc) {
            for (unsigned k = 0; k < s->nnames; k++)
                free(s->names[k]);
            free(s->names);
            loc_conf_free(&s->base);
            oom(where);
            return NULL;
        }
        for (char *p = lc; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        s->names[s->nnames++] = lc;
    }
    if (s->is_default)
        ss->default_site = ss->nsites;
    ss->nsites++;
    return s;
}

int site_add_admin(struct site_set *ss)
{
    struct site *sites = realloc(ss->sites, sizeof(*ss->sites) * (ss->nsites + 1));
    if (!sites)
        return oom("admin_listen");
    ss->sites = sites;
    struct site *s = &ss->sites[ss->nsites];
    memset(s, 0, sizeof(*s));
    if (loc_conf_init(&s->base) < 0)
        return oom("admin_listen");
    s->is_admin = true;
    ss->admin_site = ss->nsites++; /* counted now: site_set_free frees what is set below */
    /* Nothing of the sites reaches it: no authentication, limits, error pages or headers. Its
     * base answers 404 in the exchange (the handler is never called). */
    if (set_str(&s->base.handler, "health") < 0 || set_str(&s->base.auth_realm, "") < 0)
        return oom("admin_listen");
    s->base.limit_conn = 0;
    s->base.limit_req_burst = 0;
    s->base.nheaders = 0;
    conf_loc_admin(&s->base); /* the handler types' own: error pages, compression */
    return 0;
}

struct loc_conf *site_add_location(struct site *s, const char *where, const char *match)
{
    bool ext = match[0] == '*' && match[1] == '.' && match[2] && !strchr(match + 1, '/');
    if (!ext && match[0] != '/') {
        diag("%s: 'location' takes a path prefix (/assets/) or *.EXT\n", where);
        return NULL;
    }
    struct loc_conf *locs = realloc(s->locs, sizeof(*s->locs) * (s->nlocs + 1));
    if (!locs) {
        oom(where);
        return NULL;
    }
    s->locs = locs;
    char *m = strdup(ext ? match + 1 : match);
    if (!m) {
        oom(where);
        return NULL;
    }
    struct loc_conf *lc = &s->locs[s->nlocs];
    if (loc_conf_init(lc) < 0) {
        free(m);
        oom(where);
        return NULL;
    }
    s->nlocs++;
    if (ext) {
        lc->ext = m;
        lc->ext_len = strlen(m);
    } else {
        lc->prefix = m;
        lc->prefix_len = strlen(m);
    }
    return lc;
}

int site_add_builtin(struct site_set *ss, const char *prefix, const char *handler,
                     const char *arg, bool admin)
{
    for (unsigned i = 0; i < ss->nsites; i++) {
        struct site *s = &ss->sites[i];
        if (s->is_admin && !admin)
            continue;
        bool defined = false;
        for (unsigned j = 0; j < s->nlocs; j++)
            defined |= s->locs[j].prefix && !strcmp(s->locs[j].prefix, prefix);
        if (defined)
            continue; /* the site's own location wins */
        struct loc_conf *lc = site_add_location(s, "built-in location", prefix);
        if (!lc || set_str(&lc->handler, handler) < 0 ||
            (arg && set_str(&lc->handler_arg, arg) < 0))
            return lc ? oom("built-in location") : -1;
        lc->builtin = true; /* a site's rules (a catch-all rewrite) never hide a probe */
    }
    return 0;
}

int site_add_builtins(struct site_set *ss)
{
    static const char *const builtins[][3] = {
        { "/healthz", "health", NULL },
        { "/livez", "health", "live" },
        { "/readyz", "health", "ready" },
        { "/server-status", "status", NULL },
        { "/metrics", "metrics", NULL },
    };
    for (size_t b = 0; b < sizeof(builtins) / sizeof(builtins[0]); b++)
        if (site_add_builtin(ss, builtins[b][0], builtins[b][1], builtins[b][2], true) < 0)
            return -1;
    return 0;
}

/* ---- inheritance ---------------------------------------------------------------------------- */

/* *mine, or else a copy of `parent`. 0, or -1 when out of memory. */
static int inherit_str(char **mine, const char *parent)
{
    if (*mine || !parent)
        return 0;
    *mine = strdup(parent);
    return *mine ? 0 : -1;
}

/* Fill what `lc` leaves unset from `p`. 0, or -1 when out of memory (lc stays freeable). */
static int inherit(struct loc_conf *lc, const struct loc_conf *p)
{
    if (inherit_str(&lc->handler, p->handler) < 0)
        return -1;
    if (!lc->handler_arg && p->handler_arg && !strcmp(lc->handler, p->handler) &&
        !(lc->handler_arg = strdup(p->handler_arg)))
        return -1;
    if (inherit_str(&lc->root, p->root) < 0 ||
        inherit_str(&lc->auth_realm, p->auth_realm) < 0 ||
        inherit_str(&lc->auth_file, p->auth_file) < 0 ||
        inherit_str(&lc->auth_where, p->auth_where) < 0 ||
        inherit_str(&lc->handler_where, p->handler_where) < 0)
        return -1;
    if (lc->limit_conn < 0) {
        lc->limit_conn = p->limit_conn;
        lc->limit_conn_rule = p->limit_conn_rule;
    }
    if (lc->root_follow < 0)
        lc->root_follow = p->root_follow;
    if (lc->root_grace < 0)
        lc->root_grace = p->root_grace;
    if (lc->limit_req_burst < 0) {
        lc->limit_req_burst = p->limit_req_burst;
        lc->limit_req_interval = p->limit_req_interval;
        lc->limit_req_rule = p->limit_req_rule;
    }
    if (conf_loc_merge(lc, p) < 0)
        return -1;
    /* Like nginx: a level that sets any add_header replaces the parent's list. The count is
     * set as entries are copied, so a failure leaves only what can be freed. */
    if (lc->nheaders < 0) {
        if (p->nheaders > 0 && !(lc->headers = calloc((size_t)p->nheaders, sizeof(*lc->headers))))
            return -1;
        lc->nheaders = 0;
        for (int i = 0; i < p->nheaders; i++) {
            struct header_kv h = p->headers[i];
            h.name = strdup(p->headers[i].name);
            h.value = strdup(p->headers[i].value);
            if (!h.name || !h.value) {
                free(h.name);
                free(h.value);
                return -1;
            }
            lc->headers[lc->nheaders++] = h;
        }
    }
    return 0;
}

/* The id of a limit set in a block: a hash of its kind, its site's first name and the block's
 * match, so that a reload of an edited file keeps each block's counts (0 is the top level's
 * connection count). */
static uint32_t rule_id(char kind, const struct site *s, const struct loc_conf *lc)
{
    const char *parts[2] = { s->nnames ? s->names[0] : s->is_default ? "#default" : "",
                             lc->prefix ? lc->prefix : lc->ext ? lc->ext : "" };
    uint32_t h = 2166136261u ^ (uint8_t)kind;
    for (int k = 0; k < 2; k++)
        for (const char *p = parts[k];; p++) {
            h = (h ^ (uint8_t)*p) * 16777619u;
            if (!*p)
                break;
        }
    return h ? h : 1;
}

static void name_rules(const struct site *s, struct loc_conf *lc)
{
    if (lc->limit_conn >= 0)
        lc->limit_conn_rule = rule_id('c', s, lc);
    if (lc->limit_req_burst >= 0)
        lc->limit_req_rule = rule_id('r', s, lc);
}

int site_set_finish(struct site_set *ss)
{
    static char d_static[] = "static", d_root[] = "./www", d_empty[] = "";
    struct loc_conf defaults;
    if (loc_conf_init(&defaults) < 0)
        return oom("lfhttpd");
    conf_loc_defaults(&defaults);
    defaults.handler = d_static;
    defaults.root = d_root;
    defaults.nheaders = 0;
    defaults.auth_realm = d_empty;
    defaults.limit_conn = 0;
    defaults.limit_req_burst = 0;
    defaults.root_follow = 1;
    defaults.root_grace = ROOT_GRACE_DEFAULT_MS;

    for (unsigned i = 0; i < ss->nsites; i++) {
        name_rules(&ss->sites[i], &ss->sites[i].base);
        for (unsigned j = 0; j < ss->sites[i].nlocs; j++)
            name_rules(&ss->sites[i], &ss->sites[i].locs[j]);
    }
    bool failed = inherit(&ss->sites[0].base, &defaults) < 0;
    conf_loc_defaults_free(&defaults);
    for (unsigned i = 1; i < ss->nsites && !failed; i++)
        failed = inherit(&ss->sites[i].base, &ss->sites[0].base) < 0;
    for (unsigned i = 0; i < ss->nsites && !failed; i++)
        for (unsigned j = 0; j < ss->sites[i].nlocs && !failed; j++)
            failed = inherit(&ss->sites[i].locs[j], &ss->sites[i].base) < 0;
    return failed ? oom("lfhttpd") : 0;
}

int site_set_check(const struct site_set *ss)
{
    for (unsigned i = 0; i < ss->nsites; i++)
        for (unsigned j = 0; j <= ss->sites[i].nlocs; j++) {
            const struct loc_conf *lc = j == 0 ? &ss->sites[i].base : &ss->sites[i].locs[j - 1];
            if (lc->auth_realm[0] && !lc->auth_file) {
                diag("%s: auth_basic \"%s\" needs auth_basic_user_file\n",
                     lc->auth_where ? lc->auth_where : "lfhttpd", lc->auth_realm);
                return -1;
            }
            if (conf_loc_check(lc) < 0)
                return -1;
        }
    return 0;
}

/* ---- matching ------------------------------------------------------------------------------- */

const struct site *site_select(const struct site_set *ss, struct strview host)
{
    if (ss->nsites == 1 || !host.ptr || !host.len)
        return &ss->sites[ss->default_site]; /* HTTP/1.0 without Host: the default site */
    /* Strip the port ("[v6]:port" keeps its brackets) and one trailing dot. */
    struct hostport hp;
    hostport_split(host.ptr, host.len, &hp);
    size_t len = hp.host.len;
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
    /* A decoded path without its query: a '?' here is part of a name ("%3F"), and "*.css"
     * still covers "/a?b.css". */
    size_t plen = path.len;
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
