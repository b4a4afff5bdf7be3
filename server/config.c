/* config.c — command line and configuration file; see config.h.
 *
 * The file format is line oriented: `directive value...` per line, `#` starts a comment.
 * Directives are described by one table (name, kind, bounds, field), so adding one is a line. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_limit.h"
#include "log.h"
#include "thread_pool.h"
#include "tls.h"
#include "version.h"

static void config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    if (site_set_init(&cfg->sites) < 0) {
        fprintf(stderr, "lfhttpd: out of memory\n");
        exit(2);
    }
    cfg->batch = 8;
    cfg->log_level = LOG_NOTICE;
    snprintf(cfg->error_log, sizeof(cfg->error_log), "stderr");
    snprintf(cfg->access_log, sizeof(cfg->access_log), "off");
    cfg->max_head_size = 16 * 1024;
    cfg->max_headers = 100;
    cfg->max_uri_length = 8 * 1024;
    cfg->max_body_size = 1024 * 1024;
    cfg->max_connections = 10000;
    cfg->file_cache_entries = 10000;
    cfg->file_cache_size = 64 * 1024 * 1024;
    cfg->file_cache_valid = 1000;
    cfg->timeout_handshake = 10000;
    cfg->tls_session_cache = 20480;
    cfg->tls_session_timeout = 3600000;
    cfg->tls_ticket_rotation = 3600000;
    /* Apache's mod_reqtimeout defaults (header=20-40,MinRate=500 body=20,MinRate=500). */
    cfg->timeout_header = 20000;
    cfg->timeout_header_max = 40000;
    cfg->timeout_header_min_rate = 500;
    cfg->timeout_body = 20000;
    cfg->timeout_body_max = 0;
    cfg->timeout_body_min_rate = 500;
    cfg->timeout_keepalive = 75000;
    cfg->timeout_send = 60000;
    cfg->drain_timeout = 30000;
    cfg->cgi_timeout = 30000;
    cfg->cgi_max = 64;
    snprintf(cfg->cgi_env_pass[0], sizeof(cfg->cgi_env_pass[0]), "PATH");
    cfg->ncgi_env_pass = 1;
    if (cidr_list_add(&cfg->status_allow, "127.0.0.0/8") < 0 ||
        cidr_list_add(&cfg->status_allow, "::1") < 0) {
        fprintf(stderr, "lfhttpd: out of memory\n");
        exit(2);
    }
}

bool config_has_tls(const struct config *cfg)
{
    for (unsigned i = 0; i < cfg->nlisten; i++)
        if (cfg->listen[i].tls)
            return true;
    return false;
}

/* Remove the plain (tls == false) or the TLS listeners: command-line listeners of one kind
 * replace the file's listeners of that kind. */
static void drop_listeners(struct config *cfg, bool tls)
{
    unsigned n = 0;
    for (unsigned i = 0; i < cfg->nlisten; i++)
        if (cfg->listen[i].tls != tls)
            cfg->listen[n++] = cfg->listen[i];
    cfg->nlisten = n;
}

int config_parse_listen(const char *s, struct listen_addr *la)
{
    char host[64] = "";
    const char *port;
    memset(la, 0, sizeof(*la));
    snprintf(la->text, sizeof(la->text), "%s", s);
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host))
            return -EINVAL;
        memcpy(host, s + 1, (size_t)(end - s - 1));
        host[end - s - 1] = '\0';
        port = end + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon) {
            if (strchr(s, ':') != colon || (size_t)(colon - s) >= sizeof(host))
                return -EINVAL; /* bare IPv6 must be bracketed */
            memcpy(host, s, (size_t)(colon - s));
            host[colon - s] = '\0';
            port = colon + 1;
        } else {
            port = s;
        }
    }
    if (!*port || strspn(port, "0123456789") != strlen(port) || atol(port) > 65535)
        return -EINVAL;
    if (!host[0] || strcmp(host, "*") == 0)
        snprintf(host, sizeof(host), "0.0.0.0");
    struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
        return -EINVAL;
    memcpy(&la->ss, res->ai_addr, res->ai_addrlen);
    la->sslen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* ---- configuration file ---------------------------------------------------------------- */

enum dir_kind {
    D_UINT, D_SIZE, D_DURATION, D_STRING, D_LISTEN, D_THREADS, D_LOGLEVEL, D_LOGFORMAT, D_CIDRS,
    D_NAME, D_REALIP, D_TLS_LISTEN, D_CERT, D_ONOFF, D_LIST, D_CONCURRENCY,
};

