/* config.h — the server's immutable configuration.
 *
 * Built once at start-up from the configuration file (if any) and the command line (which
 * overrides the file), then only read. Errors are reported as "FILE:LINE: reason" (or
 * "lfhttpd: reason" for the command line) and make the process exit with status 2. */
#ifndef LF_CONFIG_H
#define LF_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/netaddr.h"
#include "conf/acme_conf.h"
#include "conf/site.h"
#include "http/http_parser.h"
#include "net/listen.h"
#include "net/tls.h"

struct diag_secret;

#define CONFIG_MAX_LISTEN 16
#define CONFIG_MAX_CERTS TLS_MAX_CERTS

struct config {
    struct listen_addr listen[CONFIG_MAX_LISTEN];
    unsigned nlisten;
    struct site_set sites;  /* sites[0] is the top level: the default site */
    unsigned threads;       /* 0 while parsing = auto; resolved by config_from_args */
    char threads_reason[PATH_MAX + 256]; /* how `threads` was chosen (the log, /server-status) */
    int batch;              /* events taken per epoll_wait by the leader */
    int concurrency;        /* enum concurrency (thread_pool.h) */
    int log_level;          /* enum log_level */
    char user[64];              /* run as this user when started as root ("" = nobody) */
    char group[64];             /* "" = the user's primary group */
    struct cidr_list trusted_proxies; /* peers whose X-Forwarded-For / Forwarded we believe */
    bool real_ip_forwarded;     /* believe Forwarded (RFC 7239) instead of X-Forwarded-For */
    char error_log[PATH_MAX];   /* "stderr" or a file */
    bool error_log_json;        /* error_log_format json: one JSON object per line */
    bool listen_default;        /* no listener was configured: listen[nlisten - 1] is the
                                   default 0.0.0.0:8080 (or the sockets systemd passed) */
    char access_log[PATH_MAX];  /* a file, "stdout", "stderr" or "off" */
    int access_log_format;      /* enum access_log_format */
    size_t access_log_buffer;   /* bytes of lines each thread gathers; 0: one write per line */
    unsigned access_log_flush;  /* ms a buffered line may wait for its write */
    size_t tcp_notsent_lowat;   /* unsent bytes a socket holds before it stops taking more;
                                   0: the kernel's setting (net.ipv4.tcp_notsent_lowat) */
    uint64_t sendfile_min_size; /* files of at least this size go out by sendfile, smaller
                                   ones by a copy through the thread's buffer (UINT64_MAX:
                                   never sendfile); with sendfile_auto, set by runtime_build */
    bool sendfile_auto;         /* sendfile_min_size auto: chosen from the machine at start-up */

    /* Request limits (nginx-like defaults), as the parser takes them: max_head_size,
     * max_headers, max_uri_length and max_body_size set them directly. */
    struct http_limits http;
    unsigned max_connections;

    /* Per-client limits (client_limits.c). The top level's limit_conn_per_ip counts connections;
     * a server's or location's (struct loc_conf) counts requests in flight. */
    unsigned limit_conn_per_ip;     /* connections one client holds at once; 0 = off */
    struct cidr_list limit_allow;   /* clients that are never limited */
    unsigned limit_table_size;      /* entries of the table; 0 = 4 x max_connections */

    /* Timeouts in milliseconds. */
    /* A request head must arrive within timeout_header of its first byte; every
     * timeout_header_min_rate bytes received extend that by a second, up to timeout_header_max
     * from the first byte. The same for a body, from its start (timeout_body_max 0: no cap —
     * max_body_size / min rate bounds it). Rates are bytes per second; 0: no extension. */
    unsigned timeout_header;
    unsigned timeout_header_max;
    unsigned timeout_header_min_rate;
    unsigned timeout_body;
    unsigned timeout_body_max;
    unsigned timeout_body_min_rate;
    unsigned timeout_keepalive;
    unsigned timeout_send;
    unsigned drain_timeout;
    unsigned drain_delay;       /* after SIGTERM: keep serving, not ready, this long */
    unsigned timeout_handshake; /* a TLS handshake, from accept to its end */

