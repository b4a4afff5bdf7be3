/* test_endpoints.c — the `test` handler: httpbin-like endpoints for people testing HTTP
 * clients and load tools (off by default; `test_endpoints /_test/` or --test-endpoints).
 *
 *   bytes/N        N bytes (<= 100 MiB) from memory: a 64 KiB pattern, never N bytes allocated
 *   status/CODE    an empty-ish response with that status (200..599)
 *   echo           the request line, headers and body (<= 64 KiB) back as JSON
 *   delay/MS       answers after MS (<= 10000) milliseconds — from a timer, no thread waits
 *   stream/N       N (<= 1000) JSON lines, one chunk each (chunked encoding)
 *   drip           ?numbytes=N&duration=S&delay=S&code=C: N bytes spread over S seconds
 *   redirect/N     N (<= 20) 302 redirects, then the echo
 *   headers        ?Name=value...: response headers from the query (validated: no CR/LF or
 *                  other control characters, token names, no framing headers) -> else 400
 *
 * Everything long-running is a deferred exchange (exchange.h): bodies stream with
 * backpressure (writable()), waits are timers in the handle set (ex_sleep). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "base/hex.h"
#include "base/json.h"
#include "base/netaddr.h"
#include "builtin/builtin.h"
#include "exchange/handler.h"
#include "exchange/exchange.h"
#include "http/http_strict.h"
#include "conf/site.h"

#define BYTES_MAX (100ull * 1024 * 1024)
#define DELAY_MAX_MS 10000
#define STREAM_MAX 1000
#define ECHO_BODY_MAX (64 * 1024)
#define DRIP_BYTES_MAX (1024 * 1024)
#define REDIRECT_MAX 20
#define HEADERS_MAX 20
#define PATTERN_SIZE (64 * 1024)
#define WRITE_PIECE (32 * 1024)
#define BUDGET (4 * 1024 * 1024) /* bytes per event before yielding to other connections */

static const char pattern_line[] =
    "lfhttpd test bytes 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEF\n";
_Static_assert(PATTERN_SIZE % (sizeof(pattern_line) - 1) == 0, "the pattern must tile 64 KiB");

struct tests {
    char pattern[PATTERN_SIZE]; /* pattern_line repeated; immutable after create */
    char stars[4096];           /* drip bytes */
};

enum tx_kind { TX_BYTES, TX_BUFFER, TX_ECHO, TX_DELAY, TX_STREAM, TX_DRIP };

/* A deferred test exchange. */
struct tx {
    enum tx_kind kind;
    uint64_t left;       /* bytes / stream lines / drip bytes still to send */
    uint64_t sent;       /* bytes / lines / drip bytes sent */
    unsigned delay_ms;
    unsigned interval;   /* drip: ms between ticks */
    unsigned per_tick;   /* drip: bytes per tick */
    int status;
    bool began;
    char *buf;           /* TX_BUFFER / TX_ECHO: the body being built or sent */
    size_t len, cap, off;
    char path[256];      /* stream: the request path, for the lines */
};

static void tx_free(struct tx *t)
{
    if (t) {
        free(t->buf);
        free(t);
    }
}

/* A deferred test exchange: *exp becomes the deferred exchange. NULL when out of memory (then
 * nothing was deferred: answer with ex_error(*exp, 503)). */
static struct tx *tx_new(struct exchange **exp)
{
    struct tx *t = calloc(1, sizeof(*t));
    struct exchange *d = t ? ex_defer(*exp, t) : NULL;
    if (!d) {
        free(t);
        return NULL;
    }
    *exp = d;
    return t;
}

static void *tests_create(const struct handler_env *env, const struct loc_conf *lc, char *err,
                          size_t errlen)
{
    (void)env;
    (void)lc;
    struct tests *ts = malloc(sizeof(*ts));
    if (!ts) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < PATTERN_SIZE; i += sizeof(pattern_line) - 1)
        memcpy(ts->pattern + i, pattern_line, sizeof(pattern_line) - 1);
    memset(ts->stars, '*', sizeof(ts->stars));
    return ts;
}

