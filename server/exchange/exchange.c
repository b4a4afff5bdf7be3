/* exchange.c — one request's life above its connection: routing, the handler, the response's
 * framing, deferral, streaming and the access log; see exchange.h and sink.h.
 *
 * The connection calls in through `exchange_layer` (sink.h) and is reached only through the
 * exchange's sink. A request answered at once lives on the processing thread's stack from
 * x_request() to its return. A deferred one is moved into one allocation, `struct
 * ex_deferred`: the exchange itself (no copies of its fields), the connection's part of the
 * deferral (sink.h), what a stream's framing needs, and the request's fields the access log
 * and an internal redirect need once the request's bytes are gone. */
#include "exchange/exchange.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acme/acme.h"
#include "exchange/access_log.h"
#include "exchange/auth_basic.h"
#include "exchange/ex_rules.h"
#include "base/carry.h"
#include "base/fmt.h"
#include "base/hostport.h"
#include "conn/client_limits.h"
#include "exchange/handler.h"
#include "exchange/site_access.h"
#include "http/http_date.h"
#include "log/metrics.h"
#include "base/netaddr.h"
#include "http/path.h"
#include "http/real_client.h"
#include "conf/runtime.h"
#include "conf/site.h"
#include "lf/thread_pool.h"

#define SMALL_FILE_MAX (16 * 1024) /* files up to this go out in one write with the head */
#define REDIRECTS_MAX 10           /* internal redirects in a row (CGI local Location) */

enum { XF_NONE = 0, XF_LENGTH, XF_CHUNKED, XF_CLOSE }; /* body framing of a streamed response */
_Static_assert(LIMIT_REQ_SLOTS == sizeof(((struct served *)0)->limits) / sizeof(uint32_t),
               "a request's limit slots fit struct served");

struct ex_deferred {
    struct exchange ex;             /* moved here by ex_defer() */
    struct sink_deferral d;         /* the connection's part */
    const struct handler_ops *ops;  /* the callbacks: the location's handler */
    void (*give)(struct exchange *ex); /* ex_hold(): hands it to its holder */
    void *inst;
    bool complete;                  /* the response is complete (or replaced by a redirect) */
    bool asked_body;                /* ex_want_body() was called once (100 Continue) */
    bool expect_continue;           /* the client waits for 100 Continue before its body */
    bool req_keep_alive;            /* the request's own keep-alive (ex.req is gone later) */
    uint8_t framing;                /* XF_* once a stream has begun */
    uint64_t left;                  /* XF_LENGTH: body bytes still to send */
    const struct ex_filter_ops *fops; /* the generation's stream filter, when it offered */
    unsigned offer;                 /* what it offered (ex_defer) */
    void *filter;                   /* its state once the stream's body is filtered */
    /* The request's fields the access log and an internal redirect need, in `strings`. */
    struct strview method, target, host, referer, ua, user;
    char *redirect;                 /* ex_redirect(): the target, NUL-terminated */
    size_t redirect_len;
    char strings[];
};

static struct ex_deferred *xd_of(struct sink_deferral *d)
{
    return (struct ex_deferred *)((char *)d - offsetof(struct ex_deferred, d));
}

/* ---- writing a response ------------------------------------------------------------------- */

static void note_response(struct exchange *ex, int status)
{
    ex->responded = true;
    ex->status = status;
    if (ex->xd)
        ex->xd->d.responded = true;
    atomic_fetch_add_explicit(&ex->w->stats.requests, 1, memory_order_relaxed);
}

/* An exchange is over: count it (metrics.h; the one place, for immediate and deferred
 * exchanges alike), and write its access log line when the log is on. */
static void log_request(const struct exchange *ex)
{
    mx_count(ex->mx_vhost, ex->mx_method, ex->status, ex->body_bytes, mx_now_ns() - ex->t0_ns);
    if (ex->rt->access_fd < 0)
        return;
    struct access_entry e = { ex->req, &ex->client_addr, ex->remote_user, ex->status,
                              ex->body_bytes, ex->content_encoding };
    access_log_write(ex->rt, &e);
}

/* The head's last lines: HSTS on TLS, Content-Length (unless the status forbids a body or the
 * head has one), Connection, and the blank line. */
static void finish_head(struct exchange *ex, struct response *r, int64_t body_len)
{
    unsigned hsts = ex->rt->cfg.tls_hsts;
    if (ex->tls && hsts) {
        char v[32] = "max-age=";
        size_t n = 8 + fmt_u64(v + 8, hsts);
        RESP_HEADER(r, "Strict-Transport-Security", v, n);
    }
    if (ex->vary | ex->cors)
        site_access_headers(ex, r);
    if (ex->rules_hdr_len)
        ex_rules_headers(ex, r); /* last but the framing: a rule's header replaces anyone's */
    if (body_len >= 0 && !r->has_length && !http_status_has_no_body(r->status))
        resp_header_u64(r, "Content-Length", 14, (uint64_t)body_len);
    if (!ex->keep_alive)
        RESP_LIT(r, "Connection: close\r\n\r\n");
    else if (ex->http_minor == 0)
        RESP_LIT(r, "Connection: keep-alive\r\n\r\n");
    else
        RESP_LIT(r, "\r\n");
}

