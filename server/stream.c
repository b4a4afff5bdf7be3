/* stream.c — deferred exchanges and streamed responses; see http_exchange.h and stream.h.
 *
 * A deferred exchange keeps, between events, the little a handler's callbacks need: the
 * handler and its state, the response's framing (Content-Length left, chunked, or
 * close-delimited), and whether the connection stays open. Bytes that do not fit the socket
 * are parked in the connection's carry buffer exactly as for ex_send(); the writer then stops
 * until writable() says the socket drained, so a slow client slows the producer rather than
 * growing the server's memory. */
#include "stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "access_log.h"
#include "carry.h"
#include "connection.h"
#include "handler.h"
#include "http_exchange.h"
#include "runtime.h"
#include "server.h"
#include "site.h"
#include "tls_http.h"

static void on_wake(struct timer_entry *t, struct worker *w)
{
    struct ex_deferred *xd = (struct ex_deferred *)((char *)t - offsetof(struct ex_deferred, timer));
    conn_wake(xd->conn, w);
}

/* Copy what the access log line needs of the request (its bytes are gone when it ends). */
static void keep_for_log(struct ex_deferred *xd, const struct http_exchange *ex)
{
    const struct http_request *req = ex->req;
    struct strview f[6] = { req->method_name, req->target, req->host,
                            HTTP_KNOWN(req, H_REFERER), HTTP_KNOWN(req, H_USER_AGENT),
                            ex->remote_user };
    size_t total = 0;
    for (int i = 0; i < 6; i++)
        total += f[i].len;
    xd->log_buf = malloc(total + 1);
    if (!xd->log_buf)
        return; /* logged with what is left: "-" */
    struct strview *out[6] = { &xd->log_method, &xd->log_target, &xd->log_host,
                               &xd->log_referer, &xd->log_ua, &xd->log_user };
    char *p = xd->log_buf;
    for (int i = 0; i < 6; i++) {
        if (f[i].len)
            memcpy(p, f[i].ptr, f[i].len);
        *out[i] = f[i].ptr ? (struct strview){ p, f[i].len } : SV_NULL;
        p += f[i].len;
    }
}

/* Write the exchange's access log line, from what keep_for_log() kept. */
static void log_exchange(struct conn *c, struct worker *w, int status)
{
    struct ex_deferred *xd = c->xd;
    if (!xd->log_buf || c->rt->access_fd < 0)
        return;
    struct http_request req;
    HTTP_REQUEST_CLEAR(&req);
    req.method_name = xd->log_method;
    req.target = xd->log_target;
    req.host = xd->log_host;
    req.http_major = 1;
    req.http_minor = xd->http_minor;
    HTTP_SET_KNOWN(&req, H_REFERER, xd->log_referer);
    HTTP_SET_KNOWN(&req, H_USER_AGENT, xd->log_ua);
    struct http_exchange ex;
    xd_exchange(&ex, c, w);
    ex.req = &req;
    ex.status = status;
    ex.body_bytes = xd->body_bytes;
    ex.remote_user = xd->log_user;
    access_log_write(&ex);
}

int ex_defer(struct http_exchange *ex, void *state, unsigned flags)
{
    struct conn *c = ex->conn;
    struct ex_deferred *xd = calloc(1, sizeof(*xd));
    if (!xd)
        return -ENOMEM;
    xd->ops = ex->loc->ops;
    xd->inst = ex->loc->instance;
    xd->state = state;
    xd->loc = ex->loc;
    xd->conn = c;
    xd->flags = flags;
    xd->status = ex->status;
    xd->responded = ex->responded;
    xd->head_only = ex->head_only;
    xd->http_minor = ex->req ? ex->req->http_minor : 1;
    xd->redirects = ex->redirects;
    xd->timer.fire = on_wake;
    xd->client_addr = ex->client_addr;
    ex->state = state;
    if ((flags & (EX_WANT_BODY | EX_TAKE_CONN)) && ex->req && ex->req->expect_continue &&
        ex->req->has_body) {
        /* The handler reads the body: let a client waiting for 100-continue send it. */
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        struct iovec iov = { (void *)(uintptr_t)cont, sizeof(cont) - 1 };
        int rc = conn_send_or_park(ex, &iov, 1, false);
        if (rc < 0) {
            free(xd);
            return rc;
        }
        ex->keep_alive = ex->req->keep_alive &&
                         !atomic_load_explicit(&ex->srv->draining, memory_order_relaxed);
    }
    xd->keep_alive = ex->keep_alive;
    if (ex->rt->access_fd >= 0 && ex->req)
        keep_for_log(xd, ex);
    c->xd = xd;
    return 0;
}

