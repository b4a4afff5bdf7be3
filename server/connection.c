/* connection.c — the HTTP/1.1 connection state machine; see connection.h.
 *
 * One event = one call of conn_on_event() on the thread that detected it. The thread reads into
 * a buffer on its own stack, answers every complete request in it (pipelining) and then either
 * re-arms the handle for the next event or closes it. It never waits for the peer: a short
 * read re-arms EPOLLIN, a full socket buffer parks the response and re-arms EPOLLOUT. */
#include "connection.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "access_log.h"
#include "carry.h"
#include "handle_set.h"
#include "http_exchange.h"
#include "http_parser.h"
#include "handler.h"
#include "http_date.h"
#include "log.h"
#include "netaddr.h"
#include "proxy_protocol.h"
#include "router.h"
#include "runtime.h"
#include "server.h"
#include "stream.h"
#include "thread_pool.h"
#include "tls_http.h"
#include "transport.h"

#define READ_BUF_SIZE (64 * 1024)      /* the processing thread's request buffer */
#define SMALL_FILE_MAX (16 * 1024)     /* files up to this go out in one writev with the head */
#define SENDFILE_CHUNK (256 * 1024)
#define FLUSH_BUDGET (4 * 1024 * 1024) /* bytes sent per event before letting others run */
#define LINGER_MS 5000                 /* how long to drain input after a closing response */
#define GATHER_MAX (32 * 1024)         /* pipelined responses gathered for one write */
#define SEND_IOV_MAX 8                 /* pieces of one write: gathered bytes + a response */

static void conn_on_event(struct event_handler *eh, uint32_t events, struct worker *w);
static void conn_close(struct conn *c);
static const struct event_handler_ops conn_ops = { .handle_event = conn_on_event };

/* ---- lifecycle ---------------------------------------------------------------------------- */

int conn_create(struct server *srv, const struct listener *l, int fd,
                const struct sockaddr_storage *peer)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return -ENOMEM;
    }
    c->eh.fd = fd;
    c->eh.ops = &conn_ops;
    c->srv = srv;
    c->rt = server_runtime(srv);
    c->tp = &transport_plain;
    c->listener = l;
    c->hs = l->hs;
    c->file_fd = -1;
    if (peer->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)peer;
        c->peer_addr = in6->sin6_addr;
        c->peer_port = in6->sin6_port;
    } else {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)peer;
        c->peer_port = in4->sin_port;
        c->peer_addr.s6_addr[10] = 0xff;
        c->peer_addr.s6_addr[11] = 0xff;
        memcpy(&c->peer_addr.s6_addr[12], &in4->sin_addr, 4);
    }
    http_parser_init(&c->parser);
    c->proxy_header = l->addr.proxy_protocol;
    if (l->addr.tls && transport_tls_attach(c, c->rt->tls) < 0) {
        runtime_unref(c->rt);
        close(fd);
        free(c);
        server_conn_closed(srv);
        return -ENOMEM;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    pthread_mutex_lock(&srv->conns_lock);
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    pthread_mutex_unlock(&srv->conns_lock);

    atomic_store_explicit(&c->deadline,
                          now_ms() + (c->handshaking ? c->rt->cfg.timeout_handshake
                                                     : c->rt->cfg.timeout_header),
                          memory_order_relaxed);
    atomic_store_explicit(&c->armed, ARMED_IDLE, memory_order_release);
    int rc = hs_add(c->hs, &c->eh, EPOLLIN);
    if (rc < 0) {
        log_error("epoll_ctl add: %s", strerror(-rc));
        atomic_store(&c->armed, ARMED_NO); /* the sweep must not touch it: never registered */
        conn_close(c);
        return rc;
    }
    return 0;
}

/* Done with the file being sent: give it back to its owner or close it. */
static void conn_drop_file(struct conn *c)
{
    if (c->file_fd < 0)
        return;
    if (c->file_release)
        c->file_release(c->file_ref);
    else
        close(c->file_fd);
    c->file_fd = -1;
    c->file_release = NULL;
    c->file_ref = NULL;
    c->file_left = 0;
}

static void conn_close(struct conn *c)
{
    struct server *srv = c->srv;
    /* Unlink first: once the sweep can no longer see us, the fd may be closed safely. */
    pthread_mutex_lock(&srv->conns_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&srv->conns_lock);
    conn_free_stopped(c);
    server_conn_closed(srv);
}

void conn_free_stopped(struct conn *c)
{
    xd_abort(c, NULL);
    if (c->tp->release)
        c->tp->release(c);
    close(c->eh.fd);
    conn_drop_file(c);
    carry_put(c->in);
    carry_put(c->out);
    runtime_unref(c->rt);
    free(c);
}

#define DEADLINE_KEEP INT64_MIN

/* Hand the connection back to the handle set, to expire at `deadline` (monotonic ms;
 * DEADLINE_KEEP: the one it has). `kind` is ARMED_BUSY, ARMED_IDLE or ARMED_LINGER. */
