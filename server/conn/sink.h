/* sink.h — the boundary between a connection and the exchanges it carries, both directions.
 *
 * Below it, connection.c: a socket, its transport, the request parser, the state machine. Above
 * it, exchange.c: one request's life (routing, the handler, the response's framing, deferral,
 * the access log). Neither includes the other's header; this is all each knows of the other.
 *
 *   exchange -> connection: a `struct sink`, the connection as an exchange sees it: send bytes
 *       and file ranges, ask whether output is blocked, watch descriptors, give a held
 *       exchange back to the pool. A response filter (compression) can stand in front of a
 *       sink with the same operations: neither the handler nor the connection knows it.
 *   connection -> exchange: `struct exchange_layer`, the entry points the connection calls
 *       for a request, a parse error, and each event of a deferred exchange.
 *
 * A deferred exchange (one that outlives the event that brought its request) keeps a `struct
 * sink_deferral` inside its own allocation: the exchange's wishes, written by the exchange
 * layer (what it waits for next), and the connection's bookkeeping for them (the timer, the
 * private set of watched handles). Ownership is the connection's rule, kept in connection.c:
 * exactly one thread runs a connection and its deferred exchange at a time — the pool thread
 * that has its event, the timer that wakes it, or a handler's own thread that holds it
 * (ex_hold) — and every callback of the exchange runs on that owner. */
#ifndef LF_SINK_H
#define LF_SINK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "lf/event_handler.h"
#include "lf/timer.h"

struct exchange;
struct http_request;
struct runtime;
struct server;
struct sink;
struct worker;

/* ---- exchange -> connection ------------------------------------------------------------- */

/* Flags of sink_ops.send. */
enum {
    SEND_MORE = 1,  /* more bytes follow at once (a file after a head): let the kernel coalesce */
    SEND_WHOLE = 2, /* a whole response: it may wait for the answers to requests pipelined
                     * behind it, to leave in one write with them */
};

/* What a watched descriptor waits for, and what its callback is told (the values are epoll's:
 * connection.c checks). */
enum { WATCH_IN = 0x001, WATCH_OUT = 0x004, WATCH_ERR = 0x008, WATCH_HUP = 0x010 };

/* A descriptor a deferred exchange watches (a CGI pipe, a pidfd, a timerfd): registered in the
 * connection's private set (ex_watch, exchange.h). The memory is the handler's. */
struct ex_watch {
    int fd;
    uint32_t events;        /* the interest now; 0: registered but not armed */
    bool registered;        /* the connection's: counted among the exchange's handles */
    bool armed;             /* the connection's: in its private set now */
    /* Runs on the exchange's owner, one callback at a time with all of its others. Returns 0,
     * or -errno when the exchange cannot go on (the connection closes). */
    int (*fn)(struct exchange *ex, struct ex_watch *w, uint32_t events);
};

struct sink_ops {
    /* Write iov[0..n) behind whatever is queued; queue what the socket does not take (a head
     * and one stream piece at most). Returns 0 or -errno (the connection is dead). */
    int (*send)(struct sink *s, struct worker *w, const struct iovec *iov, int iovcnt,
                unsigned flags);
    /* Send the response head `head`, then `len` bytes of `fd` from `off`, behind whatever is
     * queued (by sendfile, or by copy with the head in the first write: sendfile_min_size);
     * release(ref) once done with the descriptor. Returns 0 or -errno (fd released). */
    int (*send_file)(struct sink *s, struct worker *w, const struct iovec *head, int fd,
                     off_t off, off_t len, void (*release)(void *ref), void *ref);
    /* Output is queued that the socket has not taken yet. */
    bool (*blocked)(const struct sink *s);
    /* Register a watched descriptor, or change its interest (w->events). Returns 0 or -errno. */
    int (*watch)(struct sink *s, struct ex_watch *w);
    /* Remove it (the caller closes the descriptor afterwards). */
    void (*unwatch)(struct sink *s, struct ex_watch *w);
    /* From the thread that holds the exchange (ex_hold): the pool owns it again; its handler's
     * writable() runs there next. */
    void (*release)(struct sink *s);
    /* The local address the connection came in on (IPv4 v4-mapped). Returns 0 or -errno. */
    int (*local_address)(const struct sink *s, struct sockaddr_in6 *out);
};

