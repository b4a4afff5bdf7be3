/* http_response.c — response heads; see http_response.h. */
#include "http/http_response.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *http_status_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 407: return "Proxy Authentication Required";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 425: return "Too Early";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 451: return "Unavailable For Legal Reasons";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 511: return "Network Authentication Required";
    default: return "Unknown";
    }
}

void resp_add_slow(struct response *r, const char *s, size_t n)
{
    (void)s;
    (void)n;
    r->overflow = true; /* does not fit: the exchange answers 500 */
}

void resp_remove_header(struct response *r, const char *name, size_t namelen)
{
    char *end = r->buf + r->len;
    char *line = memchr(r->buf, '\n', r->len); /* past the status line */

    for (line = line ? line + 1 : end; line < end;) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        char *next = nl ? nl + 1 : end;
        if ((size_t)(next - line) > namelen && line[namelen] == ':' &&
            !strncasecmp(line, name, namelen)) {
            memmove(line, next, (size_t)(end - next));
            end -= next - line;
            continue;
        }
        line = next;
    }
    r->len = (size_t)(end - r->buf);
}

void resp_begin(struct response *r, char *buf, size_t cap, int status, const char *date)
{
    r->buf = buf;
    r->cap = cap;
    r->len = 0;
    r->status = status;
    r->overflow = false;
    r->has_length = false;
    if (status == 200) {
        /* The common case in one literal copy. */
        RESP_LIT(r, "HTTP/1.1 200 OK\r\nServer: lfhttpd\r\nDate: ");
        resp_add(r, date, 29);
        RESP_LIT(r, "\r\n");
        return;
    }
    char num[4] = { (char)('0' + status / 100 % 10), (char)('0' + status / 10 % 10),
                    (char)('0' + status % 10), ' ' };
    RESP_LIT(r, "HTTP/1.1 ");
    resp_add(r, num, 4);
    const char *reason = http_status_reason(status);
    resp_add(r, reason, strlen(reason));
    RESP_LIT(r, "\r\nServer: lfhttpd\r\nDate: ");
    resp_add(r, date, 29);
    RESP_LIT(r, "\r\n");
}

void resp_header(struct response *r, const char *name, size_t namelen, const char *value,
                 size_t valuelen)
{
    resp_add(r, name, namelen);
    RESP_LIT(r, ": ");
    resp_add(r, value, valuelen);
    RESP_LIT(r, "\r\n");
}

void resp_header_u64(struct response *r, const char *name, size_t namelen, uint64_t v)
{
    char num[24];
    size_t n = fmt_u64(num, v); /* its own statement: num is filled before anything reads it */
    resp_header(r, name, namelen, num, n);
}

size_t http_error_page(int status, char *out, size_t cap)
{
    const char *reason = http_status_reason(status);
    int n = snprintf(out, cap,
                     "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<title>%d %s</title></head>\n<body><h1>%d %s</h1>"
                     "<hr><p>lfhttpd</p></body></html>\n",
                     status, reason, status, reason);
    return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}
