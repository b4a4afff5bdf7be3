/* router.h — maps a request (path prefix) to a handler instance.
 *
 * Routes are built at start-up and immutable; the longest matching prefix wins, and a request
 * no route claims is a 404. */
#ifndef LF_ROUTER_H
#define LF_ROUTER_H

#include <stddef.h>

#include "handler.h"
#include "strview.h"

struct http_exchange;

struct route {
    char prefix[128];
    size_t prefix_len;
    const struct handler_ops *ops;
    void *instance;
};

struct router {
    struct route routes[32];
    unsigned nroutes;
};

/* Add a route for `prefix` to a new instance of handler `name`. Returns 0 or -1 (err set). */
int router_add(struct router *r, struct server *srv, const char *prefix, const char *name,
               const char *arg, char *err, size_t errlen);
/* The route with the longest prefix of `path`, or NULL. Pure: safe from any thread. */
const struct route *router_match(const struct router *r, struct strview path);
/* Run the handler for the exchange's request; returns what the handler returned. "OPTIONS *"
 * is answered here (204 with the server's Allow). */
int router_dispatch(const struct router *r, struct http_exchange *ex);
void router_destroy(struct router *r);

#endif
