/* connection.c — the HTTP/1.1 connection state machine; see connection.h.
 *
 * One event = one step: conn_on_event() claims the connection and runs the step of its state.
 * A step reads into a buffer on the thread's stack, answers every complete request in it
 * (pipelining), writes, or lets the deferred exchange run; then conn_next() — the one place
 * where a connection decides what it waits for next — hands it to the handle set, the timer,
 * its exchange's holder, or closes it. No step ever waits for the peer: a short read parks it
 * for EPOLLIN, a full socket buffer for EPOLLOUT.
 *
 * The connection is also its exchanges' sink (sink.h): it sends what they write, and it owns
 * the handles a deferred exchange watches. Those live in a private epoll set that holds the
 * socket too, and that set is the connection's one handle in the shared handle set while it
 * exists: so the EPOLLONESHOT rule — one event, one thread — covers the exchange's pipes and
 * timers as it covers the socket, and no lock is needed. */
#include "conn/connection.h"

#include <assert.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/carry.h"
#include "base/clock.h"
#include "conn/acceptor.h"
#include "conn/client_limits.h"
#include "lf/handle_set.h"
#include "lf/handle_set_edge.h"
#include "http/http_parser.h"
#include "log/log.h"
#include "base/netaddr.h"
#include "http/proxy_protocol.h"
#include "conf/runtime.h"
#include "lf/thread_pool.h"
#include "lf/timer.h"
#include "conn/transport.h"

#define READ_BUF_SIZE (64 * 1024)      /* the processing thread's request buffer */
#define SENDFILE_CHUNK (256 * 1024)
#define COPY_CHUNK (64 * 1024)         /* a file sent by copy: bytes read per write */
#define FLUSH_BUDGET (4 * 1024 * 1024) /* bytes sent per event before letting others run */
#define LINGER_MS 5000                 /* how long to drain input after a closing response */
#define GATHER_MAX (32 * 1024)         /* pipelined responses gathered for one write */
#define SEND_IOV_MAX 8                 /* pieces of one write: gathered bytes + a response */
#define WATCH_EVENTS_MAX 16            /* watched-handle events taken per wake-up */
#define NO_DEADLINE INT64_MAX
#define DEADLINE_KEEP INT64_MIN

_Static_assert((int)WATCH_IN == (int)EPOLLIN && (int)WATCH_OUT == (int)EPOLLOUT &&
                   (int)WATCH_ERR == (int)EPOLLERR && (int)WATCH_HUP == (int)EPOLLHUP,
               "sink.h's WATCH_* are epoll's events");

const char *const conn_state_names[CS_STATES] = { "idle", "head", "body", "sending",
                                                  "exchange", "lingering" };

/* close_after: why the connection closes once the response in flight is sent. */
enum { CLOSE_NO = 0, CLOSE_CLEAN, CLOSE_LINGER };

/* What a reading step may find it must do next. */
enum step { GO_ON, NEED_INPUT, HANDED_ON };

/* The read buffer of one step (on the thread's stack). */
struct input {
    char *buf;
    size_t have, pos;
    bool may_read;   /* the last read filled the buffer: the socket may hold more */
    bool read_full;  /* ... and that read happened in this step (not merely assumed) */
};

static void conn_on_event(struct event_handler *eh, uint32_t events, struct worker *w);
static void watch_set_on_event(struct event_handler *eh, uint32_t events, struct worker *w);
static const struct event_handler_ops conn_ops = { .handle_event = conn_on_event };
static const struct event_handler_ops watch_set_ops = { .handle_event = watch_set_on_event };
static const struct sink_ops conn_sink_ops;

static void conn_close(struct conn *c);
static void conn_teardown(struct conn *c);
static void conn_next(struct conn *c, struct worker *w);
static void step_read(struct conn *c, struct worker *w);

static inline struct conn_list *conn_list_of(const struct conn *c)
{
    return c->listener->conns;
}

/* Edge mode (handle_set.h): the connection stops before its socket is drained of `events`. */
static inline void conn_more(struct conn *c, uint32_t events)
{
    hs_more(c->listener->hs, &c->eh, events);
}

static inline const struct exchange_layer *layer(const struct conn *c)
{
    return c->listener->conns->layer;
}

static inline struct conn *conn_of(const struct sink *s)
{
    return (struct conn *)((uintptr_t)s - offsetof(struct conn, sink));
}

/* Response bytes wait for the socket (not merely gathered behind pipelined requests). */
static inline bool sending(const struct conn *c)
{
    return (c->out && !c->gathered) || c->file_left > 0;
}

static inline bool draining(const struct conn *c)
{
    return atomic_load_explicit(&conn_list_of(c)->draining, memory_order_relaxed);
}

static inline void set_state(struct conn *c, enum conn_state st)
{
    atomic_store_explicit(&c->state, (uint8_t)st, memory_order_relaxed);
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

/* A new connection that cannot be taken on (no memory for it, or for its registration):
 * answer 503 on the raw socket when the listener speaks plain HTTP (a static response, nothing
 * allocated; request bytes already there are read and dropped first, so that the close does
 * not reset the answer). Best effort; the caller closes the socket. */
static void refuse_raw(const struct listener *l, int fd)
{
    static const char resp[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                               "Retry-After: 1\r\nConnection: close\r\n\r\n";
    if (l->addr.tls)
        return;
    char drain[4096];
    for (int i = 0; i < 4 && recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0; i++)
        ;
    ssize_t n = send(fd, resp, sizeof(resp) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)n;
    shutdown(fd, SHUT_WR);
}

static struct request_ctx request_ctx_of(struct conn *c, const struct http_request *req,
                                         bool body_follows);

/* The slots of the request in flight (client_limits.h): its response is complete. */
_Static_assert(LIMIT_REQ_SLOTS == sizeof(((struct conn *)0)->limit_req) / sizeof(uint32_t),
               "a request's limit slots fit struct conn");
static void release_request_limits(struct conn *c)
{
    for (int k = 0; k < LIMIT_REQ_SLOTS; k++)
        limits_release(c->rt, &c->limit_req[k]);
}

/* The client holds too many connections (limit_conn_per_ip): answer 429 at once, without
 * waiting for its request, so that nothing of it is kept; what it sent so far is read and
 * dropped first, so that the close that follows is not a reset. Over TLS, nothing: an answer
 * would cost a handshake. The caller closes. */
static void refuse_connection(struct conn *c, struct worker *w, bool tls)
{
    if (tls)
        return;
    char buf[4096];
    for (int i = 0; i < 4 && read(c->eh.fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf); i++)
        ;
    struct request_ctx rc = request_ctx_of(c, NULL, false);
    layer(c)->error(&c->sink, w, &rc, 429);
}

int conn_create(const struct listener *l, int fd, const struct sockaddr_storage *peer,
                struct worker *w, struct conn **held)
{
    struct conn_list *cl = l->conns;
    struct conn *c = calloc(1, sizeof(*c));
    if (!c) {
        refuse_raw(l, fd);
        close(fd);
        conn_list_closed(cl); /* the acceptor counted it */
        return -ENOMEM;
    }
    c->eh.fd = fd;
    c->eh.ops = &conn_ops;
    c->sink.ops = &conn_sink_ops;
    c->rt = runtime_current(&cl->current);
    c->tp = &transport_plain;
    c->listener = l;
    c->file_fd = -1;
    c->limit_conn = c->limit_req[0] = c->limit_req[1] = LIMIT_NONE;
    if (peer->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)peer;
        c->peer_addr = in6->sin6_addr;
        c->peer_port = in6->sin6_port;
    } else if (peer->ss_family == AF_UNIX) {
        netaddr_set_unix(&c->peer_addr); /* "unix:", port 0: netaddr.h */
    } else {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)peer;
        c->peer_port = in4->sin_port;
        netaddr_map_v4(&in4->sin_addr, &c->peer_addr);
    }
    http_parser_init(&c->parser);
    c->proxy_header = l->addr.proxy_protocol;
    /* Counted now, unless a PROXY header is to tell who the client is (proxy_input). */
    if (!c->proxy_header &&
        limits_connection_open(c->rt, &c->peer_addr, &c->limit_conn, &c->limit_at_request) < 0) {
        refuse_connection(c, w, l->addr.tls);
        conn_free_stopped(c);
        conn_list_closed(cl);
        return -EBUSY;
    }
    if (l->addr.tls && transport_tls_attach(c, c->rt->tls) < 0) {
        conn_free_stopped(c); /* gives back the slot limits_connection_open took */
        conn_list_closed(cl);
        return -ENOMEM;
    }
    /* TCP_NODELAY comes from the listener (acceptor_tune). */
    if (hs_edge(l->hs))
        c->tp_flags |= TP_EDGE;
    pthread_mutex_lock(&cl->lock);
    c->next = cl->head;
    if (cl->head)
        cl->head->prev = c;
    cl->head = c;
    pthread_mutex_unlock(&cl->lock);

    const struct config *cfg = &c->rt->cfg;
    bool tls_first = c->tp_flags & TP_HANDSHAKING;
    unsigned first_wait = tls_first ? cfg->timeout_handshake : cfg->timeout_header;
    atomic_store_explicit(&c->deadline, clock_now_ms() + first_wait, memory_order_relaxed);
    if (held) {
        *held = c; /* CONN_OWNED (calloc): the sweep keeps off; its first park registers it */
        return 0;
    }
    atomic_store_explicit(&c->armed, CONN_PARKED, memory_order_release);
    int rc = hs_add(l->hs, &c->eh, hs_edge(l->hs) ? EPOLLIN | EPOLLRDHUP : EPOLLIN);
    if (rc < 0) {
        log_error("epoll_ctl add: %s", strerror(-rc));
        atomic_store(&c->armed, CONN_OWNED); /* the sweep must not touch it: never registered */
        refuse_raw(l, fd);
        conn_close(c);
        return rc;
    }
    return 0;
}