/* A whole response has gone to the sink. */
static void response_complete(struct exchange *ex)
{
    if (ex->xd) {
        ex->xd->complete = true;
        if (!ex->keep_alive)
            ex->xd->d.close = true;
    }
}

static int send_iov(struct exchange *ex, const struct iovec *iov, int n, unsigned flags)
{
    /* Outside handle() nothing follows in the same read: a deferred exchange's pieces are
     * not gathered. */
    if (ex->xd)
        flags &= ~(unsigned)SEND_WHOLE;
    return ex->sink->ops->send(ex->sink, ex->w, iov, n, flags);
}

int ex_send(struct exchange *ex, struct response *r, const void *body, size_t len)
{
    assert(!ex->responded);
    if (r->overflow || len > CARRY_MAX - RESP_HEAD_MAX)
        return ex_error(ex, 500); /* in-memory bodies are small by contract */
    finish_head(ex, r, (int64_t)len);
    if (r->overflow)
        return ex_error(ex, 500);
    note_response(ex, r->status);
    bool with_body = len && !ex->head_only && !http_status_has_no_body(r->status);
    ex->body_bytes = with_body ? len : 0;
    response_complete(ex);
    struct iovec iov[2] = { { r->buf, r->len }, { (void *)(uintptr_t)body, len } };
    return send_iov(ex, iov, with_body ? 2 : 1, SEND_WHOLE);
}

static void close_fd(void *ref)
{
    close((int)(intptr_t)ref);
}

int ex_send_file_ref(struct exchange *ex, struct response *r, int fd, off_t off, size_t len,
                     void (*release)(void *ref), void *ref)
{
    assert(!ex->responded);
    if (!release) {
        release = close_fd;
        ref = (void *)(intptr_t)fd;
    }
    if (!r->overflow)
        finish_head(ex, r, (int64_t)len);
    if (r->overflow) {
        release(ref);
        return ex_error(ex, 500);
    }
    note_response(ex, r->status);
    ex->body_bytes = ex->head_only ? 0 : len;
    response_complete(ex);
    if (ex->head_only || len == 0) {
        release(ref);
        struct iovec iov = { r->buf, r->len };
        return send_iov(ex, &iov, 1, SEND_WHOLE);
    }
    if (len <= SMALL_FILE_MAX) {
        char body[SMALL_FILE_MAX];
        ssize_t n = pread(fd, body, len, off);
        release(ref);
        if (n < 0)
            return -errno;
        unsigned flags = SEND_WHOLE;
        if ((size_t)n < len) {
            /* Shrank since fstat: send what exists and close, so the client sees it is short. */
            ex->keep_alive = false;
            if (ex->xd)
                ex->xd->d.close = true;
            flags = 0;
        }
        struct iovec iov[2] = { { r->buf, r->len }, { body, (size_t)n } };
        return send_iov(ex, iov, 2, flags);
    }
    struct iovec iov = { r->buf, r->len };
    return ex->sink->ops->send_file(ex->sink, ex->w, &iov, fd, off, (off_t)len, release, ref);
}

int ex_send_file(struct exchange *ex, struct response *r, int fd, off_t off, size_t len)
{
    return ex_send_file_ref(ex, r, fd, off, len, NULL, NULL);
}

void ex_add_location_headers(struct response *r, const struct loc_conf *lc)
{
    for (int i = 0; i < lc->nheaders; i++)
        resp_header(r, lc->headers[i].name, lc->headers[i].name_len, lc->headers[i].value,
                    lc->headers[i].value_len);
}

int ex_status_for_errno(int err)
{
    switch (err) {
    case EACCES:
    case EPERM:
        return 403;
    case ENAMETOOLONG:
        return 414;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EAGAIN:
        return 503;
    case EIO:
        return 500;
    default:
        return 404; /* ENOENT, ENOTDIR, EXDEV (would leave the root), ELOOP, ... */
    }
}

/* Statuses after which the request's framing may be in doubt: answer, then close. */
static bool closes_after(int status)
{
    return status == 400 || status == 408 || status == 413 || status == 414 || status == 431 ||
           status == 501 || status == 505;
}

/* An error page; with `retry_after` (seconds), a Retry-After header on the built-in one. */
static int error_reply(struct exchange *ex, int status, unsigned retry_after)
{
    if (closes_after(status))
        ex->keep_alive = false;
    if (ex->req && ex->loc && ex->rt->serve_error_page) {
        int rc = ex->rt->serve_error_page(ex, status); /* the location's own page, if it has one */
        if (rc != -ENOENT)
            return rc;
    }
    char head[RESP_HEAD_MAX];
    char page[512];
    struct response r;
    resp_begin(&r, head, sizeof(head), status, ex->date);
    if (status == 405 || status == 501)
        RESP_LIT(&r, "Allow: GET, HEAD, OPTIONS\r\n");
    if (retry_after)
        resp_header_u64(&r, "Retry-After", 11, retry_after);
    RESP_LIT(&r, "Content-Type: text/html; charset=utf-8\r\n");
    size_t n = http_error_page(status, page, sizeof(page));
    return ex_send(ex, &r, page, n);
}

