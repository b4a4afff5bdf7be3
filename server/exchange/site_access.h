/* site_access.h — who may use a location, and from which web origins: `allow`/`deny` address
 * rules and CORS (the Fetch standard's cross-origin resource sharing), per site and location.
 *
 * Both are the core's, answered by the exchange before authentication and the handler
 * (docs/ARCHITECTURE.md, "The order of a request's checks"):
 *   - allow/deny: nginx's semantics. The rules of the block are tried in the order written;
 *     the first whose address or range holds the client decides; `all` holds everyone; no
 *     match allows. The client is the address trusted_proxies and the PROXY protocol resolve
 *     (ex->client_addr). A refused client gets 403. A block that writes any rule replaces its
 *     parent's list (like add_header).
 *   - CORS: a request whose Origin is on `cors_allow_origin` (or any, with `*`) gets
 *     Access-Control-Allow-Origin (and -Credentials, -Expose-Headers as configured) on every
 *     response, errors included; a preflight (OPTIONS with Origin and
 *     Access-Control-Request-Method) is answered 204 here, before auth_basic could ask a
 *     browser for credentials it never sends on a preflight. An origin not on the list gets no
 *     CORS field at all. Every response whose fields depend on Origin says `Vary: Origin`.
 *     `*` with credentials is refused at load: a browser rejects it, and echoing any origin
 *     instead would hand every site the user's cookies.
 *
 * Settings are a block of their own in every location (conf/handler_conf.h), registered by
 * the daemon at start-up (site_access_conf_ops). A location without rules or CORS costs one
 * test per request. */
#ifndef LF_SITE_ACCESS_H
#define LF_SITE_ACCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/netaddr.h"
#include "conf/handler_conf.h"
#include "conf/site.h"
#include "http/http_response.h"

struct exchange;
struct loc_conf;

struct access_rule {
    struct cidr net;          /* `all`: ::/0 */
    bool allow;
};

/* A location's settings; -1 / NULL while unset during loading. */
struct access_conf {
    struct access_rule *rules;
    int nrules;
    char **origins;           /* lower-case "scheme://host[:port]"; none: CORS is off */
    int norigins;
    bool origin_any;          /* `*` */
    char *methods;            /* Access-Control-Allow-Methods */
    char *headers;            /* Access-Control-Allow-Headers; "" none */
    char *expose;             /* Access-Control-Expose-Headers; "" none */
    int credentials;          /* Access-Control-Allow-Credentials: true */
    int64_t max_age;          /* Access-Control-Max-Age, seconds; 0: not sent */
    char *origin_where;       /* "FILE:LINE" of what set the origins, and the credentials, */
    char *credentials_where;  /* for the load-time check of `*` with credentials */
};

extern const struct handler_conf_ops site_access_conf_ops;
extern unsigned site_access_conf_slot;

static inline const struct access_conf *access_conf(const struct loc_conf *lc)
{
    return lc->handler_conf[site_access_conf_slot];
}

/* The exchange's CORS outcome (struct exchange `cors`). */
enum { EX_CORS_OFF = 0, EX_CORS_REFUSED, EX_CORS_ANY, EX_CORS_ORIGIN };

/* Before authentication: the location's allow/deny rules (403), its CORS outcome, and the
 * answer to a CORS preflight (204). Returns 0 to go on, 1 when answered, or -errno. */
int site_access_check(struct exchange *ex);
/* The response's Vary and CORS fields (from ex->vary and ex->cors), added to every head. */
void site_access_headers(const struct exchange *ex, struct response *r);

#endif