struct directive {
    const char *name;
    enum dir_kind kind;
    size_t offset;
    uint64_t min, max;
};

#define F(field) offsetof(struct config, field)
static const struct directive directives[] = {
    { "listen", D_LISTEN, 0, 0, 0 },
    { "mime_types", D_STRING, F(mime_file), 0, 0 },
    { "threads", D_THREADS, F(threads), 0, 1024 },
    { "leader_batch", D_UINT, F(batch), 1, 64 },
    { "concurrency", D_CONCURRENCY, F(concurrency), 0, 0 },
    { "log_level", D_LOGLEVEL, F(log_level), 0, 0 },
    { "user", D_NAME, F(user), 0, 0 },
    { "group", D_NAME, F(group), 0, 0 },
    { "trusted_proxies", D_CIDRS, F(trusted_proxies), 0, 0 },
    { "real_ip_header", D_REALIP, F(real_ip_forwarded), 0, 0 },
    { "error_log", D_STRING, F(error_log), 0, 0 },
    { "access_log", D_STRING, F(access_log), 0, 0 },
    { "access_log_format", D_LOGFORMAT, F(access_log_format), 0, 0 },
    { "max_request_head", D_SIZE, F(max_head_size), 1024, 64 * 1024 },
    { "max_headers", D_UINT, F(max_headers), 1, 1000 },
    { "max_uri_length", D_SIZE, F(max_uri_length), 64, 1024 * 1024 },
    { "max_body_size", D_SIZE, F(max_body_size), 0, UINT64_C(1) << 40 },
    { "max_connections", D_UINT, F(max_connections), 1, 1000000 },
    { "file_cache_entries", D_UINT, F(file_cache_entries), 64, 10000000 },
    { "file_cache_size", D_SIZE, F(file_cache_size), 0, UINT64_C(1) << 40 },
    { "file_cache_valid", D_DURATION, F(file_cache_valid), 0, 86400000 },
    { "timeout_header", D_DURATION, F(timeout_header), 1, 86400000 },
    { "timeout_header_max", D_DURATION, F(timeout_header_max), 0, 86400000 },
    { "timeout_header_min_rate", D_UINT, F(timeout_header_min_rate), 0, 1000000000 },
    { "timeout_body", D_DURATION, F(timeout_body), 1, 86400000 },
    { "timeout_body_max", D_DURATION, F(timeout_body_max), 0, 86400000 },
    { "timeout_body_min_rate", D_UINT, F(timeout_body_min_rate), 0, 1000000000 },
    { "timeout_keepalive", D_DURATION, F(timeout_keepalive), 1, 86400000 },
    { "timeout_send", D_DURATION, F(timeout_send), 1, 86400000 },
    { "drain_timeout", D_DURATION, F(drain_timeout), 0, 86400000 },
    { "drain_delay", D_DURATION, F(drain_delay), 0, 3600000 },
    { "timeout_handshake", D_DURATION, F(timeout_handshake), 1, 86400000 },
    { "tls_listen", D_TLS_LISTEN, 0, 0, 0 },
    { "tls_certificate", D_CERT, 0, 0, 0 },
    { "tls_passphrase_file", D_STRING, F(tls_passphrase_file), 0, 0 },
    { "tls_session_cache", D_UINT, F(tls_session_cache), 0, 10000000 },
    { "tls_session_timeout", D_DURATION, F(tls_session_timeout), 1000, 86400000 },
    { "tls_session_ticket_rotation", D_DURATION, F(tls_ticket_rotation), 0, 86400000 },
    { "tls_session_ticket_key_file", D_STRING, F(tls_ticket_key_file), 0, 0 },
    { "tls_hsts", D_UINT, F(tls_hsts), 0, 315360000 },
    { "tls_redirect_http", D_ONOFF, F(tls_redirect_http), 0, 0 },
    { "cgi_timeout", D_DURATION, F(cgi_timeout), 1, 86400000 },
    { "cgi_max", D_UINT, F(cgi_max), 1, 100000 },
    { "cgi_env_pass", D_LIST, 0, 0, 0 },
    { "status_allow", D_CIDRS, F(status_allow), 0, 0 },
    { "reload_on_change", D_ONOFF, F(reload_on_change), 0, 0 },
    { "test_endpoints", D_LIST, 0, 0, 0 },
};
#undef F

