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

#include "builtin/builtin.h"
#include "cgi/cgi.h"
#include "compress/compress.h"
#include "static/file_cache.h"
#include "exchange/handler.h"
#include "exchange/exchange.h"
#include "log/metrics.h"
#include "base/netaddr.h"
#include "base/json.h"
#include "conf/runtime.h"
#include "daemon/server.h"
#include "conf/site.h"
#include "base/version.h"

#define ALLOW_GET "Allow: GET, HEAD, OPTIONS\r\n"

void server_snapshot(struct server *srv, const struct runtime *rt, struct server_snapshot *s)
{
    server_gauges(srv, &s->core);
    s->threads_reason = rt->cfg.threads_reason;
    cgi_get_stats(srv, &s->cgi);
    s->cgi.max = rt->cfg.cgi_max;
    memset(&s->fc, 0, sizeof(s->fc));
    struct file_cache *fc = static_file_cache(rt);
    if (fc)
        fc_get_stats(fc, &s->fc);
    compress_get_stats(handler_process_state(srv, &static_file_handler), &s->cz);
}

void builtin_add_location_headers(struct response *r, const struct exchange *ex)
{
    const struct loc_conf *lc = ex->loc;
    for (int i = 0; i < lc->nheaders; i++)
        resp_header(r, lc->headers[i].name, lc->headers[i].name_len, lc->headers[i].value,
                    lc->headers[i].value_len);
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
               !cidr_list_match(&ex->rt->cfg.status_allow, &ex->client_addr)) {
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
    builtin_add_location_headers(&r, ex);
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
    case PROBE_READY:
        if (server_ready(p->srv))
            return send_text(ex, 200, type, "ready\n", 6);
        if (server_stopping(p->srv))
            return send_text(ex, 503, type, "stopping\n", 9);
        return send_text(ex, 503, type, "starting\n", 9);
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

struct out {
    char *buf;
    size_t len, cap;
    bool grow;            /* buf is malloc'ed: grow it (else: truncate at cap) */
    bool failed;          /* out of memory while growing */
};

__attribute__((format(printf, 2, 3))) static void outf(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n >= o->cap - o->len && o->grow && !o->failed) {
        size_t cap = o->cap * 2 > o->len + (size_t)n + 1 ? o->cap * 2 : o->len + (size_t)n + 1;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->failed = true;
        } else {
            o->buf = b;
            o->cap = cap;
            va_start(ap, fmt);
            n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
            va_end(ap);
        }
    }
    if (n > 0)
        o->len = (size_t)n >= o->cap - o->len ? o->cap - 1 : o->len + (size_t)n;
}

static void status_json(struct out *o, const struct server_snapshot *s)
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
    outf(o, "},\"cgi\":{\"running\":%u,\"max\":%u,\"started\":%llu,\"rejected\":%llu,"
            "\"timeouts\":%llu,\"failed\":%llu},\"timers\":%u,",
         s->cgi.running, s->cgi.max, (unsigned long long)s->cgi.started,
         (unsigned long long)s->cgi.rejected, (unsigned long long)s->cgi.timeouts,
         (unsigned long long)s->cgi.failed, s->core.timers);
    outf(o, "\"file_cache\":{\"hits\":%llu,\"misses\":%llu,\"revalidations\":%llu,"
            "\"evictions\":%llu,\"entries\":%llu,\"bytes\":%llu},",
         (unsigned long long)s->fc.hits, (unsigned long long)s->fc.misses,
         (unsigned long long)s->fc.revalidations, (unsigned long long)s->fc.evictions,
         (unsigned long long)s->fc.entries, (unsigned long long)s->fc.bytes);
    const struct compress_stats *z = &s->cz;
    outf(o, "\"compress\":{\"made\":{\"br\":%llu,\"zstd\":%llu,\"gzip\":%llu},\"bytes_in\":%llu,"
            "\"bytes_out\":%llu,\"not_smaller\":%llu,\"failed\":%llu,\"disk_hits\":%llu,"
            "\"disk_writes\":%llu,\"disk_evictions\":%llu,\"dropped\":%llu,\"queued\":%u,"
            "\"running\":%u,",
         (unsigned long long)z->made[FC_BR], (unsigned long long)z->made[FC_ZSTD],
         (unsigned long long)z->made[FC_GZIP], (unsigned long long)z->bytes_in,
         (unsigned long long)z->bytes_out, (unsigned long long)z->not_smaller,
         (unsigned long long)z->failed, (unsigned long long)z->disk_hits,
         (unsigned long long)z->disk_writes, (unsigned long long)z->disk_evictions,
         (unsigned long long)z->dropped, z->queued, z->running);
    outf(o, "\"dynamic\":{\"made\":{\"zstd\":%llu,\"gzip\":%llu},\"bytes_in\":%llu,"
            "\"bytes_out\":%llu,\"busy\":%llu,\"failed\":%llu,\"active\":%u}},",
         (unsigned long long)z->stream_made[FC_ZSTD], (unsigned long long)z->stream_made[FC_GZIP],
         (unsigned long long)z->stream_in, (unsigned long long)z->stream_out,
         (unsigned long long)z->stream_busy, (unsigned long long)z->stream_failed,
         z->stream_active);
    const struct limit_stats *l = &s->core.limits;
    outf(o, "\"limits\":{\"table_size\":%llu,\"table_bytes\":%llu,\"entries\":%llu,"
            "\"evictions\":%llu,\"fail_open\":%llu,\"connections_refused\":%llu,"
            "\"requests_limited_conn\":%llu,\"requests_limited_rate\":%llu},",
         (unsigned long long)l->capacity, (unsigned long long)l->bytes,
         (unsigned long long)l->entries, (unsigned long long)l->evictions,
         (unsigned long long)l->fail_open, (unsigned long long)l->conns_refused,
         (unsigned long long)l->requests_conn, (unsigned long long)l->requests_rate);
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
        builtin_add_location_headers(&r, ex);
        return ex_send(ex, &r, status_page_html, status_page_html_len);
    }
    struct server_snapshot s;
    server_snapshot(srv, ex->rt, &s);
    char body[OUT_MAX];
    struct out o = { body, 0, sizeof(body), false, false };
    status_json(&o, &s);
    return send_text(ex, 200, "application/json", body, o.len);
}

