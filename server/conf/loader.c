/* loader.c — the configuration file and the command line; see config.h.
 *
 * The file format is line oriented: `directive value...` per line, `#` starts a comment, and
 * `server NAME... {` / `location MATCH {` open blocks closed by `}`; `include` reads other
 * files in place, and values take ${NAME} from the environment (envsubst.h). What each
 * directive means, where it may appear and how its values are checked is in a table: the
 * core's (directives.c) or a handler type's (handler_conf.h); this file reads the file and
 * the command line and hands each directive to it. */
#include "conf/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cpu_limit.h"
#include "base/version.h"
#include "conf/directives.h"
#include "conf/envsubst.h"
#include "conf/handler_conf.h"
#include "log/log.h"
#include "log/diag.h"

/* Split a line into tokens: whitespace-separated words, "double-quoted strings" (with \" and
 * \\ escapes), `{` and `}`; `#` outside quotes starts a comment. A `${...}` (envsubst.h) is
 * part of its word, whatever it holds. Returns the token count or
 * -1 (message printed). Tokens point into `line`, which is modified. */
#define MAX_TOKENS 32
static char open_brace[] = "{", close_brace[] = "}";
static int tokenize(char *line, const char *where, char **tok)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p || *p == '#')
            return n;
        if (n == MAX_TOKENS) {
            diag("%s: too many values\n", where);
            return -1;
        }
        if (*p == '"') {
            char *out = ++p;
            tok[n++] = out;
            while (*p && *p != '"') {
                if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                    p++;
                *out++ = *p++;
            }
            if (*p != '"') {
                diag("%s: unterminated quoted string\n", where);
                return -1;
            }
            p++;
            *out = '\0';
            continue;
        }
        if (*p == '{' || *p == '}') {
            tok[n++] = *p == '{' ? open_brace : close_brace;
            *p++ = '\0';
            continue;
        }
        tok[n++] = p;
        while (*p && !strchr(" \t\r\n#{}\"", *p)) {
            char *end = p[0] == '$' && p[1] == '{' ? strchr(p, '}') : NULL;
            p = end ? end + 1 : p + 1 + (p[0] == '$' && p[1] == '{'); /* ${...}: one word */
        }
        if (*p == '"') {
            diag("%s: unexpected quote\n", where);
            return -1;
        }
        if (*p == '{' || *p == '}') { /* a brace glued to a word: a token of its own */
            bool open = *p == '{';
            *p++ = '\0';
            if (n == MAX_TOKENS) {
                diag("%s: too many values\n", where);
                return -1;
            }
            tok[n++] = open ? open_brace : close_brace;
        } else if (*p == '#') {
            *p = '\0';
            return n;
        } else if (*p) {
            *p++ = '\0';
        }
    }
}

#define INCLUDE_DEPTH_MAX 8 /* files open at once through `include`, the main one counted */

/* Where the loader is: the blocks it is in, and the files it is reading. */
struct loader {
    struct config *cfg;
    struct site *site;          /* inside `server ... {` */
    struct loc_conf *loc;       /* inside `location ... {` */
    unsigned server_line, location_line; /* where the open blocks started */
    bool had_listen;            /* the file's first `listen` replaces the default */
    unsigned floor;             /* blocks the including files opened: not this file's to close */
    unsigned depth;             /* files being read: stack[0..depth) */
    char stack[INCLUDE_DEPTH_MAX][PATH_MAX]; /* their real paths, for include cycles */
};

static unsigned blocks_open(const struct loader *ld)
{
    return (ld->site ? 1u : 0u) + (ld->loc ? 1u : 0u);
}

static int close_block(struct loader *ld, const char *where, int n)
{
    if (n != 1 || blocks_open(ld) <= ld->floor) {
        diag("%s: unexpected '}'\n", where);
        return -1;
    }
    if (ld->loc) {
        ld->loc = NULL;
        ld->location_line = 0;
    } else {
        ld->site = NULL;
        ld->server_line = 0;
    }
    return 0;
}