/* Parse a number with an optional unit suffix. Sizes: k, m, g (powers of 1024). Durations:
 * ms, s (default), m, h. Returns 0 or -EINVAL. */
static int parse_number(const char *s, enum dir_kind kind, uint64_t *out)
{
    char *end;
    if (!isdigit((unsigned char)s[0]))
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -EINVAL;
    uint64_t mul = 1;
    if (kind == D_SIZE) {
        if (!strcasecmp(end, "k"))
            mul = 1024;
        else if (!strcasecmp(end, "m"))
            mul = 1024 * 1024;
        else if (!strcasecmp(end, "g"))
            mul = 1024 * 1024 * 1024;
        else if (*end)
            return -EINVAL;
    } else if (kind == D_DURATION) {
        if (!strcmp(end, "ms"))
            mul = 1;
        else if (!strcmp(end, "s") || !*end)
            mul = 1000;
        else if (!strcmp(end, "m"))
            mul = 60000;
        else if (!strcmp(end, "h"))
            mul = 3600000;
        else
            return -EINVAL;
    } else if (*end) {
        return -EINVAL;
    }
    if (v > UINT64_MAX / mul)
        return -EINVAL;
    *out = v * mul;
    return 0;
}

/* tls_certificate CERT KEY [SERVER_NAME...] */
static int add_certificate(struct config *cfg, const char *where, unsigned line, char **args,
                           int nargs)
{
    if (cfg->ncerts >= CONFIG_MAX_CERTS) {
        fprintf(stderr, "%s: too many certificates (at most %d)\n", where, CONFIG_MAX_CERTS);
        return -1;
    }
    struct tls_cert_conf *tc = &cfg->certs[cfg->ncerts];
    memset(tc, 0, sizeof(*tc));
    if (strlen(args[0]) >= sizeof(tc->cert) || strlen(args[1]) >= sizeof(tc->key)) {
        fprintf(stderr, "%s: certificate or key path too long\n", where);
        return -1;
    }
    snprintf(tc->cert, sizeof(tc->cert), "%s", args[0]);
    snprintf(tc->key, sizeof(tc->key), "%s", args[1]);
    size_t len = 0;
    for (int i = 2; i < nargs; i++) {
        size_t n = strlen(args[i]);
        bool ok = n > 0 && n < 254 && len + n + 1 < sizeof(tc->names);
        for (size_t k = 0; ok && k < n; k++)
            ok = isalnum((unsigned char)args[i][k]) || strchr("-.*_", args[i][k]);
        if (!ok) {
            fprintf(stderr, "%s: invalid server name '%s'\n", where, args[i]);
            return -1;
        }
        if (len)
            tc->names[len++] = ' ';
        for (size_t k = 0; k < n; k++)
            tc->names[len++] = (char)tolower((unsigned char)args[i][k]);
    }
    tc->line = line;
    cfg->ncerts++;
    return 0;
}

/* Files named by directives are checked where they are named, so that the error can say
 * FILE:LINE (they are opened for real later, when the runtime is built). */
static int check_file(const char *where, const char *name, const char *path)
{
    if (!strcmp(name, "mime_types")) {
        if (access(path, R_OK) < 0) {
            fprintf(stderr, "%s: mime_types %s: %s\n", where, path, strerror(errno));
            return -1;
        }
    } else if (!strcmp(name, "tls_session_ticket_key_file")) {
        unsigned char keys[TLS_MAX_TICKET_KEYS * TLS_TICKET_KEY_SIZE];
        char err[PATH_MAX + 128];
        int n = tls_ticket_key_file_read(path, keys, err, sizeof(err));
        OPENSSL_cleanse(keys, sizeof(keys));
        if (n < 0) {
            fprintf(stderr, "%s: %s\n", where, err);
            return -1;
        }
    } else if (!strcmp(name, "access_log") || !strcmp(name, "error_log")) {
        if (!strcmp(path, "off") || !strcmp(path, "stdout") || !strcmp(path, "stderr"))
            return 0;
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            fprintf(stderr, "%s: %s %s: %s\n", where, name, path, strerror(errno));
            return -1;
        }
        close(fd);
    }
    return 0;
}

