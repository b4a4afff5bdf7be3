/* handler.h — the application-service interface (static files, CGI, built-ins).
 *
 * A handler instance is created from configuration at start-up and is immutable afterwards:
 * handle() runs concurrently on any pool thread, on that thread's stack, and must never block
 * on a peer. It answers through the exchange (http_exchange.h) or returns an HTTP status
 * (>= 400) for the core to answer with an error page. */
#ifndef LF_HANDLER_H
#define LF_HANDLER_H

#include <stddef.h>

struct http_exchange;
struct loc_conf;
struct server;

struct handler_ops {
    const char *name;
    /* Create an instance for location `lc` of `srv` (its settings are complete; its root is
     * open as lc->root_fd). On failure return NULL and write a reason into err. */
    void *(*create)(struct server *srv, const struct loc_conf *lc, char *err, size_t errlen);
    /* Answer a request. Returns 0 when a response was sent, or an error status. */
    int (*handle)(void *instance, struct http_exchange *ex);
    void (*destroy)(void *instance);
};

/* The static registry: handler types by name (NULL when unknown). */
const struct handler_ops *handler_lookup(const char *name);

extern const struct handler_ops static_file_handler;

/* Answer `status` with the location's custom error page (`error_page`), if it has one.
 * Returns 0 when sent, -1 when there is none (the core sends its built-in page), -2 when the
 * connection failed. */
int static_send_error_page(struct http_exchange *ex, int status);

#endif