/* `server NAME... {` or `location MATCH {`. */
static int open_block(struct loader *ld, const char *where, unsigned lineno, char **args, int n)
{
    const char *name = args[0];
    if (strcmp(args[n - 1], "{")) {
        diag("%s: '%s' block must end its first line with '{'\n", where, name);
        return -1;
    }
    if (!strcmp(name, "server")) {
        if (ld->site || ld->loc) {
            diag("%s: 'server' blocks cannot be nested\n", where);
            return -1;
        }
        ld->site = site_add_server(&ld->cfg->sites, where, args + 1, n - 2);
        ld->server_line = lineno;
        return ld->site ? 0 : -1;
    }
    if (ld->loc) {
        diag("%s: 'location' blocks cannot be nested\n", where);
        return -1;
    }
    if (n != 3) {
        diag("%s: 'location' takes one match (a /prefix/ or *.ext)\n", where);
        return -1;
    }
    ld->loc = site_add_location(ld->site ? ld->site : &ld->cfg->sites.sites[0], where, args[1]);
    ld->location_line = lineno;
    return ld->loc ? 0 : -1;
}

/* A directive's line, applied where the loader is. */
static int directive_line(struct loader *ld, const char *where, unsigned lineno, char **args,
                          int n)
{
    const char *name = args[0];
    if (!strcmp(name, "{") || !strcmp(args[n - 1], "{")) {
        diag("%s: unexpected '{'\n", where);
        return -1;
    }
    for (int i = 1; i < n; i++)
        if (!strcmp(args[i], "}") || !strcmp(args[i], "{")) {
            diag("%s: braces go on their own line or end a block's first line\n", where);
            return -1;
        }
    const struct directive *d = directive_find(name);
    if (!d) {
        diag("%s: unknown directive '%s'\n", where, name);
        return -1;
    }
    unsigned in = ld->loc ? IN_LOCATION : ld->site ? IN_SERVER : IN_TOP;
    if (!(d->in & in)) {
        diag("%s: '%s' is not allowed inside a block\n", where, name);
        return -1;
    }
    if (!strcmp(name, "listen") && !ld->had_listen) {
        config_drop_listeners(ld->cfg, false); /* the file's listeners replace the default */
        ld->had_listen = true;
    }
    struct loc_conf *lc = ld->loc    ? ld->loc
                          : ld->site ? &ld->site->base
                                     : &ld->cfg->sites.sites[0].base;
    struct dir_ctx x = { ld->cfg, lc, where, lineno };
    return directive_apply(d, &x, args + 1, n - 1);
}

#define LINE_MAX_LEN 4096 /* a line of the file, and a line's values once substituted */

/* The directives whose values the server prints once in service (README: listeners in the
 * start-up log, threads and concurrency on the status page, server names in /metrics). */
static bool shown_directive(const char *name)
{
    static const char *const shown[] = { "listen", "tls_listen", "admin_listen", "threads",
                                         "concurrency", "server", NULL };
    for (size_t i = 0; shown[i]; i++)
        if (!strcmp(name, shown[i]))
            return true;
    return false;
}

/* A value `written` that took `value` from the environment: hide it, and each variable's own
 * value (a message may quote a piece of the value), behind the references as written. shown:
 * diag_secret.shown. */