/* tcp_notsent_lowat: while a large file is sent, the socket holds at most that many bytes it
 * has not sent yet, so that the file waits in the page cache rather than in the socket
 * (docs/PERFORMANCE.md, "Large files"). Only then: a streamed response (CGI) must be able to
 * use the whole socket buffer, or a client that sends a whole body before reading the echo of
 * it would be left waiting on the script, and the script on the client. 0 gives the socket
 * back to the system's setting. */
static void conn_set_lowat(struct conn *c, size_t bytes)
{
    int v = (int)bytes;
    setsockopt(c->eh.fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof(v));
    c->lowat = bytes != 0;
}

/* Done with the file being sent: give it back to its owner. */
static void conn_drop_file(struct conn *c)
{
    if (c->file_fd < 0)
        return;
    if (c->lowat)
        conn_set_lowat(c, 0);
    c->file_copy = false;
    c->file_release(c->file_ref);
    c->file_fd = -1;
    c->file_release = NULL;
    c->file_ref = NULL;
    c->file_left = 0;
}

/* Close the private set of watched handles (the socket is then in no set). */
static void watch_set_close(struct conn *c)
{
    struct sink_deferral *d = c->xd;
    if (!d || d->watch_set.fd < 0)
        return;
    /* -ENOENT when it was never armed. Edge mode: the set stands for the connection itself. */
    if (hs_edge(c->listener->hs))
        hs_del_fd(c->listener->hs, &c->eh, d->watch_set.fd);
    else
        hs_del(c->listener->hs, &d->watch_set);
    close(d->watch_set.fd);
    d->watch_set.fd = -1;
}

static void conn_close(struct conn *c)
{
    struct conn_list *cl = conn_list_of(c);
    /* Unlink first: once the sweep can no longer see us, the fd may be closed safely. */
    pthread_mutex_lock(&cl->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        cl->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&cl->lock);
    conn_teardown(c);
    /* Edge mode: another thread may still hold an event for it (thread_pool.h). */
    tp_retire(cl->pool, &c->retired);
    conn_list_closed(cl);
}

static void conn_free_retired(struct tp_retired *r)
{
    free((struct conn *)((char *)r - offsetof(struct conn, retired)));
}

void conn_free_stopped(struct conn *c)
{
    conn_teardown(c);
    free(c);
}

/* Give back everything the connection holds but its memory. */
static void conn_teardown(struct conn *c)
{
    if (c->xd) {
        /* The handler lets go of what it watches (ex_unwatch), which may close the set. */
        struct sink_deferral *d = c->xd;
        layer(c)->abort(d, NULL);
        c->xd = NULL;
    }
    if (c->tp->release)
        c->tp->release(c);
    hs_forget(c->listener->hs, &c->eh);
    c->lowat = false; /* the socket goes: no setsockopt on a number another may reuse now */
    close(c->eh.fd);
    conn_drop_file(c);
    carry_put(c->in);
    carry_put(c->out);
    release_request_limits(c);
    limits_release(c->rt, &c->limit_conn);
    runtime_unref(c->rt);
    c->retired.free = conn_free_retired;
}

/* ---- parking -------------------------------------------------------------------------------- */

/* Hand the connection to the handle set in state `st`, to wait for `events` until `deadline`
 * (monotonic ms; DEADLINE_KEEP: the one it has). Its owner's last touch of it when it returns
 * 0; on -errno the caller still owns it. */
static int conn_try_park(struct conn *c, enum conn_state st, uint32_t events, int64_t deadline)
{
    if (c->tp_want) {
        events = c->tp_want; /* the transport must first move bytes the other way */
        c->tp_want = 0;
    }
    if ((c->tp_flags & TP_EDGE) && (events & EPOLLIN))
        events |= EPOLLRDHUP; /* an edge's bytes may come with the end: see TP_EOF */
    if (deadline != DEADLINE_KEEP)
        atomic_store_explicit(&c->deadline, deadline, memory_order_relaxed);
    set_state(c, st);
    /* Publish `armed` before the handle is live: afterwards another thread may own it. */
    atomic_store_explicit(&c->armed, CONN_PARKED, memory_order_release);
    struct handle_set *hs = c->listener->hs;
    int rc = hs_rearm(hs, &c->eh, events);
    if (rc == -ENOENT)
        rc = hs_add(hs, &c->eh, events); /* back from its exchange's private set */
    if (rc != 0) {
        /* Nobody else can see the handle. A re-arm cannot fail for a live socket; adding it
         * back can (the kernel's memory for the registration). HS_KEPT: events came while a
         * holder had it, and the holder is no pool thread (edge mode): still ours. */
        if (rc < 0)
            log_error("epoll_ctl: %s", strerror(-rc));
        atomic_store_explicit(&c->armed, CONN_OWNED, memory_order_relaxed);
    }
    return rc;
}

/* The same, closing the connection when it cannot be parked (on a pool thread: never
 * HS_KEPT). */
