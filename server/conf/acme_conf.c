/* acme_conf.c — the ACME directives and their checks; see acme_conf.h. */
#include "conf/acme_conf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"
#include "conf/directives.h"
#include "log/diag.h"

/* The server block whose own settings `lc` are, or NULL (the top level, a location). */
static const struct site *site_of(const struct config *cfg, const struct loc_conf *lc)
{
    for (unsigned i = 1; i < cfg->sites.nsites; i++)
        if (&cfg->sites.sites[i].base == lc)
            return &cfg->sites.sites[i];
    return NULL;
}

/* Why ACME cannot get a certificate for `name`, or NULL. */
static const char *name_refused(const char *name)
{
    unsigned char addr[sizeof(struct in6_addr)];
    if (strchr(name, '*'))
        return "wildcard names need the DNS-01 challenge, which lfhttpd does not do (out of "
               "scope: give the wildcard's certificate with tls_certificate)";
    if (inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1)
        return "IP addresses cannot get a certificate here: ACME needs exact DNS names";
    struct acme_settings probe = { .directory_url = "https://ca.invalid/", .state_dir = "/",
                                   .agree_tos = true, .challenge = ACME_HTTP_01,
                                   .names = { name }, .n_names = 1 };
    return acme_settings_check(&probe); /* the name's syntax: the client's own rules */
}

/* acme on|off (a server block): its names get their certificate from the ACME CA. */
int acme_conf_on(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    struct config_acme *a = &x->cfg->acme;
    const struct site *s = site_of(x->cfg, x->lc);
    if (strcmp(args[0], "on") && strcmp(args[0], "off")) {
        diag("%s: '%s' takes on or off\n", x->where, d->name);
        return -1;
    }
    if (!s) {
        diag("%s: '%s' belongs in a server block: it asks for its server names\n", x->where,
             d->name);
        return -1;
    }
    if (!strcmp(args[0], "off"))
        return 0;
    for (unsigned i = 0; i < s->nnames; i++) {
        const char *why = name_refused(s->names[i]);
        if (why) {
            diag("%s: acme: server name '%s': %s\n", x->where, s->names[i], why);
            return -1;
        }
        bool have = false;
        for (unsigned j = 0; j < a->nnames && !have; j++)
            have = !strcasecmp(a->names[j], s->names[i]);
        if (have)
            continue;
        if (a->nnames == ACME_MAX_NAMES) {
            diag("%s: acme: more than %d names in all (one certificate covers them)\n",
                 x->where, ACME_MAX_NAMES);
            return -1;
        }
        snprintf(a->names[a->nnames++], sizeof(a->names[0]), "%s", s->names[i]);
    }
    if (!a->line)
        a->line = x->line ? x->line : 1;
    return 0;
}

/* acme_ca URL: the CA's directory (https). */
int acme_conf_ca(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    const char *v = args[0];
    if (strncmp(v, "https://", 8) || strlen(v) < 9 || strlen(v) >= ACME_CONF_URL_MAX ||
        strpbrk(v, " \t\"<>")) {
        diag("%s: '%s' takes the https:// URL of the CA's ACME directory\n", x->where, d->name);
        return -1;
    }
    snprintf(x->cfg->acme.directory, sizeof(x->cfg->acme.directory), "%s", v);
    return 0;
}

/* acme_email ADDRESS: the account's contact (the CA's expiry notices). */
int acme_conf_email(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    const char *v = args[0], *at = strchr(v, '@');
    if (!at || at == v || !at[1] || strchr(at + 1, '@') || strlen(v) > ACME_CONF_EMAIL_MAX ||
        strpbrk(v, " \t\r\n,:<>\"")) {
        diag("%s: '%s' takes an email address (the ACME account's contact)\n", x->where,
             d->name);
        return -1;
    }
    snprintf(x->cfg->acme.email, sizeof(x->cfg->acme.email), "%s", v);
    return 0;
}

/* acme_state_dir DIR, acme_ca_bundle FILE: absolute paths. */
int acme_conf_path(const struct directive *d, const struct dir_ctx *x, char **args, int nargs)
{
    (void)nargs;
    const char *v = args[0];
    struct config_acme *a = &x->cfg->acme;
    bool state = !strcmp(d->name, "acme_state_dir");
    if (v[0] != '/' || strlen(v) >= PATH_MAX) {
        diag("%s: '%s' takes an absolute path\n", x->where, d->name);
        return -1;
    }
    if (!state && access(v, R_OK) < 0) {
        diag("%s: %s %s: %s\n", x->where, d->name, v, strerror(errno));
        return -1;
    }
    snprintf(state ? a->state_dir : a->ca_bundle, PATH_MAX, "%s", v);
    if (state)
        a->state_line = x->line;
    return 0;
}

/* acme_challenge http-01|tls-alpn-01 */
int acme_conf_challenge(const struct directive *d, const struct dir_ctx *x, char **args,
                        int nargs)
{
    (void)nargs;
    static const char *const words[] = { "http-01", "tls-alpn-01", NULL };
    int i = directive_one_of(d, x, args[0], words, "http-01 or tls-alpn-01");
    if (i < 0)
        return -1;
    x->cfg->acme.challenge = i == 0 ? ACME_HTTP_01 : ACME_TLS_ALPN_01;
    x->cfg->acme.challenge_line = x->line;
    return 0;
}