static void conn_arm_until(struct conn *c, uint32_t events, int kind, int64_t deadline)
{
    if (c->tp_want) {
        events = c->tp_want; /* the transport must first move bytes the other way */
        c->tp_want = 0;
    }
    if (deadline != DEADLINE_KEEP)
        atomic_store_explicit(&c->deadline, deadline, memory_order_relaxed);
    uint8_t view = kind == ARMED_IDLE        ? CV_IDLE
                   : c->phase == PH_LINGER   ? CV_CLOSING
                   : (events & EPOLLOUT)     ? CV_WRITING
                                             : CV_READING;
    atomic_store_explicit(&c->view, view, memory_order_relaxed);
    /* Publish `armed` before the handle is live: afterwards another thread may own it. */
    atomic_store_explicit(&c->armed, kind, memory_order_release);
    int rc = hs_rearm(c->hs, &c->eh, events);
    if (rc < 0) {
        /* Cannot happen for a registered fd; if it does, nobody else can see the handle. */
        log_error("epoll_ctl mod: %s", strerror(-rc));
        atomic_store_explicit(&c->armed, ARMED_NO, memory_order_relaxed);
        conn_close(c);
    }
}

/* The same, to expire `timeout_ms` from now, or (keep_deadline) when it was going to. */
static void conn_arm(struct conn *c, uint32_t events, int kind, unsigned timeout_ms,
                     bool keep_deadline)
{
    conn_arm_until(c, events, kind, keep_deadline ? DEADLINE_KEEP : now_ms() + timeout_ms);
}

/* When a request head or body that began at `start` and has brought `bytes` so far must be
 * complete: `base` after its start, a second later for every `rate` bytes received (rate 0:
 * never later), but no later than `max` after its start (0: no such cap; below base: base).
 * Apache's RequestReadTimeout with MinRate: an honest client on a slow link keeps earning
 * time, a trickle does not. */
static int64_t read_deadline(int64_t start, uint64_t bytes, unsigned base, unsigned max,
                             unsigned rate)
{
    uint64_t ms = base;
    if (rate)
        ms += bytes * 1000 / rate;
    if (max && ms > (max > base ? max : base))
        ms = max > base ? max : base;
    return start + (int64_t)(ms < INT32_MAX ? ms : INT32_MAX);
}

/* Start counting a request body's time and bytes (its head has just been read). */
static void body_begins(struct conn *c)
{
    c->phase = PH_BODY;
    c->phase_start = now_ms();
}

static int64_t body_deadline(const struct conn *c)
{
    const struct config *cfg = &c->rt->cfg;
    return read_deadline(c->phase_start, c->body.wire, cfg->timeout_body, cfg->timeout_body_max,
                         cfg->timeout_body_min_rate);
}

