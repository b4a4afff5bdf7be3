/* generation.c — building a configuration generation (runtime.h): the one place in the core
 * that reaches the handler registry, so that nothing else below the handlers names one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exchange/access_log.h"
#include "exchange/auth_basic.h"
#include "conn/client_limits.h"
#include "registry.h"
#include "log/metrics.h"
#include "conf/runtime.h"
#include "base/clock.h"
#include "daemon/root_switch.h"
#include "daemon/server.h"
#include "conf/site.h"
#include "net/send_probe.h"
#include "net/tls.h"
#include "log/diag.h"
#include "log/log.h"

static void destroy_location(struct loc_conf *lc, struct site_set *ss)
{
    auth_free(lc->auth_users);
    lc->auth_users = NULL;
    root_release(lc);
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

/* rt->destroy: give back everything runtime_build put into `rt`, and `rt` itself. */
static void runtime_destroy(struct runtime *rt)
{
    struct site_set *ss = &rt->cfg.sites;
    for (unsigned i = 0; i < ss->nsites; i++) {
        struct site *s = &ss->sites[i];
        destroy_location(&s->base, ss);
        for (unsigned j = 0; j < s->nlocs; j++)
            destroy_location(&s->locs[j], ss);
    }
    for (unsigned i = 0; i < HANDLER_TYPES_MAX; i++)
        if (rt->handler_state[i] && rt->handler_free[i])
            rt->handler_free[i](rt->handler_state[i]);
    if (rt->tls)
        tls_ctx_unref(rt->tls); /* connections hold their own references */
    access_log_close(rt);
    config_free(&rt->cfg);
    free(rt);
}

/* Open the root of `lc`, sharing the fd of an earlier location with the same root. Returns 1
 * when it opened it, 0 when it shares it, -1 on failure (message printed). */
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
                lc->root_dev = o->root_dev;
                lc->root_ino = o->root_ino;
                lc->data_dev = o->data_dev;
                lc->data_ino = o->data_ino;
                return 0;
            }
        }
    }
open:
    lc->root_fd = open(lc->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (lc->root_fd < 0 || faccessat(lc->root_fd, ".", R_OK | X_OK, 0) < 0) {
        diag("lfhttpd: document root %s: %s\n", lc->root, strerror(errno));
        return -1;
    }
    root_identify(lc);
    return 1;
}

/* A location's root (and the previous generation's tree, `prev`), its user file, and its handler
 * instance. */
static int init_location(struct server *srv, struct runtime *rt, const struct runtime *prev,
                         struct loc_conf *lc)
{
    int opened = open_root(&rt->cfg.sites, lc);
    if (opened < 0 ||
        root_carry(prev, lc, opened == 1, rt->generation, clock_now_ms()) < 0)
        return -1;
    if (lc->auth_realm[0]) {
        if (!lc->auth_file) {
            diag("lfhttpd: auth_basic \"%s\" needs auth_basic_user_file\n", lc->auth_realm);
            return -1;
        }
        lc->auth_users = auth_load(lc->auth_file);
        if (!lc->auth_users)
            return -1;
    }
    unsigned slot;
    lc->ops = handler_lookup(lc->handler, &slot);
    if (!lc->ops) {
        diag("lfhttpd: unknown handler '%s'\n", lc->handler);
        return -1;
    }
    struct handler_env env = { .srv = srv, .rt = rt, .process = &srv->handler_state[slot],
                               .generation = rt->handler_state[slot] };
    char err[256] = "out of memory";
    lc->instance = lc->ops->create(&env, lc, err, sizeof(err));
    if (!lc->instance) {
        diag("%s: handler %s: %s\n", lc->handler_where ? lc->handler_where : "lfhttpd",
             lc->handler, err);
        return -1;
    }
    return 0;
}

/* The site's rule files came from the tree its root_fd opened: a deploy that switched the
 * root between the two would mix one build's rules with another's files. The generation is
 * refused; root_follow's next look finds the root switched and builds it again. */
static int rules_same_tree(const struct site *s)
{
    if (!s->rules_dev || (s->rules_dev == s->base.root_dev && s->rules_ino == s->base.root_ino))
        return 0;
    diag("lfhttpd: root %s was switched while its site rules were read; not used, read "
         "again at the next look\n", s->base.root);
    return -1;
}

