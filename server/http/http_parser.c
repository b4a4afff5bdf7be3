/* http_parser.c — llhttp glue; see http_parser.h. */
#include "http/http_parser.h"

#include <string.h>

#include "http/http_strict.h"

enum { ST_NONE = 0, ST_FIELD, ST_VALUE };

#define PS(p) ((struct http_parse *)(p)->data)

static int fail(llhttp_t *p, int status, const char *reason)
{
    PS(p)->status = status;
    llhttp_set_error_reason(p, reason);
    return HPE_USER;
}

static int check_head_size(llhttp_t *p, const char *at, size_t len)
{
    struct http_parse *ps = PS(p);
    if ((size_t)(at + len - ps->msg_start) > ps->limits->max_head_size)
        return fail(p, 431, "request header fields too large");
    return 0;
}

/* Extend a view with a span llhttp reports (the head is contiguous, so spans only grow). */
static void extend(struct strview *v, const char *at, size_t len)
{
    if (!v->ptr)
        v->ptr = at;
    v->len = (size_t)(at + len - v->ptr);
}

static int on_method(llhttp_t *p, const char *at, size_t len)
{
    extend(&PS(p)->req->method_name, at, len);
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
    struct http_parse *ps = PS(p);
    extend(&ps->req->target, at, len);
    if (ps->req->target.len > ps->limits->max_uri_length)
        return fail(p, 414, "URI too long");
    return check_head_size(p, at, len);
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
    struct http_parse *ps = PS(p);
    struct http_request *req = ps->req;
    if (ps->in_body)
        return 0; /* chunked trailer fields are read and ignored */
    if (ps->state != ST_FIELD) {
        if (req->nheaders >= ps->limits->max_headers || req->nheaders >= HTTP_MAX_HEADERS)
            return fail(p, 431, "too many header fields");
        req->headers[req->nheaders++] = (struct http_header){ SV_NULL, SV_NULL };
        ps->state = ST_FIELD;
    }
    extend(&req->headers[req->nheaders - 1].name, at, len);
    return check_head_size(p, at, len);
}

static int on_version(llhttp_t *p, const char *at, size_t len)
{
    (void)at;
    (void)len;
    PS(p)->saw_version = true;
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
    struct http_parse *ps = PS(p);
    if (ps->in_body)
        return 0;
    if (ps->state == ST_NONE)
        return fail(p, 400, "field value without a name"); /* never from llhttp; be safe */
    struct http_header *h = &ps->req->headers[ps->req->nheaders - 1];
    ps->state = ST_VALUE;
    extend(&h->value, at, len);
    return check_head_size(p, at, len);
}

/* Is the field name `n` equal to `lower` (a lowercase literal of the same length)? Field names
 * are tokens (llhttp checked), so folding ASCII letters is all case-insensitivity needs. */
static inline bool name_is(struct strview n, const char *lower, size_t len)
{
    if (n.len != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)n.ptr[i];
        if ((unsigned char)(c - 'A') < 26)
            c = (unsigned char)(c | 0x20);
        if (c != (unsigned char)lower[i])
            return false;
    }
    return true;
}
#define NAME_IS(n, lit) name_is((n), "" lit, sizeof(lit) - 1)