static void conn_park(struct conn *c, enum conn_state st, uint32_t events, int64_t deadline)
{
    if (conn_try_park(c, st, events, deadline) != 0)
        conn_close(c);
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

static int64_t body_deadline(const struct conn *c)
{
    const struct config *cfg = &c->rt->cfg;
    return read_deadline(c->phase_start, c->body.wire, cfg->timeout_body, cfg->timeout_body_max,
                         cfg->timeout_body_min_rate);
}

/* Start counting a request body's time and bytes (its head has just been read). */
static void body_begins(struct conn *c)
{
    c->in_body = true;
    c->phase_start = clock_now_ms();
}

/* The connection needs more request bytes and has `have` of an unfinished head. */
static void park_reading(struct conn *c, size_t have)
{
    const struct config *cfg = &c->rt->cfg;
    if (c->in_body) {
        conn_park(c, CS_BODY, EPOLLIN, body_deadline(c));
    } else if (have > 0) {
        /* A head has begun: its time counts from the read that brought its first byte. */
        if (atomic_load_explicit(&c->state, memory_order_relaxed) != CS_HEAD)
            c->phase_start = clock_now_ms();
        conn_park(c, CS_HEAD, EPOLLIN,
                  read_deadline(c->phase_start, have, cfg->timeout_header,
                                cfg->timeout_header_max, cfg->timeout_header_min_rate));
    } else if (c->tp_flags & TP_HANDSHAKING) {
        /* the whole handshake must finish within timeout_handshake from accept */
        conn_park(c, CS_IDLE, EPOLLIN, DEADLINE_KEEP);
    } else {
        conn_park(c, CS_IDLE, EPOLLIN,
                  clock_now_ms() + (c->requests ? cfg->timeout_keepalive : cfg->timeout_header));
    }
}

void conn_sweep(struct conn_list *cl, int64_t now, bool idle_too, bool all)
{
    pthread_mutex_lock(&cl->lock);
    for (struct conn *c = cl->head; c; c = c->next) {
        uint8_t a = atomic_load_explicit(&c->armed, memory_order_acquire);
        if (a != CONN_PARKED)
            continue; /* owned: its owner re-arms it with a fresh deadline */
        uint8_t st = atomic_load_explicit(&c->state, memory_order_relaxed);
        bool expired = all || atomic_load_explicit(&c->deadline, memory_order_relaxed) <= now;
        /* Draining: an idle or lingering connection goes once the kernel has delivered all it
         * holds for it (SIOCOUTQ: unsent plus unacknowledged bytes). The process exits when the
         * last connection is gone, and bytes still queued could then be lost (a container's
         * network namespace goes with it); the tick re-checks until the queue is empty. */
        int queued = 0;
        bool drained = !expired && idle_too && (st == CS_IDLE || st == CS_LINGERING) &&
                       ioctl(c->eh.fd, SIOCOUTQ, &queued) == 0 && queued == 0;
        /* The CAS loses against a thread that took the connection meanwhile. The list lock
         * keeps the fd open while we shut it down; the shutdown wakes the handle (the socket,
         * or the private set it is in), and the thread that gets the event closes it. */
        if ((expired || drained) &&
            atomic_compare_exchange_strong(&c->armed, &a, CONN_KILLED))
            shutdown(c->eh.fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&cl->lock);
}

const char *const gauge_conn_names[GAUGE_CONN_KINDS] = { "reading", "writing", "idle",
                                                        "handler", "closing", "active" };

unsigned conn_gauges(struct conn_list *cl, unsigned counts[])
{
    static const uint8_t kind[CS_STATES] = {
        [CS_IDLE] = GAUGE_IDLE,         [CS_HEAD] = GAUGE_READING,
        [CS_BODY] = GAUGE_READING,      [CS_SENDING] = GAUGE_WRITING,
        [CS_EXCHANGE] = GAUGE_HANDLER,  [CS_LINGERING] = GAUGE_CLOSING,
    };
    unsigned n = 0;
    pthread_mutex_lock(&cl->lock);
    for (struct conn *c = cl->head; c; c = c->next, n++) {
        uint8_t a = atomic_load_explicit(&c->armed, memory_order_relaxed);
        uint8_t st = atomic_load_explicit(&c->state, memory_order_relaxed);
        if (a == CONN_KILLED)
            counts[GAUGE_CLOSING]++;
        else if (a == CONN_OWNED && st != CS_EXCHANGE)
            counts[GAUGE_ACTIVE]++; /* a thread is on it now */
        else
            counts[kind[st < CS_STATES ? st : CS_IDLE]]++;
    }
    pthread_mutex_unlock(&cl->lock);
    return n;
}

void conn_list_init(struct conn_list *cl, struct server *srv, struct thread_pool *pool,
                    struct timer_heap *timers, const struct exchange_layer *layer,
                    const struct conn_hooks *hooks)
{
    memset(cl, 0, sizeof(*cl));
    pthread_mutex_init(&cl->lock, NULL);
    runtime_slot_init(&cl->current);
    cl->srv = srv;
    cl->pool = pool;
    cl->timers = timers;
    cl->layer = layer;
    cl->hooks = *hooks;
}

void conn_free_open(struct conn_list *cl)
{
    while (cl->head) {
        struct conn *c = cl->head;
        cl->head = c->next;
        conn_free_stopped(c);
    }
}

void conn_list_destroy(struct conn_list *cl)
{
    runtime_slot_destroy(&cl->current);
    pthread_mutex_destroy(&cl->lock);
}

void conn_list_closed(struct conn_list *cl)
{
    unsigned left = atomic_fetch_sub_explicit(&cl->open, 1, memory_order_acq_rel) - 1;
    cl->hooks.closed(cl->hooks.arg, left);
}

/* ---- sending (the sink) ---------------------------------------------------------------------- */

/* A file sent by copy (sendfile_min_size): read into this buffer, which every thread has from
 * its start (no allocation per response), and written with what is queued before it (the
 * head) in one sendmsg. */
static _Thread_local char copy_buf[COPY_CHUNK];

/* conn_flush for a file sent by copy: one write per chunk, the queued bytes in front of it.
 * A chunk the socket takes only in part is read again from the first byte it did not take. */
static int flush_copy(struct conn *c, struct worker *w)
{
    size_t budget = FLUSH_BUDGET;
    while (c->out || c->file_left > 0) {
        if (budget == 0) {
            conn_more(c, EPOLLOUT); /* the socket may still have room: no edge will say so */
            return -EAGAIN;
        }
        struct iovec iov[2];
        int k = 0;
        size_t parked = 0, got = 0;
        if (c->out) {
            parked = c->out->len - c->out->off;
            iov[k++] = (struct iovec){ c->out->data + c->out->off, parked };
        }
        if (c->file_left > 0) {
            size_t want = (size_t)c->file_left < COPY_CHUNK ? (size_t)c->file_left : COPY_CHUNK;
            ssize_t r = pread(c->file_fd, copy_buf, want, c->file_off);
            if (r < 0)
                return -errno;
            if (r == 0)
                return -EIO; /* the file shrank under us: the promised length cannot be kept */
            got = (size_t)r;
            iov[k++] = (struct iovec){ copy_buf, got };
        }
        ssize_t n = c->tp->writev(c, iov, k, false);
        if (n < 0)
            return (int)n;
        atomic_fetch_add_explicit(&w->stats.bytes_out, (uint64_t)n, memory_order_relaxed);
        size_t from_out = (size_t)n < parked ? (size_t)n : parked;
        if (parked) {
            c->out->off += (uint32_t)from_out;
            if (c->out->off == c->out->len) {
                carry_put(c->out);
                c->out = NULL;
            }
        }
        c->file_off += (off_t)((size_t)n - from_out);
        c->file_left -= (off_t)((size_t)n - from_out);
        budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
        if ((size_t)n < parked + got)
            return -EAGAIN; /* the socket is full: its EPOLLOUT brings us back */
    }
    conn_drop_file(c);
    return 0;
}

/* Send what is queued: the carried bytes, then the file. Returns 0 when everything is sent,
 * -EAGAIN when the socket is full (or this event's budget is spent), or -errno. */
static int conn_flush(struct conn *c, struct worker *w)
{
    if (c->file_copy)
        return flush_copy(c, w);
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
            c->gathered = false;
        }
    }
    while (c->file_left > 0) {
        if (budget == 0) {
            conn_more(c, EPOLLOUT); /* the socket may still have room: no edge will say so */
            return -EAGAIN;
        }
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

/* Write the gathered responses; what the socket does not take stays queued. 0 or -errno. */
static int flush_gathered(struct conn *c, struct worker *w)
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
    }
    return 0;
}

