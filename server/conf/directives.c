/* directives.c — every configuration directive: one table, one checking function each; see
 * directives.h. Adding a directive is a line in the table (and, for a new kind of value, a
 * function). Files a directive names are checked where they are named, so that the error can
 * say FILE:LINE; they are opened for real when the runtime is built. */
#include "conf/directives.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "conn/client_limits.h"
#include "conf/config.h"
#include "exchange/handler.h"
#include "lf/thread_pool.h"
#include "net/tls.h"

/* The C type of a number's field. */
enum { F_UNSIGNED = 0, F_SIZE, F_U64, F_INT, F_I64 };
/* The units a number may carry. */
enum { U_COUNT = 0, U_SIZE, U_MS };

static void *field_of(const struct directive *d, const struct dir_ctx *x)
{
    char *base = d->in == IN_TOP ? (char *)x->cfg : (char *)x->lc;
    return base + d->offset;
}

/* Running out of memory while applying a directive fails the start-up, or the reload (which
 * keeps the running configuration): never the process. What was being built is left
 * consistent for config_free. */
static int oom(const struct dir_ctx *x)
{
    fprintf(stderr, "%s: out of memory\n", x->where);
    return -1;
}

/* Replace *field with a copy of `v`. 0, or -1 with *field unchanged. */
static int set_str(char **field, const char *v)
{
    char *d = strdup(v);
    if (!d)
        return -1;
    free(*field);
    *field = d;
    return 0;
}

/* ---- value checks ---------------------------------------------------------------------------- */

/* A number with an optional unit. Sizes: k, m, g (powers of 1024). Durations, in ms: ms, s
 * (default), m, h. Returns 0 or -EINVAL. */
