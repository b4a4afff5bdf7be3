/* test_cgi_head.c — unit tests for handlers/cgi/cgi_head.c (the script's header section) */
#include "cgi/cgi_head.h"
#include "test.h"

#include <string.h>

static int parse(const char *s, struct cgi_head *h, const char **why)
{
    *why = NULL;
    return cgi_parse_head(s, strlen(s), h, why);
}

static void test_good(void)
{
    struct cgi_head h;
    const char *why;
    const char *s = "Content-Type: text/html\nStatus: 404 Not Found\nX-A:  spaced  \n\nbody";
    is_int(parse(s, &h, &why), 1, "complete");
    is_int(h.status, 404, "Status");
    is_mem(h.content_type.ptr, h.content_type.len, "text/html", "Content-Type");
    is_int(h.nfields, 1, "one field passed");
    is_mem(h.name[0].ptr, h.name[0].len, "X-A", "field name");
    is_mem(h.value[0].ptr, h.value[0].len, "spaced", "value trimmed");
    is_mem(s + h.head_len, strlen(s) - h.head_len, "body", "body starts after the empty line");
    is_int(h.content_length, -1, "no Content-Length");

    s = "Location: /a?b\r\nContent-Length: 12\r\n\r\n";
    is_int(parse(s, &h, &why), 1, "CRLF lines");
    is_mem(h.location.ptr, h.location.len, "/a?b", "Location");
    is_int(h.content_length, 12, "Content-Length");
    is_int(h.head_len, strlen(s), "head_len with CRLF");

    s = "Connection: close\nTransfer-Encoding: chunked\nDate: x\nServer: y\nKeep-Alive: 1\n"
        "Upgrade: h2c\nTE: trailers\nTrailer: x\nProxy-Connection: x\nX-Kept: 1\n\n";
    is_int(parse(s, &h, &why), 1, "hop-by-hop fields");
    is_int(h.nfields, 1, "framing and connection fields dropped");
    is_mem(h.name[0].ptr, h.name[0].len, "X-Kept", "the rest kept");

    is_int(parse("Content-Type: text/plain\n", &h, &why), 0, "incomplete without empty line");
    is_int(parse("", &h, &why), 0, "empty: incomplete");
    is_int(parse("Status: 200\nX: \n\n", &h, &why), 1, "empty value allowed");
}

static void test_bad(void)
{
    struct cgi_head h;
    const char *why;
    static const char *const bad[] = {
        "\n",                                   /* no fields at all */
        "garbage\n\n",
        "X-A: 1\n folded\n\n",
        "X A: 1\n\n",
        ": v\n\n",
        "X-A: a\rInjected: 1\n\n",
        "X-A: a\001b\n\n",
        "Status: 20\n\n",
        "Status: abc\n\n",
        "Status: 199 Early\n\n",
        "Status: 600 Late\n\n",
        "Status: 2000\n\n",
        "Status: 200\nStatus: 201\n\n",
        "Content-Length: -1\n\n",
        "Content-Length: 1x\n\n",
        "Content-Length: 1\nContent-Length: 1\n\n",
        "Content-Type: a\nContent-Type: b\n\n",
        "Location:\n\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse(bad[i], &h, &why);
        ok(rc == -1 && why, "malformed #%zu rejected (%s)", i, why ? why : "-");
    }
    char many[8192] = "";
    for (int i = 0; i < 70; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "X-%d: 1\n", i);
    strcat(many, "\n");
    is_int(parse(many, &h, &why), -1, "too many fields");
}

int main(void)
{
    test_good();
    test_bad();
    return test_done();
}
