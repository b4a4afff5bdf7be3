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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "builtin.h"
#include "connection.h"
#include "file_cache.h"
#include "handler.h"
#include "http_exchange.h"
#include "netaddr.h"
#include "runtime.h"
#include "server.h"
#include "site.h"
#include "version.h"

#define ALLOW_GET "Allow: GET, HEAD, OPTIONS\r\n"

const char *const snapshot_conn_states[6] = { "reading", "writing", "idle",
                                              "handler", "closing", "active" };
const char *const snapshot_role_names[3] = { "following", "leading", "processing" };

void server_snapshot(struct server *srv, const struct runtime *rt, struct server_snapshot *s)
{
    memset(s, 0, sizeof(*s));
    s->uptime = (int64_t)(time(NULL) - srv->started);
    s->draining = atomic_load_explicit(&srv->draining, memory_order_relaxed);
    s->ready = server_ready(srv);
    s->concurrency = concurrency_names[srv->pool.mode];
    s->threads = srv->pool.nworkers;
    s->threads_reason = rt->cfg.threads_reason;
    for (unsigned i = 0; i < srv->pool.nworkers; i++) {
        struct worker *w = &srv->pool.workers[i];
        int role = atomic_load_explicit(&w->role, memory_order_relaxed);
        if (role < 0 || role > 2)
            role = 0;
        s->role[role]++;
#define LOAD(f) atomic_load_explicit(&w->stats.f, memory_order_relaxed)
        uint64_t ev = LOAD(events), rq = LOAD(requests), by = LOAD(bytes_out),
                 pr = LOAD(promotions), nf = LOAD(no_follower);
        s->events += ev;
        s->waits += LOAD(waits);
        s->promotions += pr;
        s->no_follower += nf;
        s->requests += rq;
        s->bytes_out += by;
        s->accepted += LOAD(accepted);
#undef LOAD
        if (i < SNAP_MAX_WORKERS) {
            s->worker[i].role = role;
            s->worker[i].events = ev;
            s->worker[i].requests = rq;
            s->worker[i].bytes_out = by;
            s->worker[i].promotions = pr;
            s->worker[i].no_follower = nf;
            s->nworkers = i + 1;
        }
    }
    pthread_mutex_lock(&srv->conns_lock);
    for (struct conn *c = srv->conns; c; c = c->next) {
        int armed = atomic_load_explicit(&c->armed, memory_order_relaxed);
        int view = atomic_load_explicit(&c->view, memory_order_relaxed);
        unsigned st;
        if (armed == ARMED_IDLE)
            st = 2;
        else if (armed == ARMED_KILLED || armed == ARMED_LINGER)
            st = 4;
        else if (armed == ARMED_BUSY)
            st = view == CV_WRITING ? 1 : view == CV_CLOSING ? 4 : 0;
        else
            st = view == CV_HANDLER ? 3 : 5;
        s->conns[st]++;
        s->conns_open++;
    }
    pthread_mutex_unlock(&srv->conns_lock);
    s->cgi_running = atomic_load_explicit(&srv->cgi_running, memory_order_relaxed);
    s->cgi_max = rt->cfg.cgi_max;
    s->cgi_started = atomic_load_explicit(&srv->cgi_started, memory_order_relaxed);
    s->cgi_rejected = atomic_load_explicit(&srv->cgi_rejected, memory_order_relaxed);
    s->cgi_timeouts = atomic_load_explicit(&srv->cgi_timeouts, memory_order_relaxed);
    s->cgi_failed = atomic_load_explicit(&srv->cgi_failed, memory_order_relaxed);
    s->timers = timer_pending(&srv->timers);
    struct fc_stats fs;
    fc_get_stats(rt->fc, &fs);
    s->fc_hits = fs.hits;
    s->fc_misses = fs.misses;
    s->fc_revalidations = fs.revalidations;
    s->fc_evictions = fs.evictions;
    s->fc_entries = fs.entries;
    s->fc_bytes = fs.bytes;
    compress_get_stats(srv, &s->cz);
}

void builtin_add_location_headers(struct response *r, const struct http_exchange *ex)
{
    const struct loc_conf *lc = ex->loc;
    for (int i = 0; i < lc->nheaders; i++)
        resp_header(r, lc->headers[i].name, lc->headers[i].name_len, lc->headers[i].value,
                    lc->headers[i].value_len);
}

