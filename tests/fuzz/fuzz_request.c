/* fuzz_request.c — libFuzzer harness over the pure request path: bytes -> llhttp glue
 * (http_parse_head/http_parse_body, fed the way a connection feeds them: a head re-parsed from
 * its first byte as more arrives, a body continued chunk by chunk) -> path normalisation ->
 * site (virtual host) and location selection -> percent-decoding. No sockets, no threads.
 *
 * Input: [config byte][4 seed bytes for the split points][the byte stream].
 * Every parsed request is checked against the invariants the rest of the server relies on:
 * views inside the buffer, limits kept, field names tokens, values without CR/LF/CTL, exactly
 * one valid Host for HTTP/1.1, normalised paths that cannot climb out of the root. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "http/http_parser.h"
#include "http/http_strict.h"
#include "http/path.h"
#include "conf/site.h"

static struct config cfg;

/* Sites and locations like a real configuration's: prefixes that nest, an extension location,
 * name-based virtual hosts with a wildcard. */
static const char conf_text[] = "root /\n"
                                "location /static/ {\n}\n"
                                "location /a/b {\n}\n"
                                "location /a/b/c/ {\n}\n"
                                "location *.css {\n}\n"
                                "server example.test *.example.test {\n"
                                "    location /x/ {\n    }\n"
                                "}\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char path[] = "/tmp/lfhttpd-fuzz-request-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, conf_text, sizeof(conf_text) - 1) != (ssize_t)sizeof(conf_text) - 1)
        abort();
    close(fd);
    char a0[] = "lfhttpd", a1[] = "--config";
    char *args[] = { a0, a1, path, NULL };
    daemon_setup_conf(); /* the handler types' directives, as main() does */
    if (config_from_args(&cfg, 3, args) != CONFIG_OK)
        abort();
    unlink(path);
    return 0;
}

/* The location a normalised path must get: the first matching extension location, else the
 * longest matching prefix, else the site itself. */
static void check_location(const struct site *s, const char *p, size_t n)
{
    const struct loc_conf *got = site_location(s, (struct strview){ p, n });
    const struct loc_conf *want = &s->base;
    for (unsigned i = 0; i < s->nlocs; i++) {
        const struct loc_conf *lc = &s->locs[i];
        if (lc->ext && n >= lc->ext_len && !strncasecmp(p + n - lc->ext_len, lc->ext, lc->ext_len)) {
            want = lc;
            break;
        }
        if (lc->prefix && n >= lc->prefix_len && !memcmp(p, lc->prefix, lc->prefix_len) &&
            (!want->prefix || lc->prefix_len > want->prefix_len))
            want = lc;
    }
    FZ_CHECK(got == want);
}

static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A view is empty, or lies inside [lo, hi). */
static void check_view(struct strview v, const char *lo, const char *hi)
{
    if (v.len == 0)
        return;
    FZ_CHECK(v.ptr >= lo && v.ptr + v.len <= hi);
}

static void check_path(struct strview p)
{
    char out[4096];
    size_t n = 0;
    int rc = path_normalize(p.ptr, p.len, out, sizeof(out), &n);
    if (rc == 0) {
        FZ_CHECK(n > 0 && out[0] == '/' && out[n] == '\0' && strlen(out) == n);
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)out[i];
            FZ_CHECK(c >= 0x20 && c != 0x7f && c != '\\');
            if (c == '/' && i + 1 < n)
                FZ_CHECK(out[i + 1] != '/');
        }
        /* no "." or ".." segment survives */
        for (size_t i = 0; i < n; i++) {
            if (out[i] != '/')
                continue;
            const char *seg = out + i + 1;
            size_t len = strcspn(seg, "/");
            FZ_CHECK(!(len == 1 && seg[0] == '.'));
            FZ_CHECK(!(len == 2 && seg[0] == '.' && seg[1] == '.'));
        }
        bool hidden = false;
        for (size_t i = 0; i + 1 < n; i++)
            if (out[i] == '/' && out[i + 1] == '.')
                hidden = true;
        FZ_CHECK(path_has_hidden_segment(out, n) == hidden);
    } else {
        FZ_CHECK(rc == -EINVAL || rc == -ENAMETOOLONG);
    }
}

