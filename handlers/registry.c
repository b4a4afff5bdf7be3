/* registry.c — the table of handler types configuration can name (`handler NAME [ARG]`). */
#include <string.h>

#include "handler.h"

static const struct handler_ops *const registry[] = {
    &static_file_handler, /* static: files beneath the root (the default) */
    &cgi_handler,         /* cgi [DIR]: CGI/1.1 programs (handlers/cgi.c) */
    &status_handler,      /* status: the live /server-status page and ?json */
    &metrics_handler,     /* metrics: Prometheus text format */
    &health_handler,      /* health: 200 while serving, 503 while draining */
    &test_handler,        /* test: httpbin-like endpoints for HTTP clients and load tools */
};

const struct handler_ops *handler_lookup(const char *name)
{
    for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++)
        if (!strcmp(registry[i]->name, name))
            return registry[i];
    return NULL;
}