static int note_secrets(struct config *cfg, const char *written, const char *value, bool shown)
{
    if (config_add_secret(cfg, written, strlen(written), value, strlen(value), shown) < 0)
        return -1;
    for (const char *p = strstr(written, "${"); p; p = strstr(p + 2, "${")) {
        if (p > written && p[-1] == '$')
            continue; /* $${: a literal */
        size_t len = strspn(p + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789_");
        char name[256];
        const char *end = strchr(p, '}');
        if (!len || len >= sizeof(name) || !end)
            continue;
        memcpy(name, p + 2, len);
        name[len] = '\0';
        const char *v = getenv(name);
        if (v && *v && config_add_secret(cfg, p, (size_t)(end + 1 - p), v, strlen(v), shown) < 0)
            return -1;
    }
    return 0;
}

/* ${NAME} in every value of a line (not the directive's name): the values are rewritten into
 * `buf`, and those that took something from the environment are hidden from the messages.
 * Returns 0 or -1 (message printed). */
static int substitute(struct config *cfg, char **args, int n, char *buf, size_t cap,
                      const char *where)
{
    size_t pos = 0;
    for (int i = 1; i < n; i++) {
        if (!strchr(args[i], '$'))
            continue;
        char err[256];
        bool used;
        int len = env_subst(args[i], buf + pos, cap - pos, &used, err, sizeof(err));
        if (len < 0) {
            diag("%s: %s\n", where, err);
            return -1;
        }
        if (used && note_secrets(cfg, args[i], buf + pos, shown_directive(args[0])) < 0)
            return -1;
        args[i] = buf + pos;
        pos += (size_t)len + 1;
    }
    return 0;
}

static int load_file(struct loader *ld, const char *path, const char *where);

/* Remember a file or pattern for reload_on_change (watch.c). Returns 0 or -1 (message). */
static int config_note_file(struct config *cfg, const char *path, bool pattern)
{
    char **nf = realloc(cfg->conf_files, (cfg->nconf_files + 1) * sizeof(*nf));
    bool *np = nf ? realloc(cfg->conf_file_glob, (cfg->nconf_files + 1) * sizeof(*np)) : NULL;
    if (nf)
        cfg->conf_files = nf;
    if (np)
        cfg->conf_file_glob = np;
    char *copy = np ? strdup(path) : NULL;
    if (!copy) {
        diag("%s: out of memory\n", path);
        return -1;
    }
    cfg->conf_files[cfg->nconf_files] = copy;
    cfg->conf_file_glob[cfg->nconf_files++] = pattern;
    return 0;
}

/* `include FILE|PATTERN`: relative to the including file; a pattern's files in name order (a
 * pattern that matches nothing includes nothing, a file that does not exist is an error). */
static int include_line(struct loader *ld, const char *where, const char *path, char **args,
                        int n)
{
    if (n != 2) {
        diag("%s: 'include' takes one file name or pattern\n", where);
        return -1;
    }
    char full[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int len = args[1][0] == '/' || !slash
                  ? snprintf(full, sizeof(full), "%s", args[1])
                  : snprintf(full, sizeof(full), "%.*s/%s", (int)(slash - path), path, args[1]);
    if (len < 0 || (size_t)len >= sizeof(full)) {
        diag("%s: include: path too long\n", where);
        return -1;
    }
    bool pattern = strpbrk(args[1], "*?[") != NULL;
    if (config_note_file(ld->cfg, full, pattern) < 0)
        return -1;
    glob_t g;
    int grc = glob(full, GLOB_ERR, NULL, &g);
    if (grc == GLOB_NOMATCH && pattern)
        return 0;
    if (grc != 0) {
        diag("%s: include: cannot open %s: %s\n", where, full,
             grc == GLOB_NOMATCH ? strerror(ENOENT) : grc == GLOB_NOSPACE ? strerror(ENOMEM)
                                                                    : "read error");
        return -1;
    }
    int rc = 0;
    unsigned floor = ld->floor;
    ld->floor = blocks_open(ld);
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++)
        rc = load_file(ld, g.gl_pathv[i], where);
    ld->floor = floor;
    globfree(&g);
    return rc;
}

/* One line of a file: tokens, substitution, then what its first word says. */
static int one_line(struct loader *ld, const char *path, char *line, unsigned lineno,
                    const char *where)
{
    char *args[MAX_TOKENS];
    char values[LINE_MAX_LEN];
    int n = tokenize(line, where, args);
    if (n <= 0)
        return n;
    if (substitute(ld->cfg, args, n, values, sizeof(values), where) < 0)
        return -1;
    if (!strcmp(args[0], "}"))
        return close_block(ld, where, n);
    if (!strcmp(args[0], "server") || !strcmp(args[0], "location"))
        return open_block(ld, where, lineno, args, n);
    if (!strcmp(args[0], "include"))
        return include_line(ld, where, path, args, n);
    return directive_line(ld, where, lineno, args, n);
}

/* The blocks a file opened must be closed in that file. */
static int blocks_closed(const struct loader *ld, const char *path)
{
    if (blocks_open(ld) <= ld->floor)
        return 0;
    diag("%s:%u: '%s' block opened here is not closed\n", path,
         ld->loc ? ld->location_line : ld->server_line, ld->loc ? "location" : "server");
    return -1;
}

/* Push `path` on the loader's stack of files, refusing a cycle. `where` is the include line
 * (NULL for the main file). Returns 0 or -1 (message printed). */
static int enter_file(struct loader *ld, const char *path, const char *where)
{
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        if (where)
            diag("%s: include: cannot open %s: %s\n", where, path, strerror(errno));
        else
            diag("%s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    for (unsigned i = 0; i < ld->depth; i++)
        if (!strcmp(ld->stack[i], real)) {
            diag("%s: include cycle: %s is already being read\n", where, path);
            return -1;
        }
    if (ld->depth == INCLUDE_DEPTH_MAX) {
        diag("%s: include: more than %d files nested\n", where, INCLUDE_DEPTH_MAX);
        return -1;
    }
    memcpy(ld->stack[ld->depth++], real, sizeof(real));
    return 0;
}

static int load_file(struct loader *ld, const char *path, const char *includer)
{
    if (enter_file(ld, path, includer) < 0)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (includer)
            diag("%s: include: cannot open %s: %s\n", includer, path, strerror(errno));
        else
            diag("%s: cannot open: %s\n", path, strerror(errno));
        ld->depth--;
        return -1;
    }
    char line[LINE_MAX_LEN];
    unsigned lineno = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char where[PATH_MAX + 32];
        snprintf(where, sizeof(where), "%s:%u", path, lineno);
        if (!strchr(line, '\n') && !feof(f)) {
            diag("%s: line too long\n", where);
            rc = -1;
            break;
        }
        rc = one_line(ld, path, line, lineno, where);
    }
    fclose(f);
    ld->depth--;
    return rc == 0 ? blocks_closed(ld, path) : rc;
}

