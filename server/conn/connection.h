/* connection.h — a client connection: the HTTP/1.1 state machine's concrete event handler.
 *
 * A connection holds only what must survive between events: the socket and its transport, the
 * llhttp state, its state and deadline, and the progress of a response in flight. The request
 * itself is read into the processing thread's stack buffer and parsed there; leftover bytes
 * that must outlive the event go into a pooled carry buffer (carry.h). Its exchanges see it
 * only as a sink (sink.h), and it sees them only as the exchange layer.
 *
 * One thread at a time owns a connection: the one running its event (EPOLLONESHOT, or its
 * ownership word under leader-followers-edge), the timer
 * that wakes its sleeping exchange, or a handler's thread that holds that exchange. `armed`
 * and `state` are the only fields another thread reads (the timer sweep, /server-status), and
 * they are atomics. */
#ifndef LF_CONNECTION_H
#define LF_CONNECTION_H

#include <llhttp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf/runtime.h"
#include "conn/sink.h"
#include "http/http_parser.h"
#include "lf/event_handler.h"
#include "lf/thread_pool.h"

struct carry;
struct exchange_layer;
struct listener;
struct server;
struct ssl_st;
struct sockaddr_storage;
struct timer_heap;
struct transport_ops;

/* What the process above (the daemon) hears from the connections. */
struct conn_hooks {
    /* A connection is gone, and `left` are still open: resume paused listeners, or end a
     * drain once none is left. Also for an accepted socket that never became a connection. */
    void (*closed)(void *arg, unsigned left);
    void *arg;
};

/* What every connection shares: the list of live ones (for the timer sweep, draining and the
 * gauges), their count and its limit, the lifecycle flag they read, and what they hand their
 * requests. Set up by the daemon (conn_list_init), which embeds it in the server object.
 * What every request reads comes first; what every accept and close writes has a cache line
 * of its own, so that those writes do not take the line away from the readers. */
#define CONN_LIST_CACHE_LINE 64
struct conn_list {
    struct runtime_slot current;      /* the generation the next request takes */
    const struct exchange_layer *layer; /* the layer above the connections (sink.h) */
    struct thread_pool *pool;         /* where closed connections are retired (tp_retire) */
    struct timer_heap *timers;        /* handler timers (sink deferrals) */
    struct server *srv;               /* handed, opaque, to the exchange layer (request_ctx) */
    struct conn_hooks hooks;
    _Atomic unsigned max;             /* max_connections of the current runtime */
    _Atomic unsigned https_port;      /* the first open TLS listener's port (tls_redirect_http) */
    _Atomic bool draining;            /* no new connections; idle ones close */

    _Alignas(CONN_LIST_CACHE_LINE) pthread_mutex_t lock; /* guards the list, not its members */
    struct conn *head;                /* every live connection */
    _Atomic unsigned open;            /* counted by the acceptor, before conn_create */
};

void conn_list_init(struct conn_list *cl, struct server *srv, struct thread_pool *pool,
                    struct timer_heap *timers, const struct exchange_layer *layer,
                    const struct conn_hooks *hooks);
/* After the pool has stopped: free the connections still open (their exchanges are
 * aborted). */
void conn_free_open(struct conn_list *cl);
/* Then, once nothing needs the current runtime any more: drop it, and the list's lock. */
void conn_list_destroy(struct conn_list *cl);
/* An accepted socket that never became a connection, or a connection gone: count it out. */
void conn_list_closed(struct conn_list *cl);

/* What the open connections wait for, as /server-status and /metrics show them. */
enum { GAUGE_READING = 0, GAUGE_WRITING, GAUGE_IDLE, GAUGE_HANDLER, GAUGE_CLOSING, GAUGE_ACTIVE,
       GAUGE_CONN_KINDS };
extern const char *const gauge_conn_names[GAUGE_CONN_KINDS];

/* What a connection is doing, or waiting for. One step function per kind of wait:
 *
 *   state         waits for                         step          deadline
 *   CS_IDLE       a request (none begun)            step_read     keep-alive (first: header;
 *                                                                 TLS: handshake, from accept)
 *   CS_HEAD       the rest of a request head        step_read     timeout_header + rate
 *   CS_BODY       the rest of a request body        step_read     timeout_body + rate
 *   CS_SENDING    room for queued response bytes    step_send     timeout_send
 *   CS_EXCHANGE   what its deferred exchange waits  step_exchange body, send, or none
 *                 for (body, room, a timer, its
 *                 watched handles, its holder)
 *   CS_LINGERING  the client to finish, after the   step_linger   5 s from the half-close
 *                 response and a half-close
 *
 * The three reading states share a step: one read can finish a head, carry a body and the
 * next requests. Transitions happen in one place, conn_next(). */
