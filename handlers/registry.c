/* registry.c — the table of handler types configuration can name (`handler NAME [ARG]`), their
 * configuration (directives and settings blocks, handed to conf/ at start-up), and the hooks
 * through which the core creates and frees their state without naming them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin/builtin.h"
#include "builtin/builtin_conf.h"
#include "builtin/builtin_env.h"
#include "cgi/cgi_conf.h"
#include "compress/compress_conf.h"
#include "conf/directives.h"
#include "conf/handler_conf.h"
#include "conf/runtime.h"
#include "exchange/server_view.h"
#include "static/static_conf.h"
#include "log/diag.h"
#include "registry.h"

static const struct handler_ops *const registry[] = {
    &static_file_handler, /* static: files beneath the root (the default) */
    &cgi_handler,         /* cgi [DIR]: CGI/1.1 programs (handlers/cgi/) */
    &status_handler,      /* status: the live /server-status page and ?json */
    &metrics_handler,     /* metrics: Prometheus text format */
    &health_handler,      /* health: 200 while serving, 503 while draining */
    &test_handler,        /* test: httpbin-like endpoints for HTTP clients and load tools */
    &env_handler,         /* env [json|js]: allow-listed environment variables for an app */
};
#define NTYPES (sizeof(registry) / sizeof(registry[0]))
_Static_assert(NTYPES <= HANDLER_TYPES_MAX, "more handler types than slots");

const struct handler_ops *handler_lookup(const char *name, unsigned *slot)
{
    for (unsigned i = 0; i < NTYPES; i++)
        if (!strcmp(registry[i]->name, name)) {
            if (slot)
                *slot = i;
            return registry[i];
        }
    return NULL;
}

/* The configuration of the types (and of compression, which the static type drives). */
static const struct handler_conf_ops *const confs[] = {
    &static_conf_ops,
    &compress_conf_ops,
    &cgi_conf_ops,
    &builtin_conf_ops,
    &env_conf_ops,
};

/* `handler NAME`: a registered type's name. */
static int check_handler_name(const char *name, char *err, size_t errlen)
{
    if (handler_lookup(name, NULL))
        return 0;
    snprintf(err, errlen, "unknown handler '%s'", name);
    return -1;
}

void handlers_register_conf(void)
{
    for (size_t i = 0; i < sizeof(confs) / sizeof(confs[0]); i++)
        if (conf_register(confs[i]) < 0)
            abort(); /* more configured types than HANDLER_TYPES_MAX: a build mistake */
    directive_set_check("handler", check_handler_name);
}

int handlers_generation_init(struct server *srv, struct runtime *rt)
{
    for (unsigned i = 0; i < NTYPES; i++) {
        if (!registry[i]->generation_init)
            continue;
        char err[256] = "out of memory";
        struct handler_env env = { srv, rt, server_handler_state(srv, (unsigned)i), NULL };
        rt->handler_free[i] = registry[i]->generation_free; /* also what a failure left */
        if (registry[i]->generation_init(&env, &rt->handler_state[i], err, sizeof(err)) < 0) {
            diag("%s\n", err);
            return -1;
        }
    }
    return 0;
}

void handlers_stats(struct server *srv, const struct runtime *rt, struct stats_writer *w)
{
    for (unsigned i = 0; i < NTYPES; i++)
        if (registry[i]->stats)
            registry[i]->stats(atomic_load_explicit(server_handler_state(srv, (unsigned)i), memory_order_acquire),
                               rt->handler_state[i], rt, w);
}

void handlers_stop(struct server *srv)
{
    for (unsigned i = 0; i < NTYPES; i++) {
        void *state = atomic_load(server_handler_state(srv, (unsigned)i));
        if (state && registry[i]->stop)
            registry[i]->stop(state);
    }
}

void handlers_release(struct server *srv)
{
    for (unsigned i = 0; i < NTYPES; i++) {
        void *state = atomic_exchange(server_handler_state(srv, (unsigned)i), NULL);
        if (state && registry[i]->release)
            registry[i]->release(state);
    }
}