bool json_escape_append(char *out, size_t cap, size_t *pos, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t p = *pos;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[6];
        size_t n;
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            n = 2;
        } else if (ch >= 0x20 && ch < 0x7f) {
            esc[0] = (char)ch;
            n = 1;
        } else if (ch == '\n' || ch == '\r' || ch == '\t') {
            esc[0] = '\\';
            esc[1] = ch == '\n' ? 'n' : ch == '\r' ? 'r' : 't';
            n = 2;
        } else {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[ch >> 4];
            esc[5] = hex[ch & 15];
            n = 6;
        }
        if (cap - p < n + 1)
            return false;
        memcpy(out + p, esc, n);
        p += n;
    }
    *pos = p;
    return true;
}

/* ---- common --------------------------------------------------------------------------------- */

static void *builtin_create(struct server *srv, const struct loc_conf *lc, char *err, size_t errlen)
{
    (void)lc;
    (void)err;
    (void)errlen;
    return srv; /* stateless: the instance is the server */
}

static void builtin_destroy(void *inst)
{
    (void)inst;
}

/* The path must be the location's own (a prefix match would let /healthzzz through). */
static bool exact_path(const struct http_exchange *ex)
{
    const char *prefix = ex->loc->prefix;
    if (!prefix)
        return true;
    size_t n = ex->loc->prefix_len;
    if (n > 1 && prefix[n - 1] == '/')
        n--; /* `location /status/` also answers /status */
    return ex->path_len == n || (ex->path_len == n + 1 && ex->path[n] == '/');
}

/* Method, path and client checks shared by the three. Returns 0 to go on, 1 when answered
 * (OPTIONS), an error status, or -1 when the connection failed. */
static int precheck(struct http_exchange *ex, bool restricted)
{
    const struct http_request *req = ex->req;
    if (!exact_path(ex))
        return 404;
    if (restricted && !cidr_list_match(&ex->rt->cfg.status_allow, &ex->client_addr))
        return 403;
    if (req->method == HTTP_OPTIONS) {
        char head[RESP_HEAD_MAX];
        struct response r;
        resp_begin(&r, head, sizeof(head), 204, ex->date);
        resp_add(&r, ALLOW_GET, sizeof(ALLOW_GET) - 1);
        return ex_send(ex, &r, NULL, 0) < 0 ? -1 : 1;
    }
    if (req->method != HTTP_GET && req->method != HTTP_HEAD)
        return 405;
    return 0;
}

static int send_text(struct http_exchange *ex, int status, const char *type, const char *body,
                     size_t len)
{
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), status, ex->date);
    RESP_HEADER_STR(&r, "Content-Type", type);
    resp_add(&r, "Cache-Control: no-store\r\n", 25);
    builtin_add_location_headers(&r, ex);
    return ex_send(ex, &r, body, len) < 0 ? -1 : 0;
}

/* ---- health and probes ------------------------------------------------------------------ */

/* `handler health [live|ready]`: /healthz (no argument), /livez and /readyz. */
enum probe { PROBE_HEALTH, PROBE_LIVE, PROBE_READY };

struct probe_inst {
    struct server *srv;
    enum probe kind;
};

static void *probe_create(struct server *srv, const struct loc_conf *lc, char *err, size_t errlen)
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
    p->srv = srv;
    p->kind = kind;
    return p;
}

static void probe_destroy(void *inst)
{
    free(inst);
}

static int health_handle(void *inst, struct http_exchange *ex)
{
    const struct probe_inst *p = inst;
    int rc = precheck(ex, false);
    if (rc)
        return rc == 1 ? 0 : rc; /* answered (OPTIONS), an error status, or -1 */
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
};

__attribute__((format(printf, 2, 3))) static void outf(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len = (size_t)n >= o->cap - o->len ? o->cap - 1 : o->len + (size_t)n;
}