void ex_defer_flags(struct http_exchange *ex, unsigned flags)
{
    ex->conn->xd->flags = flags;
}

void ex_sleep(struct http_exchange *ex, unsigned ms)
{
    ex->conn->xd->wake = timer_now() + ms;
}

void xd_exchange(struct http_exchange *ex, struct conn *c, struct worker *w)
{
    struct ex_deferred *xd = c->xd;
    memset(ex, 0, offsetof(struct http_exchange, path));
    ex->conn = c;
    ex->w = w;
    ex->srv = c->srv;
    ex->rt = c->rt;
    ex->client_addr = xd->client_addr;
    ex->loc = xd->loc;
    ex->date = w ? conn_thread_date(w) : NULL;
    ex->head_only = xd->head_only;
    ex->keep_alive = xd->keep_alive && !c->close_after &&
                     !atomic_load_explicit(&c->srv->draining, memory_order_relaxed);
    ex->responded = xd->responded;
    ex->status = xd->status;
    ex->state = xd->state;
    ex->redirects = xd->redirects;
    ex->path = (char *)(uintptr_t)""; /* the request's path is gone with its buffer */
}

void ex_for_conn(struct http_exchange *ex, struct conn *c, struct worker *w)
{
    xd_exchange(ex, c, w);
}

int xd_body(struct conn *c, struct worker *w, const char *data, size_t len, bool last)
{
    struct http_exchange ex;
    xd_exchange(&ex, c, w);
    return c->xd->ops->body(c->xd->inst, &ex, data, len, last);
}

int xd_writable(struct conn *c, struct worker *w)
{
    struct http_exchange ex;
    xd_exchange(&ex, c, w);
    return c->xd->ops->writable(c->xd->inst, &ex);
}

void xd_abort(struct conn *c, struct worker *w)
{
    struct ex_deferred *xd = c->xd;
    if (!xd)
        return;
    if (!xd->handed_over && !xd->done && xd->ops->abort) {
        struct http_exchange ex;
        xd_exchange(&ex, c, w);
        xd->ops->abort(xd->inst, &ex);
    }
    /* Like nginx: 499 when the client went away before an answer was sent. */
    log_exchange(c, w, xd->responded ? xd->status : 499);
    xd_free(c);
}

int xd_fail(struct conn *c, struct worker *w, int status)
{
    struct ex_deferred *xd = c->xd;
    struct http_exchange ex;
    xd_exchange(&ex, c, w);
    if (xd->ops->abort)
        xd->ops->abort(xd->inst, &ex); /* the handler's state goes; the answer is ours */
    xd->state = ex.state = NULL;
    ex.keep_alive = false;
    int rc = ex_send_error(&ex, status);
    xd_finish(c, w);
    return rc;
}

void xd_finish(struct conn *c, struct worker *w)
{
    log_exchange(c, w, c->xd->status);
    xd_free(c);
}

void xd_free(struct conn *c)
{
    if (c->xd)
        free(c->xd->log_buf);
    free(c->xd);
    c->xd = NULL;
}

bool xd_reads_body(const struct conn *c)
{
    return c->xd && (c->xd->flags & EX_WANT_BODY) && !(c->xd->flags & EX_TAKE_CONN) &&
           c->phase == PH_BODY;
}

int xd_schedule(struct conn *c)
{
    struct ex_deferred *xd = c->xd;
    int64_t due = xd->wake;
    xd->wake = 0;
    return timer_add(&c->srv->timers, &xd->timer, due);
}

/* ---- streamed responses --------------------------------------------------------------------- */

