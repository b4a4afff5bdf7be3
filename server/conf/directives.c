/* directives.c — the core's configuration directives: one table, one checking function each;
 * see directives.h. Adding a directive is a line in the table (and, for a new kind of value, a
 * function); a handler type's directives live in its own files (handler_conf.h). Files a
 * directive names are checked where they are named, so that the error can say FILE:LINE; they
 * are opened for real when the runtime is built. */
#include "conf/directives.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "conf/acme_conf.h"
#include "conf/config.h"
#include "conf/handler_conf.h"
#include "conf/site_rules.h"
#include "lf/thread_pool.h"
#include "log/diag.h"

/* The highest rate limit_req_per_ip takes, per second or per minute. */
#define RATE_MAX 1000000

void *directive_field(const struct directive *d, const struct dir_ctx *x)
{
    char *base = conf_directive_block(d, x->cfg, x->lc);
    if (!base)
        base = d->in == IN_TOP ? (char *)x->cfg : (char *)x->lc;
    return base + d->offset;
}

/* The checks registered from above (directive_set_check): few, set once at start-up. */
#define CHECKS_MAX 4
static struct {
    const char *name;
    directive_check_fn check;
} checks[CHECKS_MAX];

void directive_set_check(const char *name, directive_check_fn check)
{
    for (int i = 0; i < CHECKS_MAX; i++)
        if (!checks[i].name || !strcmp(checks[i].name, name)) {
            checks[i].name = name;
            checks[i].check = check;
            return;
        }
    abort(); /* more checks than CHECKS_MAX: a build mistake, never a configuration's */
}

/* The registered check of directive `d`'s value: 0, or -1 (message printed). */
static int registered_check(const struct directive *d, const struct dir_ctx *x, const char *v)
{
    for (int i = 0; i < CHECKS_MAX && checks[i].name; i++)
        if (!strcmp(checks[i].name, d->name)) {
            char err[PATH_MAX + 128] = "invalid value";
            if (checks[i].check(v, err, sizeof(err)) < 0) {
                diag("%s: %s\n", x->where, err);
                return -1;
            }
        }
    return 0;
}

/* Running out of memory while applying a directive fails the start-up, or the reload (which
 * keeps the running configuration): never the process. What was being built is left
 * consistent for config_free. */
int directive_oom(const struct dir_ctx *x)
{
    diag("%s: out of memory\n", x->where);
    return -1;
}

/* Replace *field with a copy of `v`. 0, or -1 with *field unchanged. */
int directive_set_str(char **field, const char *v)
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
int directive_parse_number(const char *s, int unit, uint64_t *out)
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

static bool header_token_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
            return false;
    return true;
}

bool directive_header_value_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 && *s != '\t')
            return false;
    return true;
}

int directive_one_of(const struct directive *d, const struct dir_ctx *x, const char *v,
                  const char *const *words, const char *allowed)
{
    for (int i = 0; words[i]; i++)
        if (!strcmp(v, words[i]))
            return i;
    diag("%s: invalid %s '%s' (%s)\n", x->where, d->name, v, allowed);
    return -1;
}

/* ---- generic appliers ------------------------------------------------------------------------- */

int directive_number(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    uint64_t v;
    if (directive_parse_number(args[0], d->unit, &v) < 0 || v < d->min || v > d->max) {
        diag("%s: invalid value '%s' for '%s' (%llu..%llu%s)\n", x->where, args[0],
             d->name, (unsigned long long)d->min, (unsigned long long)d->max,
             d->unit == U_SIZE ? " bytes, k/m/g suffixes allowed"
             : d->unit == U_MS ? " ms; units ms, s, m, h"
                       : "");
        return -1;
    }
    void *f = directive_field(d, x);
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
        (directive_parse_number(args[0], d->unit, &v) < 0 || v < d->min || v > d->max)) {
        diag("%s: invalid value '%s' for '%s' (%llu..%llu bytes, k/m/g suffixes "
             "allowed, or off)\n", x->where, args[0], d->name,
             (unsigned long long)d->min, (unsigned long long)d->max);
        return -1;
    }
    *(size_t *)directive_field(d, x) = (size_t)v;
    return 0;
}