static int config_load_file(struct config *cfg, const char *path)
{
    struct loader *ld = calloc(1, sizeof(*ld)); /* its stack of paths is too large for a stack */
    if (!ld) {
        diag("%s: out of memory\n", path);
        return -1;
    }
    ld->cfg = cfg;
    int rc = load_file(ld, path, NULL);
    free(ld);
    return rc;
}

/* ---- command line ------------------------------------------------------------------------ */

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: lfhttpd [OPTIONS] [ROOT]\n"
            "\n"
            "  -l, --listen ADDR:PORT  listen on ADDR:PORT (repeatable; IPv6 as [::1]:8080;\n"
            "                          default 0.0.0.0:8080)\n"
            "  -r, --root DIR          document root (default ./www); also the ROOT argument\n"
            "  -t, --threads N         pool threads (default: one per CPU)\n"
            "      --concurrency MODEL leader-followers (default), half-sync-half-async,\n"
            "                          reuseport or leader-followers-edge: how the threads\n"
            "                          share the work\n"
            "  -c, --config FILE       read the configuration file FILE\n"
            "  -u, --user USER[:GROUP] when started as root, run as USER (default nobody)\n"
            "      --tls-listen ADDR:PORT  HTTPS listener (repeatable; needs a certificate)\n"
            "      --cert FILE         TLS certificate chain, PEM (repeatable: the first is the\n"
            "                          default, the others are chosen by SNI)\n"
            "      --key FILE          private key of the --cert in the same position (PEM)\n"
            "      --test-endpoints PREFIX  serve the test endpoints under PREFIX (e.g. /_test/)\n"
            "  -t, --test              with no number after it: check the configuration, exit\n"
            "      --probe URL         GET http://HOST:PORT/PATH once; exit 0 for 2xx/3xx, else\n"
            "                          1 (a health check that needs no shell; no other option)\n"
            "  -V, --version           print the version and exit\n"
            "  -h, --help              print this help and exit\n"
            "\n"
            "Command-line options override the configuration file. LFHTTPD_LISTEN,\n"
            "LFHTTPD_TLS_LISTEN, LFHTTPD_ROOT, LFHTTPD_THREADS, LFHTTPD_CONCURRENCY,\n"
            "LFHTTPD_USER and LFHTTPD_CONFIG stand for their options, applied before the\n"
            "command line's (which win).\n");
}

static bool is_number(const char *s)
{
    return s && *s && strspn(s, "0123456789") == strlen(s);
}

/* Pass 1: --config, so that the file is loaded before the other flags override it. */
static const char *config_flag(int argc, char **argv)
{
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break;
        if ((!strcmp(a, "-c") || !strcmp(a, "--config")) && i + 1 < argc)
            file = argv[++i];
        else if (!strncmp(a, "--config=", 9))
            file = a + 9;
        else if (!strncmp(a, "-c", 2) && a[2])
            file = a + 2;
    }
    return file;
}

/* The options that take a value: --name VALUE, --name=VALUE, -x VALUE, -xVALUE. Returns the
 * long name (and the attached value, if any), or NULL. */
