/* handler.h — the application-service interface (static files, CGI, built-ins). The handler
 * types themselves and their registry live above this layer (handlers/registry.h): nothing
 * here names one.
 *
 * A handler instance is created from configuration for one location and is immutable
 * afterwards: handle() runs concurrently on any pool thread, on that thread's stack, and must
 * never block on a peer. It answers through the exchange (exchange.h) — a response, or an
 * error page with ex_error() — and returns 0, or -errno when the connection failed.
 *
 * A handler that cannot answer at once defers the exchange (ex_defer) and is called back
 * through body(), writable() and abort() with the per-exchange state it passed; these run on
 * whichever thread owns the exchange at the time, one at a time (exchange.h). The static file
 * handler and the built-ins answer at once; the test endpoints defer (streams, timers); CGI
 * defers and watches the script's pipes, pidfd and timer through the exchange.
 *
 * State a handler type keeps beyond one location lives with the server or with a
 * configuration generation, created and freed through the registry (handlers/registry.h; the
 * core never names a handler type): process-wide state (CGI's spawner threads and counters) in
 * a slot of the server, per-generation state (the static handler's MIME table and open-file
 * cache) in a slot of the runtime. A type that needs its state where it has only an exchange
 * (an error page, a stream filter) leaves it in the runtime next to the hook it installs
 * (runtime.h). */
#ifndef LF_HANDLER_H
#define LF_HANDLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "conf/handler_conf.h"

struct exchange;
struct loc_conf;
struct runtime;
struct server;
struct stats_writer;

/* What create() gets: where it runs, and its type's state. */
struct handler_env {
    struct server *srv;
    struct runtime *rt;       /* the generation being built */
    _Atomic(void *) *process; /* the type's process-wide slot (NULL until it fills it; other
                               * threads read it: atomic) */
    void *generation;         /* the type's per-generation state (generation_init) */
};

struct handler_ops {
    const char *name;
    /* Per configuration generation (optional): build the type's state for env->rt before its
     * locations' instances are created (it may set rt->serve_error_page and rt->stream_filter, and
     * make its process-wide state; env->generation is NULL); free it with the generation.
     * Returns 0, or -1 with a reason in err. */
    int (*generation_init)(const struct handler_env *env, void **state, char *err,
                           size_t errlen);
    void (*generation_free)(void *state);
    /* Process-wide state in the server's slot, if create() made some (optional): stop()
     * after the pool has stopped and before the connections are freed (no thread of the
     * type's may touch an exchange after it returns); release() at the very end. */
    void (*stop)(void *state);
    void (*release)(void *state);

    /* Create an instance for location `lc` (its settings are complete; its root is open as
     * lc->root_fd). On failure return NULL and write a reason into err. */
    void *(*create)(const struct handler_env *env, const struct loc_conf *lc, char *err,
                    size_t errlen);
    /* Answer a request (or defer it). Returns 0, or -errno when the connection failed. */
    int (*handle)(void *instance, struct exchange *ex);
    /* Deferred exchanges only (NULL otherwise). Request body bytes, chunked encoding already
     * removed; `last` once at the end (len 0). Returns 0 or -errno. */
    int (*body)(void *instance, struct exchange *ex, const char *data, size_t len, bool last);
    /* The exchange may make progress (output drained, timer expired, released, yielded).
     * Returns 0 or -errno. */
    int (*writable)(void *instance, struct exchange *ex);
    /* The connection is closing before the exchange ended: unwatch and free ex->state. */
    void (*abort)(void *instance, struct exchange *ex);
    void (*destroy)(void *instance);

    /* The type's counters for /server-status and /metrics (optional), in w->format (JSON:
     * `"name":{...},` members; Prometheus: whole families): `process` is its process-wide
     * state (NULL until made), `generation` its state in `rt`. Reads relaxed atomics only. */
    void (*stats)(void *process, void *generation, const struct runtime *rt,
                  struct stats_writer *w);
};

#endif
