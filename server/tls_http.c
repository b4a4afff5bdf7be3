/* tls_http.c — HSTS and the plain-to-HTTPS redirect; see tls_http.h. */
#include "tls_http.h"

#include <ctype.h>
#include <string.h>

#include "http_exchange.h"
#include "runtime.h"
#include "server.h"

void tls_http_add_headers(const struct http_exchange *ex, struct response *r)
{
    unsigned max_age = ex->rt->cfg.tls_hsts;
    if (!max_age)
        return;
    char v[32] = "max-age=";
    size_t n = 8 + fmt_u64(v + 8, max_age);
    RESP_HEADER(r, "Strict-Transport-Security", v, n);
}

/* The host part of a Host header (port removed), if it is a plain name or address. */
static struct strview host_only(struct strview h)
{
    if (h.len == 0)
        return SV_NULL;
    size_t end;
    if (h.ptr[0] == '[') {
        const char *close = memchr(h.ptr, ']', h.len);
        if (!close)
            return SV_NULL;
        end = (size_t)(close - h.ptr) + 1;
        for (size_t i = 1; i + 1 < end; i++)
            if (!isxdigit((unsigned char)h.ptr[i]) && h.ptr[i] != ':' && h.ptr[i] != '.')
                return SV_NULL;
    } else {
        const char *colon = memchr(h.ptr, ':', h.len);
        end = colon ? (size_t)(colon - h.ptr) : h.len;
        for (size_t i = 0; i < end; i++)
            if (!isalnum((unsigned char)h.ptr[i]) && h.ptr[i] != '-' && h.ptr[i] != '.')
                return SV_NULL;
    }
    if (end == 0 || (end < h.len && h.ptr[end] != ':'))
        return SV_NULL;
    return (struct strview){ h.ptr, end };
}

int tls_http_redirect(struct http_exchange *ex)
{
    const struct http_request *req = ex->req;
    const struct server *srv = ex->srv;
    struct strview host = host_only(req->host);
    if (!host.ptr)
        return 400;
    const char *port = NULL;
    for (unsigned i = 0; i < srv->nlisteners && !port; i++)
        if (srv->listeners[i].addr.tls && !srv->listeners[i].closed)
            port = strrchr(srv->listeners[i].url, ':') + 1;
    if (!port)
        return 500;

    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 301, ex->date);
    RESP_LIT(&r, "Location: https://");
    resp_add(&r, host.ptr, host.len);
    if (strcmp(port, "443") != 0) {
        RESP_LIT(&r, ":");
        resp_add(&r, port, strlen(port));
    }
    if (req->path.len && req->path.ptr[0] == '/')
        resp_add(&r, req->path.ptr, req->path.len);
    else
        RESP_LIT(&r, "/"); /* OPTIONS * */
    if (req->query.ptr) {
        RESP_LIT(&r, "?");
        resp_add(&r, req->query.ptr, req->query.len);
    }
    RESP_LIT(&r, "\r\nContent-Type: text/html; charset=utf-8\r\n");
    char page[256];
    size_t n = http_error_page(301, page, sizeof(page));
    return ex_send(ex, &r, page, n) < 0 ? 500 : 0;
}