int ex_error(struct exchange *ex, int status)
{
    return error_reply(ex, status, status == 429 ? 1 : 0);
}

/* ---- deferring ------------------------------------------------------------------------------ */

struct exchange *ex_defer(struct exchange *ex, void *state)
{
    assert(!ex->xd && ex->req);
    const struct http_request *req = ex->req;
    struct strview f[6] = { req->method_name, req->target, req->host,
                            HTTP_KNOWN(req, H_REFERER), HTTP_KNOWN(req, H_USER_AGENT),
                            ex->remote_user };
    size_t total = ex->rules_hdr_len;
    for (int i = 0; i < 6; i++)
        total += f[i].len;
    struct ex_deferred *xd = calloc(1, sizeof(*xd) + total + 1);
    if (!xd)
        return NULL;
    struct strview *out[6] = { &xd->method, &xd->target, &xd->host, &xd->referer, &xd->ua,
                               &xd->user };
    char *p = xd->strings;
    for (int i = 0; i < 6; i++) {
        if (f[i].len)
            memcpy(p, f[i].ptr, f[i].len);
        *out[i] = f[i].ptr ? (struct strview){ p, f[i].len } : SV_NULL;
        p += f[i].len;
    }
    if (ex->rules_hdr_len)
        memcpy(p, ex->rules_hdr, ex->rules_hdr_len); /* the stack's lines are gone after */
    xd->ex = *ex;
    xd->ex.rules_hdr = p;
    xd->ex.xd = xd;
    xd->ex.state = state;
    xd->ex.remote_user = xd->user;
    xd->ops = ex->loc->ops;
    xd->inst = ex->loc->instance;
    xd->expect_continue = req->expect_continue && req->has_body;
    xd->req_keep_alive = req->keep_alive;
    xd->d.ex = &xd->ex;
    xd->d.sink = ex->sink;
    xd->d.watch_set.fd = -1;
    xd->d.responded = ex->responded;
    const struct ex_filter_ops *filter = ex->rt->stream_filter;
    if (filter && (xd->offer = filter->offer(ex)) != 0)
        xd->fops = filter;
    /* The stack exchange is retired: serve() finds the heap one through ex->xd, and any other
     * use of it faults at once instead of writing where nobody reads. */
    ex->xd = xd;
    ex->sink = NULL;
    return &xd->ex;
}

int ex_want_body(struct exchange *ex, bool want)
{
    struct ex_deferred *xd = ex->xd;
    assert(xd);
    if (want && !xd->asked_body && xd->expect_continue) {
        /* The handler reads the body: let a client waiting for 100-continue send it. */
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        struct iovec iov = { (void *)(uintptr_t)cont, sizeof(cont) - 1 };
        int rc = ex->sink->ops->send(ex->sink, ex->w, &iov, 1, 0);
        if (rc < 0)
            return rc;
        xd->expect_continue = false;
        ex->keep_alive = xd->req_keep_alive && !xd->d.close;
    }
    xd->asked_body |= want;
    if (want)
        xd->d.wants |= DW_BODY;
    else
        xd->d.wants &= (uint8_t)~DW_BODY;
    return 0;
}

void ex_sleep(struct exchange *ex, unsigned ms)
{
    assert(ex->xd);
    ex->xd->d.wake = timer_now() + ms;
    ex->xd->d.wants |= DW_TIMER;
}

int ex_watch(struct exchange *ex, struct ex_watch *w, int fd, uint32_t events,
             int (*fn)(struct exchange *ex, struct ex_watch *w, uint32_t events))
{
    assert(ex->xd);
    *w = (struct ex_watch){ .fd = fd, .events = events, .fn = fn };
    return ex->sink->ops->watch(ex->sink, w);
}

int ex_watch_set(struct exchange *ex, struct ex_watch *w, uint32_t events)
{
    if (w->events == events)
        return 0;
    w->events = events;
    return ex->sink->ops->watch(ex->sink, w);
}

void ex_unwatch(struct exchange *ex, struct ex_watch *w)
{
    if (w->registered)
        ex->sink->ops->unwatch(ex->sink, w);
}

void ex_hold(struct exchange *ex, void (*give)(struct exchange *ex))
{
    assert(ex->xd);
    ex->xd->d.wants |= DW_HELD;
    ex->xd->give = give;
}

