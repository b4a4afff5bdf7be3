/* stream.h — deferred exchanges: what a connection keeps of an exchange that outlives handle().
 *
 * Internal to the core (connection.c and stream.c); handlers use http_exchange.h. A deferred
 * exchange is owned by exactly one party at a time, like its connection: the thread processing
 * the connection's event, the timer (while it sleeps, ex_sleep), or — with EX_TAKE_CONN — the
 * handler that took the connection over (until conn_handback()). */
#ifndef LF_STREAM_H
#define LF_STREAM_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "strview.h"
#include "timer.h"

struct conn;
struct handler_ops;
struct http_exchange;
struct loc_conf;
struct worker;

enum { XF_NONE = 0, XF_LENGTH, XF_CHUNKED, XF_CLOSE }; /* body framing of a streamed response */

struct ex_deferred {
    const struct handler_ops *ops;
    void *inst;
    void *state;
    const struct loc_conf *loc;
    struct conn *conn;
    unsigned flags;            /* EX_WANT_BODY, EX_TAKE_CONN */
    int status;
    bool responded;            /* a head has been sent */
    bool done;                 /* the response is complete */
    bool head_only;
    bool keep_alive;
    bool handed_over;          /* EX_TAKE_CONN: the handler owns the connection now */
    uint8_t http_minor;
    uint8_t redirects;
    uint8_t framing;           /* XF_* once a stream has begun */
    uint64_t left;             /* XF_LENGTH: body bytes still to send */
    int64_t wake;              /* ex_sleep(): timer_now() deadline, 0 = none */
    struct in6_addr client_addr; /* the client, as the exchange saw it */
    uint64_t body_bytes;       /* body bytes sent, for the access log */
    /* For the access log, written when the exchange ends (only with an access log): copies of
     * what the request said, in one allocation. */
    char *log_buf;
    struct strview log_method, log_target, log_host, log_referer, log_ua, log_user;
    struct timer_entry timer;
};

/* A fresh exchange for a callback of c's deferred exchange, on the caller's stack. */
void xd_exchange(struct http_exchange *ex, struct conn *c, struct worker *w);
/* Callbacks (see handler.h). Return what the handler returned (0 or -1). */
int xd_body(struct conn *c, struct worker *w, const char *data, size_t len, bool last);
int xd_writable(struct conn *c, struct worker *w);
/* The connection is closing: call the handler's abort() (unless it took the connection, in
 * which case it cleans up itself) and free the deferred exchange. `w` may be NULL. */
void xd_abort(struct conn *c, struct worker *w);
/* The request failed before the handler answered (its body was too large or malformed): the
 * handler's abort() frees its state, the client gets `status` and the connection will close;
 * the exchange is logged with that status and freed. Returns 0 or -errno. */
int xd_fail(struct conn *c, struct worker *w, int status);
/* The exchange has finished (the handler has released its state): log it and free it. */
void xd_finish(struct conn *c, struct worker *w);
/* Free it without logging (it failed before answering; the caller answers and logs). */
void xd_free(struct conn *c);
/* Does the connection read the request body for the handler now? */
bool xd_reads_body(const struct conn *c);
/* Hand the sleeping connection to the timer (the caller's last touch of it). Returns 0 or
 * -ENOMEM (the caller still owns the connection then). */
int xd_schedule(struct conn *c);

#endif
