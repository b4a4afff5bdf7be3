/* tls.h — the TLS context of the HTTPS listeners (OpenSSL 3).
 *
 * One struct tls_ctx holds what every TLS connection shares: an SSL_CTX per configured
 * certificate (the first is the default, the others are chosen by SNI), the server-side session
 * cache (inside the default SSL_CTX, which OpenSSL keeps as every connection's session context
 * even after SNI switches its certificate), and the session-ticket keys, rotated by time.
 *
 * Built once from the configuration, then immutable except for the ticket keys, which are
 * behind a mutex (any pool thread may issue or decrypt a ticket). Reference counted: the server
 * holds one reference and every TLS connection holds one from accept to close, so a future
 * configuration reload can build a new context, swap server.tls and drop the server's reference;
 * connections still using the old context keep it alive until the last of them closes.
 *
 * Only this file and transport_tls.c call OpenSSL. */
#ifndef LF_TLS_H
#define LF_TLS_H

struct config;
struct ssl_st;
struct tls_ctx;

/* Build the context from cfg's certificates and tls_* settings (reads the certificate, key and
 * passphrase files). On failure prints one line ("FILE:LINE: reason" for a certificate from
 * the configuration file, "lfhttpd: reason" otherwise) and returns NULL. */
struct tls_ctx *tls_ctx_create(const struct config *cfg);
void tls_ctx_unref(struct tls_ctx *t);

/* A server-side SSL for socket `fd` (accept state, default certificate), holding a reference
 * to `t`; NULL when out of memory. Free it with tls_ssl_free(). */
struct ssl_st *tls_ssl_new(struct tls_ctx *t, int fd);
void tls_ssl_free(struct ssl_st *ssl);

#endif
