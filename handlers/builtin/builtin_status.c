/* builtin_status.c — built-in handlers that show the server itself: `health` (/healthz, and
 * with an argument the Kubernetes-style probes /livez and /readyz), `status` (/server-status,
 * HTML and ?json) and `metrics` (/metrics, Prometheus text format).
 *
 * All three answer at once from a snapshot of counters the pool keeps anyway (per-thread
 * relaxed atomics, thread_pool.h), so a status request costs one pass over the connection
 * list and never blocks a request. Status and metrics are for operators: only clients in
 * `status_allow` (default: loopback) get them, others 403. Health and the probes are for load
 * balancers, container runtimes and kubelets, and answer anyone: /livez 200 while the process
 * answers at all (also while draining); /readyz 200 once the listeners are up and until a
 * graceful stop is requested, else 503; /healthz 200 "ok", 503 "draining" from the stop
 * request on. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "acme/acme.h"
#include "builtin/builtin.h"
#include "base/fdio.h"
#include "builtin/builtin_conf.h"
#include "exchange/handler.h"
#include "exchange/exchange.h"
#include "log/metrics.h"
#include "log/stats_writer.h"
#include "base/netaddr.h"
#include "base/json.h"
#include "conf/runtime.h"
#include "exchange/server_view.h"
#include "conf/site.h"
#include "base/version.h"

#define ALLOW_GET "Allow: GET, HEAD, OPTIONS\r\n"

void server_snapshot(struct server *srv, const struct runtime *rt, struct server_snapshot *s)
{
    server_gauges(srv, &s->core);
    s->threads_reason = rt->cfg.threads_reason;
}

/* ---- common --------------------------------------------------------------------------------- */

static void *builtin_create(const struct handler_env *env, const struct loc_conf *lc, char *err,
                            size_t errlen)
{
    (void)lc;
    (void)err;
    (void)errlen;
    return env->srv; /* stateless: the instance is the server */
}

static void builtin_destroy(void *inst)
{
    (void)inst;
}

/* The path must be the location's own (a prefix match would let /healthzzz through). */
static bool exact_path(const struct exchange *ex)
{
    const char *prefix = ex->loc->prefix;
    if (!prefix)
        return true;
    size_t n = ex->loc->prefix_len;
    if (n > 1 && prefix[n - 1] == '/')
        n--; /* `location /status/` also answers /status */
    return ex->path_len == n || (ex->path_len == n + 1 && ex->path[n] == '/');
}

/* Method, path and client checks shared by the three. Returns 0 to go on, 1 when it has
 * answered (OPTIONS, or an error page), or -errno. */
static int precheck(struct exchange *ex, bool restricted)
{
    const struct http_request *req = ex->req;
    int rc;
    if (!exact_path(ex)) {
        rc = ex_error(ex, 404);
    } else if (restricted && !ex->admin &&
               !cidr_list_match(&builtin_top(&ex->rt->cfg)->status_allow, &ex->client_addr)) {
        rc = ex_error(ex, 403);
    } else if (req->method == HTTP_OPTIONS) {
        char head[RESP_HEAD_MAX];
        struct response r;
        resp_begin(&r, head, sizeof(head), 204, ex->date);
        resp_add(&r, ALLOW_GET, sizeof(ALLOW_GET) - 1);
        rc = ex_send(ex, &r, NULL, 0);
    } else if (req->method != HTTP_GET && req->method != HTTP_HEAD) {
        rc = ex_error(ex, 405);
    } else {
        return 0;
    }
    return rc < 0 ? rc : 1;
}

static int send_text(struct exchange *ex, int status, const char *type, const char *body,
                     size_t len)
{
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), status, ex->date);
    RESP_HEADER_STR(&r, "Content-Type", type);
    resp_add(&r, "Cache-Control: no-store\r\n", 25);
    ex_add_location_headers(&r, ex->loc);
    return ex_send(ex, &r, body, len);
}

/* ---- health and probes ------------------------------------------------------------------ */

