/* tls.c — TLS contexts: certificates, SNI, ALPN, session cache and ticket keys; see tls.h.
 *
 * Policy (not configurable, deliberately): TLS 1.2 and 1.3 only; for 1.2 only ECDHE key
 * exchange with AEAD ciphers, in the server's order of preference; no renegotiation, no
 * compression, no 0-RTT; ALPN offers http/1.1 only. */
#include "net/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "log/diag.h"

#define TLS12_CIPHERS                                                                         \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                              \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"                              \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
#define TLS13_CIPHERSUITES "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define TLS_GROUPS "X25519:P-256:P-384"
#define SESSION_ID_CONTEXT "lfhttpd"

/* A session-ticket key: tickets are encrypted with AES-256-CBC and authenticated with
 * HMAC-SHA256 (OpenSSL's ticket format); `name` tells which key sealed a ticket. */
struct ticket_key {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
    int64_t created;        /* monotonic ms */
    bool valid;
};

struct tls_cert {
    SSL_CTX *ctx;
    char names[512];        /* configured SNI names; "" = match the certificate's own names */
};

struct tls_ctx {
    _Atomic unsigned refs;
    struct tls_cert certs[TLS_MAX_CERTS];
    unsigned ncerts;

    /* Ticket keys, generated: keys[0] seals new tickets; keys[1] (the previous key) still
     * opens tickets, which are then renewed. A key is replaced after `rotation_ms`, so a ticket
     * can be opened for at most two rotation periods. The lock is held only to copy a key out.
     * From tls_session_ticket_key_file: keys[0..nfile) as the file gives them, never rotated
     * (replacing the file and reloading rotates them), read without the lock. */
    bool tickets;           /* false: SSL_OP_NO_TICKET */
    int64_t rotation_ms;
    unsigned nfile;         /* keys from the file; 0: generated keys */
    EVP_CIPHER *aes;
    pthread_mutex_t keys_lock;
    struct ticket_key keys[TLS_MAX_TICKET_KEYS];
};

/* ---- callbacks (run on pool threads during handshakes) ---------------------------------- */

/* Server names configured for a certificate: exact, or "*.example.com" for one label. */
static bool name_matches(const char *pat, size_t plen, const char *name, size_t nlen)
{
    if (plen > 2 && pat[0] == '*' && pat[1] == '.') {
        const char *dot = memchr(name, '.', nlen);
        if (!dot || dot == name)
            return false;
        size_t rest = nlen - (size_t)(dot - name);
        return rest == plen - 1 && strncasecmp(dot, pat + 1, rest) == 0;
    }
    return plen == nlen && strncasecmp(pat, name, nlen) == 0;
}