struct sink {
    const struct sink_ops *ops;
};

/* What a deferred exchange waits for next (sink_deferral.wants), set by the exchange layer
 * before it returns to the connection. */
enum {
    DW_BODY = 1,      /* request body bytes: deliver them to body() */
    DW_WRITABLE = 2,  /* call writable() once the socket has room (also: to yield) */
    DW_TIMER = 4,     /* call writable() at `wake` (ex_sleep) */
    DW_HELD = 8,      /* a handler's thread owns the exchange until it calls release() */
};

struct sink_deferral {
    struct exchange *ex;
    uint8_t wants;            /* DW_* (the exchange layer's) */
    bool done;                /* the response is complete: end() it */
    bool close;               /* the connection must close after this response */
    bool responded;           /* a response head has been sent */
    /* The connection's bookkeeping (connection.c only). */
    int64_t wake;             /* DW_TIMER: timer_now() deadline */
    struct timer_entry timer;
    struct sink *sink;
    struct event_handler watch_set; /* the private epoll set of the watched handles and the
                                     * socket (fd -1 while there are none) */
    unsigned nwatch;
    bool undrained;           /* edge mode: a step of the private set stopped before it was
                               * empty, so no new edge may come for what it still holds */
};

/* ---- connection -> exchange ------------------------------------------------------------ */

/* What the connection knows of a request that the exchange needs. */
struct request_ctx {
    struct server *srv;
    struct runtime *rt;              /* the configuration generation it runs under */
    const struct http_request *req;  /* NULL for an error before a request could be parsed */
    struct in6_addr peer_addr;       /* the TCP peer (or what a PROXY header said) */
    in_port_t peer_port;             /* network byte order */
    bool tls;
    unsigned https_port;             /* the first TLS listener's (tls_redirect_http), or 0 */
    bool body_follows;               /* body bytes are still to come */
    bool closing;                    /* the connection closes after this response (draining) */
    bool limit_at_request;           /* the peer is a trusted proxy: its clients' connections
                                      * are counted per request (client_limits.h) */
    bool admin;                      /* from an admin_listen listener: the built-ins only */
    uint64_t t0_ns;                  /* the exchange's start (metrics.h); 0: now */
};

/* What came of a request (exchange_layer.request). */
struct served {
    struct sink_deferral *deferred;  /* the exchange continues: NULL when it is complete */
    bool close;                      /* the response said "Connection: close" */
    uint32_t limits[2];              /* per-client limit slots the request holds until its
                                      * response is complete (client_limits.h; UINT32_MAX:
                                      * none): the connection releases them */
};

/* Every entry returns 0, or -errno when the connection must close now. The deferred callbacks
 * run on the exchange's owner; afterwards the connection looks at d->done and d->wants. */
struct exchange_layer {
    int (*request)(struct sink *s, struct worker *w, const struct request_ctx *rc,
                   struct served *out);
    /* A request that could not be parsed: answer `status` (the connection closes after). */
    int (*error)(struct sink *s, struct worker *w, const struct request_ctx *rc, int status);
    int (*body)(struct sink_deferral *d, struct worker *w, const char *data, size_t len,
                bool last);
    int (*writable)(struct sink_deferral *d, struct worker *w);
    int (*watch_event)(struct sink_deferral *d, struct worker *w, struct ex_watch *x,
                       uint32_t events);
    /* The body turned out malformed or too large before the handler answered: the handler's
     * state goes, the client gets `status`; the exchange is then done (and closes). */
    int (*fail)(struct sink_deferral *d, struct worker *w, int status);
    /* d->done: log and free the exchange. An internal redirect the handler asked for is served
     * through the same sink; *next is its deferral when it defers (else NULL). */
    int (*end)(struct sink_deferral *d, struct worker *w, struct served *next);
    /* The connection has let go of an exchange that wants to be held (DW_HELD): its holder
     * takes it now (the connection's last touch, exchange.h's ex_hold()). */
    void (*hold)(struct sink_deferral *d);
    /* The connection closes before the exchange is done: the handler's state goes, the
     * exchange is logged (499 if nothing was answered) and freed. `w` may be NULL. */
    void (*abort)(struct sink_deferral *d, struct worker *w);
};

/* The exchange layer (exchange.c). */
extern const struct exchange_layer exchange_layer;

#endif