/* One write of the queued bytes (`parked` of them) followed by iov[]. Kept apart so that the
 * common path of sink_send has no array on its stack. */
static __attribute__((noinline)) ssize_t write_behind(struct conn *c, size_t parked,
                                                      const struct iovec *iov, int iovcnt,
                                                      bool more)
{
    struct iovec all[SEND_IOV_MAX];
    int n = 0;
    all[n++] = (struct iovec){ c->out->data + c->out->off, parked };
    for (int i = 0; i < iovcnt; i++)
        all[n++] = iov[i];
    return c->tp->writev(c, all, n, more);
}

/* Queue what the socket did not take of iov[] (`written` bytes of it went out), behind the
 * `parked` bytes still queued. 0 or -ENOMEM. */
static int queue_rest(struct conn *c, const struct iovec *iov, int iovcnt, size_t total,
                      size_t written, size_t parked)
{
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
    return 0;
}

static int sink_send(struct sink *s, struct worker *w, const struct iovec *iov, int iovcnt,
                     unsigned flags)
{
    struct conn *c = conn_of(s);
    bool more = flags & SEND_MORE;
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    if (c->gather && (flags & SEND_WHOLE) && !sending(c) && gather_append(c, iov, iovcnt, total))
        return 0;
    assert(!c->gathered || iovcnt < SEND_IOV_MAX); /* callers send at most 3 pieces */
    /* Bytes already queued (an interim 100 Continue, a stream piece) go first: queue behind
     * them. Gathered bytes go out in the same write as this response. */
    size_t parked = c->out ? c->out->len - c->out->off : 0;
    size_t written = 0; /* of iov[] */
    if (!parked) {
        ssize_t sent = c->tp->writev(c, iov, iovcnt, more);
        if (sent < 0 && sent != -EAGAIN)
            return (int)sent;
        written = sent < 0 ? 0 : (size_t)sent;
        atomic_fetch_add_explicit(&w->stats.bytes_out, written, memory_order_relaxed);
    } else if (c->gathered) {
        ssize_t sent = write_behind(c, parked, iov, iovcnt, more);
        c->gathered = false;
        if (sent < 0 && sent != -EAGAIN)
            return (int)sent;
        if (sent < 0)
            sent = 0;
        atomic_fetch_add_explicit(&w->stats.bytes_out, (uint64_t)sent, memory_order_relaxed);
        size_t from_out = (size_t)sent < parked ? (size_t)sent : parked;
        c->out->off += (uint32_t)from_out;
        parked -= from_out;
        if (!parked) {
            carry_put(c->out);
            c->out = NULL;
        }
        written = (size_t)sent - from_out;
    }
    return queue_rest(c, iov, iovcnt, total, written, parked);
}

/* Whether a file of `len` bytes goes out by copy rather than by sendfile (sendfile_min_size;
 * docs/PERFORMANCE.md, "Run 6"). TLS copies in its transport whatever the size. */
static bool file_by_copy(const struct conn *c, off_t len)
{
    return c->tp == &transport_plain && (uint64_t)len < c->rt->cfg.sendfile_min_size;
}

/* The first write of a file sent by copy when nothing is queued: the head straight from the
 * caller's buffer and the first chunk, in one sendmsg (no carry buffer on the common path);
 * what the socket does not take of the head is queued. 0 (flush_copy goes on), -EAGAIN (the
 * socket is full), or -errno. */
static int copy_first(struct conn *c, struct worker *w, const struct iovec *head)
{
    size_t want = (size_t)c->file_left < COPY_CHUNK ? (size_t)c->file_left : COPY_CHUNK;
    ssize_t r = pread(c->file_fd, copy_buf, want, c->file_off);
    if (r < 0)
        return -errno;
    if (r == 0)
        return -EIO;
    struct iovec iov[2] = { *head, { copy_buf, (size_t)r } };
    ssize_t n = c->tp->writev(c, iov, 2, false);
    if (n < 0 && n != -EAGAIN)
        return (int)n;
    if (n < 0)
        n = 0;
    atomic_fetch_add_explicit(&w->stats.bytes_out, (uint64_t)n, memory_order_relaxed);
    if ((size_t)n < head->iov_len) {
        int rc = queue_rest(c, head, 1, head->iov_len, (size_t)n, 0);
        return rc < 0 ? rc : -EAGAIN;
    }
    size_t body = (size_t)n - head->iov_len;
    c->file_off += (off_t)body;
    c->file_left -= (off_t)body;
    return body < (size_t)r ? -EAGAIN : 0;
}

static int sink_send_file(struct sink *s, struct worker *w, const struct iovec *head, int fd,
                          off_t off, off_t len, void (*release)(void *ref), void *ref)
{
    struct conn *c = conn_of(s);
    assert(c->file_fd < 0);
    bool copy = file_by_copy(c, len);
    bool head_now = copy && !c->out; /* the head goes out with the first chunk */
    int rc = 0;
    if (copy && !head_now) {
        /* behind what is queued (gathered responses): all of it in the first chunk's write */
        rc = queue_rest(c, head, 1, head->iov_len, 0, c->out->len - c->out->off);
        c->gathered = false;
    } else if (!copy) {
        rc = sink_send(s, w, head, 1, SEND_MORE);
    }
    if (rc < 0) {
        release(ref);
        return rc;
    }
    c->file_fd = fd;
    c->file_copy = copy;
    c->file_release = release;
    c->file_ref = ref;
    c->file_off = off;
    c->file_left = len;
    size_t lowat = c->rt->cfg.tcp_notsent_lowat;
    if (lowat && (uint64_t)len >= lowat)
        conn_set_lowat(c, lowat);
    if (c->out && !copy)
        return 0; /* the head is queued: the file follows it once the socket has room */
    rc = head_now ? copy_first(c, w, head) : 0;
    if (rc == 0)
        rc = conn_flush(c, w);
    if (rc == -EAGAIN)
        return 0;
    if (rc < 0)
        conn_drop_file(c);
    return rc;
}

static bool sink_blocked(const struct sink *s)
{
    return sending(conn_of(s));
}

/* ---- closing -------------------------------------------------------------------------------- */

/* The response in flight is complete and the connection must close. Unless the client is known
 * to have nothing more to send, half-close and drain its input for a while, so that a reset
 * caused by unread data cannot destroy the response before the client has read it. */
static void conn_finish(struct conn *c, bool linger)
{
    assert(!c->xd && !sending(c));
    /* While draining, the process exits as soon as the last connection is gone, and bytes still
     * queued in the kernel could then be lost (a container's network namespace goes with it):
     * linger, and let the drain sweep close the connection once its send queue is empty. */
    if (!linger && !draining(c)) {
        conn_close(c);
        return;
    }
    c->tp->shutdown(c);
    carry_put(c->in);
    c->in = NULL;
    c->in_body = false;
    conn_park(c, CS_LINGERING, EPOLLIN, clock_now_ms() + LINGER_MS);
}

