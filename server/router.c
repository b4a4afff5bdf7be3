/* router.c — prefix routing to handler instances; see router.h. */
#include "router.h"

#include <stdio.h>
#include <string.h>

#include "http_exchange.h"

int router_add(struct router *r, struct server *srv, const char *prefix, const char *name,
               const char *arg, char *err, size_t errlen)
{
    const struct handler_ops *ops = handler_lookup(name);
    if (!ops) {
        snprintf(err, errlen, "unknown handler '%s'", name);
        return -1;
    }
    if (r->nroutes == sizeof(r->routes) / sizeof(r->routes[0]) ||
        strlen(prefix) >= sizeof(r->routes[0].prefix)) {
        snprintf(err, errlen, "too many routes or prefix too long");
        return -1;
    }
    void *inst = ops->create(srv, arg, err, errlen);
    if (!inst)
        return -1;
    struct route *rt = &r->routes[r->nroutes++];
    snprintf(rt->prefix, sizeof(rt->prefix), "%s", prefix);
    rt->prefix_len = strlen(prefix);
    rt->ops = ops;
    rt->instance = inst;
    return 0;
}

const struct route *router_match(const struct router *r, struct strview path)
{
    const struct route *best = NULL;
    for (unsigned i = 0; i < r->nroutes; i++) {
        const struct route *rt = &r->routes[i];
        if (path.len >= rt->prefix_len && !memcmp(path.ptr, rt->prefix, rt->prefix_len) &&
            (!best || rt->prefix_len > best->prefix_len))
            best = rt;
    }
    return best;
}

/* "OPTIONS *" asks about the server, not a resource (RFC 9110 9.3.7): no route can claim it. */
static int options_asterisk(struct http_exchange *ex)
{
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 204, ex->date);
    resp_add(&r, "Allow: GET, HEAD, OPTIONS\r\n", 27);
    return ex_send(ex, &r, NULL, 0) < 0 ? -1 : 0;
}

int router_dispatch(const struct router *r, struct http_exchange *ex)
{
    struct strview path = ex->req->path;
    if (path.len == 1 && path.ptr[0] == '*') /* the parser lets it through for OPTIONS only */
        return options_asterisk(ex);
    const struct route *best = router_match(r, path);
    return best ? best->ops->handle(best->instance, ex) : 404;
}

void router_destroy(struct router *r)
{
    for (unsigned i = 0; i < r->nroutes; i++)
        if (r->routes[i].ops->destroy)
            r->routes[i].ops->destroy(r->routes[i].instance);
    r->nroutes = 0;
}