static void status_json(struct out *o, const struct server_snapshot *s)
{
    outf(o, "{\"server\":\"lfhttpd\",\"version\":\"%s\",\"uptime\":%lld,\"time\":%lld,"
            "\"ready\":%s,\"draining\":%s,",
         LFHTTPD_VERSION, (long long)s->uptime, (long long)time(NULL),
         s->ready ? "true" : "false", s->draining ? "true" : "false");
    outf(o, "\"pool\":{\"concurrency\":\"%s\",\"threads\":%u,\"leading\":%u,\"processing\":%u,"
            "\"following\":%u,\"events\":%llu,\"waits\":%llu,\"promotions\":%llu,"
            "\"no_follower\":%llu,\"threads_reason\":\"",
         s->concurrency, s->threads, s->role[1], s->role[2], s->role[0], (unsigned long long)s->events,
         (unsigned long long)s->waits, (unsigned long long)s->promotions,
         (unsigned long long)s->no_follower);
    json_escape_append(o->buf, o->cap, &o->len, s->threads_reason, strlen(s->threads_reason));
    outf(o, "\"},");
    outf(o, "\"requests\":%llu,\"bytes_sent\":%llu,\"accepted\":%llu,",
         (unsigned long long)s->requests, (unsigned long long)s->bytes_out,
         (unsigned long long)s->accepted);
    outf(o, "\"connections\":{\"open\":%u", s->conns_open);
    for (int i = 0; i < 6; i++)
        outf(o, ",\"%s\":%u", snapshot_conn_states[i], s->conns[i]);
    outf(o, "},\"cgi\":{\"running\":%u,\"max\":%u,\"started\":%llu,\"rejected\":%llu,"
            "\"timeouts\":%llu,\"failed\":%llu},\"timers\":%u,",
         s->cgi_running, s->cgi_max, (unsigned long long)s->cgi_started,
         (unsigned long long)s->cgi_rejected, (unsigned long long)s->cgi_timeouts,
         (unsigned long long)s->cgi_failed, s->timers);
    outf(o, "\"file_cache\":{\"hits\":%llu,\"misses\":%llu,\"revalidations\":%llu,"
            "\"evictions\":%llu,\"entries\":%llu,\"bytes\":%llu},",
         (unsigned long long)s->fc_hits, (unsigned long long)s->fc_misses,
         (unsigned long long)s->fc_revalidations, (unsigned long long)s->fc_evictions,
         (unsigned long long)s->fc_entries, (unsigned long long)s->fc_bytes);
    const struct compress_stats *z = &s->cz;
    outf(o, "\"compress\":{\"made\":{\"br\":%llu,\"zstd\":%llu,\"gzip\":%llu},\"bytes_in\":%llu,"
            "\"bytes_out\":%llu,\"not_smaller\":%llu,\"failed\":%llu,\"disk_hits\":%llu,"
            "\"disk_writes\":%llu,\"disk_evictions\":%llu,\"dropped\":%llu,\"queued\":%u,"
            "\"running\":%u},",
         (unsigned long long)z->made[FC_BR], (unsigned long long)z->made[FC_ZSTD],
         (unsigned long long)z->made[FC_GZIP], (unsigned long long)z->bytes_in,
         (unsigned long long)z->bytes_out, (unsigned long long)z->not_smaller,
         (unsigned long long)z->failed, (unsigned long long)z->disk_hits,
         (unsigned long long)z->disk_writes, (unsigned long long)z->disk_evictions,
         (unsigned long long)z->dropped, z->queued, z->running);
    outf(o, "\"workers\":[");
    for (unsigned i = 0; i < s->nworkers; i++)
        outf(o, "%s{\"role\":\"%s\",\"events\":%llu,\"requests\":%llu,\"bytes_sent\":%llu,"
                "\"promotions\":%llu,\"no_follower\":%llu}",
             i ? "," : "", snapshot_role_names[s->worker[i].role],
             (unsigned long long)s->worker[i].events, (unsigned long long)s->worker[i].requests,
             (unsigned long long)s->worker[i].bytes_out,
             (unsigned long long)s->worker[i].promotions,
             (unsigned long long)s->worker[i].no_follower);
    outf(o, "]}\n");
}

static int status_handle(void *inst, struct http_exchange *ex)
{
    struct server *srv = inst;
    int rc = precheck(ex, true);
    if (rc)
        return rc == 1 ? 0 : rc; /* answered (OPTIONS), an error status, or -1 */
    struct strview unused;
    if (!sv_query_get(ex->req->query, "json", 4, &unused)) {
        char head[RESP_HEAD_MAX];
        struct response r;
        resp_begin(&r, head, sizeof(head), 200, ex->date);
        ADD_LIT(&r, "Content-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n");
        ADD_LIT(&r, "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
                    "style-src 'unsafe-inline'; connect-src 'self'; img-src data:\r\n");
        builtin_add_location_headers(&r, ex);
        return ex_send(ex, &r, status_page_html, status_page_html_len) < 0 ? -1 : 0;
    }
    struct server_snapshot s;
    server_snapshot(srv, ex->rt, &s);
    char body[OUT_MAX];
    struct out o = { body, 0, sizeof(body) };
    status_json(&o, &s);
    return send_text(ex, 200, "application/json", body, o.len);
}