static void step_linger(struct conn *c)
{
    char buf[16384];
    int i;
    for (i = 0; i < 16; i++) {
        ssize_t n = c->tp->read(c, buf, sizeof(buf));
        if (n == -EAGAIN)
            break;
        if (n <= 0) {
            conn_close(c); /* the client closed too (or reset): done */
            return;
        }
    }
    if (i == 16)
        conn_more(c, EPOLLIN);
    /* Drained for now, or this event's share is used up while the client is still sending:
     * wait for more, within the deadline set when lingering began. */
    conn_park(c, CS_LINGERING, EPOLLIN, DEADLINE_KEEP);
}

/* ---- the deferred exchange ----------------------------------------------------------------- */

/* After the exchange layer ran a callback that returned `rc`: close on failure, and end the
 * exchange when it is done (an internal redirect may start the next one). Returns false when
 * the connection is gone. */
static bool exchange_after(struct conn *c, struct worker *w, int rc)
{
    if (rc < 0) {
        conn_close(c); /* aborts the exchange */
        return false;
    }
    if (c->body_on_hold && c->xd && (c->xd->wants & DW_BODY)) {
        c->body_on_hold = false; /* it reads the body: 100 Continue went out (ex_want_body) */
        body_begins(c);
    }
    while (c->xd && c->xd->done) {
        struct sink_deferral *d = c->xd;
        struct served next;
        c->xd = NULL;
        c->body_on_hold = false; /* never asked for: the connection closes after it */
        rc = layer(c)->end(d, w, &next);
        c->xd = next.deferred;
        if (next.close)
            c->close_after = CLOSE_LINGER;
        if (rc < 0) {
            conn_close(c);
            return false;
        }
    }
    if (!c->xd && draining(c) && !c->close_after)
        c->close_after = CLOSE_LINGER;
    return true;
}

static void park_failed(struct conn *c, struct worker *w);

/* Arm the private set: the socket's interest inside it, then the set itself in the shared
 * handle set. */
static void watch_set_park(struct conn *c, struct worker *w)
{
    struct sink_deferral *d = c->xd;
    uint32_t ev = EPOLLRDHUP; /* the client leaving ends the exchange */
    if ((d->wants & DW_BODY) && c->in_body)
        ev |= EPOLLIN;
    if (sending(c) || (d->wants & DW_WRITABLE))
        ev |= EPOLLOUT;
    if (c->tp_want) {
        ev = EPOLLRDHUP | c->tp_want;
        c->tp_want = 0;
    }
    struct epoll_event e = { .events = ev, .data.ptr = &c->eh };
    int64_t deadline = (ev & EPOLLIN)    ? body_deadline(c)
                       : (ev & EPOLLOUT) ? clock_now_ms() + c->rt->cfg.timeout_send
                                         : NO_DEADLINE; /* the handler times itself */
    struct handle_set *hs = c->listener->hs;
    atomic_store_explicit(&c->deadline, deadline, memory_order_relaxed);
    set_state(c, CS_EXCHANGE);
    int rc = epoll_ctl(d->watch_set.fd, EPOLL_CTL_MOD, c->eh.fd, &e) < 0 ? -errno : 0;
    if (rc == 0) {
        atomic_store_explicit(&c->armed, CONN_PARKED, memory_order_release);
        if (hs_edge(hs)) {
            /* The set's edge in the shared set comes when it gains an event. One that is
             * still in it from before (a step handed on before it was empty: the body read
             * took over, say) brings none: the owner runs it again instead. */
            if (d->undrained)
                conn_more(c, EPOLLIN);
            /* The set stands for the connection: its events are the connection's, and the
             * connection's ownership word covers them (handle_set.h). */
            rc = hs_rearm_fd(hs, &c->eh, d->watch_set.fd, EPOLLIN);
            if (rc == -ENOENT)
                rc = hs_add_fd(hs, &c->eh, d->watch_set.fd, EPOLLIN);
        } else {
            rc = hs_rearm(hs, &d->watch_set, EPOLLIN);
            if (rc == -ENOENT)
                rc = hs_add(hs, &d->watch_set, EPOLLIN);
        }
    }
    if (rc != 0) {
        if (rc < 0)
            log_error("epoll_ctl (watched handles): %s", strerror(-rc));
        atomic_store_explicit(&c->armed, CONN_OWNED, memory_order_relaxed);
        park_failed(c, w); /* HS_KEPT: events came while a holder had it (edge mode) */
    }
}

static void exchange_wake(struct timer_entry *t, struct worker *w);

/* The timer's thread (a pool thread) tries again to arm what a holder could not. */
static void exchange_repark(struct timer_entry *t, struct worker *w)
{
    struct sink_deferral *d =
        (struct sink_deferral *)((char *)t - offsetof(struct sink_deferral, timer));
    conn_next(conn_of(d->sink), w);
}

/* The exchange's socket or private set could not be armed (the kernel had no memory for the
 * registration), so nothing would ever wake it; or, in edge mode, events came for it while a
 * holder had it, and the holder is no pool thread to run them (HS_KEPT). A holder giving it
 * back (no worker: it cannot send) leaves a pool thread to try once more at once, from the
 * timer (edge mode: that thread's release finds the events still recorded, and runs them);
 * on a pool thread the client gets a 503 unless a response has begun, and the connection
 * closes after it. */
static void park_failed(struct conn *c, struct worker *w)
{
    struct sink_deferral *d = c->xd;
    if (!w) {
        d->timer.fire = exchange_repark;
        if (timer_add(conn_list_of(c)->timers, &d->timer, timer_now()) == 0)
            return; /* the timer owns it from here */
    } else if (!d->responded) {
        if (exchange_after(c, w, layer(c)->fail(d, w, 503)))
            conn_next(c, w);
        return;
    }
    conn_close(c);
}

/* The deferred exchange waits: arm what wakes it. */
static void exchange_wait(struct conn *c, struct worker *w)
{
    struct sink_deferral *d = c->xd;
    assert(!d->done);
    if (d->wants & DW_HELD) {
        set_state(c, CS_EXCHANGE);
        layer(c)->hold(d); /* its holder owns it from here */
        return;
    }
    if ((d->wants & DW_BODY) && c->in_body && c->in && w) {
        step_read(c, w); /* body bytes already carried: deliver them first */
        return;
    }
    if (d->watch_set.fd >= 0) {
        watch_set_park(c, w);
        return;
    }
    if (sending(c) || (d->wants & DW_WRITABLE)) {
        if (!sending(c))
            conn_more(c, EPOLLOUT); /* a yield (edge mode): the socket has room, no edge says so */
        if (conn_try_park(c, CS_EXCHANGE, EPOLLOUT, clock_now_ms() + c->rt->cfg.timeout_send) != 0)
            park_failed(c, w);
    } else if (d->wants & DW_TIMER) {
        set_state(c, CS_EXCHANGE);
        d->timer.fire = exchange_wake;
        if (timer_add(conn_list_of(c)->timers, &d->timer, d->wake) < 0)
            conn_close(c); /* (otherwise the timer owns it from here) */
    } else {
        assert(d->wants & DW_BODY);
        if (conn_try_park(c, CS_EXCHANGE, EPOLLIN, body_deadline(c)) != 0)
            park_failed(c, w);
    }
}

/* An event of its exchange's: while draining, the response it still sends is the
 * connection's last. */
static void exchange_event(struct conn *c)
{
    if (draining(c))
        c->xd->close = true;
}

/* An ex_sleep() timer expired: the timer's thread owns the connection. */
static void exchange_wake(struct timer_entry *t, struct worker *w)
{
    struct sink_deferral *d =
        (struct sink_deferral *)((char *)t - offsetof(struct sink_deferral, timer));
    struct conn *c = conn_of(d->sink);
    exchange_event(c);
    if (exchange_after(c, w, layer(c)->writable(d, w)))
        conn_next(c, w);
}

