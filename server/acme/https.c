/* https.c — one HTTP/1.1 exchange over TLS for the ACME client; see https.h. */
#include "acme/https.h"

#include "base/clock.h"
#include "base/hostport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <llhttp.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HOST_MAX 255
#define PORT_MAX 6
#define SLICE_MS 200 /* a wait is cut into these, so `stopping` is heard */
#define IO_BUF 16384
#define REQ_HEAD_MAX 4096

struct url {
    bool tls;
    char host[HOST_MAX + 1];
    char port[PORT_MAX];
    const char *path;
    bool ip;
};

/* One exchange's connection and its deadlines. */
struct conn {
    const struct https_request *rq;
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    int64_t deadline;
    char *err;
    size_t errcap;
};

__attribute__((format(printf, 2, 3))) static int fail(struct conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errcap, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *ssl_why(void)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    return r ? r : "TLS error";
}

static int parse_url(const char *s, bool allow_http, struct url *u)
{
    const char *p;
    if (!strncmp(s, "https://", 8)) {
        u->tls = true;
        p = s + 8;
    } else if (allow_http && !strncmp(s, "http://", 7)) {
        u->tls = false;
        p = s + 7;
    } else {
        return -1;
    }
    const char *end = p + strcspn(p, "/?#"); /* the authority: host[:port], [IPv6][:port] */
    struct hostport hp;
    if (!hostport_split(p, (size_t)(end - p), &hp) || hp.name.len == 0 ||
        hp.name.len > HOST_MAX)
        return -1;
    memcpy(u->host, hp.name.ptr, hp.name.len);
    u->host[hp.name.len] = '\0';
    snprintf(u->port, sizeof(u->port), "%s", u->tls ? "443" : "80");
    if (hp.port.ptr) {
        size_t n = hp.port.len;
        if (n == 0 || n >= sizeof(u->port) || strspn(hp.port.ptr, "0123456789") < n)
            return -1;
        memcpy(u->port, hp.port.ptr, n);
        u->port[n] = '\0';
    }
    if (*end && *end != '/')
        return -1;
    u->path = *end ? end : "/";
    unsigned char a[16];
    u->ip = inet_pton(AF_INET, u->host, a) == 1 || inet_pton(AF_INET6, u->host, a) == 1;
    return 0;
}

/* Wait for `events` on the socket until the deadline. 0, or -1 (timed out, stopped). */
static int wait_fd(struct conn *c, short events, const char *what)
{
    for (;;) {
        if (c->rq->stopping && c->rq->stopping())
            return fail(c, "stopped");
        int64_t left = c->deadline - clock_now_ms();
        if (left <= 0)
            return fail(c, "%s: timed out", what);
        struct pollfd pfd = { .fd = c->fd, .events = events };
        int n = poll(&pfd, 1, (int)(left < SLICE_MS ? left : SLICE_MS));
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return fail(c, "%s: %s", what, strerror(errno));
    }
}

/* ---- name resolution, bounded ------------------------------------------------------------
 * getaddrinfo() has no deadline of its own (a DNS server that does not answer holds it for the
 * resolver's timeouts times its attempts), and acme_stop() joins this thread: a reload that
 * restarts ACME would wait that long. So the lookup runs on a detached thread of its own, and
 * this one waits for it in slices, as for the socket. Given up (deadline, stop), the lookup
 * finishes alone and the last of the two to let go frees it. */
struct lookup {
    atomic_int refs; /* the waiter's and the resolver's */
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    bool done;
    int rc;
    struct addrinfo *res;
    char host[HOST_MAX + 1];
    char port[PORT_MAX];
};