void ex_release(struct exchange *ex)
{
    struct ex_deferred *xd = ex->xd;
    assert(xd && (xd->d.wants & DW_HELD));
    xd->d.wants = (uint8_t)((xd->d.wants & ~DW_HELD) | DW_WRITABLE);
    ex->sink->ops->release(ex->sink);
}

int ex_local_address(const struct exchange *ex, struct sockaddr_in6 *out)
{
    return ex->sink->ops->local_address(ex->sink, out);
}

bool ex_blocked(const struct exchange *ex)
{
    return ex->sink->ops->blocked(ex->sink);
}

int ex_redirect(struct exchange *ex, const char *target, size_t len)
{
    struct ex_deferred *xd = ex->xd;
    assert(xd && !ex->responded);
    if (ex->redirects >= REDIRECTS_MAX)
        return ex_error(ex, 500);
    free(xd->redirect);
    xd->redirect = malloc(len + 1);
    if (!xd->redirect)
        return ex_error(ex, 503);
    memcpy(xd->redirect, target, len);
    xd->redirect[len] = '\0';
    xd->redirect_len = len;
    xd->complete = true;
    return 0;
}

/* ---- streaming ------------------------------------------------------------------------------ */

int ex_stream_begin(struct exchange *ex, struct response *r, int64_t length)
{
    struct ex_deferred *xd = ex->xd;
    assert(xd && !ex->responded);
    if (r->overflow)
        return ex_error(ex, 500);
    if (xd->fops) {
        int rc = xd->fops->begin(ex, xd->offer, r, length, &xd->filter);
        if (rc < 0)
            return ex_error(ex, ex_status_for_errno(-rc));
        if (rc > 0)
            length = -1; /* the filtered body's length is known at its end only */
    }
    if (http_status_has_no_body(r->status) || ex->head_only) {
        xd->framing = XF_NONE;
    } else if (length >= 0) {
        xd->framing = XF_LENGTH;
        xd->left = (uint64_t)length;
    } else if (ex->http_minor >= 1) {
        xd->framing = XF_CHUNKED;
        RESP_LIT(r, "Transfer-Encoding: chunked\r\n");
    } else {
        xd->framing = XF_CLOSE; /* HTTP/1.0: the end of the body is the end of the connection */
        ex->keep_alive = false;
    }
    finish_head(ex, r, length);
    if (r->overflow)
        return ex_error(ex, 500);
    note_response(ex, r->status);
    if (!ex->keep_alive)
        xd->d.close = true;
    struct iovec iov = { r->buf, r->len };
    return send_iov(ex, &iov, 1, 0);
}

/* Send one piece of a stream's body with its framing, and `end`: the stream's end (the last
 * chunk) right behind it. The piece may exceed EX_STREAM_MAX by a filter's overhead. */
static int stream_piece(struct exchange *ex, const void *data, size_t len, bool end)
{
    struct ex_deferred *xd = ex->xd;
    bool chunked = xd->framing == XF_CHUNKED;
    char hex[24];
    struct iovec iov[3];
    int n = 0;
    ex->body_bytes += len;
    if (chunked && len) {
        size_t hl = fmt_hex_u64(hex, len);
        hex[hl++] = '\r';
        hex[hl++] = '\n';
        iov[n++] = (struct iovec){ hex, hl };
    }
    if (len)
        iov[n++] = (struct iovec){ (void *)(uintptr_t)data, len };
    if (chunked && (len || end)) {
        static const char tail[] = "\r\n0\r\n\r\n"; /* the piece's CRLF, then the last chunk */
        size_t from = len ? 0 : 2, to = end ? sizeof(tail) - 1 : 2;
        iov[n++] = (struct iovec){ (void *)(uintptr_t)(tail + from), to - from };
    }
    return n ? send_iov(ex, iov, n, 0) : 0;
}

int ex_stream_write(struct exchange *ex, const void *data, size_t len)
{
    struct ex_deferred *xd = ex->xd;
    assert(xd && ex->responded);
    if (xd->framing == XF_NONE || len == 0)
        return 0;
    if (xd->framing == XF_LENGTH) {
        if (len > xd->left)
            len = (size_t)xd->left;
        xd->left -= len;
        if (len == 0)
            return 0;
    }
    if (len > EX_STREAM_MAX || ex_blocked(ex))
        return -EINVAL; /* the caller must wait for writable() */
    if (!xd->filter)
        return stream_piece(ex, data, len, false);
    char out[EX_FILTER_OUT];
    ssize_t n = xd->fops->run(xd->filter, data, len, false, out, sizeof(out));
    return n < 0 ? (int)n : stream_piece(ex, out, (size_t)n, false);
}