static const char *option_name(char *a, char **val)
{
    static const struct { char s; const char *l; } opts[] = {
        { 'l', "listen" }, { 'r', "root" }, { 't', "threads" }, { 'c', "config" },
        { 'u', "user" }, { 0, "tls-listen" }, { 0, "cert" }, { 0, "key" },
        { 0, "test-endpoints" }, { 0, "concurrency" },
    };
    for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++) {
        size_t ll = strlen(opts[k].l);
        if (a[1] == '-' && !strncmp(a + 2, opts[k].l, ll) && (a[2 + ll] == '=' || !a[2 + ll])) {
            *val = a[2 + ll] == '=' ? a + 3 + ll : NULL;
            return opts[k].l;
        }
        if (opts[k].s && a[1] == opts[k].s) {
            *val = a[2] ? a + 2 : NULL;
            return opts[k].l;
        }
    }
    return NULL;
}

/* What the command line gathers before it can be applied. */
struct cli {
    bool listen, tls_listen;   /* its listeners of that kind replace the file's */
    const char *cert[CONFIG_MAX_CERTS], *key[CONFIG_MAX_CERTS];
    unsigned ncert, nkey;
    char *root;                /* the ROOT argument */
};

/* A flag is its directive, at the top level. */
static int apply_flag(struct config *cfg, const char *where, const char *name, char *val)
{
    const struct directive *d = directive_find(name);
    struct dir_ctx x = { cfg, &cfg->sites.sites[0].base, where, 0 };
    return d ? directive_apply(d, &x, &val, 1) : -1;
}

/* Apply `--name VALUE` (given as `from`: NULL for the command line, else the variable).
 * Returns 0 or -1 (message printed). */
static int cli_option(struct config *cfg, struct cli *cl, const char *name, char *val,
                      const char *from)
{
    char where[64];
    if (from)
        snprintf(where, sizeof(where), "lfhttpd: %s", from);
    else
        snprintf(where, sizeof(where), "lfhttpd: --%s", name);
    if (!strcmp(name, "config"))
        return 0; /* handled in pass 1 */
    if (!strcmp(name, "cert") || !strcmp(name, "key")) {
        bool cert = name[0] == 'c';
        unsigned *n = cert ? &cl->ncert : &cl->nkey;
        if (*n == CONFIG_MAX_CERTS) {
            diag("%s: at most %d certificates\n", where, CONFIG_MAX_CERTS);
            return -1;
        }
        (cert ? cl->cert : cl->key)[(*n)++] = val;
        return 0;
    }
    char *colon = !strcmp(name, "user") ? strchr(val, ':') : NULL;
    if (colon) { /* --user USER[:GROUP] */
        *colon = '\0';
        if (apply_flag(cfg, where, "group", colon + 1) < 0)
            return -1;
    }
    if (!strcmp(name, "listen") && !cl->listen) {
        config_drop_listeners(cfg, false); /* command-line listeners replace the file's */
        cl->listen = true;
    }
    if (!strcmp(name, "tls-listen") && !cl->tls_listen) {
        config_drop_listeners(cfg, true);
        cl->tls_listen = true;
    }
    return apply_flag(cfg, where,
                      !strcmp(name, "tls-listen")       ? "tls_listen"
                      : !strcmp(name, "test-endpoints") ? "test_endpoints"
                                                        : name,
                      val);
}

/* --cert/--key pairs (in order) replace the file's certificates. */
static int cli_certificates(struct config *cfg, const struct cli *cl)
{
    if (!cl->ncert && !cl->nkey)
        return 0;
    if (cl->ncert != cl->nkey) {
        diag("lfhttpd: --cert and --key must be given in pairs (%u --cert, "
             "%u --key)\n", cl->ncert, cl->nkey);
        return -1;
    }
    cfg->ncerts = 0;
    for (unsigned i = 0; i < cl->ncert; i++) {
        char *pair[2] = { (char *)(uintptr_t)cl->cert[i], (char *)(uintptr_t)cl->key[i] };
        if (config_add_certificate(cfg, "lfhttpd: --cert", 0, pair, 2) < 0)
            return -1;
    }
    return 0;
}

/* After the flags: ROOT, the certificates, the built-in locations, inheritance, and the
 * checks that need the whole configuration. */