/* sendfile_min_size SIZE|never|auto: from what size a file goes out by sendfile. */
static int d_sendfile_min(const struct directive *d, const struct dir_ctx *x, char **args,
                          int nargs)
{
    (void)nargs;
    struct config *cfg = x->cfg;
    uint64_t v = 0;
    if (!strcmp(args[0], "auto")) {
        cfg->sendfile_auto = true;
        return 0;
    }
    if (!strcmp(args[0], "never")) {
        v = UINT64_MAX;
    } else if (directive_parse_number(args[0], U_SIZE, &v) < 0 || v > (uint64_t)1 << 40) {
        diag("%s: invalid value '%s' for '%s' (a size: 0..1t, k/m/g suffixes allowed; never; "
             "or auto)\n", x->where, args[0], d->name);
        return -1;
    }
    cfg->sendfile_auto = false;
    cfg->sendfile_min_size = v;
    return 0;
}

/* on|off into an int (a location's: -1 is unset) or a bool (the top level's). */
int directive_onoff(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    static const char *const words[] = { "off", "on", NULL };
    int v = directive_one_of(d, x, args[0], words, "on or off");
    if (v < 0)
        return -1;
    if (d->field == F_INT)
        *(int *)directive_field(d, x) = v;
    else
        *(bool *)directive_field(d, x) = v;
    if (d->in == IN_TOP && d->offset == offsetof(struct config, tls_redirect_http))
        x->cfg->tls_redirect_line = x->line; /* for "needs a TLS listener" at the end */
    return 0;
}

/* A file name (tls_passphrase_file and others), checked now: what a check
 * registered from above says (tls_session_ticket_key_file: a valid key file), or writable for a
 * log (access_log, error_log; "off", "stdout", "stderr" are not files). */
static int d_path(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    const char *v = args[0];
    if (strlen(v) >= PATH_MAX) {
        diag("%s: '%s' value too long\n", x->where, d->name);
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
                diag("%s: %s %s: %s\n", x->where, d->name, v, strerror(errno));
                return -1;
            }
        }
    } else if (registered_check(d, x, v) < 0) {
        return -1;
    }
    snprintf(directive_field(d, x), PATH_MAX, "%s", v);
    return 0;
}

/* ---- process-wide appliers --------------------------------------------------------------------- */

/* A Unix-domain listener's mode=OCTAL, user=NAME, group=NAME. Returns 0, 1 (not one of
 * them) or -1 (message printed). */
static int listen_unix_option(const struct dir_ctx *x, struct listen_addr *la, const char *o)
{
    if (!strncmp(o, "mode=", 5)) {
        char *end;
        unsigned long m = strtoul(o + 5, &end, 8);
        if (!o[5] || *end || m > 07777) {
            diag("%s: invalid listen mode '%s' (octal, e.g. mode=0660)\n", x->where, o + 5);
            return -1;
        }
        la->mode = (unsigned)m;
        return 0;
    }
    if (!strncmp(o, "user=", 5)) {
        struct passwd *pw = getpwnam(o + 5);
        if (!pw) {
            diag("%s: listen: user '%s' does not exist\n", x->where, o + 5);
            return -1;
        }
        la->uid = pw->pw_uid;
        return 0;
    }
    if (!strncmp(o, "group=", 6)) {
        struct group *gr = getgrnam(o + 6);
        if (!gr) {
            diag("%s: listen: group '%s' does not exist\n", x->where, o + 6);
            return -1;
        }
        la->gid = gr->gr_gid;
        return 0;
    }
    return 1;
}

/* listen ADDR:PORT|unix:/PATH [proxy_protocol] [mode=M user=U group=G], tls_listen (the
 * same), admin_listen ADDR:PORT|unix:/PATH [mode=M user=U group=G] */