static void tests_destroy(void *inst)
{
    free(inst);
}

/* ---- small helpers -------------------------------------------------------------------------- */

#define ADD_LIT(r, s) resp_add((r), (s), sizeof(s) - 1)

static void begin(struct exchange *ex, struct response *r, char *head, int status,
                  const char *type)
{
    resp_begin(r, head, RESP_HEAD_MAX, status, ex->date);
    if (type)
        RESP_HEADER_STR(r, "Content-Type", type);
    ADD_LIT(r, "Cache-Control: no-store\r\n");
    ex_add_location_headers(r, ex->loc);
}

static int send_json(struct exchange *ex, int status, const char *json, size_t len)
{
    char head[RESP_HEAD_MAX];
    struct response r;
    begin(ex, &r, head, status, "application/json");
    return ex_send(ex, &r, json, len);
}

static int bad_request(struct exchange *ex, const char *why)
{
    char body[512];
    size_t pos = 0;
    memcpy(body, "{\"error\":\"", 10);
    pos = 10;
    json_escape_append(body, sizeof(body) - 4, &pos, why, strlen(why));
    memcpy(body + pos, "\"}\n", 3);
    return send_json(ex, 400, body, pos + 3);
}

/* Parse a decimal number that is all of s[0..len). */
static bool parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    if (len == 0 || len > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* Seconds with up to three decimals ("1.5") as milliseconds. */
static bool parse_seconds_ms(const char *s, size_t len, unsigned max_ms, unsigned *out)
{
    const char *dot = memchr(s, '.', len);
    uint64_t whole = 0, frac = 0;
    size_t wl = dot ? (size_t)(dot - s) : len;
    if (wl && !parse_u64(s, wl, max_ms / 1000 + 1, &whole))
        return false;
    if (dot) {
        size_t fl = len - wl - 1;
        if (fl == 0 || fl > 3 || !parse_u64(dot + 1, fl, 999, &frac))
            return false;
        for (size_t i = fl; i < 3; i++)
            frac *= 10;
    } else if (!wl) {
        return false;
    }
    uint64_t ms = whole * 1000 + frac;
    if (ms > max_ms)
        return false;
    *out = (unsigned)ms;
    return true;
}

/* Decode a query component: %XX and '+' (space). Returns the length, or -1 when malformed or
 * too long. The result may contain any byte (callers validate). */
static ssize_t query_decode(const char *in, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (o == cap)
            return -1;
        if (in[i] == '%') {
            if (i + 2 >= len)
                return -1;
            int c = hex_pair(in + i + 1);
            if (c < 0)
                return -1;
            out[o++] = (char)c;
            i += 2;
        } else {
            out[o++] = in[i] == '+' ? ' ' : in[i];
        }
    }
    return (ssize_t)o;
}

/* The value of query parameter `name` (raw, not decoded), or false. */
#define query_param(q, lit, val) sv_query_get((q), "" lit, sizeof(lit) - 1, (val))

/* ---- bytes, buffers, streams: writers that stop when the socket is full -------------------- */

