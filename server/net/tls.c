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
    bool bare;              /* certs[0] has no certificate: every name is ACME's (tls.h) */

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

/* ---- certificates obtained at run time (ACME), shared by every context --------------- */

#define ACME_TLS_1 "acme-tls/1"

struct alpn_challenge {
    char name[TLS_NAME_MAX + 1];
    X509 *cert;
    EVP_PKEY *key;
};

/* The names ACME manages, their certificate once there is one, and the TLS-ALPN-01 challenge
 * certificates published meanwhile. Handshakes read them under the lock, and only when some
 * exist (the atomic counts): a server without ACME pays two relaxed loads per handshake. */
static struct {
    pthread_mutex_t lock;
    _Atomic unsigned n;
    char names[TLS_MANAGED_MAX][TLS_NAME_MAX + 1];
    SSL_CTX *ctx; /* NULL until the first certificate is installed */
    _Atomic unsigned nalpn;
    struct alpn_challenge alpn[TLS_MANAGED_MAX];
} managed = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* ex_data of an SSL answering a TLS-ALPN-01 challenge (RFC 8737) */
static int acme_idx = -1;
static pthread_once_t acme_idx_once = PTHREAD_ONCE_INIT;

static void acme_idx_init(void)
{
    acme_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

static bool managed_name(const char *name, size_t len)
{
    unsigned n = atomic_load_explicit(&managed.n, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++)
        if (strlen(managed.names[i]) == len && strncasecmp(managed.names[i], name, len) == 0)
            return true;
    return false;
}

/* SNI for a managed name: its certificate, or a clean failure until there is one. */
static int managed_sni(SSL *ssl, int *alert, const char *name, size_t len)
{
    int rc = SSL_TLSEXT_ERR_NOACK;
    pthread_mutex_lock(&managed.lock);
    if (!name) {
        if (managed.ctx && !SSL_set_SSL_CTX(ssl, managed.ctx))
            rc = SSL_TLSEXT_ERR_ALERT_FATAL; /* no SNI, no certificate from a file: ACME's */
    } else if (managed_name(name, len)) {
        rc = SSL_TLSEXT_ERR_OK;
        if (!managed.ctx || !SSL_set_SSL_CTX(ssl, managed.ctx)) {
            *alert = SSL_AD_UNRECOGNIZED_NAME; /* no certificate yet: refused, not guessed */
            rc = SSL_TLSEXT_ERR_ALERT_FATAL;
        }
    }
    pthread_mutex_unlock(&managed.lock);
    return rc;
}

/* The first name of a ClientHello's server_name extension (RFC 6066 3). */
static bool hello_sni(SSL *ssl, char *out, size_t cap)
{
    const unsigned char *p;
    size_t len;
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &len) || len < 5)
        return false;
    size_t list = (size_t)p[0] << 8 | p[1];
    size_t n = (size_t)p[3] << 8 | p[4];
    if (list + 2 != len || p[2] != TLSEXT_NAMETYPE_host_name || n + 5 > len || n >= cap || !n)
        return false;
    memcpy(out, p + 5, n);
    out[n] = '\0';
    return memchr(out, '\0', n) == NULL;
}

/* Does the ClientHello's ALPN list offer acme-tls/1? */
static bool hello_offers_acme(SSL *ssl)
{
    const unsigned char *p;
    size_t len;
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p,
                                   &len) || len < 2 || ((size_t)p[0] << 8 | p[1]) != len - 2)
        return false;
    for (size_t i = 2; i < len;) {
        size_t n = p[i];
        if (i + 1 + n > len)
            return false;
        if (n == sizeof(ACME_TLS_1) - 1 && memcmp(p + i + 1, ACME_TLS_1, n) == 0)
            return true;
        i += 1 + n;
    }
    return false;
}

/* The first callback of a handshake: a TLS-ALPN-01 validation (acme-tls/1 offered, for a name
 * with a published challenge) gets the challenge certificate, and nothing else. */
static int client_hello_cb(SSL *ssl, int *alert, void *arg)
{
    (void)alert;
    (void)arg;
    if (!atomic_load_explicit(&managed.nalpn, memory_order_relaxed) || !hello_offers_acme(ssl))
        return SSL_CLIENT_HELLO_SUCCESS;
    char name[TLS_NAME_MAX + 1];
    if (!hello_sni(ssl, name, sizeof(name)))
        return SSL_CLIENT_HELLO_SUCCESS;
    bool used = false;
    pthread_mutex_lock(&managed.lock);
    for (unsigned i = 0; i < TLS_MANAGED_MAX && !used; i++) {
        const struct alpn_challenge *c = &managed.alpn[i];
        if (c->cert && strcasecmp(c->name, name) == 0)
            used = SSL_use_certificate(ssl, c->cert) == 1 && SSL_use_PrivateKey(ssl, c->key) == 1;
    }
    pthread_mutex_unlock(&managed.lock);
    if (used)
        SSL_set_ex_data(ssl, acme_idx, (void *)(uintptr_t)1);
    ERR_clear_error();
    return SSL_CLIENT_HELLO_SUCCESS;
}

