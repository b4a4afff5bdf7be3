/* runtime.c — a configuration generation's references and its teardown; see runtime.h. */
#include "conf/runtime.h"

#include <stdlib.h>
#include <unistd.h>

#include "exchange/access_log.h"
#include "exchange/auth_basic.h"
#include "exchange/handler.h"
#include "conf/site.h"
#include "net/tls.h"

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

void runtime_free(struct runtime *rt)
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

void runtime_ref(struct runtime *rt)
{
    atomic_fetch_add_explicit(&rt->refs, 1, memory_order_relaxed);
}

void runtime_unref(struct runtime *rt)
{
    if (rt && atomic_fetch_sub_explicit(&rt->refs, 1, memory_order_acq_rel) == 1)
        runtime_free(rt);
}
