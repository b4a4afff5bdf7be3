/* runtime.h — one generation of the configuration, with everything built from it.
 *
 * A runtime holds the parsed configuration (sites, locations, handler instances, roots), the
 * handler types' per-generation state (the static handler's MIME table and open-file cache),
 * the TLS contexts and the access log. It is built by runtime_build() (generation.c),
 * immutable once published and reference-counted: the server holds one reference to the
 * current runtime, and every connection holds one to the runtime its current request runs
 * under. SIGHUP builds a new runtime and publishes it (server_reload); a connection switches
 * to the newest runtime only between requests, so requests in flight finish under the
 * configuration they started with, and an old runtime is freed when its last connection has
 * moved on or closed. Freeing goes through what the runtime holds (instances' destroy(), the
 * types' generation_free()), never through the registry. */
#ifndef LF_RUNTIME_H
#define LF_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>

#include "conf/config.h"

struct exchange;
struct logfile;
struct limit_table;
struct ex_filter_ops;
struct tls_ctx;

struct runtime {
    _Atomic unsigned refs;
    unsigned generation;
    struct config cfg;          /* owned: freed with the runtime */
    struct tls_ctx *tls;        /* certificates of the TLS listeners; NULL without them */
    int access_fd;              /* -1 when the access log is off */
    struct logfile *access_log; /* its lines, whole or lost (logfile.h); NULL when off */
    /* The per-client limits' table (client_limits.h): the server's, shared by every
     * generation since the first that set a limit; NULL before. */
    struct limit_table *limits;
    /* The location's own error page for `status`, when a handler type provides them (the
     * static one): 0 when sent, -ENOENT when there is none, or -errno (connection failed). */
    int (*serve_error_page)(struct exchange *ex, int status);
    void *error_page_state;     /* the type's, for serve_error_page (its generation state) */
    /* The filter of streamed response bodies, when a handler type provides one (the static
     * one's dynamic compression, exchange.h), or NULL. */
    const struct ex_filter_ops *stream_filter;
    void *stream_filter_state;  /* the type's, for the filter (the compressor: process-wide) */
    /* Handler types' state for this generation, and how each is freed (handler.h). */
    void *handler_state[HANDLER_TYPES_MAX];
    void (*handler_free[HANDLER_TYPES_MAX])(void *state);
    /* Frees the runtime and what it holds: set by its builder (runtime_build), which knows
     * what that is (handler instances, user files, TLS contexts, the access log), so that
     * this layer needs to know none of it. */
    void (*destroy)(struct runtime *rt);
};

/* Build a runtime from `cfg` (whose allocations it takes over, even on failure). Opens roots,
 * user files and the access log; builds the handler types' state and the locations' instances
 * (generation.c). Prints one line on stderr and returns NULL on failure. */
struct server;
struct runtime *runtime_build(struct server *srv, struct config *cfg, unsigned generation);
void runtime_ref(struct runtime *rt);

/* The current generation: the one a reload publishes and the next request takes. */
struct runtime_slot {
    _Atomic(struct runtime *) rt;
    pthread_mutex_t lock;        /* serialises taking a reference with publishing a new one */
};
void runtime_slot_init(struct runtime_slot *s);
void runtime_slot_destroy(struct runtime_slot *s); /* drops the slot's reference */
/* A reference to the current runtime (the caller must runtime_unref it), or NULL when the
 * slot is empty (before the first generation is published, or after the last). */
struct runtime *runtime_current(struct runtime_slot *s);
/* Publish `rt`, taking over the caller's reference; drops the previous runtime's. */
void runtime_publish(struct runtime_slot *s, struct runtime *rt);
void runtime_unref(struct runtime *rt);
/* Free a runtime whose last reference is gone (or that failed to build): rt->destroy. */
void runtime_free(struct runtime *rt);

#endif