/* Write until done, parked, or this event's budget is spent. Returns 0 or -1. */
static int pump(struct tests *ts, struct exchange *ex, struct tx *t)
{
    size_t budget = BUDGET;
    if (ex->head_only) { /* HEAD: the head says it all */
        t->left = 0;
        t->off = t->len;
    }
    while (budget) {
        int rc;
        size_t n;
        if (t->kind == TX_BYTES) {
            if (t->left == 0)
                break;
            size_t at = (size_t)(t->sent % PATTERN_SIZE);
            n = WRITE_PIECE - at % WRITE_PIECE;
            if (n > t->left)
                n = (size_t)t->left;
            rc = ex_stream_write(ex, ts->pattern + at, n);
            t->left -= n;
            t->sent += n;
        } else if (t->kind == TX_STREAM) {
            if (t->left == 0)
                break;
            char line[512];
            size_t pos = 0;
            pos += (size_t)snprintf(line, sizeof(line), "{\"id\":%llu,\"path\":\"",
                                    (unsigned long long)t->sent);
            json_escape_append(line, sizeof(line) - 8, &pos, t->path, strlen(t->path));
            memcpy(line + pos, "\"}\n", 3);
            n = pos + 3;
            rc = ex_stream_write(ex, line, n);
            t->left--;
            t->sent++;
        } else { /* TX_BUFFER, TX_ECHO */
            if (t->off == t->len)
                break;
            n = t->len - t->off < WRITE_PIECE ? t->len - t->off : WRITE_PIECE;
            rc = ex_stream_write(ex, t->buf + t->off, n);
            t->off += n;
        }
        if (rc < 0)
            return rc;
        if (ex_blocked(ex))
            return 0; /* the socket is full: writable() continues */
        budget = n >= budget ? 0 : budget - n;
    }
    bool finished = t->kind == TX_BYTES || t->kind == TX_STREAM ? t->left == 0 : t->off == t->len;
    if (!finished)
        return 0; /* budget spent: yield, writable() continues */
    tx_free(t);
    return ex_stream_end(ex);
}

/* Send t->buf as a Content-Length body (deferred; the buffer may exceed one carry). */
static int send_buffer(struct tests *ts, struct exchange *ex, struct tx *t, int status,
                       const char *type)
{
    char head[RESP_HEAD_MAX];
    struct response r;
    begin(ex, &r, head, status, type);
    t->kind = TX_BUFFER;
    t->off = 0;
    t->began = true;
    int rc = ex_stream_begin(ex, &r, (int64_t)t->len);
    return rc < 0 ? rc : pump(ts, ex, t);
}

/* ---- the endpoints ---------------------------------------------------------------------------- */

static int ep_bytes(struct tests *ts, struct exchange *ex, const char *arg, size_t len)
{
    uint64_t n;
    if (!parse_u64(arg, len, BYTES_MAX, &n))
        return bad_request(ex, "bytes/N takes N from 0 to 104857600");
    struct tx *t = tx_new(&ex);
    if (!t)
        return ex_error(ex, 503);
    t->kind = TX_BYTES;
    t->left = n;
    t->began = true;
    char head[RESP_HEAD_MAX];
    struct response r;
    begin(ex, &r, head, 200, "application/octet-stream");
    int rc = ex_stream_begin(ex, &r, (int64_t)n);
    return rc < 0 ? rc : pump(ts, ex, t);
}

static int ep_status(struct exchange *ex, const char *arg, size_t len)
{
    uint64_t code;
    if (!parse_u64(arg, len, 599, &code) || code < 200)
        return bad_request(ex, "status/CODE takes a final status from 200 to 599");
    char head[RESP_HEAD_MAX];
    struct response r;
    char body[128];
    begin(ex, &r, head, (int)code, "text/plain; charset=utf-8");
    if (code == 405)
        ADD_LIT(&r, "Allow: GET, HEAD, OPTIONS\r\n");
    int n = snprintf(body, sizeof(body), "%d %s\n", (int)code, http_status_reason((int)code));
    return ex_send(ex, &r, body, http_status_has_no_body((int)code) ? 0 : (size_t)n);
}

static bool echo_put(struct tx *t, const char *s)
{
    size_t n = strlen(s);
    if (t->cap - t->len < n + 1)
        return false;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    return true;
}

static bool echo_str(struct tx *t, struct strview v)
{
    return echo_put(t, "\"") && json_escape_append(t->buf, t->cap, &t->len, v.ptr, v.len) &&
           echo_put(t, "\"");
}