/* ---- the whole configuration ------------------------------------------------------------ */

/* Can the server create and write its files in `dir`? (It creates dir, not its parents.) */
static int state_dir_check(const char *dir, char *why, size_t cap)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            snprintf(why, cap, "not a directory");
            return -1;
        }
        if (access(dir, W_OK | X_OK) < 0) {
            snprintf(why, cap, "not writable: %s", strerror(errno));
            return -1;
        }
        return 0;
    }
    if (errno != ENOENT) {
        snprintf(why, cap, "%s", strerror(errno));
        return -1;
    }
    char parent[PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash)
        *(slash == parent ? slash + 1 : slash) = '\0';
    if (access(parent, W_OK | X_OK) < 0) {
        snprintf(why, cap, "missing, and %s is not writable (%s)", parent, strerror(errno));
        return -1;
    }
    return 0;
}

/* The default state directory: under systemd's StateDirectory= when it set one. */
static void state_dir_default(struct config_acme *a)
{
    const char *sd = getenv("STATE_DIRECTORY"); /* "DIR[:DIR...]": the first */
    size_t n = sd && sd[0] == '/' ? strcspn(sd, ":") : 0;
    if (n && n + sizeof("/acme") <= sizeof(a->state_dir))
        snprintf(a->state_dir, sizeof(a->state_dir), "%.*s/acme", (int)n, sd);
    else
        snprintf(a->state_dir, sizeof(a->state_dir), "%s", ACME_CONF_DEFAULT_STATE);
}

/* The challenge: as configured, else HTTP-01 when a plain listener takes port 80. */
static int challenge_finish(struct config *cfg, const char *file)
{
    struct config_acme *a = &cfg->acme;
    bool plain = false, plain80 = false, tls = false;
    for (unsigned i = 0; i < cfg->nlisten; i++) {
        const struct listen_addr *l = &cfg->listen[i];
        if (l->admin)
            continue;
        tls |= l->tls;
        plain |= !l->tls;
        if (!l->tls && (l->ss.ss_family == AF_INET || l->ss.ss_family == AF_INET6) &&
            ntohs(((const struct sockaddr_in *)(const void *)&l->ss)->sin_port) == 80)
            plain80 = true;
    }
    unsigned line = a->challenge_line ? a->challenge_line : a->line;
    if (!tls) {
        diag("%s:%u: acme on needs a TLS listener (tls_listen) to serve its certificate\n",
             file, a->line);
        return -1;
    }
    if (a->challenge < 0)
        a->challenge = plain80 ? ACME_HTTP_01 : ACME_TLS_ALPN_01;
    if (a->challenge == ACME_HTTP_01 && !plain) {
        diag("%s:%u: acme: the http-01 challenge needs a plain listener (listen; the CA "
             "connects to port 80)\n", file, line);
        return -1;
    }
    return 0;
}

int config_acme_finish(struct config *cfg)
{
    struct config_acme *a = &cfg->acme;
    const char *file = cfg->config_file ? cfg->config_file : "lfhttpd";
    if (!a->line)
        return 0;
    if (!a->directory[0])
        snprintf(a->directory, sizeof(a->directory), "%s", ACME_CONF_DEFAULT_CA);
    if (!a->state_dir[0])
        state_dir_default(a);
    if (!a->email[0]) {
        diag("%s:%u: acme on needs acme_email: the contact of the CA account (expiry "
             "notices)\n", file, a->line);
        return -1;
    }
    if (!a->agree_terms) {
        diag("%s:%u: acme on needs 'acme_agree_terms on': the CA's terms of service are "
             "agreed to explicitly, never implied (read them at the CA's site)\n", file,
             a->line);
        return -1;
    }
    char why[PATH_MAX + 128];
    if (state_dir_check(a->state_dir, why, sizeof(why)) < 0) {
        diag("%s:%u: acme state directory %s: %s\n", file, a->state_line ? a->state_line
                                                                           : a->line,
             a->state_dir, why);
        return -1;
    }
    if (challenge_finish(cfg, file) < 0)
        return -1;
    struct acme_settings s;
    config_acme_settings(cfg, &s, NULL, NULL);
    const char *bad = acme_settings_check(&s);
    if (bad) {
        diag("%s:%u: acme: %s\n", file, a->line, bad);
        return -1;
    }
    return 0;
}

void config_acme_settings(const struct config *cfg, struct acme_settings *out,
                          bool (*skip)(const char *name, void *arg), void *arg)
{
    const struct config_acme *a = &cfg->acme;
    *out = (struct acme_settings){
        .directory_url = a->directory,
        .state_dir = a->state_dir,
        .email = a->email,
        .agree_tos = a->agree_terms,
        .ca_bundle = a->ca_bundle[0] ? a->ca_bundle : NULL,
        .challenge = a->challenge == ACME_TLS_ALPN_01 ? ACME_TLS_ALPN_01 : ACME_HTTP_01,
    };
    for (unsigned i = 0; i < a->nnames; i++)
        if (!skip || !skip(a->names[i], arg))
            out->names[out->n_names++] = a->names[i];
}
