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

#include "conf/config.h"
#include "conn/acceptor.h"
#include "conn/client_limits.h"
#include "conn/connection.h"
#include "daemon/systemd.h"
#include "exchange/server_view.h"
#include "lf/event_handler.h"
#include "lf/handle_set.h"
#include "lf/thread_pool.h"
#include "lf/timer.h"

struct config_watch;
struct exchange_layer;
struct runtime;

/* Listener slots over the server's lifetime, including listeners closed by reloads; under
 * `concurrency reuseport` every address takes one slot per thread. */
#define SERVER_MAX_LISTENERS 256

struct server_handle {
    struct event_handler eh;
    struct server *srv;
};

struct server {
    struct server_view view;     /* first member: what handlers may ask (server_view.h) */
    /* The connections: their list, count and limit, the draining flag, the current runtime
     * (conns.current: the configuration generation), what they hand their requests. */
    struct conn_list conns;
    unsigned generation;
    int argc;                    /* the command line, parsed again on reload */
    char **argv;
    /* Copies of the current runtime's settings that code without a runtime reference reads
     * (and conns.max). */
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
    struct server_handle signals;/* signalfd: SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 */
    struct server_handle stop;   /* eventfd: wakes the leader when the pool stops */
    struct timer_heap timers;    /* timerfd: handler timers (delays, CGI timeouts); timer.h */
    struct config_watch *watch;  /* inotify: reload_on_change (watch.h) */

    /* One reload at a time (SIGHUP and reload_on_change run on different threads); a reload
     * asked for while another runs is left pending for the timer tick. */
    pthread_mutex_t reload_lock;
    _Atomic(const char *) reload_pending; /* its `why` (a string literal); NULL: none */

    /* Lifecycle: ready once the listeners are up and the pool runs; `stopping` from the first
     * SIGTERM/SIGINT (readiness probes fail from then on); `draining` once the listeners are
     * stopped (conns.draining), which is `drain_delay` later (drain_at, monotonic ms; 0: none
     * pending). */
    _Atomic bool ready;
    _Atomic bool stopping;
    _Atomic int64_t drain_at;
    _Atomic int64_t drain_deadline; /* monotonic ms */
    time_t started;

    /* Handler types' process-wide state (CGI's spawner and job counters, the static
     * handler's compressor), one slot per registered type, created by their instances and
     * stopped and freed through the registry (registry.h) at exit. */
    _Atomic(void *) handler_state[HANDLER_TYPES_MAX];
    /* Per-client limits (client_limits.h): made by the first generation that sets a limit,
     * then kept across reloads (every client's counts survive a SIGHUP); freed at exit. */
    _Atomic(struct limit_table *) limits;
};

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

/* The server_view_ops every server_init() installs (fuzz harnesses that build a server object
 * by hand install them too). */
extern const struct server_view_ops daemon_view_ops;

#endif