static bool cert_matches(const struct tls_cert *tc, const char *name, size_t nlen)
{
    if (!tc->names[0]) {
        X509 *leaf = SSL_CTX_get0_certificate(tc->ctx);
        return leaf && X509_check_host(leaf, name, nlen, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS,
                                       NULL) == 1;
    }
    for (const char *p = tc->names; *p;) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (name_matches(p, len, name, nlen))
            return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

/* SNI: switch to the first certificate that claims the name; the default otherwise. */
static int sni_cb(SSL *ssl, int *alert, void *arg)
{
    struct tls_ctx *t = arg;
    (void)alert;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (!name)
        return SSL_TLSEXT_ERR_NOACK;
    size_t len = strlen(name);
    for (unsigned i = 0; i < t->ncerts; i++) {
        if (!cert_matches(&t->certs[i], name, len))
            continue;
        if (i > 0 && !SSL_set_SSL_CTX(ssl, t->certs[i].ctx))
            return SSL_TLSEXT_ERR_ALERT_FATAL;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/* ALPN: http/1.1 when the client offers it; otherwise no ALPN (the client may still speak
 * HTTP/1.1, which is all there is). */
static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    for (unsigned i = 0; i < inlen;) {
        unsigned n = in[i];
        if (i + 1 + n > inlen)
            break;
        if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

static bool ticket_key_new(struct ticket_key *k, int64_t now)
{
    struct ticket_key nk = { .created = now, .valid = true };
    if (RAND_bytes(nk.name, sizeof(nk.name)) != 1 || RAND_priv_bytes(nk.aes, sizeof(nk.aes)) != 1 ||
        RAND_priv_bytes(nk.hmac, sizeof(nk.hmac)) != 1) {
        OPENSSL_cleanse(&nk, sizeof(nk));
        return false;
    }
    *k = nk;
    OPENSSL_cleanse(&nk, sizeof(nk));
    return true;
}

/* Session tickets (SSL_CTX_set_tlsext_ticket_key_evp_cb). enc: seal a new ticket with the
 * current key, rotating it first when it is due. !enc: find the key named by the ticket;
 * returns 0 (unknown or expired: full handshake), 1 (accept) or 2 (accept and issue a fresh
 * ticket: the previous key, or any TLS 1.3 resumption), -1 on error. */
static int ticket_cb(SSL *ssl, unsigned char key_name[16], unsigned char iv[EVP_MAX_IV_LENGTH],
                     EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
    struct tls_ctx *t = SSL_get_app_data(ssl);
    struct ticket_key k = { .valid = false };
    int rc = 1;
    int64_t now = clock_now_ms();

    if (t->nfile) {
        /* the file's keys: the first seals, any opens; a ticket sealed by another key is
         * renewed, and so is every TLS 1.3 resumption (as below) */
        for (unsigned i = 0; i < (enc ? 1 : t->nfile); i++)
            if (enc || memcmp(t->keys[i].name, key_name, 16) == 0) {
                k = t->keys[i];
                rc = (enc || (i == 0 && SSL_version(ssl) != TLS1_3_VERSION)) ? 1 : 2;
                break;
            }
        goto have_key;
    }
    pthread_mutex_lock(&t->keys_lock);
    if (enc) {
        if (now - t->keys[0].created >= t->rotation_ms) {
            struct ticket_key fresh;
            if (ticket_key_new(&fresh, now)) {
                t->keys[1] = t->keys[0];
                t->keys[0] = fresh;
                OPENSSL_cleanse(&fresh, sizeof(fresh));
            } /* else keep sealing with the old key rather than fail the handshake */
        }
        k = t->keys[0];
    } else {
        for (int i = 0; i < 2; i++) {
            const struct ticket_key *c = &t->keys[i];
            if (c->valid && memcmp(c->name, key_name, 16) == 0 &&
                now - c->created < 2 * t->rotation_ms) {
                k = *c;
                /* 2 asks OpenSSL to issue a fresh ticket. TLS 1.3 clients should use a ticket
                 * once (RFC 8446 C.4), so a resumed TLS 1.3 session always gets a new one (as
                 * with nginx); TLS 1.2 renews only a ticket sealed by the previous key. */
                rc = (i == 0 && now - c->created < t->rotation_ms &&
                      SSL_version(ssl) != TLS1_3_VERSION) ? 1 : 2;
                break;
            }
        }
    }
    pthread_mutex_unlock(&t->keys_lock);
have_key:
    if (!k.valid)
        return 0;

    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, k.hmac, sizeof(k.hmac)),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)(uintptr_t) "SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    if (enc) {
        memcpy(key_name, k.name, 16);
        if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(t->aes)) != 1 ||
            EVP_EncryptInit_ex(cctx, t->aes, NULL, k.aes, iv) != 1)
            rc = -1;
    } else if (EVP_DecryptInit_ex(cctx, t->aes, NULL, k.aes, iv) != 1) {
        rc = -1;
    }
    if (rc > 0 && EVP_MAC_CTX_set_params(hctx, params) != 1)
        rc = -1;
    OPENSSL_cleanse(&k, sizeof(k));
    return rc;
}

/* Encrypted keys: the passphrase read from tls_passphrase_file, never a terminal prompt. */
struct passphrase {
    const char *text;   /* NULL: none configured */
    bool asked;
};

static int passwd_cb(char *buf, int size, int rwflag, void *u)
{
    struct passphrase *p = u;
    (void)rwflag;
    if (!p)
        return 0;
    p->asked = true;
    if (!p->text)
        return 0;
    size_t n = strlen(p->text);
    if (n > (size_t)size)
        return 0;
    memcpy(buf, p->text, n);
    return (int)n;
}

/* ---- construction --------------------------------------------------------------------- */

/* One error line: "FILE:LINE: ..." for a certificate from the configuration file. */
__attribute__((format(printf, 3, 4))) static void cert_error(const struct tls_settings *ts,
                                                             const struct tls_cert_conf *tc,
                                                             const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (tc && tc->line && ts->config_file)
        diag("%s:%u: %s\n", ts->config_file, tc->line, msg);
    else
        diag("lfhttpd: %s\n", msg);
}

static const char *ssl_reason(void)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    return r ? r : "unknown OpenSSL error";
}

