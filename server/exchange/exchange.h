/* exchange.h — one request/response exchange, as handlers see it (server/exchange/exchange.c).
 *
 * An exchange is built on the processing thread's stack for every request and handed to the
 * location's handler (handler.h). The handler answers by building a head (http_response.h)
 * and calling one of the writers below; the exchange adds the framing (Content-Length or
 * chunked, Connection) and writes through its sink (sink.h): the connection, which sends what
 * it can at once and queues the rest without blocking the thread.
 *
 * Every function here that can fail returns 0 or -errno; -errno means the connection is dead
 * (or the exchange cannot go on) and the handler returns it as it is.
 *
 * Deferred exchanges. A handler that cannot answer at once (a streamed body, a timer, an
 * external program) calls ex_defer() in handle(): the exchange moves to the heap, and the
 * handler continues with the pointer it returns (the stack one is gone). The exchange then
 * outlives handle(); the handler is called back through its handler_ops and its watched
 * handles, always on the exchange's owner and one callback at a time (sink.h):
 *   - body():     request body bytes (ex_want_body);
 *   - writable(): the exchange may make progress — what it wrote has drained from the socket,
 *                 the ex_sleep() timer expired, a held exchange was released, or it yielded;
 *   - a watched descriptor is ready (ex_watch);
 *   - abort():    the connection closes first: free the state.
 * In callbacks, `req` is NULL (the request's bytes are gone: copy what you need in handle())
 * and `state` is what ex_defer() was given. The exchange ends when its response is complete
 * (ex_send*, ex_stream_end, ex_error, ex_redirect), it watches nothing and is not held; the
 * handler frees its state by then. A callback that leaves the response unfinished and waits
 * for nothing (no body, no sleep, no watch, output not blocked) is called again through
 * writable() once the socket has room: that is how a long body yields between events. */
#ifndef LF_EXCHANGE_H
#define LF_EXCHANGE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/http_request.h"
#include "http/http_response.h"
#include "conn/sink.h"

struct ex_deferred;
struct loc_conf;
struct runtime;
struct server;
struct worker;

struct exchange {
    struct sink *sink;      /* where the response goes */
    struct worker *w;       /* the thread running this callback (the core's) */
    struct server *srv;
    struct runtime *rt;     /* the configuration generation this request runs under */
    const struct http_request *req; /* NULL in callbacks of a deferred exchange */
    const struct loc_conf *loc; /* the location that matched (set by the router) */
    const char *date;       /* IMF-fixdate of now, cached per thread */
    bool head_only;         /* HEAD request: send headers, no body */
    bool keep_alive;        /* the connection stays open after this response */
    bool responded;         /* a response head has been sent */
    bool tls;               /* the request came over TLS */
    bool path_plain;        /* `path` was taken as it came: no segment of it starts with '.' */
    uint8_t http_minor;     /* of the request (the framing of a stream needs it later) */
    uint8_t redirects;      /* internal redirects that led here (CGI local Location) */
    int status;             /* status sent, for logs and counters */
    uint64_t body_bytes;    /* body bytes sent */
    const char *content_encoding; /* the Content-Encoding sent, for the access log (static
                                   * storage; NULL: none) */
    struct in6_addr client_addr; /* the client (the peer, or what a trusted proxy says) */
    struct in6_addr peer_addr;   /* the TCP peer (or what a PROXY header said) */
    in_port_t peer_port;    /* its port, network byte order */
    struct strview remote_user;  /* set by Basic authentication */
    char user_buf[64];
    void *state;            /* a deferred exchange's handler state (ex_defer) */
    struct ex_deferred *xd; /* the core's: the deferred exchange (NULL until ex_defer) */
    bool admin;             /* it came to an admin_listen listener (the built-ins answer it
                             * for anyone: status_allow does not apply) */
    uint8_t mx_vhost;       /* the core's: its metrics labels (metrics.h) */
    uint8_t mx_method;
    uint8_t vary;           /* EX_VARY_*: request fields the response depends
                             * on beyond its handler's head; written as Vary with the head */
    uint8_t cors;           /* the core's: EX_CORS_* for this request (site_access.h) */
    uint16_t cors_origin;   /* with EX_CORS_ORIGIN: the allowed origin's index */
    uint64_t t0_ns;         /* the core's: when its head had been parsed (mx_now_ns) */
    char *rules_hdr;        /* header lines of site rules for every response head of this
                             * request (ex_rules.h): EX_RULES_HDR_MAX bytes of the thread's
                             * stack, or a deferred exchange's copy */
    uint16_t rules_hdr_len; /* 0: none (the framing's one branch) */
    struct strview query;   /* the query handlers see (QUERY_STRING): the request's, or the
                             * one a site rule rewrote to, kept in `path`'s buffer after its
                             * NUL; valid while `req` is */
    size_t path_len;
    char *path;             /* the decoded, normalised request path (NUL-terminated), in a
                             * buffer of EX_PATH_MAX bytes on the processing thread's stack
                             * ("" once deferred: the buffer is gone) */
};