/* Directives with their own syntax: cgi_env_pass NAME...|none, test_endpoints /PREFIX/|off. */
static int apply_list(struct config *cfg, const char *where, const char *name, char **args,
                      int nargs)
{
    if (nargs < 1) {
        fprintf(stderr, "%s: '%s' takes one or more values\n", where, name);
        return -1;
    }
    if (!strcmp(name, "cgi_env_pass")) {
        if (nargs > CONFIG_MAX_ENV_PASS) {
            fprintf(stderr, "%s: at most %d names for 'cgi_env_pass'\n", where, CONFIG_MAX_ENV_PASS);
            return -1;
        }
        cfg->ncgi_env_pass = 0;
        for (int i = 0; i < nargs; i++) {
            const char *v = args[i];
            if (!strcmp(v, "none") && nargs == 1)
                return 0;
            bool ok = *v && strlen(v) < sizeof(cfg->cgi_env_pass[0]) && !isdigit((unsigned char)*v);
            for (const char *p = v; ok && *p; p++)
                ok = isalnum((unsigned char)*p) || *p == '_';
            if (!ok || !strncmp(v, "HTTP_", 5)) {
                fprintf(stderr, "%s: invalid environment variable name '%s' for 'cgi_env_pass'\n",
                        where, v);
                return -1;
            }
            snprintf(cfg->cgi_env_pass[cfg->ncgi_env_pass++], sizeof(cfg->cgi_env_pass[0]), "%s", v);
        }
        return 0;
    }
    /* test_endpoints */
    if (nargs != 1) {
        fprintf(stderr, "%s: '%s' takes exactly one value\n", where, name);
        return -1;
    }
    const char *v = args[0];
    if (!strcmp(v, "off")) {
        cfg->test_endpoints[0] = '\0';
        return 0;
    }
    if (v[0] != '/' || strlen(v) >= sizeof(cfg->test_endpoints) || strstr(v, "..") ||
        strpbrk(v, "?#%* \t")) {
        fprintf(stderr, "%s: 'test_endpoints' takes a path prefix such as /_test/, or off\n", where);
        return -1;
    }
    snprintf(cfg->test_endpoints, sizeof(cfg->test_endpoints), "%s", v);
    return 0;
}

/* Apply one process-wide directive. `where` prefixes error messages ("FILE:LINE" or
 * "--flag"); `line` is the configuration file's line (0 for the command line). */