/* ---- metrics -------------------------------------------------------------------------------- */

static void metric(struct out *o, const char *name, const char *type, const char *help,
                   unsigned long long v)
{
    outf(o, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

/* The per-client limits (server/client_limits.h). */
static void metrics_limits(struct out *o, const struct limit_stats *l)
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

/* The labelled families (server/metrics.h): only the series that counted something. */
static void metrics_labelled(struct out *o, const struct mx_totals *t)
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
static int send_exposition(struct exchange *ex, const struct out *o)
{
    int fd = memfd_create("lfhttpd-metrics", MFD_CLOEXEC);
    if (fd < 0)
        return ex_error(ex, ex_status_for_errno(errno));
    for (size_t off = 0; off < o->len;) {
        ssize_t n = write(fd, o->buf + off, o->len - off);
        if (n < 0) {
            int e = errno;
            close(fd);
            return ex_error(ex, ex_status_for_errno(e));
        }
        off += (size_t)n;
    }
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 200, ex->date);
    RESP_HEADER_STR(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    resp_add(&r, "Cache-Control: no-store\r\n", 25);
    builtin_add_location_headers(&r, ex);
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
    struct out o = { malloc(OUT_MAX), 0, OUT_MAX, true, false };
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
    metric(&o, "lfhttpd_cgi_running", "gauge", "CGI scripts running.", s.cgi.running);
    metric(&o, "lfhttpd_cgi_started_total", "counter", "CGI scripts started.", s.cgi.started);
    metric(&o, "lfhttpd_cgi_rejected_total", "counter", "CGI requests refused at cgi_max (503).",
           s.cgi.rejected);
    metric(&o, "lfhttpd_cgi_timeouts_total", "counter", "CGI scripts killed at cgi_timeout.",
           s.cgi.timeouts);
    metric(&o, "lfhttpd_cgi_failed_total", "counter", "CGI scripts that could not start.",
           s.cgi.failed);
    metric(&o, "lfhttpd_timers_pending", "gauge", "Timers scheduled in the handle set.",
           s.core.timers);
    metric(&o, "lfhttpd_file_cache_hits_total", "counter", "Open-file cache hits.", s.fc.hits);
    metric(&o, "lfhttpd_file_cache_misses_total", "counter", "Open-file cache misses.",
           s.fc.misses);
    metric(&o, "lfhttpd_file_cache_entries", "gauge", "Open-file cache entries.", s.fc.entries);
    metric(&o, "lfhttpd_file_cache_bytes", "gauge", "Open-file cache bytes.", s.fc.bytes);
    outf(&o, "# HELP lfhttpd_compress_variants_total Compressed variants made, by coding.\n"
             "# TYPE lfhttpd_compress_variants_total counter\n");
    for (int i = 0; i < FC_NENC; i++)
        outf(&o, "lfhttpd_compress_variants_total{coding=\"%s\"} %llu\n", fc_encoding_names[i],
             (unsigned long long)s.cz.made[i]);
    metric(&o, "lfhttpd_compress_input_bytes_total", "counter",
           "Bytes of the files compressed into variants.", s.cz.bytes_in);
    metric(&o, "lfhttpd_compress_output_bytes_total", "counter", "Bytes of the variants made.",
           s.cz.bytes_out);
    metric(&o, "lfhttpd_compress_not_smaller_total", "counter",
           "Compressions given up: the result was not smaller.", s.cz.not_smaller);
    metric(&o, "lfhttpd_compress_cache_dir_hits_total", "counter",
           "Variants found in compress_cache_dir.", s.cz.disk_hits);
    metric(&o, "lfhttpd_compress_queued", "gauge", "Compression jobs waiting.", s.cz.queued);
    outf(&o, "# HELP lfhttpd_compress_dynamic_responses_total Streamed responses compressed "
             "(compress_dynamic), by coding.\n"
             "# TYPE lfhttpd_compress_dynamic_responses_total counter\n");
    for (int i = FC_ZSTD; i <= FC_GZIP; i++)
        outf(&o, "lfhttpd_compress_dynamic_responses_total{coding=\"%s\"} %llu\n",
             fc_encoding_names[i], (unsigned long long)s.cz.stream_made[i]);
    metric(&o, "lfhttpd_compress_dynamic_input_bytes_total", "counter",
           "Bytes of streamed bodies compressed.", s.cz.stream_in);
    metric(&o, "lfhttpd_compress_dynamic_output_bytes_total", "counter",
           "Bytes they compressed into.", s.cz.stream_out);
    metric(&o, "lfhttpd_compress_dynamic_busy_total", "counter",
           "Streamed responses sent identity: compress_dynamic_max were being compressed.",
           s.cz.stream_busy);
    metric(&o, "lfhttpd_compress_dynamic_active", "gauge", "Streamed responses being compressed.",
           s.cz.stream_active);
    metrics_limits(&o, &s.core.limits);
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