int ex_stream_begin(struct http_exchange *ex, struct response *r, int64_t length)
{
    struct ex_deferred *xd = ex->conn->xd;
    if (r->overflow)
        return ex_send_error(ex, 500);
    if (ex->conn->ssl)
        tls_http_add_headers(ex, r); /* HSTS, as finish_head() adds it */
    bool no_body = ex->head_only || http_status_has_no_body(r->status);
    if (length >= 0) {
        xd->framing = XF_LENGTH;
        xd->left = (uint64_t)length;
        if (!http_status_has_no_body(r->status))
            resp_header_u64(r, "Content-Length", 14, (uint64_t)length);
    } else if (http_status_has_no_body(r->status)) {
        xd->framing = XF_NONE;
    } else if (xd->http_minor >= 1) {
        xd->framing = XF_CHUNKED;
        resp_add(r, "Transfer-Encoding: chunked\r\n", 28);
    } else {
        xd->framing = XF_CLOSE; /* HTTP/1.0: the end of the body is the end of the connection */
        ex->keep_alive = false;
    }
    if (no_body)
        xd->framing = XF_NONE;
    if (!ex->keep_alive)
        resp_add(r, "Connection: close\r\n\r\n", 21);
    else if (xd->http_minor == 0)
        resp_add(r, "Connection: keep-alive\r\n\r\n", 26);
    else
        resp_add(r, "\r\n", 2);
    if (r->overflow)
        return ex_send_error(ex, 500);
    conn_note_response(ex, r->status);
    xd->responded = true;
    xd->status = r->status;
    struct iovec iov = { r->buf, r->len };
    return conn_send_or_park(ex, &iov, 1, false);
}

int ex_stream_write(struct http_exchange *ex, const void *data, size_t len)
{
    struct conn *c = ex->conn;
    struct ex_deferred *xd = c->xd;
    if (xd->framing == XF_NONE || len == 0)
        return 0;
    if (xd->framing == XF_LENGTH) {
        if (len > xd->left)
            len = (size_t)xd->left;
        xd->left -= len;
        if (len == 0)
            return 0;
    }
    if (len > EX_STREAM_MAX)
        return -EINVAL;
    xd->body_bytes += len;
    char hex[24];
    struct iovec iov[3];
    int n = 0;
    if (xd->framing == XF_CHUNKED) {
        static const char digits[] = "0123456789abcdef";
        size_t hl = 0;
        char tmp[16];
        for (size_t v = len; v; v >>= 4)
            tmp[hl++] = digits[v & 15];
        for (size_t i = 0; i < hl; i++)
            hex[i] = tmp[hl - 1 - i];
        hex[hl++] = '\r';
        hex[hl++] = '\n';
        iov[n++] = (struct iovec){ hex, hl };
    }
    iov[n++] = (struct iovec){ (void *)(uintptr_t)data, len };
    if (xd->framing == XF_CHUNKED)
        iov[n++] = (struct iovec){ (void *)(uintptr_t)"\r\n", 2 };
    if (c->sending)
        return -EINVAL; /* the caller must wait for writable() */
    int rc = conn_send_or_park(ex, iov, n, false);
    if (rc < 0)
        return rc;
    return c->sending ? 1 : 0;
}

int ex_stream_end(struct http_exchange *ex)
{
    struct conn *c = ex->conn;
    struct ex_deferred *xd = c->xd;
    int rc = 0;
    if (xd->framing == XF_CHUNKED) {
        if (c->sending) {
            /* Append the last chunk to what is parked: it always fits beside a stream write. */
            struct carry *out = c->out;
            if (out->cap - out->len < 5) {
                size_t have = out->len - out->off;
                struct carry *bigger = carry_get(have + 5);
                if (!bigger)
                    return -ENOMEM;
                memcpy(bigger->data, out->data + out->off, have);
                bigger->len = (uint32_t)have;
                carry_put(out);
                c->out = out = bigger;
            }
            memcpy(out->data + out->len, "0\r\n\r\n", 5);
            out->len += 5;
        } else {
            struct iovec iov = { (void *)(uintptr_t)"0\r\n\r\n", 5 };
            rc = conn_send_or_park(ex, &iov, 1, false);
        }
    } else if (xd->framing == XF_LENGTH && xd->left > 0) {
        c->close_after = true; /* the promised length was not reached: the client must see it */
    } else if (xd->framing == XF_CLOSE) {
        c->close_after = true;
    }
    xd->done = true;
    return rc;
}