static int echo_finish(struct tests *ts, struct exchange *ex, struct tx *t)
{
    char tail[64];
    snprintf(tail, sizeof(tail), "\",\"body_length\":%llu}\n", (unsigned long long)t->sent);
    if (!echo_put(t, tail)) {
        tx_free(t);
        return -ENOMEM;
    }
    return send_buffer(ts, ex, t, 200, "application/json");
}

static int ep_echo(struct tests *ts, struct exchange *ex)
{
    const struct http_request *req = ex->req;
    if (req->has_body && !req->chunked && req->content_length > ECHO_BODY_MAX)
        return ex_error(ex, 413);
    size_t raw = req->target.len + 256;
    for (unsigned i = 0; i < req->nheaders; i++)
        raw += req->headers[i].name.len + req->headers[i].value.len + 8;
    struct tx *t = calloc(1, sizeof(*t));
    if (!t)
        return ex_error(ex, 503);
    t->kind = TX_ECHO;
    t->cap = 6 * (raw + ECHO_BODY_MAX) + 512;
    t->buf = malloc(t->cap);
    if (!t->buf) {
        tx_free(t);
        return ex_error(ex, 503);
    }
    char addr[INET6_ADDRSTRLEN + 16];
    char ip[INET6_ADDRSTRLEN];
    netaddr_format(&ex->peer_addr, ip, sizeof(ip));
    snprintf(addr, sizeof(addr), "%s", ip);
    char ver[16];
    snprintf(ver, sizeof(ver), "HTTP/%u.%u", req->http_major, req->http_minor);
    char port[16];
    snprintf(port, sizeof(port), "%u", ntohs(ex->peer_port));
    bool ok = echo_put(t, "{\"method\":") && echo_str(t, req->method_name) &&
              echo_put(t, ",\"target\":") && echo_str(t, req->target) &&
              echo_put(t, ",\"path\":") &&
              echo_str(t, (struct strview){ ex->path, ex->path_len }) &&
              echo_put(t, ",\"query\":") &&
              echo_str(t, req->query.ptr ? req->query : SV("")) &&
              echo_put(t, ",\"version\":\"") && echo_put(t, ver) &&
              echo_put(t, "\",\"remote_addr\":\"") && echo_put(t, addr) &&
              echo_put(t, "\",\"remote_port\":") && echo_put(t, port) &&
              echo_put(t, ",\"headers\":[");
    for (unsigned i = 0; ok && i < req->nheaders; i++)
        ok = echo_put(t, i ? ",[" : "[") && echo_str(t, req->headers[i].name) &&
             echo_put(t, ",") && echo_str(t, req->headers[i].value) && echo_put(t, "]");
    ok = ok && echo_put(t, "],\"body\":\"");
    if (!ok) {
        tx_free(t);
        return ex_error(ex, 500);
    }
    struct exchange *d = ex_defer(ex, t);
    if (!d) {
        tx_free(t);
        return ex_error(ex, 503);
    }
    if (req->has_body)
        return ex_want_body(d, true); /* body() collects it; the answer goes at its end */
    return echo_finish(ts, d, t);
}

static int ep_delay(struct exchange *ex, const char *arg, size_t len)
{
    uint64_t ms;
    if (!parse_u64(arg, len, UINT64_MAX / 2, &ms))
        return bad_request(ex, "delay/MS takes a number of milliseconds (at most 10000)");
    if (ms > DELAY_MAX_MS)
        ms = DELAY_MAX_MS;
    struct tx *t = tx_new(&ex);
    if (!t)
        return ex_error(ex, 503);
    t->kind = TX_DELAY;
    t->delay_ms = (unsigned)ms;
    ex_sleep(ex, (unsigned)ms); /* the timer calls writable(); this thread moves on */
    return 0;
}

