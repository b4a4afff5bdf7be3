/* tls_http.h — the HTTP side of HTTPS: HSTS and the redirect of plain listeners.
 *
 * Called by the connection state machine; nothing here touches OpenSSL. */
#ifndef LF_TLS_HTTP_H
#define LF_TLS_HTTP_H

struct http_exchange;
struct response;

/* Headers every response on a TLS connection carries (Strict-Transport-Security when
 * tls_hsts is set). */
void tls_http_add_headers(const struct http_exchange *ex, struct response *r);

/* tls_redirect_http: answer a request on a plain listener with 301 to the same path and query
 * on the first TLS listener, at the host the client asked for. Returns 0 when answered, or an
 * error status (400 without a usable Host). */
int tls_http_redirect(struct http_exchange *ex);

#endif