static int parse_number(const char *s, int unit, uint64_t *out)
{
    char *end;
    if (!isdigit((unsigned char)s[0]))
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -EINVAL;
    uint64_t mul = 1;
    if (unit == U_SIZE) {
        mul = !*end                   ? 1
              : !strcasecmp(end, "k") ? 1024
              : !strcasecmp(end, "m") ? 1024 * 1024
              : !strcasecmp(end, "g") ? 1024 * 1024 * 1024
                                      : 0;
    } else if (unit == U_MS) {
        mul = !strcmp(end, "ms")              ? 1
              : !strcmp(end, "s") || !*end    ? 1000
              : !strcmp(end, "m")             ? 60000
              : !strcmp(end, "h")             ? 3600000
                                              : 0;
    } else if (*end) {
        mul = 0;
    }
    if (!mul || v > UINT64_MAX / mul)
        return -EINVAL;
    *out = v * mul;
    return 0;
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

/* One of `words` (NULL-terminated): its index, or -1 after printing what is allowed. */
static int one_of(const struct directive *d, const struct dir_ctx *x, const char *v,
                  const char *const *words, const char *allowed)
{
    for (int i = 0; words[i]; i++)
        if (!strcmp(v, words[i]))
            return i;
    fprintf(stderr, "%s: invalid %s '%s' (%s)\n", x->where, d->name, v, allowed);
    return -1;
}

/* ---- generic appliers ------------------------------------------------------------------------- */

static int d_number(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    uint64_t v;
    if (parse_number(args[0], d->unit, &v) < 0 || v < d->min || v > d->max) {
        fprintf(stderr, "%s: invalid value '%s' for '%s' (%llu..%llu%s)\n", x->where, args[0],
                d->name, (unsigned long long)d->min, (unsigned long long)d->max,
                d->unit == U_SIZE ? " bytes, k/m/g suffixes allowed"
                : d->unit == U_MS ? " ms; units ms, s, m, h"
                                  : "");
        return -1;
    }
    void *f = field_of(d, x);
    switch (d->field) {
    case F_SIZE: *(size_t *)f = (size_t)v; break;
    case F_U64: *(uint64_t *)f = v; break;
    case F_INT: *(int *)f = (int)v; break;
    case F_I64: *(int64_t *)f = (int64_t)v; break;
    default: *(unsigned *)f = (unsigned)v; break;
    }
    return 0;
}

/* A number, or off (0): access_log_buffer SIZE|off. */
static int d_number_or_off(const struct directive *d, const struct dir_ctx *x, char **args,
                           int nargs)
{
    (void)nargs;
    uint64_t v = 0;
    if (strcmp(args[0], "off") &&
        (parse_number(args[0], d->unit, &v) < 0 || v < d->min || v > d->max)) {
        fprintf(stderr, "%s: invalid value '%s' for '%s' (%llu..%llu bytes, k/m/g suffixes "
                        "allowed, or off)\n", x->where, args[0], d->name,
                (unsigned long long)d->min, (unsigned long long)d->max);
        return -1;
    }
    *(size_t *)field_of(d, x) = (size_t)v;
    return 0;
}

/* on|off into an int (a location's: -1 is unset) or a bool (the top level's). */
static int d_onoff(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    static const char *const words[] = { "off", "on", NULL };
    int v = one_of(d, x, args[0], words, "on or off");
    if (v < 0)
        return -1;
    if (d->field == F_INT)
        *(int *)field_of(d, x) = v;
    else
        *(bool *)field_of(d, x) = v;
    if (d->in == IN_TOP && d->offset == offsetof(struct config, tls_redirect_http))
        x->cfg->tls_redirect_line = x->line; /* for "needs a TLS listener" at the end */
    return 0;
}

/* A file name, checked now: readable (mime_types, tls_passphrase_file), a valid key file
 * (tls_session_ticket_key_file), or writable for a log (access_log, error_log; "off",
 * "stdout", "stderr" are not files). */
static int d_path(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    const char *v = args[0];
    if (strlen(v) >= PATH_MAX) {
        fprintf(stderr, "%s: '%s' value too long\n", x->where, d->name);
        return -1;
    }
    bool log = !strcmp(d->name, "access_log") || !strcmp(d->name, "error_log");
    if (log && strcmp(v, "off") && strcmp(v, "stdout") && strcmp(v, "stderr")) {
        /* Checked, not created: `lfhttpd -t` run by root must not leave a root-owned log
         * file that the service's own user then cannot open. */
        int fd = open(v, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd >= 0) {
            close(fd);
        } else {
            char dir[PATH_MAX];
            snprintf(dir, sizeof(dir), "%s", v);
            char *slash = strrchr(dir, '/');
            if (slash)
                *(slash == dir ? slash + 1 : slash) = '\0';
            if (errno != ENOENT || access(slash ? dir : ".", W_OK | X_OK) < 0) {
                fprintf(stderr, "%s: %s %s: %s\n", x->where, d->name, v, strerror(errno));
                return -1;
            }
        }
    } else if (!strcmp(d->name, "mime_types") && access(v, R_OK) < 0) {
        fprintf(stderr, "%s: mime_types %s: %s\n", x->where, v, strerror(errno));
        return -1;
    } else if (!strcmp(d->name, "tls_session_ticket_key_file")) {
        unsigned char keys[TLS_MAX_TICKET_KEYS * TLS_TICKET_KEY_SIZE];
        char err[PATH_MAX + 128];
        int n = tls_ticket_key_file_read(v, keys, err, sizeof(err));
        OPENSSL_cleanse(keys, sizeof(keys));
        if (n < 0) {
            fprintf(stderr, "%s: %s\n", x->where, err);
            return -1;
        }
    }
    snprintf(field_of(d, x), PATH_MAX, "%s", v);
    return 0;
}

/* ---- process-wide appliers --------------------------------------------------------------------- */

/* listen ADDR:PORT [proxy_protocol], tls_listen ADDR:PORT [proxy_protocol], admin_listen
 * ADDR:PORT */
static int d_listen(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct config *cfg = x->cfg;
    if (cfg->nlisten >= CONFIG_MAX_LISTEN) {
        fprintf(stderr, "%s: too many listeners (at most %d)\n", x->where, CONFIG_MAX_LISTEN);
        return -1;
    }
    struct listen_addr *la = &cfg->listen[cfg->nlisten];
    int rc = config_parse_listen(args[0], la);
    if (rc == -ENOMEM)
        return oom(x);
    if (rc < 0) {
        fprintf(stderr, "%s: invalid listen address '%s' (expected ADDR:PORT, [V6]:PORT or "
                        "systemd:NAME)\n",
                x->where, args[0]);
        return -1;
    }
    if (nargs == 2) {
        if (strcmp(args[1], "proxy_protocol")) {
            fprintf(stderr, "%s: unknown listen option '%s' (proxy_protocol)\n", x->where,
                    args[1]);
            return -1;
        }
        la->proxy_protocol = true;
    }
    la->tls = !strcmp(d->name, "tls_listen");
    la->admin = !strcmp(d->name, "admin_listen");
    la->line = x->line;
    cfg->nlisten++;
    return 0;
}

/* tls_certificate CERT KEY [SERVER_NAME...] */
static int d_certificate(const struct directive *d, const struct dir_ctx *x, char **args,
                         int nargs)
{
    (void)d;
    return config_add_certificate(x->cfg, x->where, x->line, args, nargs);
}

/* N or auto (threads, limit_table_size): auto is 0. */
static int d_auto(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    if (!strcmp(args[0], "auto")) {
        *(unsigned *)field_of(d, x) = 0;
        return 0;
    }
    return d_number(d, x, args, nargs);
}

static int d_concurrency(const struct directive *d, const struct dir_ctx *x, char **args,
                         int nargs)
{
    (void)nargs;
    static const char *const words[] = { "leader-followers", "half-sync-half-async",
                                         "reuseport", "leader-followers-edge", NULL };
    _Static_assert(CONC_REUSEPORT == 2 && CONC_LEADER_FOLLOWERS_EDGE == 3,
                   "the words follow enum concurrency");
    int v = one_of(d, x, args[0], words,
                   "leader-followers, half-sync-half-async, reuseport or "
                   "leader-followers-edge");
    return v < 0 ? -1 : (x->cfg->concurrency = v, 0);
}

static int d_log_level(const struct directive *d, const struct dir_ctx *x, char **args,
                       int nargs)
{
    (void)nargs;
    static const char *const words[] = { "error", "warn", "notice", "info", "debug", NULL };
    int v = one_of(d, x, args[0], words, "error, warn, notice, info, debug");
    return v < 0 ? -1 : (x->cfg->log_level = v, 0);
}

static int d_log_format(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    (void)nargs;
    static const char *const words[] = { "combined", "json", NULL };
    int v = one_of(d, x, args[0], words, "combined or json");
    return v < 0 ? -1 : (x->cfg->access_log_format = v, 0);
}

static int d_real_ip(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    if (!strcasecmp(args[0], "x-forwarded-for") || !strcasecmp(args[0], "forwarded")) {
        x->cfg->real_ip_forwarded = !strcasecmp(args[0], "forwarded");
        return 0;
    }
    fprintf(stderr, "%s: invalid %s '%s' (X-Forwarded-For or Forwarded)\n", x->where, d->name,
            args[0]);
    return -1;
}

/* user NAME, group NAME */
static int d_name(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    const char *v = args[0];
    if (!v[0] || strlen(v) >= sizeof(x->cfg->user) ||
        strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
            strlen(v)) {
        fprintf(stderr, "%s: invalid %s name '%s'\n", x->where, d->name, v);
        return -1;
    }
    snprintf(field_of(d, x), sizeof(x->cfg->user), "%s", v);
    return 0;
}

/* trusted_proxies CIDR..., limit_allow CIDR..., status_allow CIDR...|all|none (the first
 * replaces the loopback default) */
static int d_cidrs(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct config *cfg = x->cfg;
    struct cidr_list *l = field_of(d, x);
    bool allow = l == &cfg->status_allow;
    if (allow && !cfg->status_allow_given) {
        cidr_list_free(l);
        cfg->status_allow_given = true;
    }
    for (int i = 0; i < nargs; i++) {
        bool keyword = allow && nargs == 1 && (!strcmp(args[i], "none") || !strcmp(args[i], "all"));
        if (keyword && !strcmp(args[i], "none"))
            continue; /* an empty list: nobody */
        if (keyword ? cidr_list_add(l, "0.0.0.0/0") < 0 || cidr_list_add(l, "::/0") < 0
                    : cidr_list_add(l, args[i]) < 0) {
            fprintf(stderr, "%s: invalid address or CIDR range '%s'\n", x->where, args[i]);
            return -1;
        }
    }
    return 0;
}

/* cgi_env_pass NAME...|none */
static int d_env_pass(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct config *cfg = x->cfg;
    if (nargs > CONFIG_MAX_ENV_PASS) {
        fprintf(stderr, "%s: at most %d names for '%s'\n", x->where, CONFIG_MAX_ENV_PASS, d->name);
        return -1;
    }
    cfg->ncgi_env_pass = 0;
    if (nargs == 1 && !strcmp(args[0], "none"))
        return 0;
    for (int i = 0; i < nargs; i++) {
        const char *v = args[i];
        bool ok = *v && strlen(v) < sizeof(cfg->cgi_env_pass[0]) && !isdigit((unsigned char)*v);
        for (const char *p = v; ok && *p; p++)
            ok = isalnum((unsigned char)*p) || *p == '_';
        if (!ok || !strncmp(v, "HTTP_", 5)) {
            fprintf(stderr, "%s: invalid environment variable name '%s' for '%s'\n", x->where, v,
                    d->name);
            return -1;
        }
        snprintf(cfg->cgi_env_pass[cfg->ncgi_env_pass++], sizeof(cfg->cgi_env_pass[0]), "%s", v);
    }
    return 0;
}

/* test_endpoints /PREFIX/|off */
static int d_test_endpoints(const struct directive *d, const struct dir_ctx *x, char **args,
                            int nargs)
{
    (void)nargs;
    struct config *cfg = x->cfg;
    const char *v = args[0];
    if (!strcmp(v, "off")) {
        cfg->test_endpoints[0] = '\0';
        return 0;
    }
    if (v[0] != '/' || strlen(v) >= sizeof(cfg->test_endpoints) || strstr(v, "..") ||
        strpbrk(v, "?#%* \t")) {
        fprintf(stderr, "%s: '%s' takes a path prefix such as /_test/, or off\n", x->where,
                d->name);
        return -1;
    }
    snprintf(cfg->test_endpoints, sizeof(cfg->test_endpoints), "%s", v);
    return 0;
}

/* ---- site appliers (a struct loc_conf) ---------------------------------------------------------- */

static int d_root(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    struct stat st;
    int rc = stat(args[0], &st);
    if (rc < 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: %s %s: %s\n", x->where, d->name, args[0],
                rc < 0 ? strerror(errno) : "not a directory");
        return -1;
    }
    return set_str(&x->lc->root, args[0]) < 0 ? oom(x) : 0;
}

