/* router.c — site and location routing; see router.h. */
#include "router.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth_basic.h"
#include "handler.h"
#include "http_exchange.h"
#include "path.h"
#include "runtime.h"
#include "server.h"
#include "site.h"

/* Open the root of `lc`, sharing the fd of an earlier location with the same root. */
static int open_root(struct site_set *ss, struct loc_conf *lc)
{
    for (unsigned i = 0; i < ss->nsites; i++) {
        struct site *s = &ss->sites[i];
        for (unsigned j = 0; j <= s->nlocs; j++) {
            struct loc_conf *o = j == 0 ? &s->base : &s->locs[j - 1];
            if (o == lc)
                goto open;
            if (o->root_fd >= 0 && !strcmp(o->root, lc->root)) {
                lc->root_fd = o->root_fd;
                return 0;
            }
        }
    }
open:
    lc->root_fd = open(lc->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (lc->root_fd < 0 || faccessat(lc->root_fd, ".", R_OK | X_OK, 0) < 0) {
        fprintf(stderr, "lfhttpd: document root %s: %s\n", lc->root, strerror(errno));
        return -1;
    }
    return 0;
}

static int init_location(struct server *srv, struct runtime *rt, struct loc_conf *lc)
{
    if (open_root(&rt->cfg.sites, lc) < 0)
        return -1;
    if (lc->auth_realm[0]) {
        if (!lc->auth_file) {
            fprintf(stderr, "lfhttpd: auth_basic \"%s\" needs auth_basic_user_file\n", lc->auth_realm);
            return -1;
        }
        lc->auth_users = auth_load(lc->auth_file);
        if (!lc->auth_users)
            return -1;
    }
    lc->ops = handler_lookup(lc->handler);
    if (!lc->ops) {
        fprintf(stderr, "lfhttpd: unknown handler '%s'\n", lc->handler);
        return -1;
    }
    char err[256] = "out of memory";
    lc->instance = lc->ops->create(srv, lc, err, sizeof(err));
    if (!lc->instance) {
        fprintf(stderr, "%s: handler %s: %s\n", lc->handler_where ? lc->handler_where : "lfhttpd",
                lc->handler, err);
        return -1;
    }
    return 0;
}

int router_init(struct server *srv, struct runtime *rt)
{
    struct site_set *ss = &rt->cfg.sites;
    for (unsigned i = 0; i < ss->nsites; i++) {
        struct site *s = &ss->sites[i];
        if (init_location(srv, rt, &s->base) < 0)
            return -1;
        for (unsigned j = 0; j < s->nlocs; j++)
            if (init_location(srv, rt, &s->locs[j]) < 0)
                return -1;
    }
    return 0;
}

int router_dispatch(struct http_exchange *ex)
{
    const struct http_request *req = ex->req;
    const struct site *site = site_select(&ex->rt->cfg.sites, req->host);
    if (req->path.len == 1 && req->path.ptr[0] == '*') {
        /* "OPTIONS *" asks about the server, not a resource (RFC 9110 9.3.7); the parser lets
         * the asterisk through for OPTIONS only. */
        ex->loc = &site->base;
        char head[RESP_HEAD_MAX];
        struct response r;
        resp_begin(&r, head, sizeof(head), 204, ex->date);
        RESP_LIT(&r, "Allow: GET, HEAD, OPTIONS\r\n");
        return ex_send(ex, &r, NULL, 0) < 0 ? -1 : 0;
    }
    /* Locations match the decoded, normalised path, so "/assets/../secret" cannot borrow the
     * rules of /assets/. */
    int rc = path_normalize_plain(req->path.ptr, req->path.len, ex->path, EX_PATH_MAX,
                                  &ex->path_len, &ex->path_plain);
    if (rc == -ENAMETOOLONG)
        return 414;
    if (rc < 0)
        return 400;
    ex->loc = site_location(site, (struct strview){ ex->path, ex->path_len });
    if (ex->loc->auth_users && !auth_check(ex->loc->auth_users, ex))
        return auth_challenge(ex, ex->loc->auth_realm) < 0 ? -1 : 0;
    return ex->loc->ops->handle(ex->loc->instance, ex);
}

static void destroy_location(struct loc_conf *lc, struct site_set *ss)
{
    auth_free(lc->auth_users);
    lc->auth_users = NULL;
    if (lc->instance && lc->ops->destroy)
        lc->ops->destroy(lc->instance);
    lc->instance = NULL;
    if (lc->root_fd >= 0) {
        int fd = lc->root_fd;
        close(fd);
        /* others sharing it must not close it again */
        for (unsigned i = 0; i < ss->nsites; i++) {
            struct site *s = &ss->sites[i];
            if (s->base.root_fd == fd)
                s->base.root_fd = -1;
            for (unsigned j = 0; j < s->nlocs; j++)
                if (s->locs[j].root_fd == fd)
                    s->locs[j].root_fd = -1;
        }
    }
}

void router_destroy(struct runtime *rt)
{
    struct site_set *ss = &rt->cfg.sites;
    for (unsigned i = 0; i < ss->nsites; i++) {
        struct site *s = &ss->sites[i];
        destroy_location(&s->base, ss);
        for (unsigned j = 0; j < s->nlocs; j++)
            destroy_location(&s->locs[j], ss);
    }
}
