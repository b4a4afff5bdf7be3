/* builtin.h — shared pieces of the built-in handlers (builtin_status.c, test_endpoints.c). */
#ifndef LF_BUILTIN_H
#define LF_BUILTIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgi/cgi.h"
#include "compress/compress.h"
#include "static/file_cache.h"
#include "daemon/server.h"

struct exchange;
struct response;
struct runtime;
struct server;

/* The /server-status page (status_page.c). */
extern const char status_page_html[];
extern const size_t status_page_html_len;

/* What the status page and the metrics show: the core's gauges (server.h) and the handler
 * types' counters, each read without stopping anything. */
struct server_snapshot {
    struct server_gauges core;
    struct cgi_stats cgi;
    struct fc_stats fc;
    struct compress_stats cz;
    const char *threads_reason;       /* how the pool's size was chosen (config.h), owned by rt */
};

void server_snapshot(struct server *srv, const struct runtime *rt, struct server_snapshot *s);

/* Add the location's `add_header` lines (and nothing else) to a response head. */
void builtin_add_location_headers(struct response *r, const struct exchange *ex);

#endif
