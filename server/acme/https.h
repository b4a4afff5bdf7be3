/* https.h — one HTTP/1.1 exchange over TLS for the ACME client (client.c), on its own thread.
 *
 * The CA's API needs little of HTTP: one request per connection (Connection: close), GET,
 * HEAD or POST of a small JSON body, a bounded reply. So it is OpenSSL for TLS (the peer
 * verified against the given roots or the system's, its name or IP address checked), llhttp
 * for the reply's framing (Content-Length, chunked, or up to the close), and a blocking loop
 * over a non-blocking socket whose every wait is bounded by the deadlines and cut short when
 * `stopping` says so. No process-wide state; nothing is kept between exchanges. */
#ifndef LF_ACME_HTTPS_H
#define LF_ACME_HTTPS_H

#include <stdbool.h>
#include <stddef.h>

struct https_request {
    const char *url;           /* https://HOST[:PORT]/PATH (http:// too when allow_http) */
    const char *method;        /* GET, HEAD or POST */
    const char *headers;       /* more header lines, each ending in CRLF ("" none) */
    const char *body;          /* NULL: none */
    size_t body_len;
    const char *ca_bundle;     /* roots to verify the server against; NULL: the system's */
    bool allow_http;           /* a test CA */
    unsigned connect_ms;       /* to a connected TLS session, name resolution included */
    unsigned total_ms;         /* the whole exchange */
    bool (*stopping)(void);    /* polled while waiting: true aborts */
};

struct https_reply_ops {
    void *arg;
    /* Each header field of the reply (name and value without surrounding whitespace), when
     * both fit HTTPS_FIELD_MAX and HTTPS_VALUE_MAX (longer ones are skipped). */
    void (*header)(void *arg, const char *name, size_t nlen, const char *value, size_t vlen);
    /* A piece of the body; -1 aborts the exchange (too large). */
    int (*body)(void *arg, const char *p, size_t len);
};

#define HTTPS_FIELD_MAX 64
#define HTTPS_VALUE_MAX 1024
/* The reply's head (status line and fields) is refused beyond this. */
#define HTTPS_HEAD_MAX (64 * 1024)

/* One exchange. 0 with the reply's status in *status, or -1 with a reason in err (the body
 * callback's abort: "aborted"). */
int https_exchange(const struct https_request *rq, const struct https_reply_ops *ops,
                   long *status, char *err, size_t errcap);

#endif