#define EX_PATH_MAX 4096

/* Request fields a response depends on beyond its handler's own head (`vary`): the exchange
 * writes them as Vary with the head. */
#define EX_VARY_ORIGIN 1u     /* CORS with a list of origins (site_access.h) */
#define EX_VARY_FETCH 2u      /* Sec-Fetch-Mode, Sec-Fetch-Dest, Accept: the SPA fallback */
#define EX_VARY_ENCODING 4u   /* Accept-Encoding: an error about a representation (406, 412)
                               * that the handler's own head would have named */
#define EX_VARY_DICTIONARY 8u /* with it, Available-Dictionary (RFC 9842) */

/* ---- answering at once ---------------------------------------------------------------------- */

/* Send head + an in-memory body (at most CARRY_MAX - RESP_HEAD_MAX bytes). */
int ex_send(struct exchange *ex, struct response *r, const void *body, size_t len);
/* Send head + `len` bytes of `fd` from `off`; the exchange takes `fd` (closed when sent). */
int ex_send_file(struct exchange *ex, struct response *r, int fd, off_t off, size_t len);
/* Like ex_send_file, but `fd` stays owned by the caller's `ref`: once the file is sent (or the
 * connection closes) the exchange calls release(ref) instead of closing fd. */
int ex_send_file_ref(struct exchange *ex, struct response *r, int fd, off_t off, size_t len,
                     void (*release)(void *ref), void *ref);
/* Answer `status` with an error page: the location's own (`error_page`), else the built-in
 * one (with `Allow` for 405 and 501). 400, 408, 413, 414, 431, 501 and 505 close the
 * connection after it, since the request's framing may be in doubt. */
int ex_error(struct exchange *ex, int status);
/* The status for an errno from opening or reading what a request names (ENOENT 404, EACCES
 * 403, EMFILE 503, ...): the server's one errno-to-HTTP map. */
int ex_status_for_errno(int err);
/* The location's `add_header` lines, in their order, into a response head. */
void ex_add_location_headers(struct response *r, const struct loc_conf *lc);

/* ---- deferring ------------------------------------------------------------------------------ */

/* Keep the exchange open after handle() returns, with `state` for the callbacks (those of the
 * location's handler). Returns the exchange to use from now on, or NULL when out of memory
 * (then nothing happened: answer with ex_error(ex, 503)). */
struct exchange *ex_defer(struct exchange *ex, void *state);
/* Deliver the request body to body() (want) or stop reading it for now (!want: the client
 * waits, its bytes stay in the socket). A client that sent `Expect: 100-continue` gets its
 * interim 100 the first time. Returns 0 or -errno. */
int ex_want_body(struct exchange *ex, bool want);
/* Call writable() after `ms` milliseconds, from the timer: no thread and no handle waits. */
void ex_sleep(struct exchange *ex, unsigned ms);
/* Watch `fd` for `events` (WATCH_IN/WATCH_OUT; 0: registered, not armed): `fn` runs on the
 * exchange's owner when it is ready. `w` is the caller's memory, until ex_unwatch(). */
int ex_watch(struct exchange *ex, struct ex_watch *w, int fd, uint32_t events,
             int (*fn)(struct exchange *ex, struct ex_watch *w, uint32_t events));