static int d_index(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct loc_conf *lc = x->lc;
    (void)d;
    for (int i = 0; i < nargs; i++) {
        if (strlen(args[i]) >= sizeof(lc->index[0]) || strchr(args[i], '/') || args[i][0] == '.') {
            fprintf(stderr, "%s: invalid index file name '%s'\n", x->where, args[i]);
            return -1;
        }
        snprintf(lc->index[i], sizeof(lc->index[i]), "%s", args[i]);
    }
    lc->nindex = nargs;
    return 0;
}

static int d_hidden(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    static const char *const words[] = { "deny", "allow", NULL };
    int v = one_of(d, x, args[0], words, "deny or allow");
    return v < 0 ? -1 : (x->lc->hidden_files = v, 0);
}

static int d_symlinks(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    static const char *const words[] = { "off", "inside", "any", NULL };
    _Static_assert(SYMLINKS_OFF == 0 && SYMLINKS_INSIDE == 1 && SYMLINKS_ANY == 2,
                   "the words follow enum symlinks_policy");
    int v = one_of(d, x, args[0], words, "inside, any or off");
    return v < 0 ? -1 : (x->lc->symlinks = v, 0);
}

/* A path or off (spa_fallback, compress_cache_dir: absolute). */
static int d_path_or_off(const struct directive *d, const struct dir_ctx *x, char **args,
                         int nargs)
{
    (void)nargs;
    const char *v = args[0];
    bool off = !strcmp(v, "off");
    bool cache = !strcmp(d->name, "compress_cache_dir");
    if (!off && v[0] != '/') {
        fprintf(stderr, "%s: '%s' takes %s or off\n", x->where, d->name,
                cache ? "an absolute path" : "a path starting with '/'");
        return -1;
    }
    if (strlen(v) >= 2048) {
        fprintf(stderr, "%s: '%s' path too long\n", x->where, d->name);
        return -1;
    }
    return set_str(field_of(d, x), off ? "" : v) < 0 ? oom(x) : 0;
}