/* The socket's part of an exchange's event. Returns false when the connection was handed on
 * (closed, or its body read took over). */
static bool exchange_socket(struct conn *c, struct worker *w, uint32_t events)
{
    struct sink_deferral *d = c->xd;
    if (sending(c)) {
        int rc = conn_flush(c, w);
        if (rc < 0 && rc != -EAGAIN) {
            conn_close(c);
            return false;
        }
        if (rc == -EAGAIN)
            return true;
    }
    if ((d->wants & DW_BODY) && c->in_body && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        step_read(c, w);
        return false;
    }
    if (d->wants & DW_WRITABLE)
        return exchange_after(c, w, layer(c)->writable(d, w));
    if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
        conn_close(c); /* the client went away while its exchange ran */
        return false;
    }
    return true;
}

static void step_exchange(struct conn *c, struct worker *w, uint32_t events)
{
    assert(c->xd);
    exchange_event(c);
    if (exchange_socket(c, w, events))
        conn_next(c, w);
}

/* The private set is ready: run its events one at a time (a callback may remove the handle of
 * the next one), the socket's among them. */
static void watch_set_step(struct conn *c, struct worker *w)
{
    struct sink_deferral *d = c->xd;
    assert(atomic_load_explicit(&c->state, memory_order_relaxed) == CS_EXCHANGE);
    exchange_event(c);
    /* Until the set is found empty; a step that stops before (the cap, or a hand-off) leaves
     * it set, and the release runs the set again (edge mode: see watch_set_park). */
    d->undrained = true;
    for (int i = 0; i < WATCH_EVENTS_MAX && c->xd == d && d->watch_set.fd >= 0; i++) {
        struct epoll_event ev;
        int n = epoll_wait(d->watch_set.fd, &ev, 1, 0);
        if (n != 1) {
            d->undrained = n < 0;
            break;
        }
        if (ev.data.ptr == &c->eh) {
            if (!exchange_socket(c, w, ev.events))
                return;
            continue;
        }
        struct ex_watch *x = ev.data.ptr;
        if (!exchange_after(c, w, layer(c)->watch_event(d, w, x, ev.events)))
            return;
    }
    conn_next(c, w); /* what is still ready fires again: the set is level-triggered */
}

static void watch_set_on_event(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct sink_deferral *d =
        (struct sink_deferral *)((char *)eh - offsetof(struct sink_deferral, watch_set));
    struct conn *c = conn_of(d->sink);
    (void)events;
    if (atomic_exchange_explicit(&c->armed, CONN_OWNED, memory_order_acq_rel) == CONN_KILLED) {
        conn_close(c); /* expired by the timer sweep */
        return;
    }
    watch_set_step(c, w);
}

/* ---- watched handles (the sink) ------------------------------------------------------------ */

/* The exchange watches its first descriptor: a private set takes the socket and it. */
static int watch_set_open(struct conn *c)
{
    struct sink_deferral *d = c->xd;
    int fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* The socket leaves the shared set (its owner holds it: no event of it is in flight). */
    hs_del(c->listener->hs, &c->eh);
    struct epoll_event e = { .events = EPOLLRDHUP, .data.ptr = &c->eh };
    if (epoll_ctl(fd, EPOLL_CTL_ADD, c->eh.fd, &e) < 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    d->watch_set.fd = fd;
    d->watch_set.ops = &watch_set_ops;
    return 0;
}

/* Register `x`, or change its interest. A descriptor with no interest leaves the set: a hang-up
 * (always reported) must not wake a handle its exchange does not want to hear from now. */
static int sink_watch(struct sink *s, struct ex_watch *x)
{
    struct conn *c = conn_of(s);
    struct sink_deferral *d = c->xd;
    if (d->watch_set.fd < 0) {
        int rc = watch_set_open(c);
        if (rc < 0)
            return rc;
    }
    if (!x->registered) {
        x->registered = true;
        d->nwatch++;
        x->armed = false;
    }
    int op = x->events ? (x->armed ? EPOLL_CTL_MOD : EPOLL_CTL_ADD) : EPOLL_CTL_DEL;
    if (!x->events && !x->armed)
        return 0;
    struct epoll_event e = { .events = x->events, .data.ptr = x };
    if (epoll_ctl(d->watch_set.fd, op, x->fd, &e) < 0)
        return -errno;
    x->armed = x->events != 0;
    return 0;
}

static void sink_unwatch(struct sink *s, struct ex_watch *x)
{
    struct conn *c = conn_of(s);
    struct sink_deferral *d = c->xd;
    if (x->armed)
        epoll_ctl(d->watch_set.fd, EPOLL_CTL_DEL, x->fd, NULL);
    x->armed = x->registered = false;
    if (--d->nwatch == 0)
        watch_set_close(c); /* the socket returns to the shared set when next parked */
}

static void sink_release(struct sink *s)
{
    struct conn *c = conn_of(s);
    exchange_wait(c, NULL); /* the holder's last touch */
}

static int sink_local_address(const struct sink *s, struct sockaddr_in6 *out)
{
    struct sockaddr_storage local;
    socklen_t len = sizeof(local);
    if (getsockname(conn_of(s)->eh.fd, (struct sockaddr *)&local, &len) < 0)
        return -errno;
    if (local.ss_family == AF_INET6) {
        memcpy(out, &local, sizeof(*out));
        return 0;
    }
    if (local.ss_family == AF_UNIX) {
        *out = (struct sockaddr_in6){ .sin6_family = AF_INET6 };
        netaddr_set_unix(&out->sin6_addr);
        return 0;
    }
    const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)&local;
    *out = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = in4->sin_port };
    netaddr_map_v4(&in4->sin_addr, &out->sin6_addr);
    return 0;
}

static const struct sink_ops conn_sink_ops = {
    .send = sink_send,
    .send_file = sink_send_file,
    .blocked = sink_blocked,
    .watch = sink_watch,
    .unwatch = sink_unwatch,
    .release = sink_release,
    .local_address = sink_local_address,
};

/* ---- transitions ---------------------------------------------------------------------------- */

/* The owner is done with what it was doing: decide what the connection waits for next — its
 * exchange, room for queued output, the end of a closing response, or the next request — and
 * hand it to whatever wakes it. The owner's last touch of the connection. */
static void conn_next(struct conn *c, struct worker *w)
{
    if (!c->xd && !sending(c))
        release_request_limits(c); /* its response is complete: no longer in flight */
    if (c->xd) {
        exchange_wait(c, w);
    } else if (sending(c)) {
        if (c->close_after)
            c->close_after = CLOSE_LINGER; /* more input may arrive meanwhile */
        conn_park(c, CS_SENDING, EPOLLOUT, clock_now_ms() + c->rt->cfg.timeout_send);
    } else if (c->close_after && !c->in_body) {
        conn_finish(c, c->close_after == CLOSE_LINGER || c->in);
    } else if (c->in && w) {
        step_read(c, w); /* requests that came while the last one was answered */
    } else if (!c->in_body && draining(c) && c->requests) {
        conn_finish(c, true); /* between requests while draining: close, gracefully */
    } else {
        park_reading(c, c->in ? c->in->len - c->in->off : 0);
    }
}

static void step_send(struct conn *c, struct worker *w)
{
    int rc = conn_flush(c, w);
    if (rc == -EAGAIN) {
        conn_park(c, CS_SENDING, EPOLLOUT, clock_now_ms() + c->rt->cfg.timeout_send);
        return;
    }
    if (rc < 0) {
        conn_close(c);
        return;
    }
    conn_next(c, w);
}

/* ---- reading and answering ------------------------------------------------------------------ */

