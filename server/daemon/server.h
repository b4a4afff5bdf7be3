/* server.h — the server object: the one process-wide mutable thing.
 *
 * Holds the current runtime (the configuration generation, runtime.h), the handle set, the
 * Leader/Followers pool, the listeners, the list of live connections (for timeouts and
 * draining) and the lifecycle flags. */
#ifndef LF_SERVER_H
#define LF_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn/client_limits.h"
#include "conf/config.h"
#include "lf/event_handler.h"
#include "lf/handle_set.h"
#include "daemon/systemd.h"
#include "lf/thread_pool.h"
#include "lf/timer.h"

struct config_watch;
struct conn;
struct exchange_layer;
struct runtime;

/* Listener slots over the server's lifetime, including listeners closed by reloads; under
 * `concurrency reuseport` every address takes one slot per thread. */
#define SERVER_MAX_LISTENERS 256

struct listener {
    struct event_handler eh;     /* first member: data.ptr of its epoll registration */
    struct server *srv;
    struct handle_set *hs;       /* the set it is registered in (reuseport: its thread's) */
    unsigned copy;               /* reuseport: which thread's socket for this address */
    struct listen_addr addr;     /* as configured */
    char url[96];                /* "http(s)://127.0.0.1:8080", with the bound port */
    _Atomic int paused;          /* 1: not re-armed (connection limit or EMFILE) */
    _Atomic bool closed;         /* removed by a reload: shut down, fd kept until exit */
    bool inherited;              /* a socket from systemd: never shut down (systemd.h) */
};

struct server_handle {
    struct event_handler eh;
    struct server *srv;
};

struct server {
    _Atomic(struct runtime *) rt; /* the current configuration generation */
    pthread_mutex_t rt_lock;     /* serialises taking a reference with publishing a new one */
    unsigned generation;
    int argc;                    /* the command line, parsed again on reload */
    char **argv;
    /* Copies of the current runtime's settings that code without a runtime reference reads. */
    _Atomic unsigned max_connections;
    _Atomic unsigned drain_timeout;
    _Atomic unsigned drain_delay;

    struct handle_set *hs;       /* hs[0]: the shared set (timers, signals, and with
                                    leader-followers everything); reuseport: hs[i] is
                                    thread i's set */
    unsigned nhs;
    struct thread_pool pool;
    struct listener listeners[SERVER_MAX_LISTENERS];
    _Atomic unsigned nlisteners; /* published slots; a slot never moves once published */
    struct systemd_state sd;     /* sockets passed by systemd, readiness notification */

    struct server_handle timer;  /* timerfd: timeouts, draining, resuming paused listeners */
    struct server_handle signals;/* signalfd: SIGINT, SIGTERM, SIGHUP, SIGUSR1 */
    struct server_handle stop;   /* eventfd: wakes the leader when the pool stops */
    struct timer_heap timers;    /* timerfd: handler timers (delays, CGI timeouts); timer.h */
    struct config_watch *watch;  /* inotify: reload_on_change (watch.h) */

    /* One reload at a time (SIGHUP and reload_on_change run on different threads); a reload
     * asked for while another runs is left pending for the timer tick. */
    pthread_mutex_t reload_lock;
    _Atomic(const char *) reload_pending; /* its `why` (a string literal); NULL: none */

    pthread_mutex_t conns_lock;  /* guards the connection list (not the connections) */
    struct conn *conns;          /* every live connection, for the timer sweep */
    _Atomic unsigned nconns;

    /* Lifecycle: ready once the listeners are up and the pool runs; `stopping` from the first
     * SIGTERM/SIGINT (readiness probes fail from then on); `draining` once the listeners are
     * stopped, which is `drain_delay` later (drain_at, monotonic ms; 0: none pending). */
    _Atomic bool ready;
    _Atomic bool stopping;
    _Atomic int64_t drain_at;
    _Atomic bool draining;
    _Atomic int64_t drain_deadline; /* monotonic ms */
    time_t started;