int ex_stream_end(struct exchange *ex)
{
    struct ex_deferred *xd = ex->xd;
    assert(xd && ex->responded);
    int rc = 0;
    if (xd->filter && xd->framing != XF_NONE) {
        /* The filter's last bytes (a coding's trailer), then the end: queued behind whatever
         * is parked, like every piece. */
        char out[EX_FILTER_OUT];
        ssize_t n = xd->fops->run(xd->filter, NULL, 0, true, out, sizeof(out));
        rc = n < 0 ? (int)n : stream_piece(ex, out, (size_t)n, true);
    } else if (xd->framing == XF_CHUNKED) {
        /* Queued behind whatever is parked: the sink always takes a stream piece this small. */
        rc = stream_piece(ex, NULL, 0, true);
    }
    if ((xd->framing == XF_LENGTH && xd->left > 0) || xd->framing == XF_CLOSE) {
        /* A promised length not reached, or close-delimited: the client must see the end. */
        ex->keep_alive = false;
    }
    response_complete(ex);
    return rc;
}

/* ---- the entries the connection calls (sink.h) --------------------------------------------- */

static void log_exchange(struct ex_deferred *xd, int status)
{
    struct exchange *ex = &xd->ex;
    if (ex->rt->access_fd < 0) {
        ex->status = status;
        log_request(ex); /* counts it */
        return;
    }
    struct http_request req;
    HTTP_REQUEST_CLEAR(&req);
    req.method_name = xd->method;
    req.target = xd->target;
    req.host = xd->host;
    req.http_major = 1;
    req.http_minor = ex->http_minor;
    HTTP_SET_KNOWN(&req, H_REFERER, xd->referer);
    HTTP_SET_KNOWN(&req, H_USER_AGENT, xd->ua);
    ex->req = &req;
    ex->status = status;
    log_request(ex);
    ex->req = NULL;
}

/* After a callback: is the exchange done, and what does it wait for next? */
static void settle(struct ex_deferred *xd)
{
    struct sink_deferral *d = &xd->d;
    if (xd->complete && d->nwatch == 0 && !(d->wants & DW_HELD)) {
        d->done = true;
        d->wants = 0;
        return;
    }
    if (d->wants & DW_HELD)
        return;
    /* Output queued: continue once it drained. Nothing awaited: yield, continue after other
     * connections had their turn. */
    if (!xd->complete && (xd->ex.sink->ops->blocked(xd->ex.sink) ||
                          (!(d->wants & (DW_BODY | DW_TIMER)) && d->nwatch == 0)))
        d->wants |= DW_WRITABLE;
}

/* Make `xd` current on `w`, for one callback. */
static struct exchange *enter(struct ex_deferred *xd, struct worker *w)
{
    xd->ex.w = w;
    xd->ex.date = w ? http_date_now() : NULL;
    if (xd->d.close)
        xd->ex.keep_alive = false;
    return &xd->ex;
}

/* The host part of a Host header (port removed), if it is a plain name or address. */
static struct strview host_only(struct strview h)
{
    struct hostport hp;
    if (h.len == 0 || !hostport_split(h.ptr, h.len, &hp) || hp.host.len == 0)
        return SV_NULL;
    bool literal = h.ptr[0] == '[';
    for (size_t i = 0; i < hp.name.len; i++) {
        unsigned char c = (unsigned char)hp.name.ptr[i];
        if (literal ? !isxdigit(c) && c != ':' && c != '.' : !isalnum(c) && c != '-' && c != '.')
            return SV_NULL;
    }
    return hp.host;
}

/* tls_redirect_http: a request on a plain listener gets 301 to the same path and query on the
 * first TLS listener (`port`), at the host the client asked for. */
static int redirect_to_https(struct exchange *ex, unsigned port)
{
    const struct http_request *req = ex->req;
    struct strview host = host_only(req->host);
    if (!host.ptr)
        return ex_error(ex, 400);
    if (!port)
        return ex_error(ex, 500);
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 301, ex->date);
    RESP_LIT(&r, "Location: https://");
    resp_add(&r, host.ptr, host.len);
    if (port != 443) {
        char num[24] = ":";
        resp_add(&r, num, 1 + fmt_u64(num + 1, port));
    }
    if (req->path.len && req->path.ptr[0] == '/')
        resp_add(&r, req->path.ptr, req->path.len);
    else
        RESP_LIT(&r, "/"); /* OPTIONS * */
    if (req->query.ptr) {
        RESP_LIT(&r, "?");
        resp_add(&r, req->query.ptr, req->query.len);
    }
    RESP_LIT(&r, "\r\nContent-Type: text/html; charset=utf-8\r\n");
    char page[256];
    size_t n = http_error_page(301, page, sizeof(page));
    return ex_send(ex, &r, page, n);
}

/* HTTP-01 (RFC 8555 8.3): GET /.well-known/acme-challenge/TOKEN on a plain listener, answered
 * from the ACME client's table (never a file), before redirects, limits, rules and
 * authentication: the CA must reach it whatever the site does. 0 or -errno when answered (404
 * for a token not published), 1 for any other request. */
