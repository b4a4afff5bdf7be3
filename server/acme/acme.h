/* acme.h — automatic certificates: an ACME client (RFC 8555) on a thread of its own.
 *
 * The daemon fills a struct acme_settings (from its configuration), provides struct
 * acme_hooks, and calls acme_start(). The thread then keeps one certificate for the settings'
 * names: it reuses a stored one that is still good, orders a new one at two thirds of its
 * lifetime (or when there is none), and hands each one to the install hook. It never blocks a
 * pool thread: request threads only read the HTTP-01 table (acme_http01_lookup) and the status
 * (acme_status), both copies taken under a short mutex, rare traffic.
 *
 * Everything the CA sends is treated as untrusted: bounded sizes, JSON checked field by field,
 * https URLs only (http too for a test CA that says so), and an issued chain is installed only
 * once it matches the order's key and names and each certificate is issued by the next. A
 * failure keeps the certificate in use, and is retried with exponential backoff and jitter
 * (or after the CA's Retry-After, when later). */
#ifndef LF_ACME_H
#define LF_ACME_H

#include <openssl/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define ACME_MAX_NAMES 16
/* RFC 1035: a DNS name is at most 253 characters in text. */
#define ACME_NAME_MAX 253
/* The longest HTTP-01 token kept (RFC 8555 8.1: at least 128 bits of base64url; CAs use 43). */
#define ACME_TOKEN_MAX 128
/* token "." thumbprint */
#define ACME_KEYAUTH_MAX (ACME_TOKEN_MAX + 1 + 43)
#define ACME_ERROR_MAX 160
/* An ARI certificate identifier: base64url of a key identifier and of a serial number */
#define ACME_ARI_ID_MAX 128
/* The path prefix HTTP-01 answers under (RFC 8555 8.3). */
#define ACME_HTTP01_PREFIX "/.well-known/acme-challenge/"

enum acme_challenge { ACME_HTTP_01, ACME_TLS_ALPN_01 };

/* What the daemon configures. The strings and names must stay valid until acme_stop(). */
struct acme_settings {
    const char *directory_url; /* the CA's directory (https) */
    const char *state_dir;     /* account key, certificates, lock file: created 0700 */
    const char *email;         /* the account's contact (mailto:), or NULL */
    bool agree_tos;            /* the CA's terms of service: required, never implied */
    const char *ca_bundle;     /* trusted roots for the CA's HTTPS, or NULL: the system's */
    bool test_ca;              /* a test CA: its URLs may be http too */
    enum acme_challenge challenge;
    const char *names[ACME_MAX_NAMES]; /* exact DNS names: no wildcard, no IP address */
    size_t n_names;
    unsigned retry_min_s; /* backoff after a failure: first delay (0: 60 s) */
    unsigned retry_max_s; /* its cap (0: 1 day) */
};

/* What the server provides. Called on the ACME thread; each may be NULL when the server does
 * not use that part (e.g. no TLS-ALPN-01). `arg` is passed back. */
struct acme_hooks {
    void *arg;
    /* HTTP-01: a key authorization is now served for token (the table behind
     * acme_http01_lookup already holds it: this is a notification), then withdrawn. */
    void (*http01_publish)(void *arg, const char *token, const char *key_authorization);
    void (*http01_withdraw)(void *arg, const char *token);
    /* TLS-ALPN-01: while published, a TLS handshake for `name` that offers ALPN "acme-tls/1"
     * must be answered with this certificate and key (RFC 8737 3), and with nothing else.
     * The hook takes its own references (X509_up_ref, EVP_PKEY_up_ref). 0, or -1. */
    int (*alpn_publish)(void *arg, const char *name, X509 *cert, EVP_PKEY *key);
    void (*alpn_withdraw)(void *arg, const char *name);
    /* A certificate for names[0..n): the chain (leaf first, PEM) and its key (PEM), both
     * files under state_dir, replaced atomically on renewal. Load them into a new TLS context
     * for those names. 0, or -1 (retried like a failed order). */
    int (*install)(void *arg, const char *const *names, size_t n_names, const char *chain_path,
                   const char *key_path);
};

/* Why `s` cannot be used (a static string), or NULL when it can. */
const char *acme_settings_check(const struct acme_settings *s);

/* Start the ACME thread. 0, or -1 with one line logged (bad settings, no thread). Start and
 * stop from one thread (the daemon's main one). The process must ignore SIGPIPE (lfhttpd
 * does): OpenSSL writes to the CA's socket with write(2). */
int acme_start(const struct acme_settings *s, const struct acme_hooks *h);
/* Stop it (an exchange with the CA in flight is aborted) and withdraw any challenge. */
void acme_stop(void);
/* Renew now, whatever the stored certificate's age (operators, tests). */
void acme_renew_now(void);

/* HTTP-01: copy the key authorization published for token[0..len) into out. Its length, or
 * -1 when none is (then answer 404). Safe from any thread. */
ssize_t acme_http01_lookup(const char *token, size_t len, char *out, size_t cap);

/* One name's state, for the status page and the metrics. */
struct acme_name_status {
    char name[ACME_NAME_MAX + 1];
    time_t not_after;    /* of the installed certificate; 0: none yet */
    time_t last_attempt; /* last order or check; 0: none yet */
    bool last_ok;
    char last_error[ACME_ERROR_MAX]; /* when !last_ok */
    time_t next_attempt;
    bool in_progress;  /* an attempt (a check, an order) is under way */
    unsigned orders;   /* new orders placed by this process */
    unsigned failures; /* failed attempts by this process */
};
/* Copy up to max entries (one per configured name) into out; returns how many there are. */
size_t acme_status(struct acme_name_status *out, size_t max);

#endif
