/* router.h — picks the site (virtual host) and location for a request and runs its handler.
 *
 * Every location of every site has its own handler instance, created at start-up from the
 * location's `handler` setting (default "static") and immutable afterwards. */
#ifndef LF_ROUTER_H
#define LF_ROUTER_H

#include <stddef.h>

struct http_exchange;
struct runtime;
struct server;

/* Open each location's root and create its handler instance, for runtime `rt`. Prints one
 * line, returns -1 on failure. */
int router_init(struct server *srv, struct runtime *rt);
/* Normalise the request path, pick site and location, run the handler. Returns what the
 * handler returned (0 = answered, or an error status for the core to answer). */
int router_dispatch(struct http_exchange *ex);
void router_destroy(struct runtime *rt);

#endif