static int acme_http01(struct exchange *ex)
{
    const struct strview p = ex->req->path;
    const size_t plen = sizeof(ACME_HTTP01_PREFIX) - 1;
    if (p.len <= plen || memcmp(p.ptr, ACME_HTTP01_PREFIX, plen) ||
        (ex->req->method != HTTP_GET && ex->req->method != HTTP_HEAD))
        return 1;
    const char *token = p.ptr + plen;
    size_t tlen = p.len - plen;
    char key_auth[ACME_KEYAUTH_MAX + 1];
    size_t ok = 0; /* base64url (RFC 8555 8.3), or no such token */
    while (ok < tlen && (isalnum((unsigned char)token[ok]) || token[ok] == '-' || token[ok] == '_'))
        ok++;
    ssize_t n = ok == tlen ? acme_http01_lookup(token, tlen, key_auth, sizeof(key_auth)) : -1;
    if (n < 0)
        return ex_error(ex, 404);
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 200, ex->date);
    RESP_LIT(&r, "Content-Type: application/octet-stream\r\nCache-Control: no-store\r\n");
    return ex_send(ex, &r, key_auth, (size_t)n);
}

/* 401 with WWW-Authenticate for the location's realm (Basic authentication, RFC 7617). */
static int auth_challenge(struct exchange *ex, const char *realm)
{
    char head[RESP_HEAD_MAX];
    char page[512];
    struct response r;
    resp_begin(&r, head, sizeof(head), 401, ex->date);
    RESP_LIT(&r, "WWW-Authenticate: Basic realm=\"");
    resp_add(&r, realm, strlen(realm));
    RESP_LIT(&r, "\", charset=\"UTF-8\"\r\nContent-Type: text/html; charset=utf-8\r\n");
    size_t n = http_error_page(401, page, sizeof(page));
    return ex_send(ex, &r, page, n);
}

/* The per-client limits of `lc` for this request (client_limits.h): 0 to go on, 1 when it was
 * answered 429, or -errno. The slots it takes are the connection's to release (held[]).
 * An internal redirect is the same request: it was counted once. */
static int check_limits(struct exchange *ex, const struct loc_conf *lc,
                        const struct request_ctx *rc, uint32_t held[LIMIT_REQ_SLOTS])
{
    unsigned retry_after;
    if (ex->redirects || limits_request(ex->rt, lc, &ex->client_addr, rc->limit_at_request, held,
                                        &retry_after) == 0)
        return 0;
    int r = error_reply(ex, 429, retry_after);
    return r < 0 ? r : 1;
}

/* A rewrite moved the request to another location: that location's limits, allow/deny and
 * CORS apply as if the client had asked for the rewritten path (a rewrite never opens a door
 * its target's location keeps shut). The first location's slots are given back: a request
 * holds the slots of one location, the one that serves it; its rate was counted where it
 * arrived and is counted again here. 0 to go on, 1 when answered, or -errno. */
static int rewritten_checks(struct exchange *ex, const struct request_ctx *rc,
                            uint32_t held[LIMIT_REQ_SLOTS])
{
    for (int k = 0; k < LIMIT_REQ_SLOTS; k++)
        limits_release(ex->rt, &held[k]);
    int r = check_limits(ex, ex->loc, rc, held);
    if (r != 0)
        return r;
    ex->cors = EX_CORS_OFF; /* the first location's origin list no longer applies */
    return site_access_check(ex);
}

/* Pick the site and location (matching the decoded, normalised path, so "/assets/../secret"
 * cannot borrow the rules of /assets/), apply its limits, its allow/deny rules and CORS (a
 * preflight is answered there), its site rules (ex_rules.h: a redirect, a status, or a
 * rewrite that changes the path and the location), check its authentication, run its
 * handler — or, on a plain listener with tls_redirect_http, redirect to HTTPS. */