static int d_listen(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    struct config *cfg = x->cfg;
    if (cfg->nlisten >= CONFIG_MAX_LISTEN) {
        diag("%s: too many listeners (at most %d)\n", x->where, CONFIG_MAX_LISTEN);
        return -1;
    }
    struct listen_addr *la = &cfg->listen[cfg->nlisten];
    int rc = config_parse_listen(args[0], la);
    if (rc == -ENOMEM)
        return directive_oom(x);
    if (rc < 0) {
        diag("%s: invalid listen address '%s' (expected ADDR:PORT, [V6]:PORT, unix:/PATH or "
             "systemd:NAME)\n",
             x->where, args[0]);
        return -1;
    }
    if (listen_unix_blocked(la)) { /* refused now, with its line, rather than at the bind */
        diag("%s: listen %s: the file exists and is not a socket\n", x->where, args[0]);
        return -1;
    }
    bool admin = !strcmp(d->name, "admin_listen"), is_unix = la->ss.ss_family == AF_UNIX;
    for (int i = 1; i < nargs; i++) {
        int r = is_unix ? listen_unix_option(x, la, args[i]) : 1;
        if (r < 0)
            return -1;
        if (r == 0)
            continue;
        if (strcmp(args[i], "proxy_protocol") || admin) {
            diag("%s: unknown %s option '%s' (%s)\n", x->where, admin ? d->name : "listen",
                 args[i], admin ? (is_unix ? "mode=, user=, group=" : "none")
                 : is_unix ? "proxy_protocol, mode=, user=, group=" : "proxy_protocol");
            return -1;
        }
        la->proxy_protocol = true;
    }
    la->tls = !strcmp(d->name, "tls_listen");
    la->admin = admin;
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

/* A duration or off (root_grace): off is 0. */
static int d_duration_off(const struct directive *d, const struct dir_ctx *x, char **args,
                          int nargs)
{
    if (!strcmp(args[0], "off")) {
        *(int64_t *)directive_field(d, x) = 0;
        return 0;
    }
    return directive_number(d, x, args, nargs);
}

/* N or auto (threads, limit_table_size): auto is 0. */
static int d_auto(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    if (!strcmp(args[0], "auto")) {
        *(unsigned *)directive_field(d, x) = 0;
        return 0;
    }
    return directive_number(d, x, args, nargs);
}

static int d_concurrency(const struct directive *d, const struct dir_ctx *x, char **args,
                         int nargs)
{
    (void)nargs;
    static const char *const words[] = { "leader-followers", "half-sync-half-async",
                                         "reuseport", "leader-followers-edge", NULL };
    _Static_assert(CONC_REUSEPORT == 2 && CONC_LEADER_FOLLOWERS_EDGE == 3,
                   "the words follow enum concurrency");
    int v = directive_one_of(d, x, args[0], words,
                   "leader-followers, half-sync-half-async, reuseport or "
                   "leader-followers-edge");
    return v < 0 ? -1 : (x->cfg->concurrency = v, 0);
}

static int d_log_level(const struct directive *d, const struct dir_ctx *x, char **args,
                       int nargs)
{
    (void)nargs;
    static const char *const words[] = { "error", "warn", "notice", "info", "debug", NULL };
    int v = directive_one_of(d, x, args[0], words, "error, warn, notice, info, debug");
    return v < 0 ? -1 : (x->cfg->log_level = v, 0);
}

static int d_log_format(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    (void)nargs;
    static const char *const words[] = { "combined", "json", NULL };
    int v = directive_one_of(d, x, args[0], words, "combined or json");
    return v < 0 ? -1 : (x->cfg->access_log_format = v, 0);
}

static int d_error_log_format(const struct directive *d, const struct dir_ctx *x, char **args,
                              int nargs)
{
    (void)nargs;
    static const char *const words[] = { "plain", "json", NULL };
    int v = directive_one_of(d, x, args[0], words, "plain or json");
    return v < 0 ? -1 : (x->cfg->error_log_json = v == 1, 0);
}

static int d_real_ip(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    if (!strcasecmp(args[0], "x-forwarded-for") || !strcasecmp(args[0], "forwarded")) {
        x->cfg->real_ip_forwarded = !strcasecmp(args[0], "forwarded");
        return 0;
    }
    diag("%s: invalid %s '%s' (X-Forwarded-For or Forwarded)\n", x->where, d->name,
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
        diag("%s: invalid %s name '%s'\n", x->where, d->name, v);
        return -1;
    }
    snprintf(directive_field(d, x), sizeof(x->cfg->user), "%s", v);
    return 0;
}

int directive_cidrs_add(const struct dir_ctx *x, struct cidr_list *l, char **args, int nargs,
                        bool keywords)
{
    for (int i = 0; i < nargs; i++) {
        bool keyword = keywords && nargs == 1 &&
                       (!strcmp(args[i], "none") || !strcmp(args[i], "all"));
        if (keyword && !strcmp(args[i], "none"))
            continue; /* an empty list: nobody */
        if (keyword ? cidr_list_add(l, "0.0.0.0/0") < 0 || cidr_list_add(l, "::/0") < 0
                    : cidr_list_add(l, args[i]) < 0) {
            diag("%s: invalid address or CIDR range '%s'\n", x->where, args[i]);
            return -1;
        }
    }
    return 0;
}

/* trusted_proxies CIDR..., limit_allow CIDR... */
static int d_cidrs(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    return directive_cidrs_add(x, directive_field(d, x), args, nargs, false);
}

/* ---- site appliers (a struct loc_conf) ---------------------------------------------------------- */

static int d_root(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    struct stat st;
    int rc = stat(args[0], &st);
    if (rc < 0 || !S_ISDIR(st.st_mode)) {
        diag("%s: %s %s: %s\n", x->where, d->name, args[0],
             rc < 0 ? strerror(errno) : "not a directory");
        return -1;
    }
    return directive_set_str(&x->lc->root, args[0]) < 0 ? directive_oom(x) : 0;
}

static int d_add_header(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    struct loc_conf *lc = x->lc;
    (void)nargs;
    if (!header_token_ok(args[0]) || !directive_header_value_ok(args[1])) {
        diag("%s: '%s' takes %s\n", x->where, d->name, d->takes);
        return -1;
    }
    if (lc->nheaders < 0)
        lc->nheaders = 0;
    struct header_kv *nh = realloc(lc->headers, sizeof(*nh) * (size_t)(lc->nheaders + 1));
    if (!nh)
        return directive_oom(x);
    lc->headers = nh;
    char *name = strdup(args[0]), *value = strdup(args[1]);
    if (!name || !value) {
        free(name);
        free(value);
        return directive_oom(x);
    }
    struct header_kv *h = &lc->headers[lc->nheaders++];
    h->name = name;
    h->value = value;
    h->name_len = strlen(h->name);
    h->value_len = strlen(h->value);
    return 0;
}

int directive_header_value(const struct directive *d, const struct dir_ctx *x, char **args,
                           int nargs)
{
    (void)nargs;
    const char *v = args[0];
    if (!directive_header_value_ok(v)) {
        diag("%s: invalid '%s' value '%s'\n", x->where, d->name, v);
        return -1;
    }
    return directive_set_str(directive_field(d, x), !strcmp(v, "off") ? "" : v) < 0
               ? directive_oom(x)
               : 0;
}

/* auth_basic REALM|off: a header value without quotes or backslashes */
static int d_realm(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    const char *v = args[0];
    if (!directive_header_value_ok(v) || strpbrk(v, "\"\\")) {
        diag("%s: invalid '%s' value '%s'\n", x->where, d->name, v);
        return -1;
    }
    if (directive_set_str(&x->lc->auth_realm, !strcmp(v, "off") ? "" : v) < 0 ||
        directive_set_str(&x->lc->auth_where, x->where) < 0)
        return directive_oom(x);
    return 0;
}

/* The longest path a path-or-off value may be (a URL path or a cache directory). */
#define PATH_OR_OFF_MAX 2048

int directive_path_or_off(const struct directive *d, const struct dir_ctx *x, const char *v,
                          const char *what)
{
    bool off = !strcmp(v, "off");
    if (!off && v[0] != '/') {
        diag("%s: '%s' takes %s or off\n", x->where, d->name, what);
        return -1;
    }
    if (strlen(v) >= PATH_OR_OFF_MAX) {
        diag("%s: '%s' path too long\n", x->where, d->name);
        return -1;
    }
    return directive_set_str(directive_field(d, x), off ? "" : v) < 0 ? directive_oom(x) : 0;
}

static int d_user_file(const struct directive *d, const struct dir_ctx *x, char **args,
                       int nargs)
{
    (void)nargs;
    if (access(args[0], R_OK) < 0) {
        diag("%s: %s %s: %s\n", x->where, d->name, args[0], strerror(errno));
        return -1;
    }
    return directive_set_str(&x->lc->auth_file, args[0]) < 0 ? directive_oom(x) : 0;
}

/* handler TYPE [ARG] */
static int d_handler(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    if (registered_check(d, x, args[0]) < 0)
        return -1; /* not a handler type's name */
    char *arg = nargs == 2 ? strdup(args[1]) : NULL;
    if ((nargs == 2 && !arg) || directive_set_str(&x->lc->handler, args[0]) < 0 ||
        directive_set_str(&x->lc->handler_where, x->where) < 0) {
        free(arg);
        return directive_oom(x);
    }
    free(x->lc->handler_arg);
    x->lc->handler_arg = arg;
    return 0;
}

/* ---- per-client limits ----------------------------------------------------------------------- */

int directive_parse_rate(const char *s, uint64_t *interval_ns)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long n = strtoul(s, &end, 10);
    if (errno || n < 1 || n > RATE_MAX)
        return -1;
    uint64_t per;
    if (!strcmp(end, "r/s"))
        per = CLOCK_NS_PER_S;
    else if (!strcmp(end, "r/m"))
        per = 60 * CLOCK_NS_PER_S;
    else
        return -1;
    *interval_ns = per / n;
    return 0;
}