static int ep_stream(struct tests *ts, struct exchange *ex, const char *arg, size_t len)
{
    uint64_t n;
    if (!parse_u64(arg, len, UINT64_MAX / 2, &n))
        return bad_request(ex, "stream/N takes a number of lines (at most 1000)");
    if (n > STREAM_MAX)
        n = STREAM_MAX;
    struct tx *t = tx_new(&ex);
    if (!t)
        return ex_error(ex, 503);
    t->kind = TX_STREAM;
    t->left = n;
    t->began = true;
    size_t pl = ex->path_len < sizeof(t->path) - 1 ? ex->path_len : sizeof(t->path) - 1;
    memcpy(t->path, ex->path, pl);
    t->path[pl] = '\0';
    char head[RESP_HEAD_MAX];
    struct response r;
    begin(ex, &r, head, 200, "application/x-ndjson");
    int rc = ex_stream_begin(ex, &r, -1);
    return rc < 0 ? rc : pump(ts, ex, t);
}

static int ep_drip(struct exchange *ex)
{
    struct strview q = ex->req->query, v;
    uint64_t numbytes = 10, code = 200;
    unsigned duration = 2000, delay = 0;
    if (query_param(q, "numbytes", &v) && !parse_u64(v.ptr, v.len, DRIP_BYTES_MAX, &numbytes))
        return bad_request(ex, "numbytes: 0 to 1048576");
    if (query_param(q, "duration", &v) && !parse_seconds_ms(v.ptr, v.len, DELAY_MAX_MS, &duration))
        return bad_request(ex, "duration: seconds, at most 10");
    if (query_param(q, "delay", &v) && !parse_seconds_ms(v.ptr, v.len, DELAY_MAX_MS, &delay))
        return bad_request(ex, "delay: seconds, at most 10");
    if (query_param(q, "code", &v) && (!parse_u64(v.ptr, v.len, 599, &code) || code < 200))
        return bad_request(ex, "code: a final status from 200 to 599");
    struct tx *t = tx_new(&ex);
    if (!t)
        return ex_error(ex, 503);
    t->kind = TX_DRIP;
    t->left = numbytes;
    t->status = (int)code;
    /* One byte per tick when ticks can be >= 10 ms apart, else several bytes per tick. */
    uint64_t ticks = numbytes ? numbytes : 1;
    if (ticks > duration / 10)
        ticks = duration / 10 ? duration / 10 : 1;
    t->interval = (unsigned)(duration / ticks);
    t->per_tick = (unsigned)(numbytes ? (numbytes + ticks - 1) / ticks : 0);
    ex_sleep(ex, delay);
    return 0;
}

static int drip_tick(struct tests *ts, struct exchange *ex, struct tx *t)
{
    if (!t->began) {
        char head[RESP_HEAD_MAX];
        struct response r;
        begin(ex, &r, head, t->status, "application/octet-stream");
        t->began = true;
        int rc = ex_stream_begin(ex, &r, (int64_t)t->left);
        if (rc < 0)
            return rc;
    }
    if (ex_blocked(ex))
        return 0; /* the head is still queued: tick again once it has gone */
    size_t n = t->per_tick < t->left ? t->per_tick : (size_t)t->left;
    if (n > sizeof(ts->stars))
        n = sizeof(ts->stars);
    int rc = n ? ex_stream_write(ex, ts->stars, n) : 0;
    if (rc < 0)
        return rc;
    t->left -= n;
    if (t->left == 0) {
        tx_free(t);
        return ex_stream_end(ex);
    }
    ex_sleep(ex, t->interval);
    return 0;
}

static int ep_redirect(struct exchange *ex, const char *arg, size_t len)
{
    uint64_t n;
    if (!parse_u64(arg, len, REDIRECT_MAX, &n) || n == 0)
        return bad_request(ex, "redirect/N takes N from 1 to 20");
    const struct loc_conf *lc = ex->loc;
    char loc[512];
    const char *sep = lc->prefix[lc->prefix_len - 1] == '/' ? "" : "/";
    if (n > 1)
        snprintf(loc, sizeof(loc), "%s%sredirect/%llu", lc->prefix, sep,
                 (unsigned long long)(n - 1));
    else
        snprintf(loc, sizeof(loc), "%s%secho", lc->prefix, sep);
    char head[RESP_HEAD_MAX];
    struct response r;
    begin(ex, &r, head, 302, NULL);
    RESP_HEADER_STR(&r, "Location", loc);
    return ex_send(ex, &r, NULL, 0);
}