static int dispatch(struct exchange *ex, const struct request_ctx *rc,
                    uint32_t held[LIMIT_REQ_SLOTS])
{
    const struct http_request *req = ex->req;
    const struct site_set *ss = &ex->rt->cfg.sites;
    const struct site *site = ex->admin ? &ss->sites[ss->admin_site] : site_select(ss, req->host);
    ex->mx_vhost = site->mx_slot;
    int rc2;
    /* ACME's HTTP-01 first (one test when it is off): nothing of the site applies to it */
    if (ex->rt->cfg.acme.line && !rc->tls && !ex->admin && (rc2 = acme_http01(ex)) != 1)
        return rc2;
    if (!rc->tls && ex->rt->cfg.tls_redirect_http && !ex->admin) {
        if ((rc2 = check_limits(ex, &site->base, rc, held)) != 0)
            return rc2 < 0 ? rc2 : 0;
        return redirect_to_https(ex, rc->https_port);
    }
    if (req->path.len == 1 && req->path.ptr[0] == '*') {
        /* "OPTIONS *" asks about the server, not a resource (RFC 9110 9.3.7); the parser lets
         * the asterisk through for OPTIONS only. */
        ex->loc = &site->base;
        if ((rc2 = check_limits(ex, ex->loc, rc, held)) != 0)
            return rc2 < 0 ? rc2 : 0;
        char head[RESP_HEAD_MAX];
        struct response r;
        resp_begin(&r, head, sizeof(head), 204, ex->date);
        RESP_LIT(&r, "Allow: GET, HEAD, OPTIONS\r\n");
        return ex_send(ex, &r, NULL, 0);
    }
    rc2 = path_normalize_plain(req->path.ptr, req->path.len, ex->path, EX_PATH_MAX,
                               &ex->path_len, &ex->path_plain);
    if (rc2 < 0)
        return ex_error(ex, rc2 == -ENAMETOOLONG ? 414 : 400);
    const struct loc_conf *lc = site_location(site, (struct strview){ ex->path, ex->path_len });
    ex->loc = lc;
    if (ex->admin && lc == &site->base)
        return ex_error(ex, 404); /* the admin port answers the built-ins only */
    if ((rc2 = check_limits(ex, lc, rc, held)) != 0)
        return rc2 < 0 ? rc2 : 0;
    if ((rc2 = site_access_check(ex)) != 0)
        return rc2 < 0 ? rc2 : 0;
    if (lc->rules_on) { /* site rules: may answer, or rewrite ex->path and the location */
        if ((rc2 = ex_rules_apply(ex, site)) != 0)
            return rc2 < 0 ? rc2 : 0;
        if (ex->loc != lc && (rc2 = rewritten_checks(ex, rc, held)) != 0)
            return rc2 < 0 ? rc2 : 0;
        lc = ex->loc;
    }
    if (lc->auth_users &&
        !auth_check(lc->auth_users, HTTP_KNOWN(req, H_AUTHORIZATION), ex->user_buf,
                    sizeof(ex->user_buf), &ex->remote_user))
        return auth_challenge(ex, lc->auth_realm);
    return lc->ops->handle(lc->instance, ex);
}

static int serve(struct sink *s, struct worker *w, const struct request_ctx *rc,
                 uint8_t redirects, struct served *out);

static int x_request(struct sink *s, struct worker *w, const struct request_ctx *rc,
                     struct served *out)
{
    return serve(s, w, rc, 0, out);
}

static int serve(struct sink *s, struct worker *w, const struct request_ctx *rc,
                 uint8_t redirects, struct served *out)
{
    const struct http_request *req = rc->req;
    struct runtime *rt = rc->rt;
    char path[EX_PATH_MAX]; /* deliberately not initialised: filled by the router */
    char rules_hdr[EX_RULES_HDR_MAX]; /* the same: filled by site rules, when some match */
    struct exchange ex = {
        .path = path,
        .rules_hdr = rules_hdr,
        .sink = s,
        .w = w,
        .srv = rc->srv,
        .rt = rt,
        .req = req,
        .query = req->query,
        .date = http_date_now(),
        .head_only = req->method == HTTP_HEAD,
        .keep_alive = req->keep_alive && !rc->closing,
        .tls = rc->tls,
        .http_minor = req->http_minor,
        .redirects = redirects,
        .peer_addr = rc->peer_addr,
        .peer_port = rc->peer_port,
        .admin = rc->admin,
        .mx_vhost = rc->admin ? MX_VH_ADMIN : MX_VH_DEFAULT,
        .mx_method = mx_method_slot(req->method),
        .t0_ns = rc->t0_ns ? rc->t0_ns : mx_event_ns(),
    };
    /* A client waiting for 100-continue that gets a final answer may never send the body, so
     * the body's framing is in doubt: close after the response (unless the handler asks for
     * the body: ex_want_body). */
    if (rc->body_follows && req->expect_continue)
        ex.keep_alive = false;
    http_real_client(&rt->cfg.trusted_proxies, rt->cfg.real_ip_forwarded, &rc->peer_addr, req,
                     &ex.client_addr);
    uint32_t held[LIMIT_REQ_SLOTS] = { LIMIT_NONE, LIMIT_NONE };
    int rc2 = dispatch(&ex, rc, held);
    struct ex_deferred *xd = ex.xd;
    *out = (struct served){ NULL, false, { held[0], held[1] } };
    if (xd) {
        /* The request lives in the connection's read buffer and this frame: from here on the
         * deferred exchange has only what ex_defer() copied. */
        xd->ex.req = NULL;
        out->deferred = &xd->d; /* on failure too: the connection closes and aborts it */
        settle(xd);
        return rc2;
    }
    if (rc2 == 0 && !ex.responded)
        rc2 = ex_error(&ex, 500); /* a handler that neither answered nor deferred */
    log_request(&ex);
    out->close = !ex.keep_alive;
    return rc2;
}

static int x_error(struct sink *s, struct worker *w, const struct request_ctx *rc, int status)
{
    struct exchange ex = {
        .sink = s, .w = w, .srv = rc->srv, .rt = rc->rt, .date = http_date_now(),
        .keep_alive = false, .tls = rc->tls, .http_minor = 1, .client_addr = rc->peer_addr,
        .peer_addr = rc->peer_addr, .peer_port = rc->peer_port, .admin = rc->admin,
        .mx_vhost = rc->admin ? MX_VH_ADMIN : MX_VH_DEFAULT, .mx_method = MX_NMETHODS - 1,
        .t0_ns = mx_event_ns(),
    };
    int rc2 = ex_error(&ex, status);
    log_request(&ex);
    return rc2;
}