static void lookup_unref(struct lookup *l)
{
    if (atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (l->res)
        freeaddrinfo(l->res);
    pthread_cond_destroy(&l->done_cond);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

static void *lookup_run(void *arg)
{
    struct lookup *l = arg;
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(l->host, l->port, &hints, &res);
    pthread_mutex_lock(&l->lock);
    l->rc = rc;
    l->res = rc == 0 ? res : NULL;
    l->done = true;
    pthread_cond_signal(&l->done_cond);
    pthread_mutex_unlock(&l->lock);
    lookup_unref(l);
    return NULL;
}

/* Start the lookup of u; NULL when no thread could be made (reason in c->err). */
static struct lookup *lookup_start(struct conn *c, const struct url *u)
{
    struct lookup *l = calloc(1, sizeof(*l));
    pthread_condattr_t ca;
    pthread_attr_t ta;
    pthread_t t;
    if (!l) {
        fail(c, "out of memory");
        return NULL;
    }
    atomic_init(&l->refs, 2);
    memcpy(l->host, u->host, sizeof(l->host));
    memcpy(l->port, u->port, sizeof(l->port));
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->done_cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    int e = pthread_create(&t, &ta, lookup_run, l);
    pthread_attr_destroy(&ta);
    if (e != 0) {
        atomic_store_explicit(&l->refs, 1, memory_order_relaxed);
        lookup_unref(l);
        fail(c, "%s: no thread to resolve it: %s", u->host, strerror(e));
        return NULL;
    }
    return l;
}

/* The host's addresses, by the connect deadline; NULL with the reason in c->err. */
static struct addrinfo *resolve(struct conn *c, const struct url *u)
{
    struct lookup *l = lookup_start(c, u);
    if (!l)
        return NULL;
    struct addrinfo *res = NULL;
    pthread_mutex_lock(&l->lock);
    while (!l->done) {
        int64_t left = c->deadline - clock_now_ms();
        if ((c->rq->stopping && c->rq->stopping()) || left <= 0)
            break;
        struct timespec until = clock_deadline_ts((uint64_t)(left < SLICE_MS ? left : SLICE_MS));
        pthread_cond_timedwait(&l->done_cond, &l->lock, &until);
    }
    if (!l->done)
        fail(c, "%s: %s", u->host,
             c->rq->stopping && c->rq->stopping() ? "stopped" : "name resolution timed out");
    else if (l->rc != 0)
        fail(c, "%s: %s", u->host, gai_strerror(l->rc));
    else {
        res = l->res; /* ours now */
        l->res = NULL;
    }
    pthread_mutex_unlock(&l->lock);
    lookup_unref(l);
    return res;
}

/* A connected socket to one of the host's addresses. */
static int connect_to(struct conn *c, const struct url *u)
{
    struct addrinfo *res = resolve(c, u);
    if (!res)
        return -1;
    int err = 0;
    for (const struct addrinfo *ai = res; ai && c->fd < 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        c->fd = fd;
        socklen_t len = sizeof(err);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
            (errno == EINPROGRESS && wait_fd(c, POLLOUT, "connect") == 0 &&
             getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0))
            break;
        err = err ? err : errno;
        close(fd);
        c->fd = -1;
        if (!strcmp(c->err, "stopped"))
            break;
    }
    freeaddrinfo(res);
    if (c->fd < 0 && !c->err[0])
        fail(c, "connect to %s port %s: %s", u->host, u->port, strerror(err ? err : EIO));
    return c->fd < 0 ? -1 : 0;
}

/* Wait for what a non-blocking SSL call asked for; -1 with a reason for anything else. */
static int ssl_wait(struct conn *c, int ret, const char *what)
{
    int e = SSL_get_error(c->ssl, ret);
    if (e == SSL_ERROR_WANT_READ)
        return wait_fd(c, POLLIN, what);
    if (e == SSL_ERROR_WANT_WRITE)
        return wait_fd(c, POLLOUT, what);
    long v = SSL_get_verify_result(c->ssl);
    if (v != X509_V_OK)
        return fail(c, "%s: certificate verify failed: %s", what,
                    X509_verify_cert_error_string(v));
    if (e == SSL_ERROR_SYSCALL)
        return fail(c, "%s: %s", what, errno ? strerror(errno) : "connection closed");
    return fail(c, "%s: %s", what, ssl_why());
}

/* TLS over the connected socket: the peer verified, its name (or address) checked. */
static int tls_start(struct conn *c, const struct url *u)
{
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ctx || SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION) != 1)
        return fail(c, "TLS: %s", ssl_why());
    SSL_CTX_set_options(c->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    if ((c->rq->ca_bundle ? SSL_CTX_load_verify_locations(c->ctx, c->rq->ca_bundle, NULL)
                          : SSL_CTX_set_default_verify_paths(c->ctx)) != 1)
        return fail(c, "TLS roots %s: %s", c->rq->ca_bundle ? c->rq->ca_bundle : "(system)",
                    ssl_why());
    c->ssl = SSL_new(c->ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1)
        return fail(c, "TLS: %s", ssl_why());
    X509_VERIFY_PARAM *param = SSL_get0_param(c->ssl);
    char sni[HOST_MAX + 1]; /* the macro casts away const */
    snprintf(sni, sizeof(sni), "%s", u->host);
    if (u->ip ? X509_VERIFY_PARAM_set1_ip_asc(param, u->host) != 1
              : SSL_set_tlsext_host_name(c->ssl, sni) != 1 || SSL_set1_host(c->ssl, u->host) != 1)
        return fail(c, "TLS: %s", ssl_why());
    int r;
    while ((r = SSL_connect(c->ssl)) != 1)
        if (ssl_wait(c, r, "TLS handshake") < 0)
            return -1;
    return 0;
}