    /* TLS (tls.c). The first certificate is the default; the others are chosen by SNI. */
    struct tls_cert_conf certs[CONFIG_MAX_CERTS];
    unsigned ncerts;
    char tls_passphrase_file[PATH_MAX]; /* first line decrypts encrypted keys; "" = none */
    unsigned tls_session_cache;     /* server-side session cache entries; 0 = off */
    unsigned tls_session_timeout;   /* ms a session may be resumed */
    unsigned tls_ticket_rotation;   /* ms between session-ticket key rotations; 0 = no tickets */
    char tls_ticket_key_file[PATH_MAX]; /* ticket keys shared by replicas; "" = generated keys */
    unsigned tls_hsts;              /* Strict-Transport-Security max-age (s); 0 = no header */
    bool tls_redirect_http;         /* plain listeners answer 301 to the https:// URL */
    unsigned tls_redirect_line;     /* where the file set it (0: not from the file) */
    /* Automatic certificates (acme_conf.h): `acme on` blocks' names and the acme_* settings. */
    struct config_acme acme;

    /* The handler types' process-wide settings, one block per registered type
     * (handler_conf.h). */
    void *handler_conf[HANDLER_TYPES_MAX];

    bool reload_on_change;   /* watch.h: reload when the file or one it names changes */
    const char *config_file; /* NULL when none */
    /* What `include` lines named, for reload_on_change: files as written (relative to the
     * including file), and patterns (conf_file_glob[i]) whose directory is watched for names
     * that match. Owned; freed by config_free(). */
    char **conf_files;
    bool *conf_file_glob;
    unsigned nconf_files;
    /* The values the configuration took from the environment, and how it wrote them: hidden
     * from every message about it (log/diag.h). Owned (each entry's strings too). */
    struct diag_secret *secrets;
    unsigned nsecrets;
    bool test_only;          /* -t / --test: check the configuration and exit */
};

enum config_result { CONFIG_OK = 0, CONFIG_EXIT_OK, CONFIG_ERROR };

/* Fill `cfg` from the command line (and the file named by --config). Prints usage, version or
 * the error line itself; the caller exits 0 for CONFIG_EXIT_OK and 2 for CONFIG_ERROR. */
enum config_result config_from_args(struct config *cfg, int argc, char **argv);
/* Hide `value` (vlen bytes), written as `written` (wlen bytes), from the messages about `cfg`
 * (diag.h): copies both and makes the thread's diag_secrets() cfg's. 0, or -1 (message). A
 * successful config_from_args() leaves them the thread's: diag_secrets(NULL, 0) once the
 * messages about that configuration are printed (and before config_free). shown: a value of a
 * directive the server prints on purpose (diag_secret.shown; once for a value, for good). */
int config_add_secret(struct config *cfg, const char *written, size_t wlen, const char *value,
                      size_t vlen, bool shown);
/* What the TLS context is built from (tls_ctx_create): views into `cfg`, valid as long as it. */
void config_tls_settings(const struct config *cfg, struct tls_settings *out);

/* The built-in defaults (loader.c starts from them). Returns 0, or -1 when out of memory
 * (message printed). */
int config_defaults(struct config *cfg);
/* Drop the plain (tls false) or TLS listeners given so far: the file's first `listen`
 * replaces the default one, the command line's replace the file's. */
void config_drop_listeners(struct config *cfg, bool tls);
/* Free what config_from_args allocated. */
void config_free(struct config *cfg);
/* Does the configuration have a TLS listener? */
bool config_has_tls(const struct config *cfg);

/* tls_certificate CERT KEY [SERVER_NAME...] (and --cert/--key): add a certificate. `line` is
 * the file's line (0: the command line). Returns 0 or -1 (message printed). */
int config_add_certificate(struct config *cfg, const char *where, unsigned line, char **args,
                           int nargs);

/* Parse "ADDR:PORT", "[V6]:PORT", "*:PORT", "PORT" or "systemd:NAME" into `la`. Returns 0,
 * -EINVAL, or -ENOMEM (the resolver ran out of memory). */
int config_parse_listen(const char *s, struct listen_addr *la);

#endif