void conn_sweep(struct server *srv, int64_t now, bool idle_too, bool all)
{
    pthread_mutex_lock(&srv->conns_lock);
    for (struct conn *c = srv->conns; c; c = c->next) {
        int a = atomic_load_explicit(&c->armed, memory_order_acquire);
        if (a != ARMED_BUSY && a != ARMED_IDLE && a != ARMED_LINGER)
            continue; /* being processed: its thread re-arms it with a fresh deadline */
        bool expired = all || atomic_load_explicit(&c->deadline, memory_order_relaxed) <= now;
        /* Draining: an idle or lingering connection goes once the kernel has delivered all it
         * holds for it (SIOCOUTQ: unsent plus unacknowledged bytes). The process exits when the
         * last connection is gone, and bytes still queued could then be lost (a container's
         * network namespace goes with it); the tick re-checks until the queue is empty. */
        int queued = 0;
        bool drained = !expired && idle_too && (a == ARMED_IDLE || a == ARMED_LINGER) &&
                       ioctl(c->eh.fd, SIOCOUTQ, &queued) == 0 && queued == 0;
        /* The CAS loses against a thread that took the connection meanwhile. The list lock
         * keeps the fd open while we shut it down; the shutdown wakes the handle, and the
         * thread that gets the event sees ARMED_KILLED and closes it. */
        if ((expired || drained) && atomic_compare_exchange_strong(&c->armed, &a, ARMED_KILLED))
            shutdown(c->eh.fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&srv->conns_lock);
}

/* The response in flight is complete and the connection must close. Unless the client is known
 * to have nothing more to send, half-close and drain its input for a while, so that a reset
 * caused by unread data cannot destroy the response before the client has read it. */
static void conn_finish_close(struct conn *c, bool linger)
{
    xd_abort(c, NULL);
    /* While draining, the process exits as soon as the last connection is gone, and bytes still
     * queued in the kernel could then be lost (a container's network namespace goes with it):
     * linger, and let the drain sweep close the connection once its send queue is empty. */
    if (atomic_load_explicit(&c->srv->draining, memory_order_relaxed))
        linger = true;
    if (!linger) {
        conn_close(c);
        return;
    }
    c->tp->shutdown(c);
    c->phase = PH_LINGER;
    carry_put(c->in);
    c->in = NULL;
    conn_arm(c, EPOLLIN, ARMED_LINGER, LINGER_MS, false);
}

static void conn_linger(struct conn *c)
{
    char buf[16384];
    for (int i = 0; i < 16; i++) {
        ssize_t n = c->tp->read(c, buf, sizeof(buf));
        if (n == -EAGAIN)
            break;
        if (n <= 0) {
            conn_close(c); /* the client closed too (or reset): done */
            return;
        }
    }
    /* Drained for now, or this event's share is used up while the client is still sending:
     * wait for more, within the deadline set when lingering began. */
    conn_arm(c, EPOLLIN, ARMED_LINGER, LINGER_MS, true);
}

/* ---- sending ------------------------------------------------------------------------------ */

/* Send what is parked: the carried bytes, then the file. Returns 0 when everything is sent,
 * -EAGAIN when the socket is full (or this event's budget is spent), or -errno. */
int conn_flush(struct conn *c, struct worker *w)
{
    size_t budget = FLUSH_BUDGET;
    while (c->out) {
        struct iovec iov = { c->out->data + c->out->off, c->out->len - c->out->off };
        ssize_t n = c->tp->writev(c, &iov, 1, c->file_left > 0);
        if (n < 0)
            return (int)n;
        atomic_fetch_add_explicit(&w->stats.bytes_out, (uint64_t)n, memory_order_relaxed);
        c->out->off += (uint32_t)n;
        if (c->out->off == c->out->len) {
            carry_put(c->out);
            c->out = NULL;
        }
    }
    while (c->file_left > 0) {
        if (budget == 0)
            return -EAGAIN;
        size_t chunk = (size_t)c->file_left < SENDFILE_CHUNK ? (size_t)c->file_left : SENDFILE_CHUNK;
        ssize_t n = c->tp->sendfile(c, c->file_fd, &c->file_off, chunk);
        if (n < 0)
            return (int)n;
        if (n == 0)
            return -EIO; /* the file shrank under us: the promised length cannot be kept */
        atomic_fetch_add_explicit(&w->stats.bytes_out, (uint64_t)n, memory_order_relaxed);
        c->file_left -= n;
        budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
    }
    conn_drop_file(c);
    return 0;
}

/* Append Content-Length (unless the status forbids a body), Connection and the blank line. */
static void finish_head(struct http_exchange *ex, struct response *r, uint64_t body_len)
{
    if (ex->conn->ssl)
        tls_http_add_headers(ex, r);
    if (!r->has_length && !http_status_has_no_body(r->status))
        resp_header_u64(r, "Content-Length", 14, body_len);
    if (!ex->keep_alive)
        RESP_LIT(r, "Connection: close\r\n\r\n");
    else if (ex->req ? ex->req->http_minor == 0 : ex->conn->xd && ex->conn->xd->http_minor == 0)
        RESP_LIT(r, "Connection: keep-alive\r\n\r\n");
    else
        RESP_LIT(r, "\r\n");
}

/* Keep a whole response for one write with the responses to the requests that follow it in
 * this read (pipelining): copied behind what is gathered already, in `out`. Returns false when
 * it does not fit (it is then written at once, with what was gathered before it). */
static bool gather_append(struct conn *c, const struct iovec *iov, int iovcnt, size_t total)
{
    if (!c->out) {
        if (total > GATHER_MAX)
            return false;
        c->out = carry_get(CARRY_MAX);
        if (!c->out)
            return false;
        c->gathered = true;
    } else if (!c->gathered || c->out->len + total > GATHER_MAX) {
        return false;
    }
    for (int i = 0; i < iovcnt; i++) {
        memcpy(c->out->data + c->out->len, iov[i].iov_base, iov[i].iov_len);
        c->out->len += (uint32_t)iov[i].iov_len;
    }
    return true;
}

/* Write the gathered responses. What the socket does not take stays parked (`sending`).
 * Returns 0 or -errno. */
static int conn_flush_gathered(struct conn *c, struct worker *w)
{
    c->gathered = false;
    struct iovec iov = { c->out->data + c->out->off, c->out->len - c->out->off };
    ssize_t n = c->tp->writev(c, &iov, 1, false);
    if (n < 0 && n != -EAGAIN)
        return (int)n;
    if (n < 0)
        n = 0;
    atomic_fetch_add_explicit(&w->stats.bytes_out, (uint64_t)n, memory_order_relaxed);
    c->out->off += (uint32_t)n;
    if (c->out->off == c->out->len) {
        carry_put(c->out);
        c->out = NULL;
    } else {
        c->sending = true;
    }
    return 0;
}

/* One write of the gathered bytes (`parked` of them) followed by iov[]. Kept apart so that
 * the common path of conn_send_or_park has no array on its stack. */
static __attribute__((noinline)) ssize_t write_behind_gathered(struct conn *c, size_t parked,
                                                               const struct iovec *iov,
                                                               int iovcnt, bool more)
{
    struct iovec all[SEND_IOV_MAX];
    int n = 0;
    all[n++] = (struct iovec){ c->out->data + c->out->off, parked };
    for (int i = 0; i < iovcnt; i++)
        all[n++] = iov[i];
    return c->tp->writev(c, all, n, more);
}

/* Write iov[] at once (behind any gathered responses, in the same write); park whatever the
 * socket did not take. Returns 0 or -errno. */
int conn_send_or_park(struct http_exchange *ex, struct iovec *iov, int iovcnt, bool more)
{
    struct conn *c = ex->conn;
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    if (c->gather && !more && !c->xd && !c->sending && gather_append(c, iov, iovcnt, total))
        return 0;
    if (c->gathered && iovcnt >= SEND_IOV_MAX) {
        int rc = conn_flush_gathered(c, ex->w); /* cannot happen: callers send <= 3 pieces */
        if (rc < 0)
            return rc;
    }
    /* Bytes already parked (an interim 100 Continue) go first: queue behind them. Gathered
     * bytes go out in the same write as this response. */
    size_t parked = c->out ? c->out->len - c->out->off : 0;
    size_t written = 0; /* of iov[] */
    if (!parked) {
        ssize_t sent = c->tp->writev(c, iov, iovcnt, more);
        if (sent < 0 && sent != -EAGAIN)
            return (int)sent;
        if (sent < 0)
            sent = 0;
        atomic_fetch_add_explicit(&ex->w->stats.bytes_out, (uint64_t)sent, memory_order_relaxed);
        written = (size_t)sent;
    } else if (c->gathered) {
        ssize_t sent = write_behind_gathered(c, parked, iov, iovcnt, more);
        c->gathered = false;
        if (sent < 0 && sent != -EAGAIN)
            return (int)sent;
        if (sent < 0)
            sent = 0;
        atomic_fetch_add_explicit(&ex->w->stats.bytes_out, (uint64_t)sent, memory_order_relaxed);
        size_t from_out = (size_t)sent < parked ? (size_t)sent : parked;
        c->out->off += (uint32_t)from_out;
        parked -= from_out;
        if (!parked) {
            carry_put(c->out);
            c->out = NULL;
        }
        written = (size_t)sent - from_out;
    }
    size_t left = total - written;
    if (left == 0)
        return 0;
    struct carry *out = c->out;
    if (!out || out->cap - out->len < left) {
        out = carry_get(parked + left);
        if (!out)
            return -ENOMEM;
        if (parked) {
            memcpy(out->data, c->out->data + c->out->off, parked);
            out->len = (uint32_t)parked;
            carry_put(c->out);
        }
    }
    size_t skip = written;
    for (int i = 0; i < iovcnt; i++) {
        if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
        }
        memcpy(out->data + out->len, (const char *)iov[i].iov_base + skip, iov[i].iov_len - skip);
        out->len += (uint32_t)(iov[i].iov_len - skip);
        skip = 0;
    }
    c->out = out;
    c->sending = true;
    return 0;
}