static int d_add_header(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    struct loc_conf *lc = x->lc;
    (void)nargs;
    if (!header_token_ok(args[0]) || !header_value_ok(args[1])) {
        fprintf(stderr, "%s: '%s' takes %s\n", x->where, d->name, d->takes);
        return -1;
    }
    if (lc->nheaders < 0)
        lc->nheaders = 0;
    struct header_kv *nh = realloc(lc->headers, sizeof(*nh) * (size_t)(lc->nheaders + 1));
    if (!nh)
        return oom(x);
    lc->headers = nh;
    char *name = strdup(args[0]), *value = strdup(args[1]);
    if (!name || !value) {
        free(name);
        free(value);
        return oom(x);
    }
    struct header_kv *h = &lc->headers[lc->nheaders++];
    h->name = name;
    h->value = value;
    h->name_len = strlen(h->name);
    h->value_len = strlen(h->value);
    return 0;
}

/* A header value, or off (cache_control), or a media type (default_type), or a realm
 * (auth_basic: no quotes or backslashes either). */
static int d_header_value(const struct directive *d, const struct dir_ctx *x, char **args,
                          int nargs)
{
    (void)nargs;
    const char *v = args[0];
    bool type = !strcmp(d->name, "default_type");
    bool realm = !strcmp(d->name, "auth_basic");
    if (!header_value_ok(v) || (type && !strchr(v, '/')) || (realm && strpbrk(v, "\"\\"))) {
        fprintf(stderr, "%s: invalid '%s' value '%s'\n", x->where, d->name, v);
        return -1;
    }
    if (set_str(field_of(d, x), !type && !strcmp(v, "off") ? "" : v) < 0 ||
        (realm && set_str(&x->lc->auth_where, x->where) < 0))
        return oom(x);
    return 0;
}

static int d_expires(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    if (!strcmp(args[0], "off")) {
        x->lc->expires = -1;
    } else if (parse_seconds(args[0], &x->lc->expires) < 0) {
        fprintf(stderr, "%s: '%s' takes a duration (s, m, h, d) or off, not '%s'\n", x->where,
                d->name, args[0]);
        return -1;
    }
    return 0;
}