enum conn_state {
    CS_IDLE = 0,
    CS_HEAD,
    CS_BODY,
    CS_SENDING,
    CS_EXCHANGE,
    CS_LINGERING,
    CS_STATES
};
extern const char *const conn_state_names[CS_STATES];

/* Values of conn.armed: the hand-off with the timer sweep. */
enum {
    CONN_OWNED = 0, /* a thread (or the timer, or a holder) has it: the sweep keeps off */
    CONN_PARKED,    /* waiting in the handle set: the sweep may expire it */
    CONN_KILLED,    /* the sweep expired it: the next event closes it */
};

struct conn {
    struct event_handler eh;           /* first member: the socket in the handle set */
    struct sink sink;                  /* the connection as its exchanges see it */
    const struct listener *listener;   /* where it came from (its list, its handle set) */
    struct runtime *rt;                /* configuration generation of the current request */
    const struct transport_ops *tp;
    union {
        struct {
            struct conn *prev, *next;  /* its conn_list, under the list's lock */
        };
        struct tp_retired retired;     /* closed, waiting to be freed (tp_retire) */
    };
    _Atomic int64_t deadline;          /* monotonic ms; the sweep expires it after this */
    _Atomic uint8_t armed;             /* CONN_* */
    _Atomic uint8_t state;             /* enum conn_state (written by the owner) */
    bool in_body;                      /* the parser is inside a request body */
    bool body_on_hold;                 /* a body follows once the client has 100 Continue */
    bool proxy_header;                 /* a PROXY protocol header must come first */
    uint8_t close_after;               /* close once the response in flight is sent (why:
                                        * connection.c's CLOSE_*) */
    bool gather;                       /* serving a request with more behind it in the buffer:
                                        * its whole response may wait for theirs (one write) */
    bool gathered;                     /* `out` holds such responses, not yet written */
    uint8_t tp_want;                   /* events the transport needs after -EAGAIN (transport.h) */
    uint8_t tp_flags;                  /* transport-private state */
    bool lowat;                        /* TCP_NOTSENT_LOWAT is set while a file is sent */
    bool file_copy;                    /* the file goes out by copy, not sendfile */
    int file_fd;                       /* file being sent, -1 when none */
    uint32_t requests;                 /* served on this connection */
    struct ssl_st *ssl;                /* TLS connection (transport_tls.c); NULL when plain */
    struct carry *in;                  /* unparsed input carried between events */
    struct carry *out;                 /* unsent response bytes */
    void (*file_release)(void *ref);   /* owner of file_fd */
    void *file_ref;
    off_t file_off;
    off_t file_left;
    struct sink_deferral *xd;          /* its deferred exchange, or NULL */
    int64_t phase_start;               /* monotonic ms: the first byte of the head being read, or
                                        * the start of the body (their deadlines count from it) */
    struct http_body_count body;       /* the request body read so far (its limits) */
    struct in6_addr peer_addr;         /* the TCP peer (IPv4 v4-mapped), or what a PROXY header
                                        * says; the client unless a trusted proxy says more */
    in_port_t peer_port;               /* its port, network byte order */
    bool limit_at_request;             /* a trusted proxy: count its clients per request */
    uint32_t limit_conn;               /* per-client limits (client_limits.h): the slot of the
                                        * connection, held until it closes, */
    uint32_t limit_req[2];             /* and those of the request in flight, held until its
                                        * response is complete (LIMIT_NONE: none) */
    llhttp_t parser;
};

/* Create a connection for an accepted socket and register it, on the acceptor's thread `w`;
 * closes `fd` on failure (on -ENOMEM, after answering 503 if the listener speaks plain HTTP),
 * or after a 429 when its client holds too many connections (limit_conn_per_ip). The caller
 * counted the connection in its listener's conn_list (`open`); a failure uncounts it. With
 * `held` (not NULL), the connection is not registered but returned there, owned by the
 * caller, who must pass it to conn_serve_held(): its first bytes are usually there already
 * (TCP_DEFER_ACCEPT). */
int conn_create(const struct listener *l, int fd, const struct sockaddr_storage *peer,
                struct worker *w, struct conn **held);

/* Serve a held connection's first event on this thread, as if the handle set had reported
 * it readable: no hand-off to another thread, no epoll round trip. */
void conn_serve_held(struct conn *c, struct worker *w);

/* Free a connection after the pool has stopped (no epoll, no list, no counters). */
void conn_free_stopped(struct conn *c);

/* Count the open connections by what they wait for (GAUGE_*). Returns how many. */
unsigned conn_gauges(struct conn_list *cl, unsigned counts[]);

/* Expire connections (timer sweep): those past their deadline, and with `idle_too` all idle
 * or lingering ones whose output has reached the client (draining); `all`: every parked one
 * (the drain deadline). */
void conn_sweep(struct conn_list *cl, int64_t now, bool idle_too, bool all);

#endif