void conn_note_response(struct http_exchange *ex, int status)
{
    ex->responded = true;
    ex->status = status;
    if (!ex->keep_alive)
        ex->conn->close_after = true;
    if (ex->conn->xd) {
        ex->conn->xd->responded = true;
        ex->conn->xd->status = status;
    }
    atomic_fetch_add_explicit(&ex->w->stats.requests, 1, memory_order_relaxed);
}

int ex_send(struct http_exchange *ex, struct response *r, const void *body, size_t len)
{
    if (r->overflow)
        return ex_send_error(ex, 500);
    if (len > CARRY_MAX - RESP_HEAD_MAX)
        return ex_send_error(ex, 500); /* in-memory bodies are small by contract */
    finish_head(ex, r, len);
    if (r->overflow)
        return ex_send_error(ex, 500);
    conn_note_response(ex, r->status);
    if (ex->conn->xd)
        ex->conn->xd->done = true; /* a whole response ends a deferred exchange */
    struct iovec iov[2] = { { r->buf, r->len }, { (void *)(uintptr_t)body, len } };
    bool with_body = len && !ex->head_only && !http_status_has_no_body(r->status);
    ex->body_bytes = with_body ? len : 0;
    if (ex->conn->xd)
        ex->conn->xd->body_bytes = ex->body_bytes;
    return conn_send_or_park(ex, iov, with_body ? 2 : 1, false);
}

int ex_send_file_ref(struct http_exchange *ex, struct response *r, int fd, off_t off, size_t len,
                     void (*release)(void *ref), void *ref)
{
    struct conn *c = ex->conn;
    /* Hand the file to the connection first, so every path below releases it exactly once. */
    c->file_fd = fd;
    c->file_release = release;
    c->file_ref = ref;
    c->file_off = off;
    c->file_left = 0;
    if (r->overflow) {
        conn_drop_file(c);
        return ex_send_error(ex, 500);
    }
    finish_head(ex, r, len);
    if (r->overflow) {
        conn_drop_file(c);
        return ex_send_error(ex, 500);
    }
    conn_note_response(ex, r->status);
    ex->body_bytes = ex->head_only ? 0 : len;
    if (c->xd) {
        c->xd->done = true;
        c->xd->body_bytes = ex->body_bytes;
    }
    if (ex->head_only || len == 0) {
        conn_drop_file(c);
        struct iovec iov = { r->buf, r->len };
        return conn_send_or_park(ex, &iov, 1, false);
    }
    if (len <= SMALL_FILE_MAX) {
        char body[SMALL_FILE_MAX];
        ssize_t n = pread(fd, body, len, off);
        conn_drop_file(c);
        if (n < 0)
            return -errno;
        if ((size_t)n < len) {
            /* Shrank since fstat: send what exists and close, so the client sees it is short. */
            ex->keep_alive = false;
            c->close_after = true;
        }
        struct iovec iov[2] = { { r->buf, r->len }, { body, (size_t)n } };
        return conn_send_or_park(ex, iov, 2, false);
    }
    c->file_left = (off_t)len;
    struct iovec iov = { r->buf, r->len };
    int rc = conn_send_or_park(ex, &iov, 1, true);
    if (rc < 0 || c->sending)
        return rc; /* the head is parked; the file follows it on EPOLLOUT */
    rc = conn_flush(c, ex->w);
    if (rc == -EAGAIN) {
        c->sending = true;
        return 0;
    }
    return rc;
}

int ex_send_file(struct http_exchange *ex, struct response *r, int fd, off_t off, size_t len)
{
    return ex_send_file_ref(ex, r, fd, off, len, NULL, NULL);
}