static int x_body(struct sink_deferral *d, struct worker *w, const char *data, size_t len,
                  bool last)
{
    struct ex_deferred *xd = xd_of(d);
    if (xd->complete)
        return 0; /* answered already: the rest of the body is discarded */
    struct exchange *ex = enter(xd, w);
    int rc = xd->ops->body(xd->inst, ex, data, len, last);
    if (last)
        d->wants &= (uint8_t)~DW_BODY;
    settle(xd);
    return rc;
}

static int x_writable(struct sink_deferral *d, struct worker *w)
{
    struct ex_deferred *xd = xd_of(d);
    d->wants &= (uint8_t)~(DW_WRITABLE | DW_TIMER);
    if (xd->complete) {
        settle(xd);
        return 0;
    }
    int rc = xd->ops->writable(xd->inst, enter(xd, w));
    settle(xd);
    return rc;
}

static int x_watch_event(struct sink_deferral *d, struct worker *w, struct ex_watch *x,
                         uint32_t events)
{
    struct ex_deferred *xd = xd_of(d);
    int rc = x->fn(enter(xd, w), x, events);
    settle(xd);
    return rc;
}

static int x_fail(struct sink_deferral *d, struct worker *w, int status)
{
    struct ex_deferred *xd = xd_of(d);
    struct exchange *ex = enter(xd, w);
    if (xd->ops->abort)
        xd->ops->abort(xd->inst, ex); /* the handler's state goes; the answer is ours */
    ex->state = NULL;
    ex->keep_alive = false;
    d->close = true;
    d->wants = 0;
    int rc = ex->responded ? 0 : ex_error(ex, status);
    xd->complete = true;
    settle(xd);
    return rc;
}

static void xd_free(struct ex_deferred *xd)
{
    if (xd->filter)
        xd->fops->free(xd->filter);
    free(xd->redirect);
    free(xd);
}

static int x_end(struct sink_deferral *d, struct worker *w, struct served *next)
{
    struct ex_deferred *xd = xd_of(d);
    assert(d->done && d->nwatch == 0);
    *next = (struct served){ NULL, d->close, { LIMIT_NONE, LIMIT_NONE } };
    if (!xd->redirect) {
        log_exchange(xd, xd->ex.status);
        xd_free(xd);
        return 0;
    }
    /* An internal GET (RFC 3875 6.2.2): the request is rebuilt from the target and Host. */
    struct exchange *ex = &xd->ex;
    struct http_request req;
    HTTP_REQUEST_CLEAR(&req);
    req.method = ex->head_only ? HTTP_HEAD : HTTP_GET;
    req.method_name = ex->head_only ? SV("HEAD") : SV("GET");
    req.http_major = 1;
    req.http_minor = ex->http_minor;
    req.keep_alive = ex->keep_alive && !d->close;
    req.target = (struct strview){ xd->redirect, xd->redirect_len };
    sv_split_target(req.target, &req.path, &req.query);
    req.host = xd->host;
    req.host_count = xd->host.len > 0;
    if (req.host_count)
        req.headers[req.nheaders++] = (struct http_header){ SV("Host"), req.host };
    struct request_ctx rc = {
        .srv = ex->srv, .rt = ex->rt, .req = &req, .peer_addr = ex->peer_addr,
        .peer_port = ex->peer_port, .tls = ex->tls, .closing = d->close,
        .admin = ex->admin, .t0_ns = ex->t0_ns, /* one exchange for the metrics: from the first head */
    };
    int rc2 = serve(ex->sink, w, &rc, (uint8_t)(ex->redirects + 1), next);
    if (!next->deferred)
        next->close |= d->close;
    xd_free(xd);
    return rc2;
}

static void x_hold(struct sink_deferral *d)
{
    struct ex_deferred *xd = xd_of(d);
    xd->give(&xd->ex);
}

static void x_abort(struct sink_deferral *d, struct worker *w)
{
    struct ex_deferred *xd = xd_of(d);
    struct exchange *ex = enter(xd, w);
    if ((!xd->complete || d->nwatch || (d->wants & DW_HELD)) && xd->ops->abort)
        xd->ops->abort(xd->inst, ex);
    /* Like nginx: 499 when the client went away before an answer was sent. */
    log_exchange(xd, ex->responded ? ex->status : 499);
    xd_free(xd);
}

const struct exchange_layer exchange_layer = {
    .request = x_request,
    .error = x_error,
    .body = x_body,
    .writable = x_writable,
    .watch_event = x_watch_event,
    .fail = x_fail,
    .end = x_end,
    .hold = x_hold,
    .abort = x_abort,
};