static enum config_result cli_finish(struct config *cfg, const struct cli *cl)
{
    if (cl->root) {
        const struct directive *d = directive_find("root");
        struct dir_ctx x = { cfg, &cfg->sites.sites[0].base, "lfhttpd: ROOT", 0 };
        char *root = cl->root;
        if (directive_apply(d, &x, &root, 1) < 0)
            return CONFIG_ERROR;
    }
    unsigned nadmin = 0;
    for (unsigned i = 0; i < cfg->nlisten; i++)
        nadmin += cfg->listen[i].admin;
    if (nadmin && site_add_admin(&cfg->sites) < 0)
        return CONFIG_ERROR;
    if (site_add_builtins(&cfg->sites) < 0 || conf_finish(cfg) < 0 ||
        cli_certificates(cfg, cl) < 0)
        return CONFIG_ERROR;
    if (site_set_finish(&cfg->sites) < 0 || site_set_check(&cfg->sites) < 0 ||
        site_rules_finish(&cfg->sites) < 0)
        return CONFIG_ERROR;
    if (cfg->nlisten == nadmin) { /* admin_listen alone does not replace the default listener */
        if (cfg->nlisten == CONFIG_MAX_LISTEN) {
            diag("lfhttpd: too many listeners (at most %d)\n", CONFIG_MAX_LISTEN);
            return CONFIG_ERROR;
        }
        config_parse_listen("0.0.0.0:8080", &cfg->listen[cfg->nlisten]);
        cfg->nlisten++;
        cfg->listen_default = true;
    }
    bool tls = config_has_tls(cfg);
    if (config_acme_finish(cfg) < 0)
        return CONFIG_ERROR;
    if (tls && cfg->ncerts == 0 && !cfg->acme.line) {
        /* Point at the file's first TLS listener, unless the command line gave them. */
        unsigned line = 0;
        for (unsigned i = 0; i < cfg->nlisten && !line; i++)
            if (cfg->listen[i].tls)
                line = cfg->listen[i].line;
        if (line)
            diag("%s:%u: a TLS listener needs a certificate (tls_certificate, or "
                 "--cert FILE --key FILE)\n", cfg->config_file, line);
        else
            diag("lfhttpd: a TLS listener needs a certificate (--cert FILE --key "
                 "FILE, or tls_certificate in the configuration file)\n");
        return CONFIG_ERROR;
    }
    if (cfg->tls_ticket_key_file[0] && cfg->tls_ticket_rotation == 0) {
        diag("lfhttpd: tls_session_ticket_key_file needs session tickets, which "
             "tls_session_ticket_rotation 0 turns off\n");
        return CONFIG_ERROR;
    }
    if (cfg->tls_redirect_http && !tls) {
        if (cfg->tls_redirect_line)
            diag("%s:%u: tls_redirect_http on needs a TLS listener\n",
                 cfg->config_file, cfg->tls_redirect_line);
        else
            diag("lfhttpd: tls_redirect_http on needs a TLS listener\n");
        return CONFIG_ERROR;
    }
    if (cfg->threads == 0) {
        /* threads auto: the CPUs this process may use, not the host's (cpu_limit.h) */
        struct cpu_limit lim;
        cpu_limit_read(&lim);
        cfg->threads = lim.cpus;
        char why[sizeof(cfg->threads_reason) - 16];
        cpu_limit_describe(&lim, why, sizeof(why));
        snprintf(cfg->threads_reason, sizeof(cfg->threads_reason), "threads auto: %s", why);
    } else {
        snprintf(cfg->threads_reason, sizeof(cfg->threads_reason), "threads %u: configured",
                 cfg->threads);
    }
    return CONFIG_OK;
}

/* The flags LFHTTPD_NAME variables stand for (--tls-listen: LFHTTPD_TLS_LISTEN). */
static const char *const env_flags[] = { "listen", "tls-listen", "root", "threads",
                                         "concurrency", "user", NULL };
#define ENV_VALUE_MAX 1024 /* a variable's value, its addresses included */

/* Is `flag`'s value one the server prints on purpose (shown_directive's)? */
static bool shown_flag(const char *flag)
{
    return !strcmp(flag, "listen") || !strcmp(flag, "tls-listen") ||
           !strcmp(flag, "threads") || !strcmp(flag, "concurrency");
}

/* The variable for `flag` into var[cap]; its value hidden from the messages (diag.h) like a
 * ${NAME}'s. Returns the value (NULL: unset or empty), or sets *err on failure. */
