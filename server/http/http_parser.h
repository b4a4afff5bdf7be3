/* http_parser.h — llhttp glue: bytes in the processing thread's buffer -> struct http_request.
 *
 * One llhttp_t lives in each connection (it must survive between events while a request body
 * is streamed). A request HEAD is always parsed from its first byte in one contiguous buffer:
 * when a head arrives in pieces, the connection carries the bytes and parses again from the
 * start once more data arrives, so every view in struct http_request points into one buffer.
 *
 * Parsing stops (llhttp pause) after the head of a request that has a body, and after the end
 * of every message, so the caller knows exactly where the next pipelined request starts. */
#ifndef LF_HTTP_PARSER_H
#define LF_HTTP_PARSER_H

#include <llhttp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http_request.h"

/* What a request may be: its head, target and header count, and its body. The parser's own,
 * so that it needs no configuration; the configuration fills one (config.h). */
struct http_limits {
    size_t max_head_size;   /* request line + headers, bytes -> 431 */
    size_t max_uri_length;  /* -> 414 */
    unsigned max_headers;   /* -> 431 */
    uint64_t max_body_size; /* -> 413 */
};

enum http_parse_result {
    HTTP_PARSE_INCOMPLETE = 0, /* all bytes consumed, message not finished */
    HTTP_PARSE_HEAD,           /* head complete; the request has a body still to come */
    HTTP_PARSE_DONE,           /* a whole message (head, and body if any) ended */
    HTTP_PARSE_ERROR,          /* *status says which error response to send */
    HTTP_PARSE_CLOSE,          /* close without a response (e.g. the HTTP/2 preface) */
};

/* Receives request body bytes (chunked encoding already decoded). Return 0, or an HTTP status
 * (e.g. 413) to abort parsing with that error. */
typedef int (*http_body_cb)(void *arg, const char *data, size_t len);

/* How much of a request body has arrived. It lives with the connection, not with one parse:
 * a body spans many reads, and the limits hold over all of it. */
struct http_body_count {
    uint64_t seen;               /* body bytes, decoded (max_body_size) */
    uint64_t wire;               /* bytes of the body as sent, chunk framing included */
};

struct http_parse {
    llhttp_t *parser;
    const struct http_limits *limits;
    struct http_request *req;    /* filled while parsing a head */
    const char *msg_start;       /* first byte of the head being parsed */
    struct http_body_count *body; /* the current request's body so far */
    http_body_cb on_body;
    void *body_arg;
    int status;                  /* error status on HTTP_PARSE_ERROR */
    bool in_body;                /* parsing a body: `req` belongs to an earlier event */
    int state;                   /* internal: which header callback came last */
    bool saw_version;            /* internal: the request line had an HTTP-version */
    bool te_other;               /* internal: a Transfer-Encoding value other than chunked */
    bool conn_close;             /* internal: a Connection field has the token "close" */
    bool conn_keep_alive;        /* internal: ... the token "keep-alive" */
    unsigned te_fields;          /* internal: Transfer-Encoding field lines */
    size_t ext_name_len;         /* internal: length of the chunk extension name so far */
};

/* Initialise a connection's parser (once per connection). */
void http_parser_init(llhttp_t *parser);

/* Parse a request head starting at data[0] (a new message). On HTTP_PARSE_HEAD / _DONE,
 * *consumed is the number of bytes that belong to this message so far. */
enum http_parse_result http_parse_head(struct http_parse *ps, const char *data, size_t len,
                                       size_t *consumed);

/* Continue with body bytes after HTTP_PARSE_HEAD; bytes go to ps->on_body. Returns
 * HTTP_PARSE_INCOMPLETE (all consumed, body not finished), HTTP_PARSE_DONE (*consumed = the
 * bytes up to the end of the message), or HTTP_PARSE_ERROR.
 * On HTTP_PARSE_CLOSE (from either function), *consumed is where parsing stopped. */
enum http_parse_result http_parse_body(struct http_parse *ps, const char *data, size_t len,
                                       size_t *consumed);

#endif
