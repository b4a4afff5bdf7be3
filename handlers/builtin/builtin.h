/* builtin.h — shared pieces of the built-in handlers (builtin_status.c, test_endpoints.c). */
#ifndef LF_BUILTIN_H
#define LF_BUILTIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange/server_view.h"

struct exchange;
struct response;
struct runtime;
struct server;

/* The handler types (builtin_status.c, test_endpoints.c), for the registry
 * (handlers/registry.c). */
struct handler_ops;
extern const struct handler_ops status_handler;
extern const struct handler_ops metrics_handler;
extern const struct handler_ops health_handler;
extern const struct handler_ops test_handler;

/* The /server-status page: status.html, embedded by status_html.S (NUL-terminated). */
extern const char status_page_html[];
extern const size_t status_page_html_len;

/* What the status page and the metrics show of the core: its gauges (server.h), read without
 * stopping anything. The handler types write their own counters (handler.h: stats()). */
struct server_snapshot {
    struct server_gauges core;
    const char *threads_reason;       /* how the pool's size was chosen (config.h), owned by rt */
};

void server_snapshot(struct server *srv, const struct runtime *rt, struct server_snapshot *s);

/* Automatic certificates (builtin_acme.c). Why /readyz says not ready: "acme: waiting for a
 * certificate for NAME\n" into out (its length), or 0 when every managed name has one. */
struct config;
struct stats_writer;
size_t builtin_acme_waiting(const struct config *cfg, char *out, size_t cap);
/* The status page's "acme":[...], (one object per managed name). */
void builtin_acme_json(const struct config *cfg, struct stats_writer *o);
/* The lfhttpd_acme_* families, labelled by name (nothing without ACME). */
void builtin_acme_metrics(const struct config *cfg, struct stats_writer *o);


#endif