static const char *env_flag(struct config *cfg, const char *flag, char *var, size_t cap,
                            bool *err)
{
    size_t n = (size_t)snprintf(var, cap, "LFHTTPD_%s", flag);
    for (size_t i = 8; i < n && i < cap; i++)
        var[i] = var[i] == '-' ? '_' : (char)toupper((unsigned char)var[i]);
    const char *v = getenv(var);
    if (!v || !*v)
        return NULL;
    char ref[80];
    int rlen = snprintf(ref, sizeof(ref), "${%s}", var);
    *err = config_add_secret(cfg, ref, (size_t)rlen, v, strlen(v), shown_flag(flag)) < 0;
    return *err ? NULL : v;
}

/* LFHTTPD_* variables, applied as their flags before the command line's (which win: its
 * --listen replaces their listeners, a flag given again overrides). LFHTTPD_LISTEN and
 * LFHTTPD_TLS_LISTEN take addresses separated by commas or spaces. Returns 0 or -1. */
static int env_options(struct config *cfg)
{
    struct cli cl = { 0 };
    for (size_t k = 0; env_flags[k]; k++) {
        char var[40], buf[ENV_VALUE_MAX];
        bool err = false;
        const char *v = env_flag(cfg, env_flags[k], var, sizeof(var), &err);
        if (err)
            return -1;
        if (!v)
            continue;
        if (strlen(v) >= sizeof(buf)) {
            diag("lfhttpd: %s: value too long\n", var);
            return -1;
        }
        snprintf(buf, sizeof(buf), "%s", v);
        bool list = strstr(env_flags[k], "listen") != NULL;
        char *save = NULL;
        for (char *t = list ? strtok_r(buf, ", \t", &save) : buf; t;
             t = list ? strtok_r(NULL, ", \t", &save) : NULL) {
            char ref[80]; /* each address of a list is hidden on its own too */
            int rlen = snprintf(ref, sizeof(ref), "${%s}", var);
            if (config_add_secret(cfg, ref, (size_t)rlen, t, strlen(t), list) < 0 ||
                cli_option(cfg, &cl, env_flags[k], t, var) < 0)
                return -1;
        }
    }
    return 0;
}

static enum config_result parse_args(struct config *cfg, int argc, char **argv)
{
    if (config_defaults(cfg) < 0)
        return CONFIG_ERROR;
    cfg->config_file = config_flag(argc, argv);
    if (!cfg->config_file) {
        char var[40];
        bool err = false;
        cfg->config_file = env_flag(cfg, "config", var, sizeof(var), &err);
        if (err)
            return CONFIG_ERROR;
    }
    if (cfg->config_file && config_load_file(cfg, cfg->config_file) < 0)
        return CONFIG_ERROR;
    if (env_options(cfg) < 0)
        return CONFIG_ERROR;
    struct cli cl = { 0 };
    bool only_args = false;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (only_args || a[0] != '-' || !a[1]) {
            if (cl.root) {
                diag("lfhttpd: unexpected argument '%s' (see --help)\n", a);
                return CONFIG_ERROR;
            }
            cl.root = a;
        } else if (!strcmp(a, "--")) {
            only_args = true;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return CONFIG_EXIT_OK;
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("lfhttpd %s\n", LFHTTPD_VERSION);
            return CONFIG_EXIT_OK;
        } else if (!strcmp(a, "--test") ||
                   (!strcmp(a, "-t") && !is_number(argv[i + 1 < argc ? i + 1 : i]))) {
            cfg->test_only = true;
        } else {
            char *val = NULL;
            const char *name = option_name(a, &val);
            if (!name) {
                diag("lfhttpd: unknown option '%s' (see --help)\n", a);
                return CONFIG_ERROR;
            }
            if (!val && i + 1 >= argc) {
                diag("lfhttpd: option '--%s' needs a value (see --help)\n", name);
                return CONFIG_ERROR;
            }
            if (cli_option(cfg, &cl, name, val ? val : argv[++i], NULL) < 0)
                return CONFIG_ERROR;
        }
    }
    return cli_finish(cfg, &cl);
}

enum config_result config_from_args(struct config *cfg, int argc, char **argv)
{
    enum config_result r = parse_args(cfg, argc, argv);
    if (r != CONFIG_OK) {
        diag_secrets(NULL, 0);
        config_free(cfg); /* nothing half-built outlives a failed parse */
    }
    return r;
}
