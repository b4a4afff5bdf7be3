/* runtime.h — one generation of the configuration, with everything built from it.
 *
 * A runtime holds the parsed configuration (sites, locations, handler instances, roots), the
 * MIME table, the open-file cache and the access log. It is immutable once published and
 * reference-counted: the server holds one reference to the current runtime, and every
 * connection holds one to the runtime its current request runs under. SIGHUP builds a new
 * runtime and publishes it (server_reload); a connection switches to the newest runtime only
 * between requests, so requests in flight finish under the configuration they started with,
 * and an old runtime is freed when its last connection has moved on or closed. */
#ifndef LF_RUNTIME_H
#define LF_RUNTIME_H

#include <stdatomic.h>

#include "config.h"

struct file_cache;
struct logfile;
struct mime_table;
struct server;
struct tls_ctx;

struct runtime {
    _Atomic unsigned refs;
    unsigned generation;
    struct config cfg;          /* owned: freed with the runtime */
    struct mime_table *mime;
    struct file_cache *fc;
    struct tls_ctx *tls;        /* certificates of the TLS listeners; NULL without them */
    int access_fd;              /* -1 when the access log is off */
    struct logfile *access_log; /* its lines, whole or lost (logfile.h); NULL when off */
};

/* Build a runtime from `cfg` (whose allocations it takes over, even on failure). Opens roots,
 * user files, the MIME file and the access log; creates handler instances. Prints one line on
 * stderr and returns NULL on failure. */
struct runtime *runtime_build(struct server *srv, struct config *cfg, unsigned generation);
void runtime_ref(struct runtime *rt);
void runtime_unref(struct runtime *rt);

#endif
