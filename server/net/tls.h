/* tls.h — the TLS context of the HTTPS listeners (OpenSSL 3).
 *
 * One struct tls_ctx holds what every TLS connection shares: an SSL_CTX per configured
 * certificate (the first is the default, the others are chosen by SNI), the server-side session
 * cache (inside the default SSL_CTX, which OpenSSL keeps as every connection's session context
 * even after SNI switches its certificate), and the session-ticket keys, rotated by time.
 *
 * Built once from the configuration, then immutable except for the ticket keys, which are
 * behind a mutex (any pool thread may issue or decrypt a ticket); ACME's managed certificate,
 * below, is the process's, not a context's. Reference counted: the server holds one reference
 * and every TLS connection holds one from accept to close, so a future configuration reload
 * can build a new context, swap server.tls and drop the server's reference;
 * connections still using the old context keep it alive until the last of them closes.
 *
 * Only this file and transport_tls.c call OpenSSL. */
#ifndef LF_TLS_H
#define LF_TLS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct ssl_st;
struct tls_ctx;

/* tls_session_ticket_key_file: one or more keys of TLS_TICKET_KEY_SIZE bytes each (16 name,
 * 32 HMAC-SHA256, 32 AES-256 key: the layout of nginx's 80-byte ssl_session_ticket_key), at
 * most TLS_MAX_TICKET_KEYS. The first seals new tickets; every one opens tickets (the others
 * then get a fresh ticket sealed with the first). Every replica given the same file resumes
 * the others' sessions. */
#define TLS_TICKET_KEY_SIZE 80
#define TLS_MAX_TICKET_KEYS 8

/* Read and check a ticket key file into `keys` (TLS_MAX_TICKET_KEYS * TLS_TICKET_KEY_SIZE
 * bytes); returns the number of keys, or -1 with a reason in `err`. The caller cleanses `keys`. */
int tls_ticket_key_file_read(const char *path, unsigned char *keys, char *err, size_t errcap);

#define TLS_MAX_CERTS 16

/* One certificate for the TLS listeners (tls_certificate / --cert + --key). */
struct tls_cert_conf {
    char cert[PATH_MAX];    /* PEM: the certificate, then its chain (intermediates) */
    char key[PATH_MAX];     /* PEM private key, possibly encrypted (tls_passphrase_file) */
    char names[512];        /* SNI names, space-separated; empty: the certificate's own names */
    unsigned line;          /* its line in the configuration file; 0: the command line */
};

/* What a context is built from: the configuration's TLS settings (config.h fills one). */
struct tls_settings {
    const struct tls_cert_conf *certs; /* the first is the default, the others go by SNI */
    unsigned ncerts;                   /* 1..TLS_MAX_CERTS */
    const char *passphrase_file;       /* first line decrypts encrypted keys; "" = none */
    unsigned session_cache;            /* server-side session cache entries; 0 = off */
    unsigned session_timeout;          /* ms a session may be resumed */
    unsigned ticket_rotation;          /* ms between session-ticket key rotations; 0 = none */
    const char *ticket_key_file;       /* ticket keys shared by replicas; "" = generated */
    const char *config_file;           /* where the certificates' lines are; NULL: none */
};

/* Build the context from the certificates and settings of `ts` (reads the certificate, key and
 * passphrase files). On failure prints one line ("FILE:LINE: reason" for a certificate from
 * the configuration file, "lfhttpd: reason" otherwise) and returns NULL. */
struct tls_ctx *tls_ctx_create(const struct tls_settings *ts);
void tls_ctx_unref(struct tls_ctx *t);

/* A server-side SSL for socket `fd` (accept state, default certificate), holding a reference
 * to `t`; NULL when out of memory. Free it with tls_ssl_free(). */
struct ssl_st *tls_ssl_new(struct tls_ctx *t, int fd);
void tls_ssl_free(struct ssl_st *ssl);

/* ---- certificates obtained at run time (ACME, server/acme/), shared by every context ----
 *
 * Up to TLS_MANAGED_MAX names get one certificate that is not in the configuration: a name
 * that a configured certificate claims (by its names or its own) keeps that one; for the
 * others, SNI picks the managed certificate, and until one is installed their handshakes are
 * refused with an unrecognized_name alert. A context built from no configured certificate
 * (ncerts 0) serves ACME's names only. The store is process-wide, so a reload's new context
 * serves what was installed before it; each call takes a short mutex, handshakes take it only
 * for the managed names. */
#define TLS_MANAGED_MAX 16
#define TLS_NAME_MAX 253

struct x509_st;
struct evp_pkey_st;

/* Does one of t's configured certificates claim `name` (SNI would choose it)? */
bool tls_ctx_claims(const struct tls_ctx *t, const char *name);
/* The names the managed certificate is for (n 0: none). A different set drops the
 * certificate installed for the old one. 0, or -1 (too many, too long). */
int tls_managed_names(const char *const *names, size_t n);
/* Load the chain (leaf first, PEM) and its key into a new context and serve it from the next
 * handshake on; connections already using the old one keep it. 0, or -1 with a reason. */
int tls_managed_install(const char *chain, const char *key, char *err, size_t errcap);
/* How many names are managed (0: ACME is off). */
unsigned tls_managed_count(void);
/* Is a managed certificate installed (handshakes for the managed names succeed)? */
bool tls_managed_installed(void);
/* TLS-ALPN-01 (RFC 8737): a handshake for `name` that offers ALPN acme-tls/1 is answered with
 * this certificate and key (references taken) and acme-tls/1, until withdrawn. 0, or -1. */
int tls_alpn_publish(const char *name, struct x509_st *cert, struct evp_pkey_st *key);
void tls_alpn_withdraw(const char *name);
/* Did this connection's handshake answer a TLS-ALPN-01 validation? Then it carries no HTTP:
 * close it once the handshake is done. */
bool tls_ssl_acme_challenge(struct ssl_st *ssl);
/* Forget every name, certificate and challenge (at exit). */
void tls_managed_clear(void);

#endif