static int apply_directive(struct config *cfg, const char *where, unsigned line, const char *name,
                           char **args, int nargs)
{
    if (site_directive_known(name))
        return site_apply(&cfg->sites.sites[0].base, where, name, args, nargs);
    const struct directive *d = NULL;
    for (size_t i = 0; i < sizeof(directives) / sizeof(directives[0]); i++)
        if (!strcmp(directives[i].name, name))
            d = &directives[i];
    if (!d) {
        fprintf(stderr, "%s: unknown directive '%s'\n", where, name);
        return -1;
    }
    if (d->kind == D_LIST)
        return apply_list(cfg, where, name, args, nargs);
    if (d->kind == D_CERT && nargs < 2) {
        fprintf(stderr, "%s: '%s' takes a certificate file, a key file and optional server "
                        "names\n", where, name);
        return -1;
    }
    if (nargs < 1 || (nargs != 1 && d->kind != D_CIDRS && d->kind != D_CERT &&
                      !((d->kind == D_LISTEN || d->kind == D_TLS_LISTEN) && nargs == 2))) {
        fprintf(stderr, "%s: '%s' takes %s\n", where, name,
                d->kind == D_CIDRS ? "one or more addresses or CIDR ranges" : "exactly one value");
        return -1;
    }
    char *base = (char *)cfg;
    uint64_t v;
    switch (d->kind) {
    case D_LISTEN:
    case D_TLS_LISTEN:
        if (cfg->nlisten >= CONFIG_MAX_LISTEN) {
            fprintf(stderr, "%s: too many listeners (at most %d)\n", where, CONFIG_MAX_LISTEN);
            return -1;
        }
        if (config_parse_listen(args[0], &cfg->listen[cfg->nlisten]) < 0) {
            fprintf(stderr, "%s: invalid listen address '%s' (expected ADDR:PORT or [V6]:PORT)\n",
                    where, args[0]);
            return -1;
        }
        if (nargs == 2) {
            if (strcmp(args[1], "proxy_protocol")) {
                fprintf(stderr, "%s: unknown listen option '%s' (proxy_protocol)\n", where, args[1]);
                return -1;
            }
            cfg->listen[cfg->nlisten].proxy_protocol = true;
        }
        cfg->listen[cfg->nlisten++].tls = d->kind == D_TLS_LISTEN;
        return 0;
    case D_CERT:
        return add_certificate(cfg, where, line, args, nargs);
    case D_ONOFF:
        if (strcmp(args[0], "on") && strcmp(args[0], "off")) {
            fprintf(stderr, "%s: '%s' takes on or off\n", where, name);
            return -1;
        }
        *(bool *)(void *)(base + d->offset) = !strcmp(args[0], "on");
        return 0;
    case D_LIST:
        return -1; /* handled above */
    case D_STRING:
        if (strlen(args[0]) >= PATH_MAX) {
            fprintf(stderr, "%s: '%s' value too long\n", where, name);
            return -1;
        }
        if (check_file(where, name, args[0]) < 0)
            return -1;
        snprintf(base + d->offset, PATH_MAX, "%s", args[0]);
        return 0;
    case D_LOGLEVEL: {
        static const char *const levels[] = { "error", "warn", "notice", "info", "debug" };
        for (int i = 0; i < 5; i++)
            if (!strcmp(args[0], levels[i])) {
                cfg->log_level = i;
                return 0;
            }
        fprintf(stderr, "%s: invalid log level '%s' (error, warn, notice, info, debug)\n", where,
                args[0]);
        return -1;
    }
    case D_CIDRS: {
        struct cidr_list *l = (struct cidr_list *)(void *)(base + d->offset);
        if (l == &cfg->status_allow && !cfg->status_allow_given) {
            cidr_list_free(l); /* the first status_allow replaces the default (loopback) */
            cfg->status_allow_given = true;
        }
        for (int i = 0; i < nargs; i++) {
            bool keyword = l == &cfg->status_allow && nargs == 1 &&
                           (!strcmp(args[i], "none") || !strcmp(args[i], "all"));
            if (keyword && !strcmp(args[i], "none"))
                continue; /* an empty list: nobody */
            if (keyword ? cidr_list_add(l, "0.0.0.0/0") < 0 || cidr_list_add(l, "::/0") < 0
                        : cidr_list_add(l, args[i]) < 0) {
                fprintf(stderr, "%s: invalid address or CIDR range '%s'\n", where, args[i]);
                return -1;
            }
        }
        return 0;
    }
    case D_NAME:
        if (!args[0][0] || strlen(args[0]) >= sizeof(cfg->user) ||
            strspn(args[0], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
                strlen(args[0])) {
            fprintf(stderr, "%s: invalid %s name '%s'\n", where, name, args[0]);
            return -1;
        }
        snprintf(base + d->offset, sizeof(cfg->user), "%s", args[0]);
        return 0;
    case D_REALIP:
        if (!strcasecmp(args[0], "x-forwarded-for") || !strcasecmp(args[0], "forwarded")) {
            cfg->real_ip_forwarded = !strcasecmp(args[0], "forwarded");
            return 0;
        }
        fprintf(stderr, "%s: invalid real_ip_header '%s' (X-Forwarded-For or Forwarded)\n", where,
                args[0]);
        return -1;
    case D_CONCURRENCY:
        for (int k = 0; k < 3; k++)
            if (!strcmp(args[0], concurrency_names[k])) {
                cfg->concurrency = k;
                return 0;
            }
        fprintf(stderr, "%s: invalid concurrency '%s' (leader-followers, half-sync-half-async or "
                        "reuseport)\n", where, args[0]);
        return -1;
    case D_LOGFORMAT:
        if (!strcmp(args[0], "combined") || !strcmp(args[0], "json")) {
            cfg->access_log_format = !strcmp(args[0], "json");
            return 0;
        }
        fprintf(stderr, "%s: invalid access_log_format '%s' (combined or json)\n", where, args[0]);
        return -1;
    case D_THREADS:
        if (!strcmp(args[0], "auto")) {
            cfg->threads = 0;
            return 0;
        }
        /* fall through */
    case D_UINT:
    case D_SIZE:
    case D_DURATION:
        if (parse_number(args[0], d->kind, &v) < 0 || v < d->min || v > d->max ||
            (d->kind == D_THREADS && v == 0)) {
            fprintf(stderr, "%s: invalid value '%s' for '%s' (%llu..%llu%s)\n", where, args[0],
                    name, (unsigned long long)(d->kind == D_THREADS ? 1 : d->min),
                    (unsigned long long)d->max,
                    d->kind == D_SIZE       ? " bytes, k/m/g suffixes allowed"
                    : d->kind == D_DURATION ? " ms; units ms, s, m, h"
                                            : "");
            return -1;
        }
        if (d->kind == D_SIZE && d->offset == offsetof(struct config, max_body_size))
            *(uint64_t *)(void *)(base + d->offset) = v;
        else if (d->kind == D_SIZE)
            *(size_t *)(void *)(base + d->offset) = (size_t)v;
        else if (d->offset == offsetof(struct config, batch))
            cfg->batch = (int)v;
        else
            *(unsigned *)(void *)(base + d->offset) = (unsigned)v;
        return 0;
    }
    return -1;
}

/* Split a line into tokens: whitespace-separated words, "double-quoted strings" (with \" and
 * \\ escapes), `{` and `}`; `#` outside quotes starts a comment. Returns the token count or
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
            fprintf(stderr, "%s: too many values\n", where);
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
                fprintf(stderr, "%s: unterminated quoted string\n", where);
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
        while (*p && !strchr(" \t\r\n#{}\"", *p))
            p++;
        if (*p == '"') {
            fprintf(stderr, "%s: unexpected quote\n", where);
            return -1;
        }
        if (*p == '{' || *p == '}') { /* a brace glued to a word: a token of its own */
            bool open = *p == '{';
            *p++ = '\0';
            if (n == MAX_TOKENS) {
                fprintf(stderr, "%s: too many values\n", where);
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

static int config_load_file(struct config *cfg, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    char line[4096];
    unsigned lineno = 0;
    bool had_listen = false;
    int rc = 0;
    struct site *site = NULL;       /* inside `server ... {` */
    struct loc_conf *loc = NULL;    /* inside `location ... {` */
    unsigned server_line = 0, location_line = 0; /* where the open blocks started */
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char where[PATH_MAX + 32];
        snprintf(where, sizeof(where), "%s:%u", path, lineno);
        if (!strchr(line, '\n') && !feof(f)) {
            fprintf(stderr, "%s: line too long\n", where);
            rc = -1;
            break;
        }
        char *args[MAX_TOKENS];
        int n = tokenize(line, where, args);
        if (n < 0) {
            rc = -1;
            break;
        }
        if (n == 0)
            continue;
        const char *name = args[0];
        if (!strcmp(name, "}")) {
            if (n != 1 || (!site && !loc)) {
                fprintf(stderr, "%s: unexpected '}'\n", where);
                rc = -1;
            } else if (loc) {
                loc = NULL;
                location_line = 0;
            } else {
                site = NULL;
                server_line = 0;
            }
            continue;
        }
        bool opens = !strcmp(args[n - 1], "{");
        if (!strcmp(name, "server") || !strcmp(name, "location")) {
            if (!opens) {
                fprintf(stderr, "%s: '%s' block must end its first line with '{'\n", where, name);
                rc = -1;
                continue;
            }
            if (!strcmp(name, "server")) {
                if (site || loc) {
                    fprintf(stderr, "%s: 'server' blocks cannot be nested\n", where);
                    rc = -1;
                    continue;
                }
                site = site_add_server(&cfg->sites, where, args + 1, n - 2);
                rc = site ? 0 : -1;
                server_line = lineno;
            } else {
                if (loc) {
                    fprintf(stderr, "%s: 'location' blocks cannot be nested\n", where);
                    rc = -1;
                    continue;
                }
                if (n != 3) {
                    fprintf(stderr, "%s: 'location' takes one match (a /prefix/ or *.ext)\n", where);
                    rc = -1;
                    continue;
                }
                loc = site_add_location(site ? site : &cfg->sites.sites[0], where, args[1]);
                rc = loc ? 0 : -1;
                location_line = lineno;
            }
            continue;
        }
        if (opens || strcmp(name, "{") == 0) {
            fprintf(stderr, "%s: unexpected '{'\n", where);
            rc = -1;
            continue;
        }
        for (int i = 1; i < n; i++)
            if (!strcmp(args[i], "}") || !strcmp(args[i], "{")) {
                fprintf(stderr, "%s: braces go on their own line or end a block's first line\n", where);
                rc = -1;
            }
        if (rc)
            continue;
        if (site || loc) {
            if (!site_directive_known(name)) {
                bool global = false;
                for (size_t i = 0; i < sizeof(directives) / sizeof(directives[0]); i++)
                    global |= !strcmp(directives[i].name, name);
                fprintf(stderr, global ? "%s: '%s' is not allowed inside a block\n"
                                       : "%s: unknown directive '%s'\n",
                        where, name);
                rc = -1;
                continue;
            }
            rc = site_apply(loc ? loc : &site->base, where, name, args + 1, n - 1);
            continue;
        }
        if (!strcmp(name, "listen") && !had_listen) {
            drop_listeners(cfg, false); /* the file's listeners replace the default */
            had_listen = true;
        }
        rc = apply_directive(cfg, where, lineno, name, args + 1, n - 1);
    }
    fclose(f);
    if (rc == 0 && (site || loc)) {
        fprintf(stderr, "%s:%u: '%s' block opened here is not closed\n", path,
                site ? server_line : location_line, site ? "server" : "location");
        rc = -1;
    }
    return rc;
}

void config_free(struct config *cfg)
{
    site_set_free(&cfg->sites);
    cidr_list_free(&cfg->trusted_proxies);
    cidr_list_free(&cfg->status_allow);
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
            "      --concurrency MODEL leader-followers (default), half-sync-half-async or\n"
            "                          reuseport: how the threads share the work\n"
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
            "Command-line options override the configuration file.\n");
}