int http_known_header(struct strview name)
{
    static const struct {
        const char *name;
        size_t len;
        int id;
    } known[] = {
        { "accept", 6, H_ACCEPT },
        { "accept-encoding", 15, H_ACCEPT_ENCODING },
        { "authorization", 13, H_AUTHORIZATION },
        { "available-dictionary", 20, H_AVAILABLE_DICTIONARY },
        { "if-match", 8, H_IF_MATCH },
        { "if-modified-since", 17, H_IF_MODIFIED_SINCE },
        { "if-none-match", 13, H_IF_NONE_MATCH },
        { "if-range", 8, H_IF_RANGE },
        { "if-unmodified-since", 19, H_IF_UNMODIFIED_SINCE },
        { "range", 5, H_RANGE },
        { "referer", 7, H_REFERER },
        { "user-agent", 10, H_USER_AGENT },
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (known[i].len == name.len && name_is(name, known[i].name, name.len))
            return known[i].id;
    return -1;
}

static int on_header_value_complete(llhttp_t *p)
{
    struct http_parse *ps = PS(p);
    struct http_request *req = ps->req;
    if (ps->in_body)
        return 0;
    if (ps->state == ST_NONE)
        return fail(p, 400, "field value without a name");
    struct http_header *h = &req->headers[req->nheaders - 1];
    ps->state = ST_VALUE;
    if (h->name.len == 0)
        return fail(p, 400, "empty field name"); /* llhttp accepts ": value" */
    if (!h->value.ptr)
        h->value = (struct strview){ "", 0 };
    h->value = sv_trim(h->value);
    /* The fields the server acts on while parsing, by length first: most fields are none. */
    switch (h->name.len) {
    case 4:
        if (NAME_IS(h->name, "host")) {
            req->host = h->value;
            req->host_count++;
        }
        return 0;
    case 10:
        if (NAME_IS(h->name, "connection")) {
            /* Read here rather than by llhttp, whose own reading misses tokens with OWS
             * around them ("\t close \t"): a token list, any number of field lines. */
            if (sv_list_has_token(h->value, "close", 5))
                ps->conn_close = true;
            if (sv_list_has_token(h->value, "keep-alive", 10))
                ps->conn_keep_alive = true;
            return 0;
        }
        break;
    case 6:
        if (NAME_IS(h->name, "expect")) {
            if (!SV_CASE_EQ(h->value, "100-continue"))
                return fail(p, 417, "unsupported expectation");
            req->expect_continue = true;
            return 0;
        }
        break;
    case 17:
        if (NAME_IS(h->name, "transfer-encoding")) {
            /* llhttp checks that chunked is last; we also refuse any other coding before it,
             * which we would not know how to undo (RFC 9112 6.1: 501). */
            ps->te_fields++;
            if (!SV_CASE_EQ(h->value, "chunked"))
                ps->te_other = true;
            return 0;
        }
        break;
    }
    int id = h->name.len >= 5 && h->name.len <= 20 ? http_known_header(h->name) : -1;
    if (id >= 0 && !HTTP_HAS_KNOWN(req, id))
        HTTP_SET_KNOWN(req, id, h->value);
    return 0;
}

/* Split the request-target into path and query; take the host from an absolute-form target. */
static int split_target(llhttp_t *p, struct http_request *req)
{
    struct strview t = req->target;
    if (t.len == 0)
        return fail(p, 400, "empty request target");
    if (t.ptr[0] != '/') {
        if (t.len == 1 && t.ptr[0] == '*') {
            if (req->method != HTTP_OPTIONS)
                return fail(p, 400, "asterisk-form is for OPTIONS only");
            req->path = t;
            return 0;
        }
        req->absolute_form = true;
        size_t skip;
        if (t.len > 7 && !strncasecmp(t.ptr, "http://", 7))
            skip = 7;
        else if (t.len > 8 && !strncasecmp(t.ptr, "https://", 8))
            skip = 8;
        else
            return fail(p, 400, "invalid request target");
        const char *auth = t.ptr + skip;
        const char *end = t.ptr + t.len;
        const char *slash = memchr(auth, '/', (size_t)(end - auth));
        const char *stop = slash ? slash : end;
        const char *q = memchr(auth, '?', (size_t)(end - auth));
        if (q && q < stop)
            stop = q;
        if (stop == auth || !http_host_valid(auth, (size_t)(stop - auth)))
            return fail(p, 400, "invalid authority in absolute-form");
        /* The authority wins over the Host field, which is ignored (RFC 9112 3.2.2); the
         * field must still be present exactly once (3.2), which the caller checks. */
        req->host = (struct strview){ auth, (size_t)(stop - auth) };
        t = (struct strview){ stop, (size_t)(end - stop) };
        if (t.len == 0 || t.ptr[0] == '?') {
            req->path = SV("/");
            if (t.len) {
                req->query = (struct strview){ t.ptr + 1, t.len - 1 };
            }
            return 0;
        }
    }
    const char *q = memchr(t.ptr, '?', t.len);
    const char *hash = memchr(t.ptr, '#', t.len);
    if (hash)
        return fail(p, 400, "fragment in request target");
    if (q) {
        req->path = (struct strview){ t.ptr, (size_t)(q - t.ptr) };
        req->query = (struct strview){ q + 1, (size_t)(t.ptr + t.len - q - 1) };
    } else {
        req->path = t;
    }
    return 0;
}

static int on_headers_complete(llhttp_t *p)
{
    struct http_parse *ps = PS(p);
    struct http_request *req = ps->req;
    req->method = llhttp_get_method(p);
    req->http_major = llhttp_get_http_major(p);
    req->http_minor = llhttp_get_http_minor(p);
    if (!ps->saw_version)
        return fail(p, 400, "no HTTP-version (HTTP/0.9 request line)");
    if (req->http_major != 1)
        return fail(p, 505, "HTTP version not supported");
    /* RFC 9110 2.5: a higher minor version of a major version we support is answered as the
     * highest minor we support (llhttp, lenient on versions, let it through). */
    if (req->http_minor > 1)
        req->http_minor = 1;
    /* RFC 9112 9.3: HTTP/1.1 stays open unless "close"; HTTP/1.0 only with "keep-alive". */
    req->keep_alive = !ps->conn_close && (req->http_minor == 1 || ps->conn_keep_alive);
    if (req->method == HTTP_CONNECT)
        return fail(p, 501, "CONNECT not supported");
    if (req->host_count > 1)
        return fail(p, 400, "more than one Host header");
    if (req->http_minor == 1 && req->host_count == 0)
        return fail(p, 400, "missing Host header");
    struct strview host_field = req->host;
    int rc = split_target(p, req);
    if (rc)
        return rc;
    if (!req->absolute_form && !http_host_valid(host_field.ptr, host_field.len))
        return fail(p, 400, "invalid Host header");
    req->chunked = (p->flags & F_CHUNKED) != 0;
    if (ps->te_fields) {
        /* RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 means faulty framing; 6.3: without a
         * final chunked the length cannot be known. Both are 400 and close. */
        if (req->http_minor == 0 || !req->chunked)
            return fail(p, 400, "Transfer-Encoding without a final chunked");
        if (ps->te_other)
            return fail(p, 501, "transfer coding not implemented");
    }
    req->content_length = req->chunked ? 0 : p->content_length;
    req->has_body = req->chunked || ((p->flags & F_CONTENT_LENGTH) && p->content_length > 0);
    if (!req->chunked && req->content_length > ps->limits->max_body_size)
        return fail(p, 413, "request body too large");
    if (!req->has_body)
        req->expect_continue = false;
    ps->body->seen = 0;
    return req->has_body ? HPE_PAUSED : 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    struct http_parse *ps = PS(p);
    ps->body->seen += len;
    if (ps->body->seen > ps->limits->max_body_size)
        return fail(p, 413, "request body too large");
    if (ps->on_body) {
        int st = ps->on_body(ps->body_arg, at, len);
        if (st)
            return fail(p, st, "body rejected");
    }
    return 0;
}

/* llhttp accepts a chunk extension with an empty name (";=v"); chunk-ext-name is a token. */
static int on_chunk_extension_name(llhttp_t *p, const char *at, size_t len)
{
    (void)at;
    PS(p)->ext_name_len += len;
    return 0;
}

static int on_chunk_extension_name_complete(llhttp_t *p)
{
    struct http_parse *ps = PS(p);
    size_t n = ps->ext_name_len;
    ps->ext_name_len = 0;
    return n ? 0 : fail(p, 400, "empty chunk extension name");
}

static int on_message_complete(llhttp_t *p)
{
    (void)p;
    return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
    .on_method = on_method,
    .on_url = on_url,
    .on_version = on_version,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_chunk_extension_name = on_chunk_extension_name,
    .on_chunk_extension_name_complete = on_chunk_extension_name_complete,
    .on_message_complete = on_message_complete,
};

void http_parser_init(llhttp_t *parser)
{
    llhttp_init(parser, HTTP_REQUEST, &settings);
    /* Any DIGIT "." DIGIT version reaches on_headers_complete, which answers HTTP/1.x above
     * 1.1 as HTTP/1.1 and other majors with 505 (strict llhttp rejects "HTTP/1.2" as invalid).
     * The version's syntax is still llhttp's to check. */
    parser->lenient_flags |= LENIENT_VERSION;
}

/* Is data[0..) a method token followed by a space (unknown method -> 501, else 400)? */
static bool looks_like_token_method(const char *data, size_t len)
{
    size_t i = 0;
    while (i < len && i < 32) {
        unsigned char c = (unsigned char)data[i];
        if (c == ' ')
            return i > 0;
        if (!(c > 0x20 && c < 0x7f) || strchr("\"(),/:;<=>?@[\\]{}", c))
            return false;
        i++;
    }
    return false;
}

/* Map an llhttp error to a response status (0: close without one). */
static int error_status(struct http_parse *ps, llhttp_errno_t err, const char *data, size_t len)
{
    if (ps->status) /* set by one of our callbacks (fail()) */
        return ps->status > 0 ? ps->status : 0;
    switch (err) {
    case HPE_INVALID_METHOD:
        return looks_like_token_method(data, len) ? 501 : 400;
    case HPE_INVALID_VERSION:
        return len ? http_version_error_status(data, len) : 400;
    case HPE_PAUSED_H2_UPGRADE:
        return 0; /* "PRI * HTTP/2.0 ... SM": a client speaking HTTP/2; close quietly */
    case HPE_INVALID_TRANSFER_ENCODING: /* chunked not final, or applied twice: RFC 9112 6.3 */
    default:
        return 400;
    }
}

static enum http_parse_result run(struct http_parse *ps, const char *data, size_t len,
                                  size_t *consumed, bool head)
{
    llhttp_t *p = ps->parser;
    p->data = ps;
    llhttp_errno_t err = llhttp_execute(p, data, len);
    if (err == HPE_OK) {
        *consumed = len;
        return HTTP_PARSE_INCOMPLETE;
    }
    if (err == HPE_PAUSED) {
        *consumed = (size_t)(llhttp_get_error_pos(p) - data);
        llhttp_resume(p);
        /* A pause in on_headers_complete leaves the body to come; in on_message_complete the
         * message has ended. message_complete always follows headers_complete in the same
         * execute when there is no body, so `head && has_body` tells them apart. */
        if (head && ps->req->has_body)
            return HTTP_PARSE_HEAD;
        return HTTP_PARSE_DONE;
    }
    ps->status = error_status(ps, err, data, head ? len : 0);
    if (!ps->status)
        *consumed = (size_t)(llhttp_get_error_pos(p) - data);
    return ps->status ? HTTP_PARSE_ERROR : HTTP_PARSE_CLOSE;
}

enum http_parse_result http_parse_head(struct http_parse *ps, const char *data, size_t len,
                                       size_t *consumed)
{
    HTTP_REQUEST_CLEAR(ps->req);
    ps->msg_start = data;
    ps->in_body = false;
    ps->state = ST_NONE;
    ps->status = 0;
    ps->te_fields = 0;
    ps->te_other = false;
    ps->saw_version = false;
    ps->conn_close = false;
    ps->conn_keep_alive = false;
    ps->ext_name_len = 0;
    ps->body->wire = 0;
    llhttp_reset(ps->parser);
    enum http_parse_result r = run(ps, data, len, consumed, true);
    if (r == HTTP_PARSE_INCOMPLETE && len > ps->limits->max_head_size) {
        ps->status = 431;
        return HTTP_PARSE_ERROR;
    }
    if ((r == HTTP_PARSE_HEAD || r == HTTP_PARSE_DONE) && http_has_obs_fold(data, *consumed)) {
        /* llhttp joins folded lines into the value; RFC 9112 5.2 says reject. (Checked on the
         * whole head: llhttp does not report a fold after an empty first line.) */
        ps->status = 400;
        return HTTP_PARSE_ERROR;
    }
    return r;
}

enum http_parse_result http_parse_body(struct http_parse *ps, const char *data, size_t len,
                                       size_t *consumed)
{
    ps->in_body = true; /* the head's buffer may be gone; trailers are ignored */
    ps->status = 0;
    enum http_parse_result r = run(ps, data, len, consumed, false);
    /* max_body_size bounds the decoded body (on_body); chunked framing adds bytes llhttp
     * reports to nobody: chunk-size lines (any number of leading zeros), extensions, trailer
     * fields. Without a bound a client could stream them forever. They may add up to
     * max_request_head on top of the body. */
    if (r == HTTP_PARSE_ERROR)
        return r;
    ps->body->wire += *consumed;
    if (ps->body->wire > ps->limits->max_body_size + ps->limits->max_head_size) {
        ps->status = 413;
        return HTTP_PARSE_ERROR;
    }
    return r;
}

struct strview http_request_header(const struct http_request *req, const char *name, size_t len)
{
    for (unsigned i = 0; i < req->nheaders; i++)
        if (sv_case_eq(req->headers[i].name, name, len))
            return req->headers[i].value;
    return SV_NULL;
}