/* `handler health [live|ready]`: /healthz (no argument), /livez and /readyz. */
enum probe { PROBE_HEALTH, PROBE_LIVE, PROBE_READY };

struct probe_inst {
    struct server *srv;
    enum probe kind;
};

static void *probe_create(const struct handler_env *env, const struct loc_conf *lc, char *err,
                          size_t errlen)
{
    const char *arg = lc->handler_arg;
    enum probe kind = PROBE_HEALTH;
    if (arg && !strcmp(arg, "live")) {
        kind = PROBE_LIVE;
    } else if (arg && !strcmp(arg, "ready")) {
        kind = PROBE_READY;
    } else if (arg && *arg) {
        snprintf(err, errlen, "unknown probe '%s' (live or ready)", arg);
        return NULL;
    }
    struct probe_inst *p = malloc(sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->srv = env->srv;
    p->kind = kind;
    return p;
}

static void probe_destroy(void *inst)
{
    free(inst);
}

static int health_handle(void *inst, struct exchange *ex)
{
    const struct probe_inst *p = inst;
    int rc = precheck(ex, false);
    if (rc)
        return rc < 0 ? rc : 0; /* answered already (OPTIONS, an error), or failed */
    const char *type = "text/plain; charset=utf-8";
    switch (p->kind) {
    case PROBE_LIVE: /* the process answers: also while draining */
        return send_text(ex, 200, type, "alive\n", 6);
    case PROBE_READY: {
        char why[ACME_NAME_MAX + 64];
        size_t n = server_ready(p->srv) ? builtin_acme_waiting(&ex->rt->cfg, why, sizeof(why)) : 0;
        if (n) /* serving, but a name it must serve over TLS has no certificate yet */
            return send_text(ex, 503, type, why, n);
        if (server_ready(p->srv))
            return send_text(ex, 200, type, "ready\n", 6);
        if (server_stopping(p->srv))
            return send_text(ex, 503, type, "stopping\n", 9);
        return send_text(ex, 503, type, "starting\n", 9);
    }
    case PROBE_HEALTH:
        break;
    }
    if (server_stopping(p->srv)) /* a graceful stop began (drain_delay or the drain) */
        return send_text(ex, 503, type, "draining\n", 9);
    return send_text(ex, 200, type, "ok\n", 3);
}

/* ---- status --------------------------------------------------------------------------------- */

#define OUT_MAX (56 * 1024) /* within ex_send's in-memory limit */
#define ADD_LIT(r, s) resp_add((r), (s), sizeof(s) - 1)

/* Short names for the writer's calls (stats_writer.h): the tables below are long. */
__attribute__((format(printf, 2, 3))) static void outf(struct stats_writer *o, const char *fmt,
                                                       ...)
{
    va_list ap;
    va_start(ap, fmt);
    stats_vprintf(o, fmt, ap);
    va_end(ap);
}

static void metric(struct stats_writer *o, const char *name, const char *type, const char *help,
                   unsigned long long v)
{
    stats_metric(o, name, type, help, v);
}

static void status_json(struct stats_writer *o, struct server *srv, const struct runtime *rt,
                        const struct server_snapshot *s)
{
    outf(o, "{\"server\":\"lfhttpd\",\"version\":\"%s\",\"uptime\":%lld,\"time\":%lld,"
            "\"ready\":%s,\"draining\":%s,",
         LFHTTPD_VERSION, (long long)s->core.uptime, (long long)time(NULL),
         s->core.ready ? "true" : "false", s->core.draining ? "true" : "false");
    outf(o, "\"pool\":{\"concurrency\":\"%s\",\"threads\":%u,\"leading\":%u,\"processing\":%u,"
            "\"following\":%u,\"events\":%llu,\"waits\":%llu,\"promotions\":%llu,"
            "\"no_follower\":%llu,\"threads_reason\":\"",
         s->core.concurrency, s->core.threads, s->core.role[1], s->core.role[2], s->core.role[0], (unsigned long long)s->core.events,
         (unsigned long long)s->core.waits, (unsigned long long)s->core.promotions,
         (unsigned long long)s->core.no_follower);
    json_escape_append(o->buf, o->cap, &o->len, s->threads_reason, strlen(s->threads_reason));
    outf(o, "\"},");
    outf(o, "\"requests\":%llu,\"bytes_sent\":%llu,\"accepted\":%llu,",
         (unsigned long long)s->core.requests, (unsigned long long)s->core.bytes_out,
         (unsigned long long)s->core.accepted);
    outf(o, "\"connections\":{\"open\":%u", s->core.conns_open);
    for (int i = 0; i < GAUGE_CONN_KINDS; i++)
        outf(o, ",\"%s\":%u", gauge_conn_names[i], s->core.conns[i]);
    outf(o, "},\"timers\":%u,", s->core.timers);
    server_handler_stats(srv, rt, o); /* "file_cache", "compress", "cgi": each type's own */
    const struct limit_stats *l = &s->core.limits;
    outf(o, "\"limits\":{\"table_size\":%llu,\"table_bytes\":%llu,\"entries\":%llu,"
            "\"evictions\":%llu,\"fail_open\":%llu,\"connections_refused\":%llu,"
            "\"requests_limited_conn\":%llu,\"requests_limited_rate\":%llu},",
         (unsigned long long)l->capacity, (unsigned long long)l->bytes,
         (unsigned long long)l->entries, (unsigned long long)l->evictions,
         (unsigned long long)l->fail_open, (unsigned long long)l->conns_refused,
         (unsigned long long)l->requests_conn, (unsigned long long)l->requests_rate);
    builtin_acme_json(&rt->cfg, o);
    outf(o, "\"workers\":[");
    for (unsigned i = 0; i < s->core.nworkers; i++)
        outf(o, "%s{\"role\":\"%s\",\"events\":%llu,\"requests\":%llu,\"bytes_sent\":%llu,"
                "\"promotions\":%llu,\"no_follower\":%llu}",
             i ? "," : "", gauge_role_names[s->core.worker[i].role],
             (unsigned long long)s->core.worker[i].events, (unsigned long long)s->core.worker[i].requests,
             (unsigned long long)s->core.worker[i].bytes_out,
             (unsigned long long)s->core.worker[i].promotions,
             (unsigned long long)s->core.worker[i].no_follower);
    outf(o, "]}\n");
}

static int status_handle(void *inst, struct exchange *ex)
{
    struct server *srv = inst;
    int rc = precheck(ex, true);
    if (rc)
        return rc < 0 ? rc : 0; /* answered already (OPTIONS, an error), or failed */
    struct strview unused;
    if (!sv_query_get(ex->req->query, "json", 4, &unused)) {
        char head[RESP_HEAD_MAX];
        struct response r;
        resp_begin(&r, head, sizeof(head), 200, ex->date);
        ADD_LIT(&r, "Content-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n");
        ADD_LIT(&r, "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
                    "style-src 'unsafe-inline'; connect-src 'self'; img-src data:\r\n");
        ex_add_location_headers(&r, ex->loc);
        return ex_send(ex, &r, status_page_html, status_page_html_len);
    }
    struct server_snapshot s;
    server_snapshot(srv, ex->rt, &s);
    char body[OUT_MAX];
    struct stats_writer o = { STATS_JSON, body, 0, sizeof(body), false, false };
    status_json(&o, srv, ex->rt, &s);
    return send_text(ex, 200, "application/json", body, o.len);
}

/* ---- metrics -------------------------------------------------------------------------------- */

/* The per-client limits (server/conn/client_limits.h). */
static void metrics_limits(struct stats_writer *o, const struct limit_stats *l)
{
    metric(o, "lfhttpd_limit_connections_refused_total", "counter",
           "Connections refused by limit_conn_per_ip (top level).", l->conns_refused);
    outf(o, "# HELP lfhttpd_limit_requests_total Requests answered 429 by a per-client limit.\n"
            "# TYPE lfhttpd_limit_requests_total counter\n"
            "lfhttpd_limit_requests_total{limit=\"conn\"} %llu\n"
            "lfhttpd_limit_requests_total{limit=\"req\"} %llu\n",
         (unsigned long long)l->requests_conn, (unsigned long long)l->requests_rate);
    metric(o, "lfhttpd_limit_table_size", "gauge", "Entries the per-client limits table holds.",
           l->capacity);
    metric(o, "lfhttpd_limit_table_entries", "gauge", "Clients in the per-client limits table.",
           l->entries);
    metric(o, "lfhttpd_limit_table_evictions_total", "counter",
           "Idle clients evicted from the per-client limits table.", l->evictions);
    metric(o, "lfhttpd_limit_table_fail_open_total", "counter",
           "Clients let through because the limits table had no free entry.", l->fail_open);
}

/* The labelled families (server/log/metrics.h): only the series that counted something. */
static void metrics_labelled(struct stats_writer *o, const struct mx_totals *t)
{
    outf(o, "# HELP lfhttpd_http_requests_total Exchanges completed, by status sent, method "
            "and site (the first name of its server block; default, other, admin).\n"
            "# TYPE lfhttpd_http_requests_total counter\n");
    for (unsigned v = 0; v < MX_NVHOSTS; v++) {
        const char *vh = mx_vhost_name(v);
        for (unsigned m = 0; vh && m < MX_NMETHODS; m++)
            for (unsigned c = 0; c < MX_NCODES; c++) {
                uint64_t n = t->requests[v][m][c];
                if (n)
                    outf(o, "lfhttpd_http_requests_total{code=\"%s\",method=\"%s\","
                            "vhost=\"%s\"} %llu\n",
                         mx_code_names[c], mx_method_names[m], vh, (unsigned long long)n);
            }
    }
    outf(o, "# HELP lfhttpd_http_response_bytes_total Response body bytes sent, by site.\n"
            "# TYPE lfhttpd_http_response_bytes_total counter\n");
    for (unsigned v = 0; v < MX_NVHOSTS; v++) {
        const char *vh = mx_vhost_name(v);
        if (vh && t->bytes[v])
            outf(o, "lfhttpd_http_response_bytes_total{vhost=\"%s\"} %llu\n", vh,
                 (unsigned long long)t->bytes[v]);
    }
    outf(o, "# HELP lfhttpd_http_request_duration_seconds From the events that completed the "
            "request head to the end of its response.\n"
            "# TYPE lfhttpd_http_request_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (unsigned b = 0; b < MX_NBUCKETS; b++) {
        cum += t->duration[b];
        if (b < MX_NBUCKETS - 1)
            outf(o, "lfhttpd_http_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
                 mx_bucket_bounds[b], (unsigned long long)cum);
        else
            outf(o, "lfhttpd_http_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
                 (unsigned long long)cum);
    }
    outf(o, "lfhttpd_http_request_duration_seconds_sum %.9f\n"
            "lfhttpd_http_request_duration_seconds_count %llu\n",
         (double)t->duration_ns / 1e9, (unsigned long long)cum);
    metric(o, "lfhttpd_tls_handshakes_total", "counter", "TLS handshakes completed.",
           t->tls_handshakes);
    metric(o, "lfhttpd_tls_resumptions_total", "counter",
           "TLS handshakes that resumed a session (cache or ticket).", t->tls_resumed);
}

/* The exposition has no fixed size (labelled series): it goes out from a memory file. */
static int send_exposition(struct exchange *ex, const struct stats_writer *o)
{
    int fd = memfd_create("lfhttpd-metrics", MFD_CLOEXEC);
    if (fd < 0)
        return ex_error(ex, ex_status_for_errno(errno));
    int rc = fd_write_all(fd, o->buf, o->len);
    if (rc < 0) {
        close(fd);
        return ex_error(ex, ex_status_for_errno(-rc));
    }
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 200, ex->date);
    RESP_HEADER_STR(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    resp_add(&r, "Cache-Control: no-store\r\n", 25);
    ex_add_location_headers(&r, ex->loc);
    return ex_send_file(ex, &r, fd, 0, o->len); /* takes fd */
}

static int metrics_handle(void *inst, struct exchange *ex)
{
    struct server *srv = inst;
    int rc = precheck(ex, true);
    if (rc)
        return rc < 0 ? rc : 0; /* answered already (OPTIONS, an error), or failed */
    struct server_snapshot s;
    server_snapshot(srv, ex->rt, &s);
    struct mx_totals *t = malloc(sizeof(*t));
    struct stats_writer o = { STATS_PROMETHEUS, malloc(OUT_MAX), 0, OUT_MAX, true, false };
    if (!t || !o.buf) {
        free(t);
        free(o.buf);
        return ex_error(ex, 503);
    }
    mx_sum(t);
    metrics_labelled(&o, t);
    free(t);
    metric(&o, "lfhttpd_requests_total", "counter", "Responses sent.", s.core.requests);
    metric(&o, "lfhttpd_bytes_sent_total", "counter", "Bytes written to clients.", s.core.bytes_out);
    metric(&o, "lfhttpd_connections_accepted_total", "counter", "Connections accepted.",
           s.core.accepted);
    outf(&o, "# HELP lfhttpd_connections Open connections by what they wait for.\n"
             "# TYPE lfhttpd_connections gauge\n");
    for (int i = 0; i < GAUGE_CONN_KINDS; i++)
        outf(&o, "lfhttpd_connections{state=\"%s\"} %u\n", gauge_conn_names[i], s.core.conns[i]);
    metric(&o, "lfhttpd_pool_events_total", "counter", "Events processed by the pool.", s.core.events);
    metric(&o, "lfhttpd_pool_waits_total", "counter",
           "epoll_wait calls made by leaders (half-sync-half-async: the reactor).", s.core.waits);
    metric(&o, "lfhttpd_pool_promotions_total", "counter",
           "Hand-offs that woke a waiting thread (a follower promoted; HS/HA: a worker).",
           s.core.promotions);
    metric(&o, "lfhttpd_pool_no_follower_total", "counter",
           "Hand-offs with no thread waiting to take them.", s.core.no_follower);
    outf(&o, "# HELP lfhttpd_concurrency_info The concurrency strategy (label).\n"
             "# TYPE lfhttpd_concurrency_info gauge\n"
             "lfhttpd_concurrency_info{concurrency=\"%s\"} 1\n", s.core.concurrency);
    outf(&o, "# HELP lfhttpd_threads Pool threads by role (leading: waiting in epoll_wait).\n"
             "# TYPE lfhttpd_threads gauge\n");
    for (int i = 1; i <= 3; i++)
        outf(&o, "lfhttpd_threads{role=\"%s\"} %u\n", gauge_role_names[i % 3], s.core.role[i % 3]);
    metric(&o, "lfhttpd_timers_pending", "gauge", "Timers scheduled in the handle set.",
           s.core.timers);
    server_handler_stats(srv, ex->rt, &o); /* the file cache's, compression's, CGI's families */
    metrics_limits(&o, &s.core.limits);
    builtin_acme_metrics(&ex->rt->cfg, &o);
    metric(&o, "lfhttpd_uptime_seconds", "gauge", "Seconds since start.",
           (unsigned long long)s.core.uptime);
    metric(&o, "lfhttpd_draining", "gauge", "1 during a graceful stop.", s.core.draining);
    rc = o.failed ? ex_error(ex, 503) : send_exposition(ex, &o);
    free(o.buf);
    return rc;
}

const struct handler_ops health_handler = {
    .name = "health",
    .create = probe_create,
    .handle = health_handle,
    .destroy = probe_destroy,
};

const struct handler_ops status_handler = {
    .name = "status",
    .create = builtin_create,
    .handle = status_handle,
    .destroy = builtin_destroy,
};

const struct handler_ops metrics_handler = {
    .name = "metrics",
    .create = builtin_create,
    .handle = metrics_handle,
    .destroy = builtin_destroy,
};