static void check_request(const struct http_request *req, const char *lo, const char *hi,
                          size_t head_len)
{
    FZ_CHECK(req->http_major == 1 && req->http_minor <= 1);
    FZ_CHECK(req->target.len > 0 && req->target.len <= cfg.http.max_uri_length);
    check_view(req->method_name, lo, hi);
    check_view(req->target, lo, hi);
    check_view(req->query, lo, hi);
    check_view(req->host, lo, hi);
    FZ_CHECK(req->nheaders <= cfg.http.max_headers);
    FZ_CHECK(head_len <= cfg.http.max_head_size + 4);
    FZ_CHECK(!http_has_obs_fold(lo, head_len));
    if (req->http_minor == 1)
        FZ_CHECK(req->host_count == 1);
    FZ_CHECK(req->host_count <= 1);
    if (!req->absolute_form)
        FZ_CHECK(http_host_valid(req->host.ptr, req->host.len));
    for (unsigned i = 0; i < req->nheaders; i++) {
        const struct http_header *h = &req->headers[i];
        check_view(h->name, lo, hi);
        check_view(h->value, lo, hi);
        FZ_CHECK(h->name.len > 0);
        for (size_t k = 0; k < h->name.len; k++)
            FZ_CHECK(is_tchar((unsigned char)h->name.ptr[k]));
        for (size_t k = 0; k < h->value.len; k++) {
            unsigned char c = (unsigned char)h->value.ptr[k];
            FZ_CHECK(c == '\t' || (c >= 0x20 && c != 0x7f));
        }
        if (h->value.len) {
            FZ_CHECK(h->value.ptr[0] != ' ' && h->value.ptr[0] != '\t');
            char last = h->value.ptr[h->value.len - 1];
            FZ_CHECK(last != ' ' && last != '\t');
        }
    }
    if (!req->chunked)
        FZ_CHECK(req->content_length <= cfg.http.max_body_size);
    FZ_CHECK(req->has_body == (req->chunked || req->content_length > 0));

    /* route and path: what a handler would do with it */
    if (req->path.len == 1 && req->path.ptr[0] == '*') {
        FZ_CHECK(req->method == HTTP_OPTIONS);
        return;
    }
    if (!req->absolute_form || req->path.len != 1)
        check_view(req->path, lo, hi);
    FZ_CHECK(req->path.len > 0 && req->path.ptr[0] == '/');
    const struct site *site = site_select(&cfg.sites, req->host);
    FZ_CHECK(site >= cfg.sites.sites && site < cfg.sites.sites + cfg.sites.nsites);
    check_path(req->path);
    char norm[4096];
    size_t nlen;
    if (path_normalize(req->path.ptr, req->path.len, norm, sizeof(norm), &nlen) == 0)
        check_location(site, norm, nlen);
    if (req->query.ptr) {
        char q[1024];
        size_t n = 0;
        if (path_percent_decode(req->query.ptr, req->query.len, q, sizeof(q), &n) == 0)
            FZ_CHECK(n < sizeof(q) && q[n] == '\0' && strlen(q) == n);
    }
}

static bool valid_error(int status)
{
    switch (status) {
    case 400: case 413: case 414: case 417: case 431: case 501: case 505:
        return true;
    default:
        return false;
    }
}

/* The pure helpers on raw bytes, against simple reference versions. */
static void check_helpers(const uint8_t *d, size_t n)
{
    bool fold = false;
    for (size_t i = 0; i + 1 < n; i++)
        if (d[i] == '\n' && (d[i + 1] == ' ' || d[i + 1] == '\t'))
            fold = true;
    FZ_CHECK(http_has_obs_fold((const char *)d, n) == fold);
    if (http_host_valid((const char *)d, n))
        for (size_t i = 0; i < n; i++)
            FZ_CHECK(d[i] > 0x20 && d[i] < 0x7f && !strchr("/?#@\\\"<>{}|^`", d[i]));
    int st = http_version_error_status((const char *)d, n);
    FZ_CHECK(st == 400 || st == 505);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    fz_limits(&cfg, data[0]);
    struct fz_rng rng = { ((uint64_t)data[1] << 24 | (uint64_t)data[2] << 16 |
                           (uint64_t)data[3] << 8 | data[4]) * 2654435761u + 1 };
    size_t len = size - 5;
    char *buf = malloc(len ? len : 1); /* exact size: ASan catches any read past the end */
    if (!buf)
        return 0;
    memcpy(buf, data + 5, len);
    check_helpers(data + 5, len < 512 ? len : 512);

    llhttp_t parser;
    http_parser_init(&parser);
    struct http_request req;
    struct http_body_count body = { 0, 0 };
    struct http_parse ps = { .parser = &parser, .limits = &cfg.http, .req = &req, .body = &body };
    size_t pos = 0, avail = len ? fz_chunk(&rng, len) : 0;
    bool in_body = false;
    for (unsigned guard = 0; guard < 100000; guard++) {
        size_t used = 0;
        enum http_parse_result r;
        if (in_body) {
            r = http_parse_body(&ps, buf + pos, avail - pos, &used);
            FZ_CHECK(used <= avail - pos);
            if (r == HTTP_PARSE_ERROR) {
                FZ_CHECK(valid_error(ps.status));
                break;
            }
            FZ_CHECK(r == HTTP_PARSE_INCOMPLETE || r == HTTP_PARSE_DONE);
            pos += used;
            if (r == HTTP_PARSE_DONE) {
                in_body = false;
                continue;
            }
        } else {
            r = http_parse_head(&ps, buf + pos, avail - pos, &used);
            if (r == HTTP_PARSE_ERROR) {
                FZ_CHECK(valid_error(ps.status));
                break;
            }
            if (r == HTTP_PARSE_CLOSE) {
                FZ_CHECK(used <= avail - pos);
                break;
            }
            if (r == HTTP_PARSE_HEAD || r == HTTP_PARSE_DONE) {
                FZ_CHECK(used > 0 && used <= avail - pos);
                check_request(&req, buf + pos, buf + avail, used);
                FZ_CHECK((r == HTTP_PARSE_HEAD) == req.has_body);
                pos += used;
                in_body = r == HTTP_PARSE_HEAD;
                continue;
            }
            FZ_CHECK(r == HTTP_PARSE_INCOMPLETE);
            FZ_CHECK(avail - pos <= cfg.http.max_head_size);
        }
        /* need more input: it "arrives" */
        if (avail == len)
            break;
        avail += fz_chunk(&rng, len - avail);
    }
    free(buf);
    return 0;
}