/* Header names the endpoint refuses to set: framing and connection management belong to the
 * server, and a second Date or Server would only confuse. */
static bool reserved_header(const char *name)
{
    static const char *const names[] = { "content-length", "transfer-encoding", "connection",
                                         "keep-alive", "upgrade", "te", "trailer",
                                         "proxy-connection", "date", "server", "host" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcasecmp(name, names[i]))
            return true;
    return false;
}

/* One parameter of /headers, decoded and checked. Returns NULL or why it is refused. */
static const char *header_param(struct strview qn, struct strview qv, char name[65], size_t *nl,
                                char value[1025], size_t *vl)
{
    ssize_t n = query_decode(qn.ptr, qn.len, name, 64);
    ssize_t v = query_decode(qv.ptr, qv.len, value, 1024);
    if (n < 0 || v < 0)
        return "malformed or too long query parameter";
    name[n] = value[v] = '\0';
    *nl = (size_t)n;
    *vl = (size_t)v;
    if (!http_token_valid(name, *nl))
        return "header names must be tokens";
    if (!http_field_value_valid(value, *vl))
        return "header values must not contain control characters";
    if (reserved_header(name))
        return "that header is managed by the server";
    return NULL;
}

/* /headers?Name=value&...: the response carries those headers, and says them back as JSON. A
 * requested header replaces the endpoint's default of the same name (Content-Type,
 * Cache-Control), so `Cache-Control=max-age%3D60` is the only Cache-Control sent. */
static int ep_headers(struct exchange *ex)
{
    char name[65], value[1025];
    size_t nl, vl;
    struct strview qn, qv;
    bool have_type = false, have_cache = false;
    unsigned count = 0;
    struct sv_query q = { ex->req->query };
    while (sv_query_next(&q, &qn, &qv)) { /* check everything before answering */
        const char *why = header_param(qn, qv, name, &nl, value, &vl);
        if (why)
            return bad_request(ex, why);
        if (++count > HEADERS_MAX)
            return bad_request(ex, "at most 20 headers");
        have_type |= !strcasecmp(name, "content-type");
        have_cache |= !strcasecmp(name, "cache-control");
    }
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, RESP_HEAD_MAX, 200, ex->date);
    if (!have_type)
        ADD_LIT(&r, "Content-Type: application/json\r\n");
    if (!have_cache)
        ADD_LIT(&r, "Cache-Control: no-store\r\n");
    ex_add_location_headers(&r, ex->loc);
    char body[8192];
    size_t pos = 1;
    body[0] = '{';
    count = 0;
    q = (struct sv_query){ ex->req->query };
    while (sv_query_next(&q, &qn, &qv)) {
        header_param(qn, qv, name, &nl, value, &vl);
        resp_header(&r, name, nl, value, vl);
        if (r.overflow)
            return bad_request(ex, "headers too large");
        if (count++)
            body[pos++] = ',';
        body[pos++] = '"';
        if (!json_escape_append(body, sizeof(body) - 16, &pos, name, nl))
            return bad_request(ex, "headers too large");
        memcpy(body + pos, "\":\"", 3);
        pos += 3;
        if (!json_escape_append(body, sizeof(body) - 16, &pos, value, vl))
            return bad_request(ex, "headers too large");
        body[pos++] = '"';
    }
    memcpy(body + pos, "}\n", 2);
    pos += 2;
    return ex_send(ex, &r, body, pos);
}