/* error_page STATUS... /PATH */
static int d_error_page(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    struct loc_conf *lc = x->lc;
    if (args[nargs - 1][0] != '/') {
        fprintf(stderr, "%s: '%s' takes %s\n", x->where, d->name, d->takes);
        return -1;
    }
    if (lc->nerror_pages < 0)
        lc->nerror_pages = 0;
    for (int i = 0; i < nargs - 1; i++) {
        char *end;
        long st = strtol(args[i], &end, 10);
        if (*end || st < 400 || st > 599) {
            fprintf(stderr, "%s: invalid status '%s' for '%s' (400..599)\n", x->where, args[i],
                    d->name);
            return -1;
        }
        struct error_page *ne =
            realloc(lc->error_pages, sizeof(*ne) * (size_t)(lc->nerror_pages + 1));
        if (!ne)
            return oom(x);
        lc->error_pages = ne;
        char *path = strdup(args[nargs - 1]);
        if (!path)
            return oom(x);
        lc->error_pages[lc->nerror_pages].status = (int)st;
        lc->error_pages[lc->nerror_pages].path = path;
        lc->nerror_pages++;
    }
    return 0;
}

static int d_user_file(const struct directive *d, const struct dir_ctx *x, char **args,
                       int nargs)
{
    (void)nargs;
    if (access(args[0], R_OK) < 0) {
        fprintf(stderr, "%s: %s %s: %s\n", x->where, d->name, args[0], strerror(errno));
        return -1;
    }
    return set_str(&x->lc->auth_file, args[0]) < 0 ? oom(x) : 0;
}

/* handler TYPE [ARG] */
static int d_handler(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    if (!handler_lookup(args[0], NULL)) {
        fprintf(stderr, "%s: unknown %s '%s'\n", x->where, d->name, args[0]);
        return -1;
    }
    char *arg = nargs == 2 ? strdup(args[1]) : NULL;
    if ((nargs == 2 && !arg) || set_str(&x->lc->handler, args[0]) < 0 ||
        set_str(&x->lc->handler_where, x->where) < 0) {
        free(arg);
        return oom(x);
    }
    free(x->lc->handler_arg);
    x->lc->handler_arg = arg;
    return 0;
}

