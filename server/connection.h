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

struct carry;
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
    struct runtime *rt;                /* configuration generation of the current request */
    const struct transport_ops *tp;
    const struct listener *listener;
    struct conn *prev, *next;          /* server's connection list, under conns_lock */
    _Atomic int armed;
    _Atomic int64_t deadline;          /* monotonic ms; the sweep expires it after this */

    uint8_t phase;                     /* enum conn_phase */
    bool close_after;                  /* close once the response in flight is sent */
    bool sending;                      /* a response is parked waiting for EPOLLOUT */
    bool head_deadline;                /* deadline counts from the start of this head */
    bool proxy_header;                 /* a PROXY protocol header must come first */
    bool handshaking;                  /* TLS handshake not finished: timeout_handshake applies */
    uint8_t tp_want;                   /* events the transport needs after -EAGAIN (transport.h) */
    uint8_t tp_flags;                  /* transport-private state */
    struct ssl_st *ssl;                /* TLS connection (transport_tls.c); NULL when plain */
    struct carry *in;                  /* unparsed input carried between events */
    struct carry *out;                 /* unsent response bytes */
    int file_fd;                       /* file being sent, -1 when none */
    void (*file_release)(void *ref);   /* owner of file_fd (NULL: the connection owns it) */
    void *file_ref;
    off_t file_off;
    off_t file_left;
    uint32_t requests;                 /* served on this connection */

    struct sockaddr_in6 peer;          /* IPv4 stored as v4-mapped */
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

#endif