/* Change what `w` waits for (0: nothing for now). */
int ex_watch_set(struct exchange *ex, struct ex_watch *w, uint32_t events);
/* Stop watching `w` (the caller closes the descriptor afterwards). */
void ex_unwatch(struct exchange *ex, struct ex_watch *w);
/* Take the exchange out of the pool (call from a callback or handle(), then return): once the
 * connection has let go of it, `give(ex)` is called, on that thread, as its last touch — hand
 * the exchange to its holder there (a handler's own thread, like CGI's spawner). From then on
 * the holder owns it: no callback runs and nothing of it is armed until the holder calls
 * ex_release(); meanwhile it may call ex_watch() and ex_want_body(). */
void ex_hold(struct exchange *ex, void (*give)(struct exchange *ex));
/* From the holding thread: back to the pool, where writable() runs next. The caller must not
 * touch the exchange afterwards. */
void ex_release(struct exchange *ex);
/* Is output queued that the socket has not taken? (Then wait for writable().) */
bool ex_blocked(const struct exchange *ex);
/* The local address this request came to (IPv4 v4-mapped): a CGI script's SERVER_ADDR.
 * Returns 0 or -errno. */
int ex_local_address(const struct exchange *ex, struct sockaddr_in6 *out);
/* Answer an internal GET (or HEAD) of `target` ("/path?query", same Host) instead: RFC 3875
 * 6.2.2. It is served once this exchange ends. Returns 0 or -errno. */
int ex_redirect(struct exchange *ex, const char *target, size_t len);

/* ---- streaming (deferred exchanges only) ---------------------------------------------------- */

/* Largest `len` for one ex_stream_write(): what did not fit the socket must fit a carry. */
#define EX_STREAM_MAX (60 * 1024)

/* Start a streamed response: send head `r` with Content-Length `length`, or, with length < 0,
 * chunked (HTTP/1.1) or close-delimited (HTTP/1.0). HEAD and 1xx/204/304 send no body (later
 * writes are dropped). */
int ex_stream_begin(struct exchange *ex, struct response *r, int64_t length);
/* Send body bytes (len <= EX_STREAM_MAX; with a Content-Length, bytes beyond it are dropped).
 * Then ex_blocked() says whether to stop until writable(). */
int ex_stream_write(struct exchange *ex, const void *data, size_t len);
/* Finish a streamed response (the last chunk; with a Content-Length not reached, the
 * connection closes after the response). */
int ex_stream_end(struct exchange *ex);

/* ---- filters of streamed bodies ------------------------------------------------------------ */

/* A filter transforms the body of a streamed response between the handler's ex_stream_write()
 * and the framing (compression of dynamic responses: compress/compress_stream.c). A handler
 * type installs one in a configuration generation (runtime.h: stream_filter); neither the
 * handler that streams nor the connection knows it is there. */
struct ex_filter_ops {
    /* In ex_defer(), while the request is there: what the filter would do for this exchange
     * (its own small code; 0: nothing, and begin() is not called). */
    unsigned (*offer)(const struct exchange *ex);
    /* In ex_stream_begin(), before the head is finished: look at the head `r` (status, fields)
     * and the body's `length` (-1: unknown); add fields to `r` (Vary, Content-Encoding).
     * Returns 1 when the body is filtered — its length is then unknown; *state is the
     * filter's (NULL when there is no body to filter: HEAD) —, 0 when it passes as it is, or
     * -errno. */
    int (*begin)(const struct exchange *ex, unsigned offer, struct response *r, int64_t length,
                 void **state);
    /* Filter `len` bytes of body (len <= EX_STREAM_MAX; `last`: the body ends after them) into
     * out[0..cap), cap >= EX_FILTER_OUT. Returns the bytes written, or -errno. */
    ssize_t (*run)(void *state, const void *in, size_t len, bool last, char *out, size_t cap);
    void (*free)(void *state);
};

/* What run() may produce from EX_STREAM_MAX bytes of input, at most: a little more than the
 * input (incompressible data grows by the codings' block overhead). */
#define EX_FILTER_OUT (63 * 1024)

#endif