/* limit_conn_per_ip N|off: at the top level the connections one client holds (struct config),
 * in a server or location its requests in flight there (struct loc_conf). */
static int d_limit_conn(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    (void)nargs;
    uint64_t v = 0;
    if (strcmp(args[0], "off") &&
        (directive_parse_number(args[0], U_COUNT, &v) < 0 || v > d->max)) {
        diag("%s: invalid value '%s' for '%s' (0..%llu or off)\n", x->where, args[0],
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
        diag("%s: '%s' takes %s\n", x->where, d->name, d->takes);
        return -1;
    }
    if (strcmp(args[0], "off") && directive_parse_rate(args[0], &interval) < 0) {
        diag("%s: invalid rate '%s' for '%s' (requests per second or minute, "
             "1 to 1000000: 10r/s, 600r/m)\n", x->where, args[0], d->name);
        return -1;
    }
    if (interval)
        burst = 1;
    if (b && (directive_parse_number(b, U_COUNT, &burst) < 0 || burst < 1 || burst > d->max)) {
        diag("%s: invalid burst '%s' for '%s' (1..%llu)\n", x->where, b, d->name,
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
#define ONE DIRECTIVE_ONE
#define NUM DIRECTIVE_NUM
#define DAY_MS DIRECTIVE_DAY_MS

static const struct directive directive_table[] = {
    /* process-wide: listeners, threads, logs */
    { "listen", IN_TOP, 1, 5, "ADDR:PORT|unix:/PATH [proxy_protocol] [mode=M] [user=U] [group=G]",
      d_listen, 0, 0, 0, 0, 0 },
    { "admin_listen", IN_TOP, 1, 4, "ADDR:PORT|unix:/PATH [mode=M] [user=U] [group=G]", d_listen,
      0, 0, 0, 0, 0 },
    { "threads", IN_TOP, ONE, d_auto, NUM(TOP(threads), F_UNSIGNED, U_COUNT, 1, 1024) },
    { "leader_batch", IN_TOP, ONE, directive_number, NUM(TOP(batch), F_INT, U_COUNT, 1, 64) },
    { "concurrency", IN_TOP, ONE, d_concurrency, 0, 0, 0, 0, 0 },
    { "user", IN_TOP, ONE, d_name, TOP(user), 0, 0, 0, 0 },
    { "group", IN_TOP, ONE, d_name, TOP(group), 0, 0, 0, 0 },
    { "error_log", IN_TOP, ONE, d_path, TOP(error_log), 0, 0, 0, 0 },
    { "access_log", IN_TOP, ONE, d_path, TOP(access_log), 0, 0, 0, 0 },
    { "access_log_format", IN_TOP, ONE, d_log_format, 0, 0, 0, 0, 0 },
    { "error_log_format", IN_TOP, ONE, d_error_log_format, 0, 0, 0, 0, 0 },
    { "access_log_buffer", IN_TOP, 1, 1, "a size (4k..1m) or off", d_number_or_off,
      NUM(TOP(access_log_buffer), F_SIZE, U_SIZE, 4096, 1024 * 1024) },
    { "access_log_flush", IN_TOP, ONE, directive_number,
      NUM(TOP(access_log_flush), F_UNSIGNED, U_MS, 1, 60000) },
    { "log_level", IN_TOP, ONE, d_log_level, 0, 0, 0, 0, 0 },
    { "tcp_notsent_lowat", IN_TOP, 1, 1, "a size (16k..64m) or off", d_number_or_off,
      NUM(TOP(tcp_notsent_lowat), F_SIZE, U_SIZE, 16 * 1024, 64 * 1024 * 1024) },
    { "sendfile_min_size", IN_TOP, ONE, d_sendfile_min, 0, 0, 0, 0, 0 },
    { "trusted_proxies", IN_TOP, 1, 0, "one or more addresses or CIDR ranges", d_cidrs,
      TOP(trusted_proxies), 0, 0, 0, 0 },
    { "real_ip_header", IN_TOP, ONE, d_real_ip, 0, 0, 0, 0, 0 },
    /* process-wide: limits, the open-file cache, timeouts */
    { "max_request_head", IN_TOP, ONE, directive_number,
      NUM(TOP(http.max_head_size), F_SIZE, U_SIZE, 1024, 64 * 1024) },
    { "max_headers", IN_TOP, ONE, directive_number,
      NUM(TOP(http.max_headers), F_UNSIGNED, U_COUNT, 1, 1000) },
    { "max_uri_length", IN_TOP, ONE, directive_number,
      NUM(TOP(http.max_uri_length), F_SIZE, U_SIZE, 64, 1024 * 1024) },
    { "max_body_size", IN_TOP, ONE, directive_number,
      NUM(TOP(http.max_body_size), F_U64, U_SIZE, 0, UINT64_C(1) << 40) },
    { "max_connections", IN_TOP, ONE, directive_number,
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
    { "timeout_header", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout_header), F_UNSIGNED, U_MS, 1, DAY_MS) },
    { "timeout_header_max", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout_header_max), F_UNSIGNED, U_MS, 0, DAY_MS) },
    { "timeout_header_min_rate", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout_header_min_rate), F_UNSIGNED, U_COUNT, 0, 1000000000) },
    { "timeout_body", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout_body), F_UNSIGNED, U_MS, 1, DAY_MS) },
    { "timeout_body_max", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout_body_max), F_UNSIGNED, U_MS, 0, DAY_MS) },
    { "timeout_body_min_rate", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout_body_min_rate), F_UNSIGNED, U_COUNT, 0, 1000000000) },
    { "timeout_keepalive", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout_keepalive), F_UNSIGNED, U_MS, 1, DAY_MS) },
    { "timeout_send", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout_send), F_UNSIGNED, U_MS, 1, DAY_MS) },
    { "timeout_handshake", IN_TOP, ONE, directive_number,
      NUM(TOP(timeout_handshake), F_UNSIGNED, U_MS, 1, DAY_MS) },
    { "drain_timeout", IN_TOP, ONE, directive_number,
      NUM(TOP(drain_timeout), F_UNSIGNED, U_MS, 0, DAY_MS) },
    { "drain_delay", IN_TOP, ONE, directive_number,
      NUM(TOP(drain_delay), F_UNSIGNED, U_MS, 0, 3600000) },
    { "reload_on_change", IN_TOP, ONE, directive_onoff, TOP(reload_on_change), 0, 0, 0, 0 },
    /* process-wide: TLS */
    { "tls_listen", IN_TOP, 1, 5, "ADDR:PORT|unix:/PATH [proxy_protocol] [mode=M] ...", d_listen,
      0, 0, 0, 0, 0 },
    { "tls_certificate", IN_TOP, 2, 0, "a certificate file, a key file and optional server names",
      d_certificate, 0, 0, 0, 0, 0 },
    { "tls_passphrase_file", IN_TOP, ONE, d_path, TOP(tls_passphrase_file), 0, 0, 0, 0 },
    { "tls_session_cache", IN_TOP, ONE, directive_number,
      NUM(TOP(tls_session_cache), F_UNSIGNED, U_COUNT, 0, 10000000) },
    { "tls_session_timeout", IN_TOP, ONE, directive_number,
      NUM(TOP(tls_session_timeout), F_UNSIGNED, U_MS, 1000, DAY_MS) },
    { "tls_session_ticket_rotation", IN_TOP, ONE, directive_number,
      NUM(TOP(tls_ticket_rotation), F_UNSIGNED, U_MS, 0, DAY_MS) },
    { "tls_session_ticket_key_file", IN_TOP, ONE, d_path, TOP(tls_ticket_key_file), 0, 0, 0, 0 },
    { "tls_hsts", IN_TOP, ONE, directive_number,
      NUM(TOP(tls_hsts), F_UNSIGNED, U_COUNT, 0, 315360000) },
    { "tls_redirect_http", IN_TOP, ONE, directive_onoff, TOP(tls_redirect_http), 0, 0, 0, 0 },
    /* automatic certificates (acme_conf.h): `acme on` per server block, the rest process-wide */
    { "acme", IN_SERVER, ONE, acme_conf_on, 0, 0, 0, 0, 0 },
    { "acme_ca", IN_TOP, ONE, acme_conf_ca, 0, 0, 0, 0, 0 },
    { "acme_email", IN_TOP, ONE, acme_conf_email, 0, 0, 0, 0, 0 },
    { "acme_agree_terms", IN_TOP, ONE, directive_onoff, TOP(acme.agree_terms), 0, 0, 0, 0 },
    { "acme_state_dir", IN_TOP, ONE, acme_conf_path, 0, 0, 0, 0, 0 },
    { "acme_challenge", IN_TOP, ONE, acme_conf_challenge, 0, 0, 0, 0, 0 },
    { "acme_ca_bundle", IN_TOP, ONE, acme_conf_path, 0, 0, 0, 0, 0 },
    /* sites and locations */
    { "root", IN_ANY, ONE, d_root, 0, 0, 0, 0, 0 },
    { "root_follow", IN_ANY, ONE, directive_onoff, LOC(root_follow), F_INT, 0, 0, 0 },
    { "root_grace", IN_ANY, ONE, d_duration_off,
      NUM(LOC(root_grace), F_I64, U_MS, 1000, DAY_MS) },
    { "add_header", IN_ANY, 2, 2, "a header name and one (quoted) value", d_add_header,
      0, 0, 0, 0, 0 },
    { "handler", IN_ANY, 1, 2, "a type and an optional argument", d_handler, 0, 0, 0, 0, 0 },
    { "auth_basic", IN_ANY, ONE, d_realm, 0, 0, 0, 0, 0 },
    { "auth_basic_user_file", IN_ANY, ONE, d_user_file, 0, 0, 0, 0, 0 },
    /* site rules (site_rules.h): patterns of the rule engine, in file order */
    { "redirect", IN_ANY, 2, 3, "FROM TO [STATUS]", site_rules_redirect, 0, 0, 0, 0, 0 },
    { "rewrite", IN_ANY, 2, 3, "FROM TO [force]", site_rules_redirect, 0, 0, 0, 0, 0 },
    { "rule", IN_ANY, 2, 16, "a `_redirects` line: FROM [KEY=VALUE...] TO [STATUS[!]]",
      site_rules_redirect, 0, 0, 0, 0, 0 },
    { "header", IN_ANY, 3, 3, "a path pattern, a header name and one (quoted) value",
      site_rules_header, 0, 0, 0, 0, 0 },
    { "site_rules_files", IN_TOP | IN_SERVER, ONE, directive_onoff,
      NUM(LOC(rules_files), F_INT, 0, 0, 0) },
};
static const size_t directive_count = sizeof(directive_table) / sizeof(directive_table[0]);

const struct directive *directive_find(const char *name)
{
    for (size_t i = 0; i < directive_count; i++)
        if (!strcmp(directive_table[i].name, name))
            return &directive_table[i];
    return conf_directive_find(name);
}

void directive_tables(void (*fn)(const struct directive *table, size_t n, void *arg), void *arg)
{
    fn(directive_table, directive_count, arg);
    conf_directive_tables(fn, arg);
}

int directive_apply(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    if (nargs < d->nmin || (d->nmax && nargs > d->nmax)) {
        diag("%s: '%s' takes %s\n", x->where, d->name, d->takes);
        return -1;
    }
    return d->apply(d, x, args, nargs);
}