static int send_all(struct conn *c, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n;
        if (c->ssl) {
            size_t w = 0;
            int r = SSL_write_ex(c->ssl, p, len, &w);
            if (r != 1) {
                if (ssl_wait(c, r, "send") < 0)
                    return -1;
                continue;
            }
            n = (ssize_t)w;
        } else if ((n = send(c->fd, p, len, MSG_NOSIGNAL)) < 0) {
            if (errno != EAGAIN && errno != EINTR)
                return fail(c, "send: %s", strerror(errno));
            if (wait_fd(c, POLLOUT, "send") < 0)
                return -1;
            continue;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Some bytes of the reply: their count, 0 at its end, or -1. */
static ssize_t recv_some(struct conn *c, char *buf, size_t cap)
{
    for (;;) {
        if (c->ssl) {
            size_t got = 0;
            int r = SSL_read_ex(c->ssl, buf, cap, &got);
            if (r == 1)
                return (ssize_t)got;
            if (SSL_get_error(c->ssl, r) == SSL_ERROR_ZERO_RETURN)
                return 0;
            if (ssl_wait(c, r, "receive") < 0)
                return -1;
            continue;
        }
        ssize_t n = recv(c->fd, buf, cap, 0);
        if (n >= 0)
            return n;
        if (errno != EAGAIN && errno != EINTR)
            return fail(c, "receive: %s", strerror(errno));
        if (wait_fd(c, POLLIN, "receive") < 0)
            return -1;
    }
}

/* ---- the reply --------------------------------------------------------------------------- */

struct parse {
    llhttp_t p;
    const struct https_reply_ops *ops;
    bool head;             /* a HEAD request: no body follows */
    bool done, aborted, in_head;
    size_t head_bytes;
    char field[HTTPS_FIELD_MAX + 1], value[HTTPS_VALUE_MAX + 1];
    size_t flen, vlen;
    bool ftoo_long, vtoo_long, value_started;
};

static struct parse *P(llhttp_t *p)
{
    return (struct parse *)(void *)p; /* the parser is the struct's first member */
}

static int on_field(llhttp_t *p, const char *at, size_t len)
{
    struct parse *s = P(p);
    if (s->value_started) { /* a new field: the previous one was delivered */
        s->flen = s->vlen = 0;
        s->ftoo_long = s->vtoo_long = s->value_started = false;
    }
    if (s->flen + len > HTTPS_FIELD_MAX)
        s->ftoo_long = true;
    else
        memcpy(s->field + s->flen, at, len), s->flen += len;
    return 0;
}

static int on_value(llhttp_t *p, const char *at, size_t len)
{
    struct parse *s = P(p);
    s->value_started = true;
    if (s->vlen + len > HTTPS_VALUE_MAX)
        s->vtoo_long = true;
    else
        memcpy(s->value + s->vlen, at, len), s->vlen += len;
    return 0;
}

static int on_value_done(llhttp_t *p)
{
    struct parse *s = P(p);
    s->value_started = true;
    size_t v = s->vlen;
    while (v && (s->value[v - 1] == ' ' || s->value[v - 1] == '\t'))
        v--;
    if (!s->ftoo_long && !s->vtoo_long && s->ops->header)
        s->ops->header(s->ops->arg, s->field, s->flen, s->value, v);
    s->flen = s->vlen = 0;
    s->ftoo_long = s->vtoo_long = s->value_started = false;
    return 0;
}

static int on_headers_done(llhttp_t *p)
{
    struct parse *s = P(p);
    s->in_head = false;
    return s->head ? 1 : 0; /* 1: no body (the reply to HEAD) */
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    struct parse *s = P(p);
    if (s->ops->body && s->ops->body(s->ops->arg, at, len) < 0) {
        s->aborted = true;
        return -1;
    }
    return 0;
}

static int on_done(llhttp_t *p)
{
    P(p)->done = true;
    return HPE_PAUSED; /* nothing after it is read */
}

static const llhttp_settings_t settings = {
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_header_value_complete = on_value_done,
    .on_headers_complete = on_headers_done,
    .on_body = on_body,
    .on_message_complete = on_done,
};

/* Read and parse the reply up to its end. */
static int read_reply(struct conn *c, struct parse *s, long *status)
{
    char *buf = malloc(IO_BUF);
    if (!buf)
        return fail(c, "out of memory");
    int rc = -1;
    while (!s->done) {
        ssize_t n = recv_some(c, buf, IO_BUF);
        if (n < 0)
            break;
        enum llhttp_errno e = n ? llhttp_execute(&s->p, buf, (size_t)n) : llhttp_finish(&s->p);
        if (s->in_head && (s->head_bytes += (size_t)n) > HTTPS_HEAD_MAX) {
            fail(c, "reply head too large");
            break;
        }
        if (s->aborted) {
            fail(c, "aborted");
            break;
        }
        if (e != HPE_OK && e != HPE_PAUSED) {
            if (n == 0)
                fail(c, "the reply ended early");
            else
                fail(c, "malformed reply: %s", llhttp_errno_name(e));
            break;
        }
        if (n == 0 && !s->done) {
            fail(c, "the reply ended early");
            break;
        }
    }
    if (s->done) {
        *status = (long)llhttp_get_status_code(&s->p);
        rc = 0;
    }
    free(buf);
    return rc;
}

/* ---- the exchange ------------------------------------------------------------------------ */

static int send_request(struct conn *c, const struct url *u)
{
    const struct https_request *rq = c->rq;
    char head[REQ_HEAD_MAX];
    bool v6 = strchr(u->host, ':') != NULL;
    bool dflt = !strcmp(u->port, u->tls ? "443" : "80");
    int n = snprintf(head, sizeof(head),
                     "%s %s HTTP/1.1\r\nHost: %s%s%s%s%s\r\n%sConnection: close\r\n",
                     rq->method, u->path, v6 ? "[" : "", u->host, v6 ? "]" : "",
                     dflt ? "" : ":", dflt ? "" : u->port, rq->headers ? rq->headers : "");
    if (n > 0 && (size_t)n < sizeof(head) && rq->body)
        n += snprintf(head + n, sizeof(head) - (size_t)n, "Content-Length: %zu\r\n",
                      rq->body_len);
    if (n < 0 || (size_t)n + 2 >= sizeof(head))
        return fail(c, "request head too large");
    memcpy(head + n, "\r\n", 3);
    if (send_all(c, head, (size_t)n + 2) < 0)
        return -1;
    return rq->body ? send_all(c, rq->body, rq->body_len) : 0;
}

int https_exchange(const struct https_request *rq, const struct https_reply_ops *ops,
                   long *status, char *err, size_t errcap)
{
    struct conn c = { .rq = rq, .fd = -1, .err = err, .errcap = errcap };
    struct url u;
    struct parse *s = calloc(1, sizeof(*s));
    err[0] = '\0';
    *status = 0;
    if (!s)
        return fail(&c, "out of memory");
    int rc = -1;
    if (parse_url(rq->url, rq->allow_http, &u) < 0) {
        fail(&c, "not a usable URL");
        goto out;
    }
    int64_t start = clock_now_ms();
    c.deadline = start + rq->connect_ms;
    if (connect_to(&c, &u) < 0 || (u.tls && tls_start(&c, &u) < 0))
        goto out;
    c.deadline = start + rq->total_ms;
    if (send_request(&c, &u) < 0)
        goto out;
    llhttp_init(&s->p, HTTP_RESPONSE, &settings);
    s->ops = ops;
    s->head = !strcmp(rq->method, "HEAD");
    s->in_head = true;
    rc = read_reply(&c, s, status);
out:
    if (c.ssl) {
        SSL_free(c.ssl); /* no close_notify: the server closes after its reply anyway */
    }
    SSL_CTX_free(c.ctx);
    if (c.fd >= 0)
        close(c.fd);
    ERR_clear_error();
    free(s);
    return rc;
}