int ex_send_error(struct http_exchange *ex, int status)
{
    char head[RESP_HEAD_MAX];
    char page[512];
    struct response r;
    resp_begin(&r, head, sizeof(head), status, ex->date);
    if (status == 405 || status == 501)
        RESP_LIT(&r, "Allow: GET, HEAD, OPTIONS\r\n");
    if (status >= 400 && (status == 400 || status == 408 || status == 413 || status == 414 ||
                          status == 431 || status == 505 || status == 501))
        ex->keep_alive = false; /* framing may be in doubt: answer, then close */
    size_t n = http_error_page(status, page, sizeof(page));
    RESP_LIT(&r, "Content-Type: text/html; charset=utf-8\r\n");
    return ex_send(ex, &r, page, n);
}

/* ---- receiving and dispatching ------------------------------------------------------------ */

const char *conn_thread_date(struct worker *w)
{
    time_t now = time(NULL);
    if (now != w->date_sec) {
        http_date_format(now, w->date);
        w->date_sec = now;
    }
    return w->date;
}

/* Answer one request whose head has been parsed. */
static int serve_request(struct conn *c, struct worker *w, struct http_request *req,
                         bool body_follows, uint8_t redirects)
{
    struct server *srv = c->srv;
    char path[EX_PATH_MAX]; /* deliberately not initialised: filled by the router */
    struct http_exchange ex = {
        .path = path,
        .conn = c,
        .w = w,
        .srv = srv,
        .rt = c->rt,
        .req = req,
        .date = conn_thread_date(w),
        .head_only = req->method == HTTP_HEAD,
        .keep_alive = req->keep_alive && !atomic_load_explicit(&srv->draining,
                                                               memory_order_relaxed),
        .redirects = redirects,
    };
    /* A client waiting for 100-continue that gets a final answer may never send the body, so
     * the body's framing is in doubt: close after the response. */
    if (body_follows && req->expect_continue)
        ex.keep_alive = false;
    netaddr_real_client(&c->rt->cfg.trusted_proxies, c->rt->cfg.real_ip_forwarded,
                        &c->peer_addr, req, &ex.client_addr);
    int status = !c->ssl && c->rt->cfg.tls_redirect_http ? tls_http_redirect(&ex)
                                                         : router_dispatch(&ex);
    /* A handler returns -1 when sending failed after it responded (e.g. the file shrank under
     * sendfile): the promised length cannot be kept, so the connection must close. */
    int rc = status < 0 ? -1 : 0;
    if (c->xd && !ex.responded && status >= 400)
        xd_free(c); /* deferred, then failed after all: answer with the error */
    else if (c->xd && status < 0)
        return -1; /* the deferred exchange's connection failed: close (and abort it) */
    if (!ex.responded && !c->xd) {
        status = status >= 400 ? status : 500;
        rc = static_send_error_page(&ex, status);
        if (rc == -1)
            rc = ex_send_error(&ex, status);
    }
    if (!c->xd)
        access_log_write(&ex); /* a deferred exchange is logged when it ends */
    c->requests++;
    if (!ex.keep_alive)
        c->close_after = true;
    return rc;
}

/* Answer a request that failed to parse, then close. */
static int serve_parse_error(struct conn *c, struct worker *w, int status)
{
    struct http_exchange ex = {
        .conn = c, .w = w, .srv = c->srv, .rt = c->rt, .req = NULL, .date = conn_thread_date(w),
        .keep_alive = false, .client_addr = c->peer_addr,
    };
    c->close_after = true;
    int rc = ex_send_error(&ex, status);
    access_log_write(&ex);
    return rc;
}

/* Answer a request that cannot be served (parse error, broken body) and close the connection
 * once the answer is sent, lingering so the client can read it even while it is still sending. */
static void fail_and_close(struct conn *c, struct worker *w, int status)
{
    if (serve_parse_error(c, w, status) < 0) {
        conn_close(c);
        return;
    }
    c->phase = PH_HEAD; /* the rest of any body is drained by the lingering read */
    if (c->sending) {
        conn_arm(c, EPOLLOUT, ARMED_BUSY, c->rt->cfg.timeout_send, false);
        return;
    }
    conn_finish_close(c, true);
}

/* Keep buf[0..len) for the next event. Returns false when out of memory. */
static bool stash_input(struct conn *c, const char *buf, size_t len)
{
    if (len == 0)
        return true;
    c->in = carry_dup(buf, len);
    return c->in != NULL;
}

/* ---- deferred exchanges (stream.c) -------------------------------------------------------- */

/* A deferred exchange is in progress and the connection has nothing to do for it now: hand it
 * to whatever continues the exchange. This is the thread's last touch of the connection. */
static void conn_wait_deferred(struct conn *c, struct worker *w)
{
    const struct config *cfg = &c->rt->cfg;
    if (c->xd->flags & EX_TAKE_CONN) {
        atomic_store_explicit(&c->view, CV_HANDLER, memory_order_relaxed);
        c->xd->handed_over = true;
        /* The hand-over: from here the handler owns `c`. If it refuses (-1), it has released
         * its state and the connection is ours to close. */
        if (xd_writable(c, w) < 0)
            conn_close(c);
        return;
    }
    if (c->sending) {
        conn_arm(c, EPOLLOUT, ARMED_BUSY, cfg->timeout_send, false);
    } else if (c->xd->wake) {
        atomic_store_explicit(&c->view, CV_HANDLER, memory_order_relaxed);
        if (xd_schedule(c) < 0) /* parked: the timer owns `c` from here */
            conn_close(c);
    } else if (xd_reads_body(c)) {
        conn_arm_until(c, EPOLLIN, ARMED_BUSY, body_deadline(c));
    } else {
        conn_arm(c, EPOLLOUT, ARMED_BUSY, cfg->timeout_send, false); /* yield, then writable() */
    }
}