/* Keep in->buf[pos..have) for the next step. Returns false when out of memory. */
static bool stash_input(struct conn *c, struct input *in)
{
    size_t len = in->have - in->pos;
    assert(!c->in);
    if (len == 0)
        return true;
    c->in = carry_dup(in->buf + in->pos, len);
    return c->in != NULL;
}

/* Stop serving this buffer: write what was gathered, keep the rest, move on. */
static enum step stop_reading(struct conn *c, struct worker *w, struct input *in)
{
    if (in->read_full)
        conn_more(c, EPOLLIN); /* edge mode: what is still in the socket brings no edge */
    if (c->gathered && flush_gathered(c, w) < 0) {
        conn_close(c);
        return HANDED_ON;
    }
    if (c->close_after == CLOSE_CLEAN && (in->pos < in->have || in->may_read))
        c->close_after = CLOSE_LINGER; /* the client may have sent more: do not reset it */
    if (!stash_input(c, in)) {
        conn_close(c);
        return HANDED_ON;
    }
    conn_next(c, w);
    return HANDED_ON;
}

static struct request_ctx request_ctx_of(struct conn *c, const struct http_request *req,
                                         bool body_follows)
{
    return (struct request_ctx){
        .srv = conn_list_of(c)->srv, .rt = c->rt, .req = req, .peer_addr = c->peer_addr,
        .peer_port = c->peer_port, .tls = c->ssl != NULL, .body_follows = body_follows,
        .https_port = atomic_load_explicit(&conn_list_of(c)->https_port, memory_order_relaxed),
        .closing = draining(c) || c->close_after, .limit_at_request = c->limit_at_request,
        .admin = c->listener->addr.admin,
    };
}

/* Answer a request that cannot be served (parse error, broken body) and close the connection
 * once the answer is sent, lingering so the client can read it even while it is still sending. */
static void fail_and_close(struct conn *c, struct worker *w, int status)
{
    assert(!c->xd);
    struct request_ctx rc = request_ctx_of(c, NULL, false);
    if (layer(c)->error(&c->sink, w, &rc, status) < 0) {
        conn_close(c);
        return;
    }
    c->in_body = false; /* the rest of any body is drained by the lingering read */
    c->close_after = CLOSE_LINGER;
    carry_put(c->in);
    c->in = NULL;
    conn_next(c, w);
}

/* http_body_cb: request body bytes for the deferred exchange that reads them. Every byte the
 * parser took goes to it, even after it said it wants no more (ex_want_body false): that
 * holds for the next read, and the exchange keeps what one read brings. */
struct body_delivery {
    struct conn *c;
    struct worker *w;
    int rc;
};

static int deliver_body(void *arg, const char *data, size_t len)
{
    struct body_delivery *bd = arg;
    struct sink_deferral *d = bd->c->xd;
    if (!d || d->done)
        return 0; /* answered already: the rest of the body is discarded */
    bd->rc = layer(bd->c)->body(d, bd->w, data, len, false);
    return bd->rc < 0 ? 500 : 0; /* stops the parse; the connection closes below */
}

/* Body bytes: delivered to the exchange that reads them, or discarded. */
static enum step body_input(struct conn *c, struct worker *w, struct input *in)
{
    struct http_request unused;
    struct body_delivery bd = { c, w, 0 };
    struct http_parse ps = { .parser = &c->parser, .limits = &c->rt->cfg.http, .req = &unused,
                             .body = &c->body, .on_body = c->xd ? deliver_body : NULL,
                             .body_arg = &bd };
    size_t used = 0;
    enum http_parse_result r = http_parse_body(&ps, in->buf + in->pos, in->have - in->pos, &used);
    in->pos += used;
    if (bd.rc < 0) {
        conn_close(c);
        return HANDED_ON;
    }
    int rc = 0;
    if (r == HTTP_PARSE_DONE) {
        c->in_body = false;
        if (c->xd && !c->xd->done) /* it had every byte: it learns of the end too */
            rc = layer(c)->body(c->xd, w, NULL, 0, true);
    } else if (r == HTTP_PARSE_ERROR && c->xd && !c->xd->responded) {
        /* A handler reading the body has not answered yet: the client learns why (413, 400),
         * then the connection closes. */
        c->in_body = false;
        rc = layer(c)->fail(c->xd, w, ps.status);
    } else if (r != HTTP_PARSE_INCOMPLETE) {
        /* The response was already sent; a broken body leaves the framing unknown. */
        c->in_body = false;
        c->close_after = CLOSE_LINGER;
        in->pos = in->have;
        if (c->xd)
            c->xd->close = true;
    }
    if (!exchange_after(c, w, rc))
        return HANDED_ON;
    return GO_ON;
}

/* A request head has been parsed: answer it. */
static enum step answer(struct conn *c, struct worker *w, struct input *in,
                        const struct http_request *req, struct http_parse *ps, bool body_follows)
{
    bool body_here = false; /* the whole body came with the head */
    if (body_follows) {
        /* Before answering, judge what has already arrived of the body (as nginx does): a body
         * that is malformed or too large from its start is answered with 400 or 413 instead of
         * a response to a request that was never valid. The check runs on a copy of the parser,
         * so the bytes stay for a handler that reads the body; for the others they are
         * discarded after the response, where an error can only close. */
        llhttp_t probe = c->parser;
        struct http_body_count probe_count = c->body;
        struct http_parse check = *ps;
        check.parser = &probe;
        check.body = &probe_count;
        check.on_body = NULL;
        size_t checked = 0;
        enum http_parse_result pr =
            http_parse_body(&check, in->buf + in->pos, in->have - in->pos, &checked);
        if (pr == HTTP_PARSE_ERROR) {
            fail_and_close(c, w, check.status);
            return HANDED_ON;
        }
        body_here = pr == HTTP_PARSE_DONE;
    }
    /* A client waiting for 100-continue that has not sent its body gets the final status
     * instead and the connection closes: its body, if it sends it after all, is drained by the
     * lingering close, not read as requests. A handler that reads the body sends 100 Continue
     * itself (ex_want_body). */
    if (body_follows && (!req->expect_continue || body_here))
        body_begins(c);
    else if (body_follows)
        c->body_on_hold = true; /* until its exchange asks for it (and 100 Continue goes) */
    /* More bytes after this request: its response may wait for the next ones, so that the
     * answers to one read leave in one write. */
    c->gather = in->pos < in->have && !body_follows;
    struct request_ctx rc = request_ctx_of(c, req, body_follows && !body_here);
    struct served out;
    release_request_limits(c); /* the last response is complete (pipelining: not yet sent) */
    int r = layer(c)->request(&c->sink, w, &rc, &out);
    c->gather = false;
    c->requests++;
    c->xd = out.deferred;
    c->limit_req[0] = out.limits[0];
    c->limit_req[1] = out.limits[1];
    if (!c->xd && !sending(c))
        release_request_limits(c); /* answered in full already: no longer in flight */
    if (out.close)
        c->close_after = CLOSE_CLEAN;
    if (r < 0) {
        conn_close(c);
        return HANDED_ON;
    }
    if (!exchange_after(c, w, 0))
        return HANDED_ON;
    return GO_ON;
}