/* Does any block of the configuration set a per-client limit? */
static bool wants_limits(const struct config *cfg)
{
    if (cfg->limit_conn_per_ip)
        return true;
    const struct site_set *ss = &cfg->sites;
    for (unsigned i = 0; i < ss->nsites; i++)
        for (unsigned j = 0; j <= ss->sites[i].nlocs; j++) {
            const struct loc_conf *lc = j ? &ss->sites[i].locs[j - 1] : &ss->sites[i].base;
            if (lc->limit_conn > 0 || lc->limit_req_interval)
                return true;
        }
    return false;
}

/* The server's table of per-client limits, made the first time a generation sets a limit (its
 * size is fixed from then on: limit_table_size, else 4 entries per max_connections). Only
 * the thread building a generation gets here. Returns 0 or -1 (message printed). */
static int attach_limits(struct server *srv, struct runtime *rt)
{
    struct limit_table *t = atomic_load_explicit(&srv->limits, memory_order_acquire);
    if (!t && wants_limits(&rt->cfg)) {
        const struct config *c = &rt->cfg;
        uint64_t n = c->limit_table_size ? c->limit_table_size : 4 * (uint64_t)c->max_connections;
        t = limit_table_new(n > UINT32_MAX ? UINT32_MAX : (unsigned)n);
        if (!t) {
            diag("lfhttpd: per-client limits: out of memory\n");
            return -1;
        }
        atomic_store_explicit(&srv->limits, t, memory_order_release);
    }
    rt->limits = t;
    return 0;
}

struct runtime *runtime_build(struct server *srv, struct config *cfg, unsigned generation)
{
    struct runtime *rt = calloc(1, sizeof(*rt));
    if (!rt) {
        diag("lfhttpd: out of memory\n");
        config_free(cfg);
        return NULL;
    }
    rt->cfg = *cfg; /* takes over the allocations */
    rt->generation = generation;
    rt->access_fd = -1;
    rt->destroy = runtime_destroy;
    atomic_store_explicit(&rt->refs, 1, memory_order_relaxed);
    /* The generation running now, for root_follow and root_grace (none at start-up). */
    struct runtime *prev = generation > 1 ? server_runtime(srv) : NULL;
    if (handlers_generation_init(srv, rt) < 0 || attach_limits(srv, rt) < 0)
        goto fail;
    struct site_set *ss = &rt->cfg.sites;
    for (unsigned i = 0; i < ss->nsites; i++) {
        struct site *s = &ss->sites[i];
        /* Its `vhost` label: names are interned for the process, so a reload keeps them. */
        s->mx_slot = s->is_admin ? MX_VH_ADMIN
                     : i == 0 || s->nnames == 0 || rt->cfg.test_only ? MX_VH_DEFAULT
                     : mx_vhost_slot(s->names[0]);
        if (init_location(srv, rt, prev, &s->base) < 0 || rules_same_tree(s) < 0)
            goto fail;
        for (unsigned j = 0; j < s->nlocs; j++)
            if (init_location(srv, rt, prev, &s->locs[j]) < 0)
                goto fail;
    }
    /* -t checks the access log's path (config.c) but does not create the file. */
    if (!rt->cfg.test_only && access_log_open(rt) < 0)
        goto fail;
    if (rt->cfg.ncerts > 0 || (rt->cfg.acme.line && config_has_tls(&rt->cfg))) {
        /* (ACME alone: a context without a certificate of its own, tls.h) */
        struct tls_settings ts;
        config_tls_settings(&rt->cfg, &ts);
        rt->tls = tls_ctx_create(&ts); /* prints its own FILE:LINE error line */
        if (!rt->tls)
            goto fail;
    }
    if (rt->cfg.sendfile_auto && !rt->cfg.test_only) {
        /* Measured once, at start-up, before the pool runs; never on a reload, which runs on a
         * pool thread: a reload that turns auto on keeps sendfile until the next start. */
        const struct send_probe *p = generation == 1 ? send_probe_run() : send_probe_last();
        rt->cfg.sendfile_min_size = p ? p->min_size : 0;
        if (!p)
            log_notice("sendfile_min_size auto: measured at start-up only; sendfile (0) until "
                       "the next start");
    }
    runtime_unref(prev);
    return rt;
fail:
    runtime_unref(prev);
    runtime_free(rt);
    return NULL;
}