/* Keep the unread input and wait until the response in flight can be sent (the thread's last
 * touch of the connection). */
static void park_for_send(struct conn *c, const char *rest, size_t len)
{
    if (!stash_input(c, rest, len)) {
        conn_close(c);
        return;
    }
    conn_arm(c, EPOLLOUT, ARMED_BUSY, c->rt->cfg.timeout_send, false);
}

/* Keep the unread input (the next request, or the body a handler reads) and hand the
 * connection to its deferred exchange; closing it on failure aborts the exchange. */
static void park_for_exchange(struct conn *c, struct worker *w, const char *rest, size_t len)
{
    if (!stash_input(c, rest, len)) {
        conn_close(c);
        return;
    }
    conn_wait_deferred(c, w);
}

static void conn_serve(struct conn *c, struct worker *w);

/* Continue a connection whose owner has just changed (a callback returned, a handler gave it
 * back): wait for the deferred exchange, send what is parked, or read the next request. */
static void conn_resume(struct conn *c, struct worker *w)
{
    if (c->xd) {
        conn_wait_deferred(c, w);
        return;
    }
    if (c->sending) {
        conn_arm(c, EPOLLOUT, ARMED_BUSY, c->rt->cfg.timeout_send, false);
        return;
    }
    if (c->close_after && c->phase == PH_HEAD) {
        conn_finish_close(c, true);
        return;
    }
    conn_serve(c, w);
}

/* After a callback of the deferred exchange returned `rc`. */
static void conn_after_callback(struct conn *c, struct worker *w, int rc)
{
    if (rc < 0) {
        conn_close(c);
        return;
    }
    if (c->xd && c->xd->done) {
        xd_finish(c, w);
        if (atomic_load_explicit(&c->srv->draining, memory_order_relaxed))
            c->close_after = true;
    }
    conn_resume(c, w);
}

void conn_wake(struct conn *c, struct worker *w)
{
    conn_after_callback(c, w, xd_writable(c, w));
}

void conn_handback(struct conn *c, struct worker *w, enum conn_handback_how how,
                   const struct conn_redirect *redirect)
{
    struct ex_deferred saved = *c->xd;
    if (how == HANDBACK_CLOSE)
        xd_abort(c, w); /* logged as what was answered, or 499 */
    else
        xd_finish(c, w);
    if (how == HANDBACK_CLOSE) {
        conn_close(c);
        return;
    }
    if (atomic_load_explicit(&c->srv->draining, memory_order_relaxed))
        c->close_after = true;
    if (how == HANDBACK_REDIRECT) {
        /* An internal GET (RFC 3875 6.2.2): the request is rebuilt from the target and Host. */
        struct http_request req;
        HTTP_REQUEST_CLEAR(&req);
        req.method = saved.head_only ? HTTP_HEAD : HTTP_GET;
        req.method_name = saved.head_only ? SV("HEAD") : SV("GET");
        req.http_major = 1;
        req.http_minor = saved.http_minor;
        req.keep_alive = saved.keep_alive && !c->close_after;
        req.target = (struct strview){ redirect->target, redirect->target_len };
        const char *q = memchr(redirect->target, '?', redirect->target_len);
        req.path = (struct strview){ redirect->target,
                                     q ? (size_t)(q - redirect->target) : redirect->target_len };
        if (q)
            req.query = (struct strview){ q + 1, redirect->target_len - req.path.len - 1 };
        req.host = (struct strview){ redirect->host, redirect->host_len };
        req.host_count = redirect->host_len > 0;
        if (req.host_count)
            req.headers[req.nheaders++] = (struct http_header){ SV("Host"), req.host };
        if (serve_request(c, w, &req, false, (uint8_t)(saved.redirects + 1)) < 0) {
            conn_close(c);
            return;
        }
    }
    conn_resume(c, w);
}

int conn_pump_body(struct conn *c, http_body_cb sink, void *arg)
{
    char buf[READ_BUF_SIZE];
    size_t have = 0;
    if (c->in) {
        have = c->in->len - c->in->off;
        memcpy(buf, c->in->data + c->in->off, have);
        carry_put(c->in);
        c->in = NULL;
    }
    if (have == 0) {
        ssize_t n = c->tp->read(c, buf, sizeof(buf));
        if (n == -EAGAIN)
            return 0;
        if (n <= 0)
            return -1; /* the client closed (or failed) in the middle of the body */
        have = (size_t)n;
    }
    struct http_request unused;
    struct http_parse ps = { .parser = &c->parser, .cfg = &c->rt->cfg, .req = &unused,
                             .body = &c->body, .on_body = sink, .body_arg = arg };
    size_t used = 0;
    enum http_parse_result r = http_parse_body(&ps, buf, have, &used);
    if (r == HTTP_PARSE_INCOMPLETE)
        return 0;
    if (r != HTTP_PARSE_DONE)
        return -1;
    c->phase = PH_HEAD;
    if (used < have && !stash_input(c, buf + used, have - used))
        return -1;
    return 1;
}

struct body_sink {
    struct conn *c;
    struct worker *w;
};

/* http_body_cb: request body bytes for a deferred exchange that wants them. */
static int deliver_body(void *arg, const char *data, size_t len)
{
    struct body_sink *bs = arg;
    if (!bs->c->xd || bs->c->xd->done)
        return 0; /* answered already: the rest of the body is discarded */
    return xd_body(bs->c, bs->w, data, len, false) < 0 ? 500 : 0;
}

