/* server_view.h — what handlers may see of the server they run in: the gauges that
 * /server-status and /metrics show, what the probes answer, and the handler types'
 * process-wide state. Declared here, below the handlers, and defined by the daemon (server.c),
 * so that no handler needs the server object. */
#ifndef LF_SERVER_VIEW_H
#define LF_SERVER_VIEW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn/client_limits.h"
#include "conn/connection.h"

struct runtime;
struct server;
struct stats_writer;

/* What /server-status and /metrics show of the core, taken without stopping anything: the
 * per-thread counters (relaxed atomics, thread_pool.h) summed, the connections classified by
 * one pass over their list under its lock (conn_gauges). */
#define GAUGES_MAX_WORKERS 64
#define GAUGE_ROLES 3 /* enum worker_role (thread_pool.h) */
struct server_gauges {
    int64_t uptime;
    bool ready;                       /* server_ready(): what /readyz answers */
    bool draining;
    const char *concurrency;          /* the strategy's name */
    unsigned threads;                 /* every pool thread, the HS/HA reactor included */
    unsigned role[GAUGE_ROLES];       /* enum worker_role: following, leading, processing */
    uint64_t events, waits, promotions, no_follower, requests, bytes_out, accepted;
    unsigned conns_open;
    unsigned conns[GAUGE_CONN_KINDS]; /* what the open connections wait for (connection.h) */
    unsigned timers;                  /* handler timers scheduled */
    struct limit_stats limits;        /* per-client limits (zero while no limit is set) */
    unsigned nworkers;                /* detail kept for the first GAUGES_MAX_WORKERS threads */
    struct {
        int role;
        uint64_t events, requests, bytes_out, promotions, no_follower;
    } worker[GAUGES_MAX_WORKERS];
};
extern const char *const gauge_role_names[GAUGE_ROLES];

/* The server as a handler sees it, through calls it does not link against: the daemon's
 * `struct server` begins with a `struct server_view` (its first member, as an event handler
 * begins its handle's struct), whose ops the daemon sets before anything runs. So a handler
 * holding the opaque `struct server *` of its exchange asks these questions, and the
 * dependency points down to this interface, never up to the daemon. */
struct server_view_ops {
    /* What /server-status and /metrics show of the core (the pool's and connections'). */
    void (*gauges)(struct server *srv, struct server_gauges *g);
    /* What the probes report: ready: listeners up, pool running and no stop requested;
     * stopping: a graceful stop was requested (the drain may not have begun yet). */
    bool (*ready)(struct server *srv);
    bool (*stopping)(struct server *srv);
    /* Handler types' process-wide state (CGI's spawner and job counters, the static
     * handler's compressor): one slot per registered type (HANDLER_TYPES_MAX,
     * conf/handler_conf.h), created by their instances, stopped and freed through the
     * registry at exit. */
    _Atomic(void *) *(*handler_state)(struct server *srv, unsigned slot);
    /* Every handler type's counters (handler.h: stats()), in registry order: what the status
     * page and the metrics show of the handlers without naming one (the registry's
     * handlers_stats, which sits above the handlers). */
    void (*handler_stats)(struct server *srv, const struct runtime *rt, struct stats_writer *w);
};

struct server_view {
    const struct server_view_ops *ops;
};

static inline const struct server_view_ops *server_view_ops_of(struct server *srv)
{
    return ((const struct server_view *)(const void *)srv)->ops;
}

static inline void server_gauges(struct server *srv, struct server_gauges *g)
{
    server_view_ops_of(srv)->gauges(srv, g);
}

static inline bool server_ready(struct server *srv)
{
    return server_view_ops_of(srv)->ready(srv);
}

static inline bool server_stopping(struct server *srv)
{
    return server_view_ops_of(srv)->stopping(srv);
}

static inline _Atomic(void *) *server_handler_state(struct server *srv, unsigned slot)
{
    return server_view_ops_of(srv)->handler_state(srv, slot);
}

static inline void server_handler_stats(struct server *srv, const struct runtime *rt,
                                        struct stats_writer *w)
{
    server_view_ops_of(srv)->handler_stats(srv, rt, w);
}

#endif
