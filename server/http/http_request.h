/* http_request.h — a parsed request: views into the processing thread's read buffer.
 *
 * Valid only while the event that parsed it is being processed; nothing here is copied. */
#ifndef LF_HTTP_REQUEST_H
#define LF_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <llhttp.h> /* llhttp_method_t: HTTP_GET, HTTP_HEAD, ... */

#include "base/strview.h"

#define HTTP_MAX_HEADERS 128 /* hard cap; config max_headers (default 100) is checked first */

struct http_header {
    struct strview name;
    struct strview value;
};

/* Header fields the server itself reads, recorded once while parsing (first occurrence), so
 * that no handler scans every field per lookup. */
enum known_header {
    H_ACCEPT,
    H_ACCEPT_ENCODING,
    H_AUTHORIZATION,
    H_AVAILABLE_DICTIONARY,
    H_IF_MATCH,
    H_IF_MODIFIED_SINCE,
    H_IF_NONE_MATCH,
    H_IF_RANGE,
    H_IF_UNMODIFIED_SINCE,
    H_RANGE,
    H_REFERER,
    H_USER_AGENT,
    H_KNOWN_COUNT
};

struct http_request {
    uint8_t method;              /* llhttp_method_t */
    uint8_t http_major, http_minor;
    bool keep_alive;             /* the Connection field and the version allow another request */
    bool has_body;               /* Content-Length > 0 or chunked */
    bool chunked;
    bool expect_continue;
    bool absolute_form;          /* the target was "http(s)://authority/..." */
    uint64_t content_length;     /* when !chunked */
    struct strview method_name;
    struct strview target;       /* request-target as sent */
    struct strview path;         /* target's path (absolute-form: after the authority) */
    struct strview query;        /* after '?', without it; ptr NULL when there is none */
    struct strview host;         /* Host header, or the authority of an absolute-form target */
    unsigned host_count;
    unsigned nheaders;
    uint16_t known_mask;         /* bit `id` set: known[id] was recorded */
    /* Not cleared per request (HTTP_REQUEST_CLEAR): only what known_mask says is valid. */
    struct strview known[H_KNOWN_COUNT];
    struct http_header headers[HTTP_MAX_HEADERS];
};

/* Reset a request before parsing into it: the fixed fields only, not the tables. */
#define HTTP_REQUEST_CLEAR(req) memset((req), 0, offsetof(struct http_request, known))

/* Case-insensitive lookup of the first header named `name`; SV_NULL when absent. */
struct strview http_request_header(const struct http_request *req, const char *name, size_t len);
#define HTTP_HEADER(req, lit) http_request_header((req), (lit), sizeof(lit) - 1)
/* A field from enum known_header (SV_NULL when absent). */
#define HTTP_KNOWN(req, id) \
    (((req)->known_mask >> (id)) & 1u ? (req)->known[id] : (struct strview){ NULL, 0 })
/* Record `v` as known field `id` (the first occurrence wins: check HTTP_HAS_KNOWN first). */
#define HTTP_SET_KNOWN(req, id, v) \
    ((req)->known[id] = (v), (req)->known_mask = (uint16_t)((req)->known_mask | 1u << (id)))
#define HTTP_HAS_KNOWN(req, id) (((req)->known_mask >> (id)) & 1u)
/* Which known header `name` is, or -1. */
int http_known_header(struct strview name);

#endif