static int d_compress_types(const struct directive *d, const struct dir_ctx *x, char **args,
                            int nargs)
{
    struct loc_conf *lc = x->lc;
    for (int i = 0; i < nargs; i++)
        if (!media_pattern_ok(args[i])) {
            fprintf(stderr, "%s: invalid media type '%s' for '%s' (type/subtype, one '*' "
                            "allowed in the subtype)\n", x->where, args[i], d->name);
            return -1;
        }
    char **types = calloc(nargs > 0 ? (size_t)nargs : 1, sizeof(char *));
    if (!types)
        return oom(x);
    for (int i = 0; i < nargs; i++) {
        if (!(types[i] = strdup(args[i]))) {
            for (int k = 0; k < i; k++)
                free(types[k]);
            free(types);
            return oom(x);
        }
        for (char *p = types[i]; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    for (int i = 0; i < lc->ncompress_types; i++)
        free(lc->compress_types[i]);
    free(lc->compress_types);
    lc->compress_types = types;
    lc->ncompress_types = nargs;
    return 0;
}

/* compress_level CODING N */
static int d_compress_level(const struct directive *d, const struct dir_ctx *x, char **args,
                            int nargs)
{
    (void)nargs;
    static const char *const words[] = { "br", "zstd", "gzip", NULL };
    static const int lo[SITE_NCODINGS] = { 0, 1, 1 }, hi[SITE_NCODINGS] = { 11, 19, 9 };
    int c = one_of(d, x, args[0], words, "a coding: br, zstd or gzip");
    if (c < 0)
        return -1;
    char *end;
    long v = strtol(args[1], &end, 10);
    if (!isdigit((unsigned char)args[1][0]) || *end || v < lo[c] || v > hi[c]) {
        fprintf(stderr, "%s: %s %s takes %d to %d, not '%s'\n", x->where, d->name, words[c],
                lo[c], hi[c], args[1]);
        return -1;
    }
    x->lc->compress_level[c] = (int)v;
    return 0;
}

/* ---- per-client limits ----------------------------------------------------------------------- */

/* limit_conn_per_ip N|off: at the top level the connections one client holds (struct config),
 * in a server or location its requests in flight there (struct loc_conf). */
static int d_limit_conn(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    (void)nargs;
    uint64_t v = 0;
    if (strcmp(args[0], "off") && (parse_number(args[0], U_COUNT, &v) < 0 || v > d->max)) {
        fprintf(stderr, "%s: invalid value '%s' for '%s' (0..%llu or off)\n", x->where, args[0],
                d->name, (unsigned long long)d->max);
        return -1;
    }
    if (x->lc == &x->cfg->sites.sites[0].base)
        x->cfg->limit_conn_per_ip = (unsigned)v;
    else
        x->lc->limit_conn = (int)v;
    return 0;
}

/* limit_req_per_ip RATE [burst N]|off (also nginx's burst=N) */
static int d_limit_req(const struct directive *d, const struct dir_ctx *x, char **args,
                       int nargs)
{
    struct loc_conf *lc = x->lc;
    uint64_t interval = 0, burst = 0;
    const char *b = nargs == 2 && !strncmp(args[1], "burst=", 6) ? args[1] + 6
                    : nargs == 3 && !strcmp(args[1], "burst") ? args[2]
                                                               : NULL;
    if (!strcmp(args[0], "off") ? nargs != 1 : nargs > 1 && !b) {
        fprintf(stderr, "%s: '%s' takes %s\n", x->where, d->name, d->takes);
        return -1;
    }
    if (strcmp(args[0], "off") && limit_rate_parse(args[0], &interval) < 0) {
        fprintf(stderr, "%s: invalid rate '%s' for '%s' (requests per second or minute, "
                        "1 to 1000000: 10r/s, 600r/m)\n", x->where, args[0], d->name);
        return -1;
    }
    if (interval)
        burst = 1;
    if (b && (parse_number(b, U_COUNT, &burst) < 0 || burst < 1 || burst > d->max)) {
        fprintf(stderr, "%s: invalid burst '%s' for '%s' (1..%llu)\n", x->where, b, d->name,
                (unsigned long long)d->max);
        return -1;
    }
    lc->limit_req_interval = interval;
    lc->limit_req_burst = (int)burst;
    return 0;
}

/* ---- the table ---------------------------------------------------------------------------------- */

#define TOP(field) offsetof(struct config, field)
#define LOC(field) offsetof(struct loc_conf, field)
#define ONE 1, 1, "exactly one value"
#define NUM(f, t, u, lo, hi) f, t, u, lo, hi

const struct directive directive_table[] = {
    /* process-wide: listeners, threads, logs */
    { "listen", IN_TOP, 1, 2, "ADDR:PORT [proxy_protocol]", d_listen, 0, 0, 0, 0, 0 },
    { "admin_listen", IN_TOP, 1, 1, "ADDR:PORT", d_listen, 0, 0, 0, 0, 0 },
    { "threads", IN_TOP, ONE, d_auto, NUM(TOP(threads), F_UNSIGNED, U_COUNT, 1, 1024) },
    { "leader_batch", IN_TOP, ONE, d_number, NUM(TOP(batch), F_INT, U_COUNT, 1, 64) },
    { "concurrency", IN_TOP, ONE, d_concurrency, 0, 0, 0, 0, 0 },
    { "user", IN_TOP, ONE, d_name, TOP(user), 0, 0, 0, 0 },
    { "group", IN_TOP, ONE, d_name, TOP(group), 0, 0, 0, 0 },
    { "error_log", IN_TOP, ONE, d_path, TOP(error_log), 0, 0, 0, 0 },
    { "access_log", IN_TOP, ONE, d_path, TOP(access_log), 0, 0, 0, 0 },
    { "access_log_format", IN_TOP, ONE, d_log_format, 0, 0, 0, 0, 0 },
    { "access_log_buffer", IN_TOP, 1, 1, "a size (4k..1m) or off", d_number_or_off,
      NUM(TOP(access_log_buffer), F_SIZE, U_SIZE, 4096, 1024 * 1024) },
    { "access_log_flush", IN_TOP, ONE, d_number,
      NUM(TOP(access_log_flush), F_UNSIGNED, U_MS, 1, 60000) },
    { "log_level", IN_TOP, ONE, d_log_level, 0, 0, 0, 0, 0 },
    { "tcp_notsent_lowat", IN_TOP, 1, 1, "a size (16k..64m) or off", d_number_or_off,
      NUM(TOP(tcp_notsent_lowat), F_SIZE, U_SIZE, 16 * 1024, 64 * 1024 * 1024) },
    { "trusted_proxies", IN_TOP, 1, 0, "one or more addresses or CIDR ranges", d_cidrs,
      TOP(trusted_proxies), 0, 0, 0, 0 },
    { "real_ip_header", IN_TOP, ONE, d_real_ip, 0, 0, 0, 0, 0 },
    { "mime_types", IN_TOP, ONE, d_path, TOP(mime_file), 0, 0, 0, 0 },
    /* process-wide: limits, the open-file cache, timeouts */
    { "max_request_head", IN_TOP, ONE, d_number,
      NUM(TOP(max_head_size), F_SIZE, U_SIZE, 1024, 64 * 1024) },
    { "max_headers", IN_TOP, ONE, d_number, NUM(TOP(max_headers), F_UNSIGNED, U_COUNT, 1, 1000) },
    { "max_uri_length", IN_TOP, ONE, d_number,
      NUM(TOP(max_uri_length), F_SIZE, U_SIZE, 64, 1024 * 1024) },
    { "max_body_size", IN_TOP, ONE, d_number,
      NUM(TOP(max_body_size), F_U64, U_SIZE, 0, UINT64_C(1) << 40) },
    { "max_connections", IN_TOP, ONE, d_number,
      NUM(TOP(max_connections), F_UNSIGNED, U_COUNT, 1, 1000000) },
    /* per-client limits (client_limits.c): the table and the allow-list are process-wide;
     * limit_conn_per_ip counts connections at the top level, requests in flight in a block */
    { "limit_conn_per_ip", IN_ANY, ONE, d_limit_conn, NUM(0, 0, U_COUNT, 0, 1000000) },
    { "limit_req_per_ip", IN_ANY, 1, 3, "RATE [burst N] (e.g. 10r/s burst 20) or off",
      d_limit_req, NUM(0, 0, U_COUNT, 1, 100000) },
    { "limit_allow", IN_TOP, 1, 0, "one or more addresses or CIDR ranges", d_cidrs,
      TOP(limit_allow), 0, 0, 0, 0 },
    { "limit_table_size", IN_TOP, ONE, d_auto,
      NUM(TOP(limit_table_size), F_UNSIGNED, U_COUNT, 1024, 1u << 26) },
    { "file_cache_entries", IN_TOP, ONE, d_number,
      NUM(TOP(file_cache_entries), F_UNSIGNED, U_COUNT, 64, 10000000) },
    { "file_cache_size", IN_TOP, ONE, d_number,
      NUM(TOP(file_cache_size), F_SIZE, U_SIZE, 0, UINT64_C(1) << 40) },
    { "file_cache_valid", IN_TOP, ONE, d_number,
      NUM(TOP(file_cache_valid), F_UNSIGNED, U_MS, 0, 86400000) },
    { "timeout_header", IN_TOP, ONE, d_number,
      NUM(TOP(timeout_header), F_UNSIGNED, U_MS, 1, 86400000) },
    { "timeout_header_max", IN_TOP, ONE, d_number,
      NUM(TOP(timeout_header_max), F_UNSIGNED, U_MS, 0, 86400000) },
    { "timeout_header_min_rate", IN_TOP, ONE, d_number,
      NUM(TOP(timeout_header_min_rate), F_UNSIGNED, U_COUNT, 0, 1000000000) },
    { "timeout_body", IN_TOP, ONE, d_number,
      NUM(TOP(timeout_body), F_UNSIGNED, U_MS, 1, 86400000) },
    { "timeout_body_max", IN_TOP, ONE, d_number,
      NUM(TOP(timeout_body_max), F_UNSIGNED, U_MS, 0, 86400000) },
    { "timeout_body_min_rate", IN_TOP, ONE, d_number,
      NUM(TOP(timeout_body_min_rate), F_UNSIGNED, U_COUNT, 0, 1000000000) },
    { "timeout_keepalive", IN_TOP, ONE, d_number,
      NUM(TOP(timeout_keepalive), F_UNSIGNED, U_MS, 1, 86400000) },
    { "timeout_send", IN_TOP, ONE, d_number,
      NUM(TOP(timeout_send), F_UNSIGNED, U_MS, 1, 86400000) },
    { "timeout_handshake", IN_TOP, ONE, d_number,
      NUM(TOP(timeout_handshake), F_UNSIGNED, U_MS, 1, 86400000) },
    { "drain_timeout", IN_TOP, ONE, d_number,
      NUM(TOP(drain_timeout), F_UNSIGNED, U_MS, 0, 86400000) },
    { "drain_delay", IN_TOP, ONE, d_number, NUM(TOP(drain_delay), F_UNSIGNED, U_MS, 0, 3600000) },
    { "reload_on_change", IN_TOP, ONE, d_onoff, TOP(reload_on_change), 0, 0, 0, 0 },
    /* process-wide: TLS */
    { "tls_listen", IN_TOP, 1, 2, "ADDR:PORT [proxy_protocol]", d_listen, 0, 0, 0, 0, 0 },
    { "tls_certificate", IN_TOP, 2, 0, "a certificate file, a key file and optional server names",
      d_certificate, 0, 0, 0, 0, 0 },
    { "tls_passphrase_file", IN_TOP, ONE, d_path, TOP(tls_passphrase_file), 0, 0, 0, 0 },
    { "tls_session_cache", IN_TOP, ONE, d_number,
      NUM(TOP(tls_session_cache), F_UNSIGNED, U_COUNT, 0, 10000000) },
    { "tls_session_timeout", IN_TOP, ONE, d_number,
      NUM(TOP(tls_session_timeout), F_UNSIGNED, U_MS, 1000, 86400000) },
    { "tls_session_ticket_rotation", IN_TOP, ONE, d_number,
      NUM(TOP(tls_ticket_rotation), F_UNSIGNED, U_MS, 0, 86400000) },
    { "tls_session_ticket_key_file", IN_TOP, ONE, d_path, TOP(tls_ticket_key_file), 0, 0, 0, 0 },
    { "tls_hsts", IN_TOP, ONE, d_number, NUM(TOP(tls_hsts), F_UNSIGNED, U_COUNT, 0, 315360000) },
    { "tls_redirect_http", IN_TOP, ONE, d_onoff, TOP(tls_redirect_http), 0, 0, 0, 0 },
    /* process-wide: CGI and the built-in handlers */
    { "cgi_timeout", IN_TOP, ONE, d_number, NUM(TOP(cgi_timeout), F_UNSIGNED, U_MS, 1, 86400000) },
    { "cgi_max", IN_TOP, ONE, d_number, NUM(TOP(cgi_max), F_UNSIGNED, U_COUNT, 1, 100000) },
    { "cgi_env_pass", IN_TOP, 1, 0, "one or more values", d_env_pass, 0, 0, 0, 0, 0 },
    { "status_allow", IN_TOP, 1, 0, "one or more addresses or CIDR ranges", d_cidrs,
      TOP(status_allow), 0, 0, 0, 0 },
    { "test_endpoints", IN_TOP, ONE, d_test_endpoints, 0, 0, 0, 0, 0 },
    /* sites and locations */
    { "root", IN_ANY, ONE, d_root, 0, 0, 0, 0, 0 },
    { "index", IN_ANY, 1, SITE_MAX_INDEX, "one to eight file names", d_index, 0, 0, 0, 0, 0 },
    { "directory_listing", IN_ANY, ONE, d_onoff, LOC(listing), F_INT, 0, 0, 0 },
    { "hidden_files", IN_ANY, ONE, d_hidden, 0, 0, 0, 0, 0 },
    { "follow_symlinks", IN_ANY, ONE, d_symlinks, 0, 0, 0, 0, 0 },
    { "precompressed", IN_ANY, ONE, d_onoff, LOC(precompressed), F_INT, 0, 0, 0 },
    { "etag", IN_ANY, ONE, d_onoff, LOC(etag), F_INT, 0, 0, 0 },
    { "spa_fallback", IN_ANY, ONE, d_path_or_off, LOC(spa_fallback), 0, 0, 0, 0 },
    { "add_header", IN_ANY, 2, 2, "a header name and one (quoted) value", d_add_header,
      0, 0, 0, 0, 0 },
    { "cache_control", IN_ANY, ONE, d_header_value, LOC(cache_control), 0, 0, 0, 0 },
    { "expires", IN_ANY, ONE, d_expires, 0, 0, 0, 0, 0 },
    { "error_page", IN_ANY, 2, 0, "STATUS... /PATH", d_error_page, 0, 0, 0, 0, 0 },
    { "default_type", IN_ANY, ONE, d_header_value, LOC(default_type), 0, 0, 0, 0 },
    { "handler", IN_ANY, 1, 2, "a type and an optional argument", d_handler, 0, 0, 0, 0, 0 },
    { "auth_basic", IN_ANY, ONE, d_header_value, LOC(auth_realm), 0, 0, 0, 0 },
    { "auth_basic_user_file", IN_ANY, ONE, d_user_file, 0, 0, 0, 0, 0 },
    { "compress", IN_ANY, ONE, d_onoff, LOC(compress), F_INT, 0, 0, 0 },
    { "compress_types", IN_ANY, 1, 0, "one or more media types", d_compress_types,
      0, 0, 0, 0, 0 },
    { "compress_min_size", IN_ANY, ONE, d_number,
      NUM(LOC(compress_min_size), F_I64, U_SIZE, 0, INT64_MAX / 1024) },
    { "compress_level", IN_ANY, 2, 2, "a coding (br, zstd, gzip) and a level", d_compress_level,
      0, 0, 0, 0, 0 },
    { "compress_cache_dir", IN_ANY, ONE, d_path_or_off, LOC(compress_cache_dir), 0, 0, 0, 0 },
    { "compress_cache_size", IN_ANY, ONE, d_number,
      NUM(LOC(compress_cache_size), F_I64, U_SIZE, 64 * 1024, INT64_MAX / 1024) },
    { "compress_dynamic", IN_ANY, ONE, d_onoff, LOC(compress_dynamic), F_INT, 0, 0, 0 },
    { "compress_dynamic_max", IN_TOP, ONE, d_number,
      NUM(TOP(compress_dynamic_max), F_UNSIGNED, U_COUNT, 0, 100000) },
};
const size_t directive_count = sizeof(directive_table) / sizeof(directive_table[0]);

const struct directive *directive_find(const char *name)
{
    for (size_t i = 0; i < directive_count; i++)
        if (!strcmp(directive_table[i].name, name))
            return &directive_table[i];
    return NULL;
}

int directive_apply(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    if (nargs < d->nmin || (d->nmax && nargs > d->nmax)) {
        fprintf(stderr, "%s: '%s' takes %s\n", x->where, d->name, d->takes);
        return -1;
    }
    return d->apply(d, x, args, nargs);
}
