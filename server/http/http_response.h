/* http_response.h — building a response head in a caller-supplied (stack) buffer.
 *
 * Handlers start a head with resp_begin(), add their headers, and hand it to ex_send() or
 * ex_send_file() (exchange.h), which add Content-Length, Connection and the final CRLF.
 * Nothing here allocates. Header values must not contain CR or LF (callers pass values that
 * came through the parser or were built by the server). */
#ifndef LF_HTTP_RESPONSE_H
#define LF_HTTP_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "base/fmt.h" /* fmt_u64, for those who fill heads by hand */
#include "base/strview.h"

#define RESP_HEAD_MAX 4096 /* stack size handlers use for a response head */

struct response {
    char *buf;
    size_t len;
    size_t cap;
    int status;
    bool overflow;    /* a header did not fit: the exchange answers 500 instead */
    bool has_length;  /* Content-Length is already in the head (a precomputed block): the
                       * exchange must not add it again */
};

/* Start "HTTP/1.1 STATUS REASON", Server and Date. `date` is an IMF-fixdate (29 chars). */
void resp_begin(struct response *r, char *buf, size_t cap, int status, const char *date);
void resp_add_slow(struct response *r, const char *s, size_t n);

/* Append n bytes. Inline, so that a literal's fixed-length copy becomes a few moves. */
static inline void resp_add(struct response *r, const char *s, size_t n)
{
    if (__builtin_expect(r->overflow || n > r->cap - r->len, 0)) {
        resp_add_slow(r, s, n);
        return;
    }
    memcpy(r->buf + r->len, s, n);
    r->len += n;
}
/* Append a string literal (its length from sizeof, never counted by hand). */
#define RESP_LIT(r, lit) resp_add((r), "" lit, sizeof(lit) - 1)
void resp_header(struct response *r, const char *name, size_t namelen, const char *value,
                 size_t valuelen);
void resp_header_u64(struct response *r, const char *name, size_t namelen, uint64_t v);
/* Remove every header line `name` (any case) from the head so far: a site rule that sets or
 * detaches a header replaces what the handler wrote. The status line stays. */
void resp_remove_header(struct response *r, const char *name, size_t namelen);
#define RESP_HEADER(r, lit, v, vlen) resp_header((r), (lit), sizeof(lit) - 1, (v), (vlen))
#define RESP_HEADER_STR(r, lit, s) resp_header((r), (lit), sizeof(lit) - 1, (s), strlen(s))

/* Reason phrase for a status code ("Unknown" for codes we never send). */
const char *http_status_reason(int status);

/* Does this status forbid a body (1xx, 204, 304)? */
static inline bool http_status_has_no_body(int status)
{
    return status < 200 || status == 204 || status == 304;
}

/* The small built-in HTML page for an error status; returns its length. */
size_t http_error_page(int status, char *out, size_t cap);

#endif
