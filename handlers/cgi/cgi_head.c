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
        if (line.ptr[0] == ' ' || line.ptr[0] == '\t') {
            *why = "folded header line";
            return -1;
        }
        const char *colon = memchr(line.ptr, ':', line.len);
        if (!colon) {
            *why = "header line without a colon";
            return -1;
        }
        struct strview name = { line.ptr, (size_t)(colon - line.ptr) };
        struct strview value = sv_trim((struct strview){ colon + 1, line.len - name.len - 1 });
        if (!is_token(name)) {
            *why = "invalid header name";
            return -1;
        }
        if (!value_ok(value)) {
            *why = "control character in a header value";
            return -1;
        }
        if (SV_CASE_EQ(name, "status")) {
            if (h->status || value.len < 3 || !isdigit((unsigned char)value.ptr[0]) ||
                !isdigit((unsigned char)value.ptr[1]) || !isdigit((unsigned char)value.ptr[2]) ||
                (value.len > 3 && value.ptr[3] != ' ')) {
                *why = "invalid Status";
                return -1;
            }
            h->status = (value.ptr[0] - '0') * 100 + (value.ptr[1] - '0') * 10 + (value.ptr[2] - '0');
            if (h->status < 200 || h->status > 599) {
                *why = "Status out of range (200-599)";
                return -1;
            }
        } else if (SV_CASE_EQ(name, "content-type")) {
            if (h->content_type.ptr) {
                *why = "more than one Content-Type";
                return -1;
            }
            h->content_type = value;
        } else if (SV_CASE_EQ(name, "location")) {
            if (h->location.ptr || value.len == 0) {
                *why = "invalid Location";
                return -1;
            }
            h->location = value;
        } else if (SV_CASE_EQ(name, "content-length")) {
            int64_t v = 0;
            if (h->content_length >= 0 || value.len == 0 || value.len > 18) {
                *why = "invalid Content-Length";
                return -1;
            }
            for (size_t i = 0; i < value.len; i++) {
                if (!isdigit((unsigned char)value.ptr[i])) {
                    *why = "invalid Content-Length";
                    return -1;
                }
                v = v * 10 + (value.ptr[i] - '0');
            }
            h->content_length = v;
        } else if (!dropped(name)) {
            if (h->nfields == CGI_HEAD_MAX_FIELDS) {
                *why = "too many header fields";
                return -1;
            }
            h->name[h->nfields] = name;
            h->value[h->nfields] = value;
            h->nfields++;
        }
    }
}