/* Parse a head from the buffer and answer it. */
static enum step head_input(struct conn *c, struct worker *w, struct input *in)
{
    struct runtime_slot *current = &conn_list_of(c)->current;
    if (atomic_load_explicit(&current->rt, memory_order_relaxed) != c->rt) {
        /* Reloaded: the next request runs under the new configuration. */
        struct runtime *old = c->rt;
        c->rt = runtime_current(current);
        runtime_unref(old);
    }
    struct http_request req;
    struct http_parse ps = { .parser = &c->parser, .limits = &c->rt->cfg.http, .req = &req,
                             .body = &c->body };
    size_t used = 0;
    enum http_parse_result r = http_parse_head(&ps, in->buf + in->pos, in->have - in->pos, &used);
    switch (r) {
    case HTTP_PARSE_INCOMPLETE:
        return NEED_INPUT;
    case HTTP_PARSE_CLOSE:
        /* No response (the HTTP/2 preface): close quietly — after the answers before it, and
         * half-closing and draining rather than resetting under bytes already sent. */
        c->close_after = CLOSE_LINGER;
        in->pos = in->have;
        return stop_reading(c, w, in);
    case HTTP_PARSE_ERROR:
        if (c->gathered && flush_gathered(c, w) < 0) {
            conn_close(c);
            return HANDED_ON;
        }
        fail_and_close(c, w, ps.status);
        return HANDED_ON;
    default:
        break;
    }
    in->pos += used;
    set_state(c, CS_IDLE); /* the head is complete: the next one has its own deadline */
    return answer(c, w, in, &req, &ps, r == HTTP_PARSE_HEAD);
}

/* A PROXY protocol header must come before the first request. It names the client: the
 * connection is counted against that client's limit now. */
static enum step proxy_input(struct conn *c, struct worker *w, struct input *in)
{
    in_port_t port = ntohs(c->peer_port);
    int n = proxy_protocol_parse(in->buf + in->pos, in->have - in->pos, &c->peer_addr, &port);
    if (n < 0) {
        conn_close(c); /* not from our proxy: nobody to answer */
        return HANDED_ON;
    }
    if (n == 0)
        return NEED_INPUT;
    c->peer_port = htons(port);
    c->proxy_header = false;
    in->pos += (size_t)n;
    if (limits_connection_open(c->rt, &c->peer_addr, &c->limit_conn, &c->limit_at_request) < 0) {
        refuse_connection(c, w, c->ssl != NULL);
        conn_close(c);
        return HANDED_ON;
    }
    return GO_ON;
}

/* Serve what the buffer holds. NEED_INPUT: read more; HANDED_ON: the connection moved on. */
static enum step serve_input(struct conn *c, struct worker *w, struct input *in)
{
    while (in->pos < in->have) {
        enum step s;
        if (c->proxy_header) {
            s = proxy_input(c, w, in);
        } else if (c->in_body) {
            if (c->xd && !(c->xd->wants & DW_BODY))
                return stop_reading(c, w, in); /* its exchange reads the body later, or never */
            s = body_input(c, w, in);
        } else if (c->xd || sending(c) || c->close_after) {
            return stop_reading(c, w, in); /* the next request waits for this one's end */
        } else {
            s = head_input(c, w, in);
        }
        if (s == HANDED_ON)
            return HANDED_ON;
        if (s == NEED_INPUT)
            break;
    }
    /* Everything here is served, or the rest is an unfinished head. */
    if (sending(c) || (c->xd && !((c->xd->wants & DW_BODY) && c->in_body)) ||
        (c->close_after && !c->in_body)) {
        if (c->close_after == CLOSE_CLEAN && !c->xd && in->pos == in->have && !in->may_read &&
            !c->gathered && !sending(c)) {
            conn_close(c); /* "Connection: close", answered, nothing more sent: just close */
            return HANDED_ON;
        }
        return stop_reading(c, w, in);
    }
    if (c->gathered) {
        /* The answers to this read leave together, before waiting for more. */
        if (flush_gathered(c, w) < 0) {
            conn_close(c);
            return HANDED_ON;
        }
        if (sending(c))
            return stop_reading(c, w, in);
    }
    return NEED_INPUT;
}

/* Read more into the buffer. HANDED_ON when the connection parked or closed instead. */
static enum step read_input(struct conn *c, struct worker *w, struct input *in)
{
    if (in->pos > 0) {
        memmove(in->buf, in->buf + in->pos, in->have - in->pos);
        in->have -= in->pos;
        in->pos = 0;
    }
    if (in->have == READ_BUF_SIZE) {
        /* Only a head can fill the buffer: bodies are consumed as they come. */
        fail_and_close(c, w, 431);
        return HANDED_ON;
    }
    ssize_t n = in->may_read ? c->tp->read(c, in->buf + in->have, READ_BUF_SIZE - in->have)
                             : -EAGAIN;
    if (n > 0) {
        /* A short read means the socket is drained: next time, park instead of issuing a read
         * that would only return EAGAIN. */
        in->read_full = (size_t)n == READ_BUF_SIZE - in->have;
        in->may_read = in->read_full || (c->tp_flags & TP_EOF);
        in->have += (size_t)n;
        return GO_ON;
    }
    if (n == 0 || n != -EAGAIN) {
        conn_close(c); /* peer closed (mid-request: there is nobody to answer) or error */
        return HANDED_ON;
    }
    if (!stash_input(c, in)) {
        conn_close(c);
        return HANDED_ON;
    }
    if (c->xd) {
        exchange_wait(c, NULL); /* it reads its body: wait for more of it */
        return HANDED_ON;
    }
    if (!c->in_body && draining(c) && c->requests && in->have == 0) {
        conn_finish(c, true); /* between requests while draining: close, gracefully */
        return HANDED_ON;
    }
    park_reading(c, in->have);
    return HANDED_ON;
}

/* The reading states (and an exchange reading its body): read, parse and answer requests
 * until the connection must wait. */
static void step_read(struct conn *c, struct worker *w)
{
    char buf[READ_BUF_SIZE];
    struct input in = { buf, 0, 0, true, false };
    if (c->in) {
        in.have = c->in->len - c->in->off;
        memcpy(buf, c->in->data + c->in->off, in.have);
        carry_put(c->in);
        c->in = NULL;
    }
    while (serve_input(c, w, &in) == NEED_INPUT)
        if (read_input(c, w, &in) == HANDED_ON)
            return;
}

/* ---- the event handler ---------------------------------------------------------------------- */

void conn_serve_held(struct conn *c, struct worker *w)
{
    conn_on_event(&c->eh, EPOLLIN, w); /* a read that finds nothing parks it (EAGAIN) */
}

static void conn_on_event(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct conn *c = (struct conn *)eh;
    if (atomic_exchange_explicit(&c->armed, CONN_OWNED, memory_order_acq_rel) == CONN_KILLED) {
        conn_close(c); /* expired by the timer sweep (timeout, drain) */
        return;
    }
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR) && (c->tp_flags & TP_EDGE)) {
        /* Edge mode: registered with EPOLLIN only to learn this (TP_EOF); the handlers see
         * the events they would see under EPOLLONESHOT. */
        c->tp_flags |= TP_EOF;
        events &= ~(uint32_t)EPOLLRDHUP;
    }
    if (c->xd && c->xd->watch_set.fd >= 0) {
        /* Edge mode only: there, the private set stands for the connection in the handle set
         * (under EPOLLONESHOT the set has a handle of its own, and the socket no event here). */
        watch_set_step(c, w);
        return;
    }
    switch (atomic_load_explicit(&c->state, memory_order_relaxed)) {
    case CS_IDLE:
    case CS_HEAD:
    case CS_BODY:
        assert(!c->xd && !sending(c));
        step_read(c, w);
        break;
    case CS_SENDING:
        assert(!c->xd && sending(c));
        step_send(c, w);
        break;
    case CS_EXCHANGE:
        step_exchange(c, w, events);
        break;
    case CS_LINGERING:
        assert(!c->xd && !c->in_body);
        step_linger(c);
        break;
    default:
        assert(!"unknown connection state");
    }
}