/* The certificate's key, decrypted with the passphrase when it is encrypted. Prints why not. */
static bool use_key(SSL_CTX *ctx, const struct tls_settings *ts, const struct tls_cert_conf *tc,
                    struct passphrase *pass)
{
    const char *key = tc->key;
    SSL_CTX_set_default_passwd_cb(ctx, passwd_cb);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, pass);
    pass->asked = false;
    int ok = SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL); /* `pass` lives on the caller's stack */
    if (ok == 1)
        return true;
    if (pass->asked && !pass->text)
        cert_error(ts, tc, "key %s is encrypted: set tls_passphrase_file", key);
    else if (pass->asked)
        cert_error(ts, tc, "key %s: cannot decrypt with tls_passphrase_file (%s)", key,
                   ssl_reason());
    else
        cert_error(ts, tc, "key %s: %s", key, ssl_reason());
    return false;
}

static SSL_CTX *cert_ctx_new(struct tls_ctx *t, const struct tls_settings *ts,
                             const struct tls_cert_conf *tc, struct passphrase *pass)
{
    /* SSL_CTX_set1_groups_list() casts its argument to char *: give it a mutable copy. */
    char groups[] = TLS_GROUPS;
    const char *cert = tc->cert, *key = tc->key;
    if (access(cert, R_OK) < 0) {
        cert_error(ts, tc, "certificate %s: %s", cert, strerror(errno));
        return NULL;
    }
    if (access(key, R_OK) < 0) {
        cert_error(ts, tc, "key %s: %s", key, strerror(errno));
        return NULL;
    }
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        cert_error(ts, tc, "SSL_CTX_new: %s", ssl_reason());
        return NULL;
    }
    uint64_t opts = SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA |
                    SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                    SSL_OP_IGNORE_UNEXPECTED_EOF | (t->tickets ? 0 : SSL_OP_NO_TICKET);
    SSL_CTX_set_options(ctx, opts);
    /* Non-blocking writes in records: SSL_write returns after each record, and a write retried
     * after WANT_WRITE may come from another buffer (another thread's stack) holding the same
     * bytes. Idle connections give their read/write buffers back. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS) != 1 ||
        SSL_CTX_set_ciphersuites(ctx, TLS13_CIPHERSUITES) != 1 ||
        SSL_CTX_set1_groups_list(ctx, groups) != 1 ||
        SSL_CTX_set_session_id_context(ctx, (const unsigned char *)SESSION_ID_CONTEXT,
                                       sizeof(SESSION_ID_CONTEXT) - 1) != 1) {
        cert_error(ts, tc, "TLS settings: %s", ssl_reason());
        goto fail;
    }

    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        cert_error(ts, tc, "certificate %s: %s", cert, ssl_reason());
        goto fail;
    }
    if (!use_key(ctx, ts, tc, pass))
        goto fail;
    if (SSL_CTX_check_private_key(ctx) != 1) {
        cert_error(ts, tc, "key %s does not match certificate %s", key, cert);
        goto fail;
    }
    X509 *leaf = SSL_CTX_get0_certificate(ctx);
    if (leaf)
        X509_check_purpose(leaf, -1, 0); /* cache the extensions now, not in a handshake */

    SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, NULL);
    SSL_CTX_set_tlsext_servername_callback(ctx, sni_cb);
    SSL_CTX_set_tlsext_servername_arg(ctx, t);
    SSL_CTX_set_session_cache_mode(ctx, ts->session_cache ? SSL_SESS_CACHE_SERVER
                                                          : SSL_SESS_CACHE_OFF);
    if (ts->session_cache)
        SSL_CTX_sess_set_cache_size(ctx, ts->session_cache);
    SSL_CTX_set_timeout(ctx, (long)(ts->session_timeout / 1000));
    if (t->tickets)
        SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_cb);
    return ctx;

fail:
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

int tls_ticket_key_file_read(const char *path, unsigned char *keys, char *err, size_t errcap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errcap, "tls_session_ticket_key_file %s: %s", path, strerror(errno));
        return -1;
    }
    const size_t cap = TLS_MAX_TICKET_KEYS * TLS_TICKET_KEY_SIZE;
    size_t got = 0;
    unsigned char extra;
    ssize_t r = 0;
    while (got < cap && (r = read(fd, keys + got, cap - got)) > 0)
        got += (size_t)r;
    if (r >= 0 && got == cap && read(fd, &extra, 1) == 1)
        got = cap + 1; /* too long */
    int e = errno;
    close(fd);
    if (r < 0) {
        snprintf(err, errcap, "tls_session_ticket_key_file %s: %s", path, strerror(e));
        return -1;
    }
    if (got == 0 || got % TLS_TICKET_KEY_SIZE || got > cap) {
        snprintf(err, errcap, "tls_session_ticket_key_file %s: %s%zu bytes; expected 1 to %d keys "
                 "of %d bytes (make one with: openssl rand %d)", path, got > cap ? "more than " : "",
                 got > cap ? cap : got, TLS_MAX_TICKET_KEYS, TLS_TICKET_KEY_SIZE,
                 TLS_TICKET_KEY_SIZE);
        return -1;
    }
    return (int)(got / TLS_TICKET_KEY_SIZE);
}

