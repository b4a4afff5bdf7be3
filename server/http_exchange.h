/* http_exchange.h — one request/response exchange, as handlers see it.
 *
 * Lives on the processing thread's stack for the duration of handler->handle(). A handler
 * answers by building a head (http_response.h) and calling exactly one of the ex_send*()
 * functions; the connection writes what it can at once and parks the rest (EPOLLOUT) without
 * blocking the thread. */
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
    const struct http_request *req;
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

#endif