static const char index_text[] =
    "lfhttpd test endpoints\n\n"
    "bytes/N       N bytes from memory (N <= 104857600)\n"
    "status/CODE   that status (200..599)\n"
    "echo          the request back as JSON (body <= 64 KiB)\n"
    "delay/MS      answer after MS milliseconds (<= 10000), from a timer\n"
    "stream/N      N JSON lines, one chunk each (N <= 1000)\n"
    "drip          ?numbytes=N&duration=S&delay=S&code=C: bytes over time\n"
    "redirect/N    N redirects, then echo (N <= 20)\n"
    "headers       ?Name=value&...: response headers from the query\n";

/* ---- handler ops ------------------------------------------------------------------------------ */

static int tests_handle(void *inst, struct exchange *ex)
{
    struct tests *ts = inst;
    const struct loc_conf *lc = ex->loc;
    const char *rest = ex->path;
    size_t len = ex->path_len;
    if (lc->prefix && len >= lc->prefix_len) {
        rest += lc->prefix_len;
        len -= lc->prefix_len;
    }
    while (len && *rest == '/') {
        rest++;
        len--;
    }
    const char *slash = memchr(rest, '/', len);
    size_t name_len = slash ? (size_t)(slash - rest) : len;
    const char *arg = slash ? slash + 1 : rest + len;
    size_t arg_len = slash ? len - name_len - 1 : 0;
#define IS(lit) (name_len == sizeof(lit) - 1 && !memcmp(rest, lit, name_len))
    bool with_arg = IS("bytes") || IS("status") || IS("delay") || IS("stream") || IS("redirect");
    if (with_arg != (slash != NULL))
        return ex_error(ex, 404);
    if (IS("echo"))
        return ep_echo(ts, ex); /* any method */
    if (ex->req->method != HTTP_GET && ex->req->method != HTTP_HEAD)
        return ex_error(ex, 405);
    if (len == 0) {
        char head[RESP_HEAD_MAX];
        struct response r;
        begin(ex, &r, head, 200, "text/plain; charset=utf-8");
        return ex_send(ex, &r, index_text, sizeof(index_text) - 1);
    }
    if (IS("bytes"))
        return ep_bytes(ts, ex, arg, arg_len);
    if (IS("status"))
        return ep_status(ex, arg, arg_len);
    if (IS("delay"))
        return ep_delay(ex, arg, arg_len);
    if (IS("stream"))
        return ep_stream(ts, ex, arg, arg_len);
    if (IS("drip"))
        return ep_drip(ex);
    if (IS("redirect"))
        return ep_redirect(ex, arg, arg_len);
    if (IS("headers"))
        return ep_headers(ex);
#undef IS
    return ex_error(ex, 404);
}

static int tests_body(void *inst, struct exchange *ex, const char *data, size_t len,
                      bool last)
{
    struct tx *t = ex->state;
    if (last)
        return echo_finish(inst, ex, t);
    if (t->sent + len > ECHO_BODY_MAX) {
        tx_free(t);
        return ex_error(ex, 413); /* the rest of the body is discarded */
    }
    t->sent += len;
    return json_escape_append(t->buf, t->cap, &t->len, data, len) ? 0 : -1;
}

static int tests_writable(void *inst, struct exchange *ex)
{
    struct tests *ts = inst;
    struct tx *t = ex->state;
    switch (t->kind) {
    case TX_DELAY: {
        char body[64];
        int n = snprintf(body, sizeof(body), "{\"delay_ms\":%u}\n", t->delay_ms);
        tx_free(t);
        return send_json(ex, 200, body, (size_t)n);
    }
    case TX_DRIP:
        return drip_tick(ts, ex, t);
    default:
        return pump(ts, ex, t);
    }
}

static void tests_abort(void *inst, struct exchange *ex)
{
    (void)inst;
    tx_free(ex->state);
}

const struct handler_ops test_handler = {
    .name = "test",
    .create = tests_create,
    .handle = tests_handle,
    .body = tests_body,
    .writable = tests_writable,
    .abort = tests_abort,
    .destroy = tests_destroy,
};