/* The first line of the passphrase file, without its line end. */
static int read_passphrase(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        diag("lfhttpd: tls_passphrase_file %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!fgets(out, (int)cap, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

struct tls_ctx *tls_ctx_create(const struct tls_settings *ts)
{
    struct tls_ctx *t = calloc(1, sizeof(*t));
    if (!t) {
        diag("lfhttpd: TLS: out of memory\n");
        return NULL;
    }
    atomic_init(&t->refs, 1);
    pthread_mutex_init(&t->keys_lock, NULL);
    t->rotation_ms = ts->ticket_rotation;
    t->tickets = t->rotation_ms || ts->ticket_key_file[0];
    if (t->tickets) {
        t->aes = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
        if (!t->aes) {
            diag("lfhttpd: TLS session tickets: %s\n", ssl_reason());
            tls_ctx_unref(t);
            return NULL;
        }
    }
    if (ts->ticket_key_file[0]) {
        unsigned char raw[TLS_MAX_TICKET_KEYS * TLS_TICKET_KEY_SIZE];
        char err[256];
        int n = tls_ticket_key_file_read(ts->ticket_key_file, raw, err, sizeof(err));
        for (int i = 0; i < n; i++) {
            const unsigned char *key = raw + (size_t)i * TLS_TICKET_KEY_SIZE;
            struct ticket_key *k = &t->keys[i];
            memcpy(k->name, key, 16);
            memcpy(k->hmac, key + 16, 32);
            memcpy(k->aes, key + 48, 32);
            k->valid = true;
        }
        OPENSSL_cleanse(raw, sizeof(raw));
        if (n < 0) {
            diag("lfhttpd: %s\n", err);
            tls_ctx_unref(t);
            return NULL;
        }
        t->nfile = (unsigned)n;
    } else if (t->tickets && !ticket_key_new(&t->keys[0], clock_now_ms())) {
        diag("lfhttpd: TLS session tickets: %s\n", ssl_reason());
        tls_ctx_unref(t);
        return NULL;
    }

    char text[1024] = "";
    struct passphrase pass = { .text = NULL };
    if (ts->passphrase_file[0]) {
        if (read_passphrase(ts->passphrase_file, text, sizeof(text)) < 0) {
            tls_ctx_unref(t);
            return NULL;
        }
        pass.text = text;
    }
    for (unsigned i = 0; i < ts->ncerts; i++) {
        t->certs[i].ctx = cert_ctx_new(t, ts, &ts->certs[i], &pass);
        if (!t->certs[i].ctx) {
            OPENSSL_cleanse(text, sizeof(text));
            tls_ctx_unref(t);
            return NULL;
        }
        memcpy(t->certs[i].names, ts->certs[i].names, sizeof(t->certs[i].names));
        t->ncerts++;
    }
    OPENSSL_cleanse(text, sizeof(text));
    return t;
}

void tls_ctx_unref(struct tls_ctx *t)
{
    if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (unsigned i = 0; i < t->ncerts; i++)
        SSL_CTX_free(t->certs[i].ctx);
    EVP_CIPHER_free(t->aes);
    OPENSSL_cleanse(t->keys, sizeof(t->keys));
    pthread_mutex_destroy(&t->keys_lock);
    free(t);
}

struct ssl_st *tls_ssl_new(struct tls_ctx *t, int fd)
{
    SSL *ssl = SSL_new(t->certs[0].ctx);
    if (!ssl)
        return NULL;
    if (SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        return NULL;
    }
    if (!SSL_set_app_data(ssl, t)) { /* it allocates: the callbacks need it set */
        SSL_free(ssl);
        ERR_clear_error();
        return NULL;
    }
    SSL_set_accept_state(ssl);
    atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return ssl;
}

void tls_ssl_free(struct ssl_st *ssl)
{
    struct tls_ctx *t = SSL_get_app_data(ssl);
    SSL_free(ssl);
    tls_ctx_unref(t);
}