bool tls_ssl_acme_challenge(struct ssl_st *ssl)
{
    return acme_idx >= 0 && SSL_get_ex_data(ssl, acme_idx) != NULL;
}

/* SNI: switch to the first certificate that claims the name; then a name ACME manages; the
 * default otherwise. A TLS-ALPN-01 validation keeps its challenge certificate. */
static int sni_cb(SSL *ssl, int *alert, void *arg)
{
    struct tls_ctx *t = arg;
    if (tls_ssl_acme_challenge(ssl))
        return SSL_TLSEXT_ERR_OK;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    size_t len = name ? strlen(name) : 0;
    for (unsigned i = 0; name && t && i < t->ncerts; i++) {
        if (!cert_matches(&t->certs[i], name, len))
            continue;
        if (i > 0 && !SSL_set_SSL_CTX(ssl, t->certs[i].ctx))
            return SSL_TLSEXT_ERR_ALERT_FATAL;
        return SSL_TLSEXT_ERR_OK;
    }
    if (atomic_load_explicit(&managed.n, memory_order_relaxed) && (name || (t && t->bare)))
        return managed_sni(ssl, alert, name, len);
    return SSL_TLSEXT_ERR_NOACK;
}

/* ALPN: acme-tls/1 for a TLS-ALPN-01 validation (RFC 8737 3), and only then; http/1.1 when the
 * client offers it; otherwise no ALPN (the client may still speak HTTP/1.1, which is all there
 * is). */
