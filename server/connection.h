/* connection.h — a client connection: the HTTP/1.1 state machine's concrete event handler.
 *
 * A connection holds only what must survive between events: the fd and transport, the llhttp
 * state, the phase, a deadline, and the progress of a response in flight. The request itself
 * is read into the processing thread's stack buffer and parsed there; leftover bytes that
 * must outlive the event go into a pooled carry buffer (carry.h). At most one thread processes
 * a connection at a time (EPOLLONESHOT), so its fields need no lock; only `armed` and
 * `deadline` are read by the timer sweep on another thread, and they are atomics. */
#ifndef LF_CONNECTION_H
#define LF_CONNECTION_H

#include <llhttp.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "event_handler.h"
#include "http_parser.h"

struct carry;
struct ex_deferred;
struct handle_set;
struct http_exchange;
struct iovec;
struct listener;
struct runtime;
struct ssl_st;
struct server;
struct transport_ops;
struct worker;

enum conn_phase {
    PH_HEAD = 0,   /* reading a request head (or idle between requests) */
    PH_BODY,       /* reading (and discarding or forwarding) a request body */
    PH_LINGER,     /* response sent, write side shut: draining input before close */
};

/* What a connection waits for, for /server-status (conn.view; written by its owner). */
enum conn_view {
    CV_READING = 0, /* a request head or body */
    CV_WRITING,     /* the socket to drain (EPOLLOUT) */
    CV_IDLE,        /* the next request (keep-alive) */
    CV_HANDLER,     /* a handler: a timer, a CGI script (nothing of it is armed) */
    CV_CLOSING,     /* lingering close */
};

/* Values of conn.armed: who may act on the connection. */
enum {
    ARMED_NO = 0,   /* a thread is processing it */
    ARMED_BUSY,     /* waiting in the handle set in the middle of a request or response */
    ARMED_IDLE,     /* waiting in the handle set between requests (keep-alive) */
    ARMED_LINGER,   /* response sent, write side shut: waiting for the client to finish */
    ARMED_KILLED,   /* the timer sweep expired it: the next event closes it */
};

struct conn {
    struct event_handler eh;           /* first member */
    struct server *srv;
    struct handle_set *hs;             /* where it is registered: its listener's set */
    struct runtime *rt;                /* configuration generation of the current request */
    const struct transport_ops *tp;
    const struct listener *listener;
    struct conn *prev, *next;          /* server's connection list, under conns_lock */
    _Atomic int64_t deadline;          /* monotonic ms; the sweep expires it after this */
    _Atomic int armed;
    int file_fd;                       /* file being sent, -1 when none */

    uint8_t phase;                     /* enum conn_phase */
    bool close_after;                  /* close once the response in flight is sent */
    bool sending;                      /* a response is parked waiting for EPOLLOUT */
    bool head_deadline;                /* phase_start is the start of the head being read */
    bool proxy_header;                 /* a PROXY protocol header must come first */
    bool handshaking;                  /* TLS handshake not finished: timeout_handshake applies */
    uint8_t tp_want;                   /* events the transport needs after -EAGAIN (transport.h) */
    uint8_t tp_flags;                  /* transport-private state */
    struct ssl_st *ssl;                /* TLS connection (transport_tls.c); NULL when plain */
    struct carry *in;                  /* unparsed input carried between events */
    struct carry *out;                 /* unsent response bytes */
    void (*file_release)(void *ref);   /* owner of file_fd (NULL: the connection owns it) */
    void *file_ref;
    off_t file_off;
    off_t file_left;
    struct ex_deferred *xd;            /* a deferred exchange in progress (stream.c), or NULL */
    int64_t phase_start;               /* monotonic ms: the first byte of the head being read, or
                                        * the start of the body (their deadlines count from it) */
    struct http_body_count body;       /* the request body read so far (its limits) */
    uint32_t requests;                 /* served on this connection */
    _Atomic uint8_t view;              /* enum conn_view, read by /server-status */
    bool gather;                       /* more requests follow in this read: a whole response
                                        * may be kept for one write with the next ones */
    bool gathered;                     /* `out` holds such responses, not yet written (only
                                        * while the connection's thread serves the read) */

    struct in6_addr peer_addr;         /* the TCP peer (IPv4 v4-mapped), or what a PROXY header
                                        * says; the client unless a trusted proxy says more */
    in_port_t peer_port;               /* its port, network byte order */
    llhttp_t parser;
};

/* Create a connection for an accepted socket and register it; closes `fd` on failure. */
int conn_create(struct server *srv, const struct listener *l, int fd,
                const struct sockaddr_storage *peer);

/* Free a connection after the pool has stopped (no epoll, no list, no counters). */
void conn_free_stopped(struct conn *c);

/* Expire connections (timer sweep): those past their deadline, and with `idle_too` all idle
 * keep-alive ones (draining); `all`: every waiting connection (drain deadline). */
void conn_sweep(struct server *srv, int64_t now, bool idle_too, bool all);

/* ---- for deferred exchanges (stream.c) and handlers that take a connection over ---------- */

/* How a handler gives back a connection it took (EX_TAKE_CONN). */
enum conn_handback_how {
    HANDBACK_DONE = 0,  /* the response is complete: continue (keep-alive, pipelining) */
    HANDBACK_CLOSE,     /* the exchange failed or the client is gone: close */
    HANDBACK_REDIRECT,  /* answer an internal GET of `redirect` instead (CGI local Location) */
};

struct conn_redirect {
    const char *target;        /* "/path?query" */
    size_t target_len;
    const char *host;          /* the original request's Host (may be empty) */
    size_t host_len;
};

/* Give back a connection taken over with EX_TAKE_CONN: the deferred exchange is freed and the
 * calling thread continues the connection as if its own event had fired (it re-arms or closes
 * it). The handler must not touch `c` afterwards. */
void conn_handback(struct conn *c, struct worker *w, enum conn_handback_how how,
                   const struct conn_redirect *redirect);

/* For a handler that took the connection: parse request body bytes from the carried input
 * and, when that is used up, one read of the socket; decoded bytes go to `sink` (which must
 * accept them all). Returns 1 when the body is complete (bytes after it stay carried for the
 * next request), 0 when more is to come (wait for EPOLLIN), -1 when the client closed or sent
 * a malformed body. */
int conn_pump_body(struct conn *c, http_body_cb sink, void *arg);

/* Send what is parked (carried bytes, a file). Returns 0 when everything is sent, -EAGAIN when
 * the socket is full, or -errno. */
int conn_flush(struct conn *c, struct worker *w);

/* Used by stream.c. */
int conn_send_or_park(struct http_exchange *ex, struct iovec *iov, int iovcnt, bool more);
void conn_note_response(struct http_exchange *ex, int status);
const char *conn_thread_date(struct worker *w);
void conn_wake(struct conn *c, struct worker *w); /* an ex_sleep() timer expired */

#endif
