/* http_exchange.h — one request/response exchange, as handlers see it.
 *
 * Lives on the processing thread's stack for the duration of handler->handle(). A handler
 * answers by building a head (http_response.h) and calling exactly one of the ex_send*()
 * functions; the connection writes what it can at once and parks the rest (EPOLLOUT) without
 * blocking the thread.
 *
 * Deferred exchanges. A handler that cannot answer at once (a streamed body, a timer, an
 * external program) calls ex_defer() in handle(). The connection then keeps the exchange open
 * after handle() returns and calls the handler back (handler.h) with a fresh `struct
 * http_exchange` on the calling thread's stack, built from what the connection kept: `req` is
 * NULL then (the request's bytes are gone; copy what you need in handle()), `state` is what the
 * handler passed to ex_defer(). Exactly one thread runs a deferred exchange at a time:
 *   - body():     request body bytes (EX_WANT_BODY), on the connection's thread;
 *   - writable(): the exchange may make progress — what it wrote earlier has drained from the
 *                 socket, or the timer set with ex_sleep() expired, or (EX_TAKE_CONN) the
 *                 connection has been handed over;
 *   - abort():    the connection closed before the handler finished: free `state`.
 * A callback that neither finishes the response (ex_send*, ex_stream_end) nor parks output
 * nor sleeps is called again through writable() once the socket can take more (that is how a
 * long body yields to other connections between events). */
#ifndef LF_HTTP_EXCHANGE_H
#define LF_HTTP_EXCHANGE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http_request.h"
#include "http_response.h"

struct conn;
struct loc_conf;
struct runtime;
struct server;
struct worker;

struct http_exchange {
    struct conn *conn;
    struct worker *w;
    struct server *srv;
    struct runtime *rt;     /* the configuration generation this request runs under */
    const struct http_request *req; /* NULL in callbacks of a deferred exchange */
    const struct loc_conf *loc; /* the location that matched (set by the router) */
    const char *date;       /* IMF-fixdate of now, cached per thread */
    bool head_only;         /* HEAD request: send headers, no body */
    bool keep_alive;        /* the connection stays open after this response */
    bool responded;
    int status;             /* status sent, for logs and counters */
    uint64_t body_bytes;    /* body length of the response sent */
    struct in6_addr client_addr; /* the client (the peer, or what a trusted proxy says) */
    struct strview remote_user;  /* set by Basic authentication */
    char user_buf[64];
    void *state;            /* a deferred exchange's handler state (ex_defer) */
    uint8_t redirects;      /* internal redirects that led here (CGI local Location) */
    bool path_plain;        /* `path` was taken as it came: no segment of it starts with '.' */
    size_t path_len;
    char *path;             /* the decoded, normalised request path (NUL-terminated), in a
                             * buffer of EX_PATH_MAX bytes on the processing thread's stack;
                             * kept out of the struct so building an exchange zeroes no 4 KiB */
};

#define EX_PATH_MAX 4096

/* Send head + an in-memory body. Returns 0 (sent or parked) or -errno (connection dead). */
int ex_send(struct http_exchange *ex, struct response *r, const void *body, size_t len);
/* Send head + `len` bytes of `fd` from `off`; the exchange takes ownership of `fd` (it is
 * closed when sent). */
int ex_send_file(struct http_exchange *ex, struct response *r, int fd, off_t off, size_t len);
/* Like ex_send_file, but `fd` stays owned by the caller's `ref`: once the file is sent (or the
 * connection closes) the exchange calls release(ref) instead of closing fd. */
int ex_send_file_ref(struct http_exchange *ex, struct response *r, int fd, off_t off, size_t len,
                     void (*release)(void *ref), void *ref);
/* Send the built-in error page for `status` (with `Allow` for 405, etc.). */
int ex_send_error(struct http_exchange *ex, int status);

/* ---- deferred exchanges (server/stream.c) -------------------------------------------------- */

enum {
    EX_WANT_BODY = 1,  /* deliver the request body to handler->body() (else it is discarded) */
    EX_TAKE_CONN = 2,  /* the handler takes the connection over (CGI): once its thread is done
                        * with it, the connection calls writable() once and then touches nothing
                        * until the handler gives it back with conn_handback() */
};

/* Keep the exchange open after handle() returns (see above). `state` is passed back in every
 * callback; the callbacks are those of the location's handler (ex->loc). With EX_WANT_BODY or EX_TAKE_CONN, a client that sent `Expect: 100-continue` gets
 * its interim 100 response now. Returns 0 or -errno. */
int ex_defer(struct http_exchange *ex, void *state, unsigned flags);
/* For a handler that took the connection over (EX_TAKE_CONN), from any thread while it owns
 * it: a fresh exchange for it, on the caller's stack (as in a callback). */
void ex_for_conn(struct http_exchange *ex, struct conn *c, struct worker *w);
/* Change the flags of a deferred exchange (only from one of its callbacks). */
void ex_defer_flags(struct http_exchange *ex, unsigned flags);
/* Call writable() after `ms` milliseconds, from the timer in the handle set; until then the
 * connection waits parked (no thread, no handle armed). Only without EX_WANT_BODY. */
void ex_sleep(struct http_exchange *ex, unsigned ms);

/* Largest `len` for one ex_stream_write(): what did not fit the socket must fit a carry. */
#define EX_STREAM_MAX (60 * 1024)

/* Start a streamed response: send head `r` with Content-Length `length`, or, with length < 0,
 * chunked (HTTP/1.1) or close-delimited (HTTP/1.0). HEAD and 1xx/204/304 send no body (later
 * writes are dropped). Returns 0 (sent or parked) or -errno. */
int ex_stream_begin(struct http_exchange *ex, struct response *r, int64_t length);
/* Send body bytes (len <= EX_STREAM_MAX; with a Content-Length, bytes beyond it are dropped).
 * Returns 0 when the socket took everything (write more), 1 when the rest is parked (stop
 * until writable()), or -errno (the connection is dead: return -1 from the callback). */
int ex_stream_write(struct http_exchange *ex, const void *data, size_t len);
/* Finish a streamed response (the last chunk; with a Content-Length not reached, the
 * connection closes after the response). Returns 0 or -errno. */
int ex_stream_end(struct http_exchange *ex);

#endif