static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned inlen, void *arg)
{
    (void)arg;
    bool acme = tls_ssl_acme_challenge(ssl);
    for (unsigned i = 0; i < inlen;) {
        unsigned n = in[i];
        if (i + 1 + n > inlen)
            break;
        if (acme ? n == sizeof(ACME_TLS_1) - 1 && memcmp(in + i + 1, ACME_TLS_1, n) == 0
                 : n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = (unsigned char)n;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return acme ? SSL_TLSEXT_ERR_ALERT_FATAL : SSL_TLSEXT_ERR_NOACK;
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

/* A server SSL_CTX with the policy's settings and callbacks, and no certificate yet. */
static SSL_CTX *ctx_new_bare(struct tls_ctx *t, unsigned session_cache, unsigned session_timeout)
{
    /* SSL_CTX_set1_groups_list() casts its argument to char *: give it a mutable copy. */
    char groups[] = TLS_GROUPS;
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        return NULL;
    uint64_t opts = SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA |
                    SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                    SSL_OP_IGNORE_UNEXPECTED_EOF | (t && t->tickets ? 0 : SSL_OP_NO_TICKET);
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
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_client_hello_cb(ctx, client_hello_cb, NULL);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, NULL);
    SSL_CTX_set_tlsext_servername_callback(ctx, sni_cb);
    SSL_CTX_set_tlsext_servername_arg(ctx, t);
    SSL_CTX_set_session_cache_mode(ctx, session_cache ? SSL_SESS_CACHE_SERVER
                                                      : SSL_SESS_CACHE_OFF);
    if (session_cache)
        SSL_CTX_sess_set_cache_size(ctx, session_cache);
    SSL_CTX_set_timeout(ctx, (long)(session_timeout / 1000));
    if (t && t->tickets)
        SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_cb);
    return ctx;
}

static SSL_CTX *cert_ctx_new(struct tls_ctx *t, const struct tls_settings *ts,
                             const struct tls_cert_conf *tc, struct passphrase *pass)
{
    const char *cert = tc->cert, *key = tc->key;
    if (access(cert, R_OK) < 0) {
        cert_error(ts, tc, "certificate %s: %s", cert, strerror(errno));
        return NULL;
    }
    if (access(key, R_OK) < 0) {
        cert_error(ts, tc, "key %s: %s", key, strerror(errno));
        return NULL;
    }
    SSL_CTX *ctx = ctx_new_bare(t, ts->session_cache, ts->session_timeout);
    if (!ctx) {
        cert_error(ts, tc, "TLS settings: %s", ssl_reason());
        ERR_clear_error();
        return NULL;
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
    pthread_once(&acme_idx_once, acme_idx_init);
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
    if (ts->ncerts == 0) { /* ACME's names only: a context with no certificate of its own */
        t->certs[0].ctx = ctx_new_bare(t, ts->session_cache, ts->session_timeout);
        if (!t->certs[0].ctx) {
            diag("lfhttpd: TLS settings: %s\n", ssl_reason());
            tls_ctx_unref(t);
            return NULL;
        }
        t->ncerts = 1;
        t->bare = true;
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

/* ---- certificates obtained at run time (ACME) ------------------------------------------- */

bool tls_ctx_claims(const struct tls_ctx *t, const char *name)
{
    size_t len = strlen(name);
    for (unsigned i = 0; t && !t->bare && i < t->ncerts; i++)
        if (cert_matches(&t->certs[i], name, len))
            return true;
    return false;
}

int tls_managed_names(const char *const *names, size_t n)
{
    if (n > TLS_MANAGED_MAX)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) > TLS_NAME_MAX)
            return -1;
    pthread_mutex_lock(&managed.lock);
    bool same = n == atomic_load(&managed.n);
    for (size_t i = 0; i < n && same; i++)
        same = strcasecmp(managed.names[i], names[i]) == 0;
    if (!same) { /* another set of names: the certificate for the old one no longer serves */
        SSL_CTX_free(managed.ctx);
        managed.ctx = NULL;
        for (size_t i = 0; i < n; i++)
            snprintf(managed.names[i], sizeof(managed.names[i]), "%s", names[i]);
        atomic_store(&managed.n, (unsigned)n);
    }
    pthread_mutex_unlock(&managed.lock);
    return 0;
}

int tls_managed_install(const char *chain, const char *key, char *err, size_t errcap)
{
    const char *unreadable = access(chain, R_OK) < 0 ? chain : access(key, R_OK) < 0 ? key : NULL;
    if (unreadable) {
        snprintf(err, errcap, "%s: %s", unreadable, strerror(errno));
        return -1;
    }
    /* sessions live in the default context (the session context): these settings are unused */
    SSL_CTX *ctx = ctx_new_bare(NULL, 0, 3600000);
    const char *what = !ctx                                                  ? "TLS settings"
                       : SSL_CTX_use_certificate_chain_file(ctx, chain) != 1 ? chain
                       : SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ? key
                       : SSL_CTX_check_private_key(ctx) != 1 ? "key and certificate"
                                                             : NULL;
    if (what) {
        snprintf(err, errcap, "%s: %s", what, ssl_reason());
        SSL_CTX_free(ctx);
        ERR_clear_error();
        return -1;
    }
    X509 *leaf = SSL_CTX_get0_certificate(ctx);
    if (leaf)
        X509_check_purpose(leaf, -1, 0); /* cache the extensions now, not in a handshake */
    pthread_mutex_lock(&managed.lock);
    SSL_CTX *old = managed.ctx;
    managed.ctx = ctx; /* connections that switched to the old one hold their own references */
    pthread_mutex_unlock(&managed.lock);
    SSL_CTX_free(old);
    return 0;
}

int tls_alpn_publish(const char *name, struct x509_st *cert, struct evp_pkey_st *key)
{
    int rc = -1;
    if (strlen(name) > TLS_NAME_MAX)
        return -1;
    pthread_mutex_lock(&managed.lock);
    for (unsigned i = 0; i < TLS_MANAGED_MAX && rc < 0; i++) {
        struct alpn_challenge *c = &managed.alpn[i];
        if (c->cert)
            continue;
        snprintf(c->name, sizeof(c->name), "%s", name);
        X509_up_ref(cert);
        EVP_PKEY_up_ref(key);
        c->cert = cert;
        c->key = key;
        atomic_fetch_add(&managed.nalpn, 1);
        rc = 0;
    }
    pthread_mutex_unlock(&managed.lock);
    return rc;
}

void tls_alpn_withdraw(const char *name)
{
    pthread_mutex_lock(&managed.lock);
    for (unsigned i = 0; i < TLS_MANAGED_MAX; i++) {
        struct alpn_challenge *c = &managed.alpn[i];
        if (!c->cert || strcasecmp(c->name, name))
            continue;
        X509_free(c->cert);
        EVP_PKEY_free(c->key);
        c->cert = NULL;
        c->key = NULL;
        atomic_fetch_sub(&managed.nalpn, 1);
    }
    pthread_mutex_unlock(&managed.lock);
}

unsigned tls_managed_count(void)
{
    return atomic_load_explicit(&managed.n, memory_order_relaxed);
}

bool tls_managed_installed(void)
{
    pthread_mutex_lock(&managed.lock);
    bool have = managed.ctx != NULL;
    pthread_mutex_unlock(&managed.lock);
    return have;
}

void tls_managed_clear(void)
{
    for (unsigned i = 0; i < TLS_MANAGED_MAX; i++)
        if (managed.alpn[i].cert)
            tls_alpn_withdraw(managed.alpn[i].name);
    tls_managed_names(NULL, 0);
}
