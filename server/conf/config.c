/* config.c — the configuration object: its defaults, listeners and certificates, what the
 * TLS contexts are built from, and freeing it; see config.h. Reading it from the file and the
 * command line is loader.c's. */
#include "conf/config.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hostport.h"
#include "conf/handler_conf.h"
#include "log/log.h"
#include "log/diag.h"

/* The built-in defaults. Returns 0, or -1 when out of memory (message printed): at start-up
 * that ends the process, on a reload it keeps the running configuration. */
int config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    if (site_set_init(&cfg->sites) < 0) {
        diag("lfhttpd: out of memory\n");
        return -1;
    }
    cfg->batch = 8;
    cfg->log_level = LOG_NOTICE;
    snprintf(cfg->error_log, sizeof(cfg->error_log), "stderr");
    snprintf(cfg->access_log, sizeof(cfg->access_log), "off");
    cfg->http.max_head_size = 16 * 1024;
    cfg->http.max_headers = 100;
    cfg->http.max_uri_length = 8 * 1024;
    cfg->http.max_body_size = 1024 * 1024;
    cfg->max_connections = 10000;
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
    cfg->access_log_buffer = 0; /* every line written at once: nothing lost on a crash */
    cfg->access_log_flush = 1000;
    cfg->tcp_notsent_lowat = 256 * 1024; /* docs/PERFORMANCE.md, "Large files" */
    cfg->acme.challenge = -1; /* by the listeners (acme_conf.h) */
    cfg->sendfile_auto = true; /* docs/PERFORMANCE.md, "Run 6" */
    if (conf_top_init(cfg) < 0) {
        diag("lfhttpd: out of memory\n");
        return -1;
    }
    return 0;
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
void config_drop_listeners(struct config *cfg, bool tls)
{
    unsigned n = 0;
    for (unsigned i = 0; i < cfg->nlisten; i++)
        if (cfg->listen[i].tls != tls || cfg->listen[i].admin)
            cfg->listen[n++] = cfg->listen[i]; /* --listen never replaces admin_listen */
    cfg->nlisten = n;
}

int config_parse_listen(const char *s, struct listen_addr *la)
{
    char host[64] = "";
    const char *port;
    memset(la, 0, sizeof(*la));
    snprintf(la->text, sizeof(la->text), "%s", s);
    if (!strncmp(s, "unix:", 5))
        return listen_parse_unix(s, la);
    if (!strncmp(s, "systemd:", 8)) { /* a socket passed by systemd, by FileDescriptorName= */
        const char *name = s + 8;
        size_t n = strlen(name);
        if (!n || n >= sizeof(la->fdname) ||
            strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@-") != n)
            return -EINVAL;
        memcpy(la->fdname, name, n + 1);
        return 0;
    }
    struct hostport hp;
    hostport_split(s, strlen(s), &hp);
    if (hp.port.ptr) {
        if (memchr(hp.port.ptr, ':', hp.port.len) || hp.name.len >= sizeof(host))
            return -EINVAL; /* a second ':': bare IPv6 must be bracketed */
        memcpy(host, hp.name.ptr, hp.name.len);
        host[hp.name.len] = '\0';
        port = hp.port.ptr;
    } else if (s[0] == '[') {
        return -EINVAL; /* "[v6]" without its port, or something else after the ']' */
    } else {
        port = s;
    }
    if (!*port || strspn(port, "0123456789") != strlen(port) || atol(port) > 65535)
        return -EINVAL;
    if (!host[0] || strcmp(host, "*") == 0)
        snprintf(host, sizeof(host), "0.0.0.0");
    struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai == EAI_MEMORY)
        return -ENOMEM;
    if (gai != 0 || !res)
        return -EINVAL;
    memcpy(&la->ss, res->ai_addr, res->ai_addrlen);
    la->sslen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* tls_certificate CERT KEY [SERVER_NAME...] */
int config_add_certificate(struct config *cfg, const char *where, unsigned line, char **args,
                           int nargs)
{
    if (cfg->ncerts >= CONFIG_MAX_CERTS) {
        diag("%s: too many certificates (at most %d)\n", where, CONFIG_MAX_CERTS);
        return -1;
    }
    struct tls_cert_conf *tc = &cfg->certs[cfg->ncerts];
    memset(tc, 0, sizeof(*tc));
    if (strlen(args[0]) >= sizeof(tc->cert) || strlen(args[1]) >= sizeof(tc->key)) {
        diag("%s: certificate or key path too long\n", where);
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
            diag("%s: invalid server name '%s'\n", where, args[i]);
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

void config_free(struct config *cfg)
{
    site_set_free(&cfg->sites);
    cidr_list_free(&cfg->trusted_proxies);
    conf_top_free(cfg);
    cidr_list_free(&cfg->limit_allow);
    for (unsigned i = 0; i < cfg->nconf_files; i++)
        free(cfg->conf_files[i]);
    free(cfg->conf_files);
    free(cfg->conf_file_glob);
    cfg->conf_files = NULL;
    cfg->conf_file_glob = NULL;
    cfg->nconf_files = 0;
    for (unsigned i = 0; i < cfg->nsecrets; i++)
        free((char *)(uintptr_t)cfg->secrets[i].written); /* value is in the same block */
    diag_forget(cfg->secrets);
    free(cfg->secrets);
    cfg->secrets = NULL;
    cfg->nsecrets = 0;
}

int config_add_secret(struct config *cfg, const char *written, size_t wlen, const char *value,
                      size_t vlen, bool shown)
{
    for (unsigned i = 0; i < cfg->nsecrets; i++)
        if (cfg->secrets[i].vlen == vlen && cfg->secrets[i].wlen == wlen &&
            !memcmp(cfg->secrets[i].value, value, vlen) &&
            !memcmp(cfg->secrets[i].written, written, wlen)) {
            cfg->secrets[i].shown |= shown;
            return 0;
        }
    struct diag_secret *ns = realloc(cfg->secrets, (cfg->nsecrets + 1) * sizeof(*ns));
    if (ns)
        cfg->secrets = ns;
    char *block = ns ? malloc(wlen + vlen + 2) : NULL;
    if (!block) {
        diag("lfhttpd: out of memory\n");
        return -1;
    }
    memcpy(block, written, wlen);
    block[wlen] = '\0';
    memcpy(block + wlen + 1, value, vlen);
    block[wlen + 1 + vlen] = '\0';
    ns[cfg->nsecrets++] = (struct diag_secret){ block, wlen, block + wlen + 1, vlen, shown };
    diag_secrets(cfg->secrets, cfg->nsecrets);
    return 0;
}

void config_tls_settings(const struct config *cfg, struct tls_settings *out)
{
    *out = (struct tls_settings){ .certs = cfg->certs, .ncerts = cfg->ncerts,
                                  .passphrase_file = cfg->tls_passphrase_file,
                                  .session_cache = cfg->tls_session_cache,
                                  .session_timeout = cfg->tls_session_timeout,
                                  .ticket_rotation = cfg->tls_ticket_rotation,
                                  .ticket_key_file = cfg->tls_ticket_key_file,
                                  .config_file = cfg->config_file };
}