static bool is_number(const char *s)
{
    return s && *s && strspn(s, "0123456789") == strlen(s);
}

static enum config_result parse_args(struct config *cfg, int argc, char **argv)
{
    config_defaults(cfg);

    /* Pass 1: find --config, so that the file is loaded before the other flags override it. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break;
        if ((!strcmp(a, "-c") || !strcmp(a, "--config")) && i + 1 < argc)
            cfg->config_file = argv[++i];
        else if (!strncmp(a, "--config=", 9))
            cfg->config_file = a + 9;
        else if (!strncmp(a, "-c", 2) && a[2])
            cfg->config_file = a + 2;
    }
    if (cfg->config_file && config_load_file(cfg, cfg->config_file) < 0)
        return CONFIG_ERROR;

    bool cli_listen = false, cli_tls_listen = false;
    const char *cli_cert[CONFIG_MAX_CERTS + 1], *cli_key[CONFIG_MAX_CERTS + 1];
    unsigned ncli_cert = 0, ncli_key = 0;
    bool only_args = false;
    char *root_arg = NULL;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        char *val = NULL;
        const char *name = NULL;
        if (only_args || a[0] != '-' || !a[1]) {
            if (root_arg) {
                fprintf(stderr, "lfhttpd: unexpected argument '%s' (see --help)\n", a);
                return CONFIG_ERROR;
            }
            root_arg = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_args = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return CONFIG_EXIT_OK;
        }
        if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("lfhttpd %s\n", LFHTTPD_VERSION);
            return CONFIG_EXIT_OK;
        }
        if (!strcmp(a, "--test") || (!strcmp(a, "-t") && !is_number(argv[i + 1 < argc ? i + 1 : i]))) {
            cfg->test_only = true;
            continue;
        }
        /* Options with a value: --name VALUE, --name=VALUE, -x VALUE, -xVALUE. */
        static const struct { char s; const char *l; } opts[] = {
            { 'l', "listen" }, { 'r', "root" }, { 't', "threads" }, { 'c', "config" },
            { 'u', "user" }, { 0, "tls-listen" }, { 0, "cert" }, { 0, "key" },
            { 0, "test-endpoints" }, { 0, "concurrency" },
        };
        for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]) && !name; k++) {
            size_t ll = strlen(opts[k].l);
            if (a[1] == '-' && !strncmp(a + 2, opts[k].l, ll) && (a[2 + ll] == '=' || !a[2 + ll])) {
                name = opts[k].l;
                val = a[2 + ll] == '=' ? a + 3 + ll : NULL;
            } else if (opts[k].s && a[1] == opts[k].s) {
                name = opts[k].l;
                val = a[2] ? a + 2 : NULL;
            }
        }
        if (!name) {
            fprintf(stderr, "lfhttpd: unknown option '%s' (see --help)\n", a);
            return CONFIG_ERROR;
        }
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "lfhttpd: option '--%s' needs a value (see --help)\n", name);
                return CONFIG_ERROR;
            }
            val = argv[++i];
        }
        char where[64];
        snprintf(where, sizeof(where), "lfhttpd: --%s", name);
        if (!strcmp(name, "config"))
            continue; /* handled in pass 1 */
        if (!strcmp(name, "cert") || !strcmp(name, "key")) {
            bool cert = name[0] == 'c';
            unsigned *n = cert ? &ncli_cert : &ncli_key;
            if (*n == CONFIG_MAX_CERTS) {
                fprintf(stderr, "%s: at most %d certificates\n", where, CONFIG_MAX_CERTS);
                return CONFIG_ERROR;
            }
            (cert ? cli_cert : cli_key)[(*n)++] = val;
            continue;
        }
        if (!strcmp(name, "user")) { /* --user USER[:GROUP] */
            char *colon = strchr(val, ':');
            if (colon) {
                *colon = '\0';
                char *g = colon + 1;
                if (apply_directive(cfg, where, 0, "group", &g, 1) < 0)
                    return CONFIG_ERROR;
            }
        }
        if (!strcmp(name, "listen") && !cli_listen) {
            drop_listeners(cfg, false); /* command-line listeners replace the file's */
            cli_listen = true;
        }
        if (!strcmp(name, "tls-listen") && !cli_tls_listen) {
            drop_listeners(cfg, true);
            cli_tls_listen = true;
        }
        if (apply_directive(cfg, where, 0,
                            !strcmp(name, "tls-listen")       ? "tls_listen"
                            : !strcmp(name, "test-endpoints") ? "test_endpoints"
                                                              : name,
                            &val, 1) < 0)
            return CONFIG_ERROR;
    }
    if (root_arg) {
        if (site_apply(&cfg->sites.sites[0].base, "lfhttpd: ROOT", "root", &root_arg, 1) < 0)
            return CONFIG_ERROR;
    }
    if (site_add_builtins(&cfg->sites, cfg->test_endpoints) < 0)
        return CONFIG_ERROR;
    site_set_finish(&cfg->sites);
    if (ncli_cert || ncli_key) {
        /* --cert/--key pairs (in order) replace the file's certificates. */
        if (ncli_cert != ncli_key) {
            fprintf(stderr, "lfhttpd: --cert and --key must be given in pairs (%u --cert, "
                            "%u --key)\n", ncli_cert, ncli_key);
            return CONFIG_ERROR;
        }
        cfg->ncerts = 0;
        for (unsigned i = 0; i < ncli_cert; i++) {
            char *pair[2] = { (char *)(uintptr_t)cli_cert[i], (char *)(uintptr_t)cli_key[i] };
            if (add_certificate(cfg, "lfhttpd: --cert", 0, pair, 2) < 0)
                return CONFIG_ERROR;
        }
    }
    if (cfg->nlisten == 0) {
        config_parse_listen("0.0.0.0:8080", &cfg->listen[0]);
        cfg->nlisten = 1;
    }
    bool tls = config_has_tls(cfg);
    if (tls && cfg->ncerts == 0) {
        fprintf(stderr, "lfhttpd: a TLS listener needs a certificate (--cert FILE --key FILE, "
                        "or tls_certificate in the configuration file)\n");
        return CONFIG_ERROR;
    }
    if (cfg->tls_ticket_key_file[0] && cfg->tls_ticket_rotation == 0) {
        fprintf(stderr, "lfhttpd: tls_session_ticket_key_file needs session tickets, which "
                        "tls_session_ticket_rotation 0 turns off\n");
        return CONFIG_ERROR;
    }
    if (cfg->tls_redirect_http && !tls) {
        fprintf(stderr, "lfhttpd: tls_redirect_http on needs a TLS listener\n");
        return CONFIG_ERROR;
    }
    if (cfg->threads == 0) {
        /* threads auto: the CPUs this process may use, not the host's (cpu_limit.h) */
        struct cpu_limit cl;
        cpu_limit_read(&cl);
        cfg->threads = cl.cpus;
        char why[sizeof(cfg->threads_reason) - 16];
        cpu_limit_describe(&cl, why, sizeof(why));
        snprintf(cfg->threads_reason, sizeof(cfg->threads_reason), "threads auto: %s", why);
    } else {
        snprintf(cfg->threads_reason, sizeof(cfg->threads_reason), "threads %u: configured",
                 cfg->threads);
    }
    return CONFIG_OK;
}

enum config_result config_from_args(struct config *cfg, int argc, char **argv)
{
    enum config_result r = parse_args(cfg, argc, argv);
    if (r != CONFIG_OK)
        config_free(cfg); /* nothing half-built outlives a failed parse */
    return r;
}
