/* server.h — the server object: the one process-wide mutable thing.
 *
 * Holds the immutable configuration, the handle set, the Leader/Followers pool, the listeners,
 * the list of live connections (for timeouts and draining) and the lifecycle flags. */
#ifndef LF_SERVER_H
#define LF_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "event_handler.h"
#include "handle_set.h"
#include "thread_pool.h"

struct conn;
struct mime_table;
struct router;
struct tls_ctx;

struct listener {
    struct event_handler eh;     /* first member: data.ptr of its epoll registration */
    struct server *srv;
    const struct listen_addr *addr;
    char url[96];                /* "http(s)://127.0.0.1:8080", with the bound port */
    _Atomic int paused;          /* 1: not re-armed (connection limit or EMFILE) */
};

struct server_handle {
    struct event_handler eh;
    struct server *srv;
};

struct server {
    struct config cfg;           /* immutable after start-up */
    int root_fd;                 /* O_PATH directory fd of the document root */
    struct mime_table *mime;
    struct router *router;
    /* TLS context of the TLS listeners (NULL without them). A connection takes its own reference
     * at accept, so a reload may swap this pointer while old connections keep the old one. */
    struct tls_ctx *tls;

    struct handle_set hs;
    struct thread_pool pool;
    struct listener listeners[CONFIG_MAX_LISTEN];
    unsigned nlisteners;

    struct server_handle timer;  /* timerfd: timeouts, draining, resuming paused listeners */
    struct server_handle signals;/* signalfd: SIGINT, SIGTERM */
    struct server_handle stop;   /* eventfd: wakes the leader when the pool stops */

    pthread_mutex_t conns_lock;  /* guards the connection list (not the connections) */
    struct conn *conns;          /* every live connection, for the timer sweep */
    _Atomic unsigned nconns;

    _Atomic bool draining;
    _Atomic int64_t drain_deadline; /* monotonic ms */
    time_t started;
};

/* Build the server from `cfg` (takes a copy): open the root, bind listeners, create the handle
 * set and the pool. Prints one line and returns -1 on failure. */
int server_init(struct server *srv, const struct config *cfg);
/* Run the pool until the server has drained and stopped. */
void server_run(struct server *srv);
void server_destroy(struct server *srv);

/* Start a graceful drain (idempotent): stop accepting, close idle connections, let responses
 * in flight finish, stop when none is left or at the drain deadline. */
void server_begin_drain(struct server *srv);
/* Called by conn_close() after a connection is gone. */
void server_conn_closed(struct server *srv);

/* Monotonic clock in milliseconds. */
int64_t now_ms(void);

#endif
