/* access_log.c — see access_log.h. */
#include "exchange/access_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log/access_buffer.h"
#include "http/http_request.h"
#include "http/http_response.h"
#include "log/log.h"
#include "log/logfile.h"
#include "base/fmt.h"
#include "base/hex.h"
#include "base/json.h"
#include "base/netaddr.h"
#include "conf/runtime.h"
#include "log/diag.h"

#define LINE_MAX_BYTES 16384
/* Longest escaped output of one request-controlled field; longer ones are cut (to a prefix).
 * With the fields' budgets below, a line can never outgrow LINE_MAX_BYTES. */
#define FIELD_TARGET 4096
#define FIELD_OTHER 2048

static int open_target(const char *target)
{
    if (!strcmp(target, "stdout"))
        return dup(1);
    if (!strcmp(target, "stderr"))
        return dup(2);
    return open(target, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

/* A full disk must not take the server down, nor tear a line, nor flood the error log: one
 * line when lines start being lost, one when they are written again. */
static void report(const void *arg, enum logfile_result r, int err, uint64_t lost)
{
    const char *name = arg;
    if (r == LOGFILE_FAILING)
        log_error("access log %s: %s; its lines are lost until it can be written again", name,
                  strerror(err));
    else if (r == LOGFILE_RECOVERED)
        log_notice("access log %s: written again; %llu line(s) were lost (%s)", name,
                   (unsigned long long)lost, strerror(err));
}

int access_log_open(struct runtime *rt)
{
    rt->access_fd = -1;
    const char *t = rt->cfg.access_log;
    if (!t[0] || !strcmp(t, "off"))
        return 0;
    rt->access_fd = open_target(t);
    if (rt->access_fd < 0) {
        diag("lfhttpd: access log %s: %s\n", t, strerror(errno));
        return -1;
    }
    rt->access_log = malloc(sizeof(*rt->access_log));
    if (!rt->access_log) {
        diag("lfhttpd: out of memory\n");
        return -1;
    }
    logfile_init(rt->access_log, rt->access_fd);
    rt->access_log->report = report;
    rt->access_log->report_arg = rt->cfg.access_log;
    return 0;
}

int access_log_reopen(struct runtime *rt)
{
    const char *t = rt->cfg.access_log;
    if (rt->access_fd < 0 || !strcmp(t, "stdout") || !strcmp(t, "stderr"))
        return 0;
    int fd = open_target(t);
    if (fd < 0)
        return -errno;
    /* Every line buffered before the signal goes to the old file, and none is appended until
     * the new one is in place. */
    access_buffer_hold();
    int rc = dup2(fd, rt->access_fd) < 0 ? -errno : 0;
    if (rc == 0)
        logfile_reopened(rt->access_log);
    access_buffer_release();
    close(fd);
    return rc;
}

void access_log_tick(int64_t now_ms)
{
    access_buffer_tick(now_ms);
}

void access_log_flush(void)
{
    access_buffer_flush();
}

void access_log_close(struct runtime *rt)
{
    if (rt->access_log) {
        access_buffer_forget(rt->access_log);
        logfile_destroy(rt->access_log);
        free(rt->access_log);
        rt->access_log = NULL;
    }
    if (rt->access_fd >= 0)
        close(rt->access_fd);
    rt->access_fd = -1;
}

struct line {
    char buf[LINE_MAX_BYTES];
    size_t len;
};

static void put(struct line *l, const char *s, size_t n)
{
    if (n > sizeof(l->buf) - 2 - l->len)
        n = sizeof(l->buf) - 2 - l->len;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}
#define PUT_LIT(l, lit) put((l), (lit), sizeof(lit) - 1)

/* A request-controlled field for CLF: nginx's escaping, "-" when empty or absent, at most
 * `budget` bytes of output. */
static void put_clf(struct line *l, struct strview v, size_t budget)
{
    if (!v.ptr || !v.len) {
        put(l, "-", 1);
        return;
    }
    size_t start = l->len;
    for (size_t i = 0; i < v.len; i++) {
        if (l->len - start + 4 > budget)
            return; /* shortened: still a prefix of the escaped field */
        unsigned char c = (unsigned char)v.ptr[i];
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
            char esc[4] = { '\\', 'x', hex_upper(c >> 4), hex_upper(c) };
            put(l, esc, 4);
        } else {
            put(l, (const char *)&v.ptr[i], 1);
        }
    }
}

/* A JSON string of at most `budget` bytes of output; bytes >= 0x80 are escaped as \u00XX so
 * the line is valid JSON even when the input is not UTF-8. */
static void put_json(struct line *l, struct strview v, size_t budget)
{
    put(l, "\"", 1);
    size_t room = sizeof(l->buf) - 2 - l->len; /* put()'s bound */
    /* a longer field is shortened: still a prefix of the escaped field */
    json_escape(l->buf, l->len + (budget < room ? budget : room), &l->len, v.ptr, v.len);
    put(l, "\"", 1);
}

static void put_num(struct line *l, uint64_t v)
{
    char num[24];
    put(l, num, fmt_u64(num, v));
}

/* The line's time, formatted once per second per thread: formatting it with snprintf and
 * strftime cost about 4,000 instructions a line, more than the rest of a request. */
struct stamp {
    time_t sec;
    char clf[27];   /* 23/Nov/2026:19:18:43 +0000 */
    char iso[21];   /* 2026-11-23T19:18:43Z */
};

static const struct stamp *stamp_now(void)
{
    static _Thread_local struct stamp st = { .sec = -1 };
    time_t now = time(NULL);
    if (now == st.sec)
        return &st;
    static const char mon[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    struct tm tm;
    gmtime_r(&now, &tm);
    int y = tm.tm_year + 1900;
    memcpy(st.clf, "dd/Mon/yyyy:hh:mm:ss +0000", 26);
    fmt_2digits(st.clf, tm.tm_mday);
    memcpy(st.clf + 3, mon + 3 * tm.tm_mon, 3);
    fmt_2digits(st.clf + 7, y / 100);
    fmt_2digits(st.clf + 9, y % 100);
    fmt_2digits(st.clf + 12, tm.tm_hour);
    fmt_2digits(st.clf + 15, tm.tm_min);
    fmt_2digits(st.clf + 18, tm.tm_sec);
    memcpy(st.iso, "yyyy-mm-ddThh:mm:ssZ", 20);
    fmt_2digits(st.iso, y / 100);
    fmt_2digits(st.iso + 2, y % 100);
    fmt_2digits(st.iso + 5, tm.tm_mon + 1);
    fmt_2digits(st.iso + 8, tm.tm_mday);
    fmt_2digits(st.iso + 11, tm.tm_hour);
    fmt_2digits(st.iso + 14, tm.tm_min);
    fmt_2digits(st.iso + 17, tm.tm_sec);
    st.sec = now;
    return &st;
}

/* What both formats print of one exchange. */
struct fields {
    char addr[64];
    size_t alen;
    const struct stamp *ts;
    struct strview method, target, referer, ua, user;
    char proto[9];
};

static void line_json(struct line *l, const struct access_entry *ex, const struct fields *f)
{
    const struct http_request *req = ex->req;
    PUT_LIT(l, "{\"time\":\"");
    put(l, f->ts->iso, 20);
    PUT_LIT(l, "\",\"remote_addr\":\"");
    put(l, f->addr, f->alen);
    PUT_LIT(l, "\",\"remote_user\":");
    put_json(l, f->user, 256);
    PUT_LIT(l, ",\"method\":");
    put_json(l, f->method, 64);
    PUT_LIT(l, ",\"uri\":");
    put_json(l, f->target, FIELD_TARGET);
    PUT_LIT(l, ",\"protocol\":");
    put_json(l, req ? (struct strview){ f->proto, 8 } : SV_NULL, 16);
    PUT_LIT(l, ",\"host\":");
    put_json(l, req ? req->host : SV_NULL, 512);
    PUT_LIT(l, ",\"status\":");
    put_num(l, (uint64_t)ex->status);
    PUT_LIT(l, ",\"bytes\":");
    put_num(l, ex->body_bytes);
    PUT_LIT(l, ",\"content_encoding\":");
    struct strview ce = SV_NULL;
    if (ex->content_encoding)
        ce = (struct strview){ ex->content_encoding, strlen(ex->content_encoding) };
    put_json(l, ce, 16);
    PUT_LIT(l, ",\"referer\":");
    put_json(l, f->referer, FIELD_OTHER);
    PUT_LIT(l, ",\"user_agent\":");
    put_json(l, f->ua, FIELD_OTHER);
    PUT_LIT(l, "}");
}

static void line_clf(struct line *l, const struct access_entry *ex, const struct fields *f)
{
    put(l, f->addr, f->alen);
    PUT_LIT(l, " - ");
    put_clf(l, f->user, 256);
    PUT_LIT(l, " [");
    put(l, f->ts->clf, 26);
    PUT_LIT(l, "] \"");
    if (ex->req) {
        put_clf(l, f->method, 64);
        PUT_LIT(l, " ");
        put_clf(l, f->target, FIELD_TARGET);
        PUT_LIT(l, " ");
        put(l, f->proto, 8);
    } else {
        PUT_LIT(l, "-");
    }
    PUT_LIT(l, "\" ");
    put_num(l, (uint64_t)ex->status);
    PUT_LIT(l, " ");
    if (ex->body_bytes)
        put_num(l, ex->body_bytes);
    else
        PUT_LIT(l, "-");
    PUT_LIT(l, " \"");
    put_clf(l, f->referer, FIELD_OTHER);
    PUT_LIT(l, "\" \"");
    put_clf(l, f->ua, FIELD_OTHER);
    PUT_LIT(l, "\"");
}

/* Only called with the log on (exchange.c checks): the line buffer's large frame costs stack
 * probing and a canary, which requests with the log off never pay. */
void access_log_write(const struct runtime *rt, const struct access_entry *ex)
{
    const struct http_request *req = ex->req;
    struct line l;
    l.len = 0;
    struct fields f = { .proto = "HTTP/1.1" };
    f.alen = netaddr_format(ex->client, f.addr, sizeof(f.addr));
    f.ts = stamp_now();
    f.method = req ? req->method_name : SV_NULL;
    f.target = req ? req->target : SV_NULL;
    f.referer = req ? HTTP_KNOWN(req, H_REFERER) : SV_NULL;
    f.ua = req ? HTTP_KNOWN(req, H_USER_AGENT) : SV_NULL;
    f.user = ex->user;
    if (req)
        f.proto[7] = (char)('0' + req->http_minor);
    if (rt->cfg.access_log_format == ALOG_JSON)
        line_json(&l, ex, &f);
    else
        line_clf(&l, ex, &f);
    l.buf[l.len++] = '\n';
    if (rt->cfg.access_log_buffer) {
        access_buffer_append(rt->access_log, l.buf, l.len, rt->cfg.access_log_buffer,
                             rt->cfg.access_log_flush);
        return;
    }
    int err = 0;
    uint64_t lost = 0;
    enum logfile_result r = logfile_write(rt->access_log, l.buf, l.len, &err, &lost);
    if (r == LOGFILE_FAILING || r == LOGFILE_RECOVERED)
        report(rt->cfg.access_log, r, err, lost);
}