/* Read, parse and answer requests until the thread would have to wait. */
static void conn_serve(struct conn *c, struct worker *w)
{
    struct server *srv = c->srv;
    const struct config *cfg = &c->rt->cfg;
    char buf[READ_BUF_SIZE];
    struct http_request req;
    struct body_sink sink = { c, w };
    struct http_parse ps = { .parser = &c->parser, .cfg = cfg, .req = &req, .body = &c->body,
                             .body_arg = &sink };
    size_t have = 0, pos = 0;
    bool may_read = true;

    if (c->in) {
        memcpy(buf, c->in->data + c->in->off, c->in->len - c->in->off);
        have = c->in->len - c->in->off;
        carry_put(c->in);
        c->in = NULL;
    }

    for (;;) {
        if (c->proxy_header && have > 0) {
            in_port_t port = ntohs(c->peer_port);
            int n = proxy_protocol_parse(buf, have, &c->peer_addr, &port);
            if (n < 0) {
                conn_close(c); /* not from our proxy: nobody to answer */
                return;
            }
            if (n > 0) {
                c->peer_port = htons(port);
                c->proxy_header = false;
                pos = (size_t)n;
            }
        }
        while (pos < have && !c->proxy_header) {
            size_t used = 0;
            if (c->xd && !xd_reads_body(c)) {
                /* A deferred exchange is in progress: the next request waits for it. */
                park_for_exchange(c, w, buf + pos, have - pos);
                return;
            }
            if (c->phase == PH_BODY) {
                ps.on_body = xd_reads_body(c) ? deliver_body : NULL;
                enum http_parse_result r = http_parse_body(&ps, buf + pos, have - pos, &used);
                pos += used;
                if (r == HTTP_PARSE_DONE) {
                    c->phase = PH_HEAD;
                    if (c->xd && (c->xd->flags & EX_WANT_BODY) && !c->xd->done &&
                        xd_body(c, w, NULL, 0, true) < 0) {
                        conn_close(c);
                        return;
                    }
                }
                if (c->xd && c->xd->done)
                    xd_finish(c, w);
                if (r == HTTP_PARSE_ERROR && c->xd && !c->xd->responded) {
                    /* A handler reading the body has not answered yet: the client learns why
                     * (413, 400), then the connection closes. */
                    c->phase = PH_HEAD; /* the rest of the body is drained by the linger */
                    if (xd_fail(c, w, ps.status) < 0) {
                        conn_close(c);
                        return;
                    }
                    if (c->sending) {
                        conn_arm(c, EPOLLOUT, ARMED_BUSY, cfg->timeout_send, false);
                        return;
                    }
                    conn_finish_close(c, true);
                    return;
                }
                if (r != HTTP_PARSE_INCOMPLETE && r != HTTP_PARSE_DONE) {
                    /* The response was already sent; a broken body leaves framing unknown. */
                    conn_finish_close(c, true);
                    return;
                }
                if (c->sending) {
                    park_for_send(c, buf + pos, have - pos);
                    return;
                }
                if (r == HTTP_PARSE_INCOMPLETE)
                    break;
                if (c->xd)
                    continue; /* the loop's first check waits for the exchange */
                if (c->close_after) {
                    conn_finish_close(c, pos < have);
                    return;
                }
                continue;
            }
            if (atomic_load_explicit(&srv->rt, memory_order_relaxed) != c->rt) {
                /* Reloaded: the next request runs under the new configuration. */
                struct runtime *old = c->rt;
                c->rt = server_runtime(srv);
                runtime_unref(old);
                cfg = &c->rt->cfg;
                ps.cfg = cfg;
            }
            enum http_parse_result r = http_parse_head(&ps, buf + pos, have - pos, &used);
            if (r == HTTP_PARSE_INCOMPLETE)
                break;
            if (r == HTTP_PARSE_CLOSE) {
                /* No response (the HTTP/2 preface): close quietly, but half-close and drain
                 * rather than reset the connection under bytes the client already sent. */
                if (c->gathered && conn_flush_gathered(c, w) < 0) {
                    conn_close(c);
                    return;
                }
                if (c->sending) {
                    /* the answers before it first; then the lingering close (conn_on_event) */
                    c->close_after = true;
                    conn_arm(c, EPOLLOUT, ARMED_BUSY, cfg->timeout_send, false);
                    return;
                }
                conn_finish_close(c, true);
                return;
            }
            if (r == HTTP_PARSE_ERROR) {
                fail_and_close(c, w, ps.status);
                return;
            }
            pos += used;
            c->head_deadline = false;
            bool body_follows = r == HTTP_PARSE_HEAD;
            bool body_here = false; /* the whole body came with the head */
            if (body_follows) {
                /* Before answering, judge what has already arrived of the body (as nginx does):
                 * a body that is malformed or too large from its start is answered with 400 or
                 * 413 instead of a response to a request that was never valid. The check runs on
                 * a copy of the parser, so the bytes stay for a handler that reads the body (a
                 * deferred exchange, stream.c); for the others they are discarded after the
                 * response, where an error can only close. */
                llhttp_t probe = c->parser;
                struct http_body_count probe_count = c->body;
                struct http_parse check = ps;
                check.parser = &probe;
                check.body = &probe_count;
                check.on_body = NULL;
                size_t checked = 0;
                enum http_parse_result pr = http_parse_body(&check, buf + pos, have - pos, &checked);
                if (pr == HTTP_PARSE_ERROR) {
                    fail_and_close(c, w, check.status);
                    return;
                }
                body_here = pr == HTTP_PARSE_DONE;
            }
            /* The static handler discards bodies. A client waiting for 100-continue that has not
             * sent its body gets the final status instead and the connection closes
             * (serve_request): its body, if it sends it after all, is drained by the lingering
             * close, not read as requests. A handler that reads the body sends 100 Continue
             * itself (ex_defer, below). */
            if (body_follows && (!req.expect_continue || body_here))
                body_begins(c);
            /* More bytes after this request: its response may wait for the next ones, so
             * that the answers to one read leave in one write. */
            c->gather = pos < have && !body_follows;
            int served = serve_request(c, w, &req, body_follows && !body_here, 0);
            c->gather = false;
            if (served < 0) {
                conn_close(c);
                return;
            }
            if (c->gathered && !(pos < have && !c->xd && !c->close_after && c->phase == PH_HEAD) &&
                conn_flush_gathered(c, w) < 0) {
                conn_close(c);
                return;
            }
            if (c->xd && c->xd->done)
                xd_finish(c, w);
            if (c->xd && body_follows && req.expect_continue &&
                (c->xd->flags & (EX_WANT_BODY | EX_TAKE_CONN)))
                body_begins(c); /* it reads the body: 100 Continue went out (ex_defer) */
            if (c->xd && (c->xd->flags & EX_TAKE_CONN)) {
                /* The handler takes the connection, with the rest of the input (its body). */
                park_for_exchange(c, w, buf + pos, have - pos);
                return;
            }
            if (c->sending) {
                park_for_send(c, buf + pos, have - pos);
                return;
            }
            if (c->close_after && c->phase == PH_HEAD && !c->xd) {
                conn_finish_close(c, pos < have || body_follows);
                return;
            }
        }
        if (c->xd && !xd_reads_body(c)) {
            park_for_exchange(c, w, buf + pos, have - pos);
            return;
        }

        if (c->gathered) {
            /* The answers to this read leave together, before waiting for more. */
            if (conn_flush_gathered(c, w) < 0) {
                conn_close(c);
                return;
            }
            if (c->sending) {
                park_for_send(c, buf + pos, have - pos);
                return;
            }
        }

        /* Need more input. */
        if (pos > 0) {
            memmove(buf, buf + pos, have - pos);
            have -= pos;
            pos = 0;
        }
        if (have == sizeof(buf)) {
            /* Only a head can fill the buffer: bodies are consumed as they come. */
            fail_and_close(c, w, 431);
            return;
        }
        ssize_t n = may_read ? c->tp->read(c, buf + have, sizeof(buf) - have) : -EAGAIN;
        if (n > 0) {
            /* A short read means the socket is drained: next time, re-arm instead of issuing a
             * read that would only return EAGAIN. */
            may_read = (size_t)n == sizeof(buf) - have;
            have += (size_t)n;
            continue;
        }
        if (n == 0 || n != -EAGAIN) {
            conn_close(c); /* peer closed (mid-request: there is nobody to answer) or error */
            return;
        }
        if (!stash_input(c, buf, have)) {
            conn_close(c);
            return;
        }
        if (c->phase == PH_BODY) {
            conn_arm_until(c, EPOLLIN, ARMED_BUSY, body_deadline(c));
        } else if (c->handshaking) {
            /* the whole handshake must finish within timeout_handshake from accept */
            conn_arm(c, EPOLLIN, ARMED_IDLE, cfg->timeout_handshake, true);
        } else if (have > 0) {
            /* A head has begun: its time counts from the read that brought its first byte. */
            if (!c->head_deadline) {
                c->head_deadline = true;
                c->phase_start = now_ms();
            }
            conn_arm_until(c, EPOLLIN, ARMED_BUSY,
                           read_deadline(c->phase_start, have, cfg->timeout_header,
                                         cfg->timeout_header_max, cfg->timeout_header_min_rate));
        } else if (atomic_load_explicit(&srv->draining, memory_order_relaxed) && c->requests) {
            conn_finish_close(c, true); /* between requests while draining: close, gracefully */
        } else {
            conn_arm(c, EPOLLIN, ARMED_IDLE,
                     c->requests ? cfg->timeout_keepalive : cfg->timeout_header, false);
        }
        return;
    }
}

static void conn_on_event(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct conn *c = (struct conn *)eh;
    (void)events;
    if (atomic_exchange_explicit(&c->armed, ARMED_NO, memory_order_acq_rel) == ARMED_KILLED) {
        conn_close(c); /* expired by the timer sweep (timeout, drain) */
        return;
    }
    if (c->phase == PH_LINGER) {
        conn_linger(c);
        return;
    }
    if (c->sending) {
        int rc = conn_flush(c, w);
        if (rc == -EAGAIN) {
            conn_arm(c, EPOLLOUT, ARMED_BUSY, c->rt->cfg.timeout_send, false);
            return;
        }
        if (rc < 0) {
            conn_close(c);
            return;
        }
        c->sending = false;
        if (c->close_after && c->phase == PH_HEAD && !c->xd) {
            /* The request may have had a body we did not read (an error, 100-continue) or
             * further requests may follow: linger rather than reset under them. */
            conn_finish_close(c, true);
            return;
        }
    }
    if (c->xd && !xd_reads_body(c)) {
        /* The socket drained (or the exchange yielded): the handler may continue. */
        conn_after_callback(c, w, xd_writable(c, w));
        return;
    }
    conn_serve(c, w);
}
