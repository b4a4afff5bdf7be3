/* cgi_head.c — the script's response head; see cgi_head.h. */
#include "cgi/cgi_head.h"

#include <ctype.h>
#include <string.h>

#include "http/http_strict.h"

static bool is_token(struct strview s)
{
    return http_token_valid(s.ptr, s.len);
}

static bool value_ok(struct strview s)
{
    return http_field_value_valid(s.ptr, s.len);
}

static bool dropped(struct strview n)
{
    static const char *const names[] = { "connection", "keep-alive", "transfer-encoding", "te",
                                         "trailer", "upgrade", "proxy-connection", "date",
                                         "server" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (sv_case_eq(n, names[i], strlen(names[i])))
            return true;
    return false;
}

/* Status: three digits, then a space and a reason or nothing; 200-599. */
static const char *take_status(struct cgi_head *h, struct strview v)
{
    if (h->status || v.len < 3 || !isdigit((unsigned char)v.ptr[0]) ||
        !isdigit((unsigned char)v.ptr[1]) || !isdigit((unsigned char)v.ptr[2]) ||
        (v.len > 3 && v.ptr[3] != ' '))
        return "invalid Status";
    h->status = (v.ptr[0] - '0') * 100 + (v.ptr[1] - '0') * 10 + (v.ptr[2] - '0');
    return h->status < 200 || h->status > 599 ? "Status out of range (200-599)" : NULL;
}

static const char *take_content_length(struct cgi_head *h, struct strview v)
{
    int64_t n = 0;
    if (h->content_length >= 0 || v.len == 0 || v.len > 18)
        return "invalid Content-Length";
    for (size_t i = 0; i < v.len; i++) {
        if (!isdigit((unsigned char)v.ptr[i]))
            return "invalid Content-Length";
        n = n * 10 + (v.ptr[i] - '0');
    }
    h->content_length = n;
    return NULL;
}

/* One header field of the script's: the four the server acts on, or one passed on (unless it
 * is one the server owns). Returns NULL, or why the head is refused. */
static const char *take_field(struct cgi_head *h, struct strview name, struct strview value)
{
    if (SV_CASE_EQ(name, "status"))
        return take_status(h, value);
    if (SV_CASE_EQ(name, "content-length"))
        return take_content_length(h, value);
    if (SV_CASE_EQ(name, "content-type")) {
        if (h->content_type.ptr)
            return "more than one Content-Type";
        h->content_type = value;
    } else if (SV_CASE_EQ(name, "location")) {
        if (h->location.ptr || value.len == 0)
            return "invalid Location";
        h->location = value;
    } else if (!dropped(name)) {
        if (h->nfields == CGI_HEAD_MAX_FIELDS)
            return "too many header fields";
        h->name[h->nfields] = name;
        h->value[h->nfields] = value;
        h->nfields++;
    }
    return NULL;
}

/* One line of the head that is not its end: `name: value`. */
static const char *take_line(struct cgi_head *h, struct strview line)
{
    if (line.ptr[0] == ' ' || line.ptr[0] == '\t')
        return "folded header line";
    const char *colon = memchr(line.ptr, ':', line.len);
    if (!colon)
        return "header line without a colon";
    struct strview name = { line.ptr, (size_t)(colon - line.ptr) };
    struct strview value = sv_trim((struct strview){ colon + 1, line.len - name.len - 1 });
    if (!is_token(name))
        return "invalid header name";
    if (!value_ok(value))
        return "control character in a header value";
    return take_field(h, name, value);
}

int cgi_parse_head(const char *buf, size_t len, struct cgi_head *h, const char **why)
{
    memset(h, 0, sizeof(*h));
    h->content_length = -1;
    size_t pos = 0;
    unsigned lines = 0;
    for (;;) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        if (!nl)
            return 0;
        size_t end = (size_t)(nl - buf);
        struct strview line = { buf + pos, end - pos };
        if (line.len && line.ptr[line.len - 1] == '\r')
            line.len--;
        pos = end + 1;
        if (line.len == 0) {
            if (lines == 0) {
                *why = "no header fields";
                return -1;
            }
            h->head_len = pos;
            return 1;
        }
        lines++;
        if ((*why = take_line(h, line)) != NULL)
            return -1;
    }
}