    /* Handler types' process-wide state (CGI's spawner and job counters, the static
     * handler's compressor), one slot per registered type, created by their instances and
     * stopped and freed through the registry (handler.h) at exit. */
    _Atomic(void *) handler_state[HANDLER_TYPES_MAX];
    /* The layer above the connections (sink.h): set by main() before server_init. */
    const struct exchange_layer *layer;
    _Atomic unsigned https_port; /* the first open TLS listener's port (tls_redirect_http) */
    /* Per-client limits (client_limits.h): made by the first generation that sets a limit,
     * then kept across reloads (every client's counts survive a SIGHUP); freed at exit. */
    _Atomic(struct limit_table *) limits;
};

/* What /server-status and /metrics show of the core, taken without stopping anything: the
 * per-thread counters (relaxed atomics, thread_pool.h) summed, the connections classified by
 * one pass over their list under its lock. */
#define GAUGES_MAX_WORKERS 64
enum { GAUGE_READING = 0, GAUGE_WRITING, GAUGE_IDLE, GAUGE_HANDLER, GAUGE_CLOSING, GAUGE_ACTIVE,
       GAUGE_CONN_KINDS };
struct server_gauges {
    int64_t uptime;
    bool ready;                       /* server_ready(): what /readyz answers */
    bool draining;
    const char *concurrency;          /* the strategy's name */
    unsigned threads;                 /* every pool thread, the HS/HA reactor included */
    unsigned role[3];                 /* enum worker_role: following, leading, processing */
    uint64_t events, waits, promotions, no_follower, requests, bytes_out, accepted;
    unsigned conns_open;
    unsigned conns[GAUGE_CONN_KINDS]; /* what the open connections wait for */
    unsigned timers;                  /* handler timers scheduled */
    struct limit_stats limits;        /* per-client limits (zero while no limit is set) */
    unsigned nworkers;                /* detail kept for the first GAUGES_MAX_WORKERS threads */
    struct {
        int role;
        uint64_t events, requests, bytes_out, promotions, no_follower;
    } worker[GAUGES_MAX_WORKERS];
};
extern const char *const gauge_conn_names[GAUGE_CONN_KINDS];
extern const char *const gauge_role_names[3];
void server_gauges(struct server *srv, struct server_gauges *g);

/* Build the server from `cfg` (whose allocations the first runtime takes over): open roots,
 * bind listeners, open logs, drop privileges, create the handle set and the pool. With
 * cfg->test_only, only validate. argc/argv are kept for reloads. Prints one line and returns
 * -1 on failure. */
int server_init(struct server *srv, struct config *cfg, int argc, char **argv,
                const struct exchange_layer *layer);
/* SIGHUP or reload_on_change (`why`, a string literal, prefixes the log lines): parse the
 * configuration again and publish it; on any error keep the current one. Never waits for
 * another reload: if one is running, this one is done by the timer tick after it. */
void server_reload(struct server *srv, const char *why);
/* A reference to the current runtime (the caller must runtime_unref it). */
struct runtime *server_runtime(struct server *srv);
/* Run the pool until the server has drained and stopped. */
void server_run(struct server *srv);
void server_destroy(struct server *srv);

/* Start a graceful drain (idempotent): stop accepting, close idle connections, let responses
 * in flight finish, stop when none is left or at the drain deadline. */
void server_begin_drain(struct server *srv);
/* What the probes report (builtin/builtin_status.c): ready: listeners up, pool running and no
 * stop requested; stopping: a graceful stop was requested (the drain may not have begun yet). */
bool server_ready(struct server *srv);
bool server_stopping(struct server *srv);

/* Called by conn_close() after a connection is gone. */
void server_conn_closed(struct server *srv);

/* Monotonic clock in milliseconds. */
int64_t now_ms(void);

#endif
