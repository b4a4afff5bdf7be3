/* handler.h — the application-service interface (static files, CGI, built-ins).
 *
 * A handler instance is created from configuration at start-up and is immutable afterwards:
 * handle() runs concurrently on any pool thread, on that thread's stack, and must never block
 * on a peer. It answers through the exchange (http_exchange.h) or returns an HTTP status
 * (>= 400) for the core to answer with an error page.
 *
 * A handler that cannot answer at once defers the exchange (ex_defer) and is called back
 * through body(), writable() and abort() with the per-exchange state it passed; these run on
 * whichever pool thread owns the exchange at the time, one at a time (http_exchange.h). The
 * static file handler and the built-ins answer at once; the test endpoints defer (streams,
 * timers); CGI takes the connection over (EX_TAKE_CONN, handlers/cgi.c). */
#ifndef LF_HANDLER_H
#define LF_HANDLER_H

#include <stdbool.h>
#include <stddef.h>

struct http_exchange;
struct loc_conf;
struct server;

struct handler_ops {
    const char *name;
    /* Create an instance for location `lc` of `srv` (its settings are complete; its root is
     * open as lc->root_fd). On failure return NULL and write a reason into err. */
    void *(*create)(struct server *srv, const struct loc_conf *lc, char *err, size_t errlen);
    /* Answer a request. Returns 0 when a response was sent or the exchange was deferred, or
     * an error status. */
    int (*handle)(void *instance, struct http_exchange *ex);
    /* Deferred exchanges only (NULL otherwise). Request body bytes, chunked encoding already
     * removed; `last` once at the end (len 0). Returns 0, or -1 when the connection must
     * close. */
    int (*body)(void *instance, struct http_exchange *ex, const char *data, size_t len,
                bool last);
    /* The exchange may make progress (socket drained, timer expired, connection handed
     * over). Returns 0, or -1 when the connection must close. */
    int (*writable)(void *instance, struct http_exchange *ex);
    /* The connection is closing before the exchange finished: free ex->state. */
    void (*abort)(void *instance, struct http_exchange *ex);
    void (*destroy)(void *instance);
};

/* The static registry: handler types by name (NULL when unknown). */
const struct handler_ops *handler_lookup(const char *name);

extern const struct handler_ops static_file_handler;
extern const struct handler_ops cgi_handler;
extern const struct handler_ops status_handler;
extern const struct handler_ops metrics_handler;
extern const struct handler_ops health_handler;
extern const struct handler_ops test_handler;

/* At exit, after the pool has stopped: kill and reap the CGI scripts still running and free
 * their jobs (handlers/cgi.c). Jobs outlive configuration generations, so they are the
 * server's, not an instance's. */
void cgi_shutdown(struct server *srv);

/* At exit, after the server's last runtime reference has been dropped: stop the compressor
 * threads (a job in progress stops at its next chunk), drop the queued jobs and free what is
 * left (handlers/compress.c). */
void compress_shutdown(struct server *srv);

/* Answer `status` with the location's custom error page (`error_page`), if it has one.
 * Returns 0 when sent, -1 when there is none (the core sends its built-in page), -2 when the
 * connection failed. */
int static_send_error_page(struct http_exchange *ex, int status);

#endif
