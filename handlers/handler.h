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
struct server;

struct handler_ops {
    const char *name;
    /* Create an instance for `srv` with the route's argument (may be NULL). On failure return
     * NULL and write a reason into err. */
    void *(*create)(struct server *srv, const char *arg, char *err, size_t errlen);
    /* Answer a request. Returns 0 when a response was sent, or an error status. */
    int (*handle)(void *instance, struct http_exchange *ex);
    void (*destroy)(void *instance);
};

/* The static registry: handler types by name (NULL when unknown). */
const struct handler_ops *handler_lookup(const char *name);

extern const struct handler_ops static_file_handler;

#endif