/* ---- metrics -------------------------------------------------------------------------------- */

static void metric(struct out *o, const char *name, const char *type, const char *help,
                   unsigned long long v)
{
    outf(o, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

static int metrics_handle(void *inst, struct http_exchange *ex)
{
    struct server *srv = inst;
    int rc = precheck(ex, true);
    if (rc)
        return rc == 1 ? 0 : rc; /* answered (OPTIONS), an error status, or -1 */
    struct server_snapshot s;
    server_snapshot(srv, ex->rt, &s);
    char body[OUT_MAX];
    struct out o = { body, 0, sizeof(body) };
    metric(&o, "lfhttpd_requests_total", "counter", "Responses sent.", s.requests);
    metric(&o, "lfhttpd_bytes_sent_total", "counter", "Bytes written to clients.", s.bytes_out);
    metric(&o, "lfhttpd_connections_accepted_total", "counter", "Connections accepted.",
           s.accepted);
    outf(&o, "# HELP lfhttpd_connections Open connections by what they wait for.\n"
             "# TYPE lfhttpd_connections gauge\n");
    for (int i = 0; i < 6; i++)
        outf(&o, "lfhttpd_connections{state=\"%s\"} %u\n", snapshot_conn_states[i], s.conns[i]);
    metric(&o, "lfhttpd_pool_events_total", "counter", "Events processed by the pool.", s.events);
    metric(&o, "lfhttpd_pool_waits_total", "counter",
           "epoll_wait calls made by leaders (half-sync-half-async: the reactor).", s.waits);
    metric(&o, "lfhttpd_pool_promotions_total", "counter",
           "Hand-offs that woke a waiting thread (a follower promoted; HS/HA: a worker).",
           s.promotions);
    metric(&o, "lfhttpd_pool_no_follower_total", "counter",
           "Hand-offs with no thread waiting to take them.", s.no_follower);
    outf(&o, "# HELP lfhttpd_concurrency_info The concurrency strategy (label).\n"
             "# TYPE lfhttpd_concurrency_info gauge\n"
             "lfhttpd_concurrency_info{concurrency=\"%s\"} 1\n", s.concurrency);
    outf(&o, "# HELP lfhttpd_threads Pool threads by role (leading: waiting in epoll_wait).\n"
             "# TYPE lfhttpd_threads gauge\n");
    for (int i = 1; i <= 3; i++)
        outf(&o, "lfhttpd_threads{role=\"%s\"} %u\n", snapshot_role_names[i % 3], s.role[i % 3]);
    metric(&o, "lfhttpd_cgi_running", "gauge", "CGI scripts running.", s.cgi_running);
    metric(&o, "lfhttpd_cgi_started_total", "counter", "CGI scripts started.", s.cgi_started);
    metric(&o, "lfhttpd_cgi_rejected_total", "counter", "CGI requests refused at cgi_max (503).",
           s.cgi_rejected);
    metric(&o, "lfhttpd_cgi_timeouts_total", "counter", "CGI scripts killed at cgi_timeout.",
           s.cgi_timeouts);
    metric(&o, "lfhttpd_cgi_failed_total", "counter", "CGI scripts that could not start.",
           s.cgi_failed);
    metric(&o, "lfhttpd_timers_pending", "gauge", "Timers scheduled in the handle set.",
           s.timers);
    metric(&o, "lfhttpd_file_cache_hits_total", "counter", "Open-file cache hits.", s.fc_hits);
    metric(&o, "lfhttpd_file_cache_misses_total", "counter", "Open-file cache misses.",
           s.fc_misses);
    metric(&o, "lfhttpd_file_cache_entries", "gauge", "Open-file cache entries.", s.fc_entries);
    metric(&o, "lfhttpd_file_cache_bytes", "gauge", "Open-file cache bytes.", s.fc_bytes);
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
    metric(&o, "lfhttpd_uptime_seconds", "gauge", "Seconds since start.",
           (unsigned long long)s.uptime);
    metric(&o, "lfhttpd_draining", "gauge", "1 during a graceful stop.", s.draining);
    return send_text(ex, 200, "text/plain; version=0.0.4; charset=utf-8", body, o.len);
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
