/* ceiling.c — the ceiling of this machine for the benchmark harness (bench/bench.py).
 *
 * A minimal HTTP responder: N threads, each with its own epoll (level-triggered, no ONESHOT)
 * and one shared listening socket registered in every epoll with EPOLLEXCLUSIVE; a thread owns
 * the connections it accepted. It does not parse requests: every "\r\n\r\n" seen in the input
 * (a tiny matcher that survives chunk boundaries) is one request and gets the same fixed 1 KiB
 * response, written with one send() per read. The only other thing it looks for is
 * "Connection: close" in a chunk, so the close scenario can be run (it answers, then closes).
 * No file, no Date, no timeouts, no limits: what is left is the cost of the kernel, the
 * network stack and epoll — the most any server on this machine could do per core.
 *
 *     ceiling [--listen ADDR:PORT] [--threads N]
 *
 * Prints "listening on http://ADDR:PORT" on stderr once ready. SIGTERM/SIGINT exit at once.
 * Not hardened for hostile clients; loopback benchmarks only. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY_LEN 1024
#define MAX_EVENTS 64
#define READ_BUF (64 * 1024)
#define MAX_THREADS 256

struct cconn {
    int fd;
    int match;       /* how much of "\r\n\r\n" the input so far ends with (0..3) */
    bool closing;    /* close once the output is written */
    char *out;       /* unsent output (only when the socket buffer filled) */
    size_t out_len, out_off;
};

static int listen_fd = -1;
static char response[512 + BODY_LEN];
static size_t response_len;
static char response_close[512 + BODY_LEN];
static size_t response_close_len;

static void die(const char *what)
{
    fprintf(stderr, "ceiling: %s: %s\n", what, strerror(errno));
    exit(2);
}

/* Count complete request heads in buf (each ends with CRLFCRLF), carrying the partial match. */
static unsigned count_requests(struct cconn *c, const char *buf, size_t n)
{
    static const char pat[4] = { '\r', '\n', '\r', '\n' };
    unsigned found = 0;
    int m = c->match;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == pat[m]) {
            if (++m == 4) {
                found++;
                m = 0;
            }
        } else {
            m = buf[i] == '\r' ? 1 : 0;
        }
    }
    c->match = m;
    return found;
}

static void conn_free(struct cconn *c)
{
    close(c->fd);
    free(c->out);
    free(c);
}

/* Write c->out; true when it is all gone. */
static bool flush_out(struct cconn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0)
            return false;
        c->out_off += (size_t)n;
    }
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_off = 0;
    return true;
}

/* Queue `count` responses and send them with one send(); park what does not fit.
 * Returns -1 when the connection must be dropped. */
static int respond(int epfd, struct cconn *c, unsigned count, bool close_after)
{
    const char *one = close_after ? response_close : response;
    size_t one_len = close_after ? response_close_len : response_len;
    static __thread char *batch;
    static __thread size_t batch_cap;
    size_t total = one_len * count;
    const char *data = one;
    if (count > 1) {
        if (total > batch_cap) {
            free(batch);
            batch_cap = total;
            batch = malloc(batch_cap);
            if (!batch)
                return -1;
        }
        for (unsigned i = 0; i < count; i++)
            memcpy(batch + i * one_len, one, one_len);
        data = batch;
    }
    size_t off = 0;
    if (!c->out) {
        ssize_t n = send(c->fd, data, total, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN)
            return -1;
        off = n < 0 ? 0 : (size_t)n;
    }
    if (off < total) {
        size_t left = total - off;
        char *p = realloc(c->out, c->out_len + left);
        if (!p)
            return -1;
        memcpy(p + c->out_len, data + off, left);
        c->out = p;
        c->out_len += left;
        struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
        epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    }
    if (close_after)
        c->closing = true;
    return 0;
}

static void on_readable(int epfd, struct cconn *c, char *buf)
{
    ssize_t n = recv(c->fd, buf, READ_BUF, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN)) {
        conn_free(c);
        return;
    }
    if (n < 0)
        return;
    unsigned count = count_requests(c, buf, (size_t)n);
    if (count == 0)
        return;
    bool close_after = memmem(buf, (size_t)n, "Connection: close", 17) != NULL;
    if (respond(epfd, c, count, close_after) < 0 || (c->closing && !c->out))
        conn_free(c);
}

static void on_writable(int epfd, struct cconn *c)
{
    if (!flush_out(c)) {
        if (errno == EAGAIN)
            return;
        conn_free(c);
        return;
    }
    if (c->closing) {
        conn_free(c);
        return;
    }
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void accept_some(int epfd)
{
    for (int i = 0; i < 32; i++) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct cconn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
            conn_free(c);
    }
}

static void *loop(void *arg)
{
    (void)arg;
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        die("epoll_create1");
    struct epoll_event lev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = NULL };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &lev) < 0)
        die("epoll_ctl listen");
    char *buf = malloc(READ_BUF);
    if (!buf)
        die("malloc");
    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(epfd, evs, MAX_EVENTS, -1);
        for (int i = 0; i < n; i++) {
            struct cconn *c = evs[i].data.ptr;
            if (!c)
                accept_some(epfd);
            else if (evs[i].events & EPOLLOUT)
                on_writable(epfd, c);
            else
                on_readable(epfd, c, buf);
        }
    }
    return NULL;
}

static void on_signal(int sig)
{
    (void)sig;
    _exit(0);
}

static size_t build_response(char *dst, size_t cap, bool close_conn)
{
    int n = snprintf(dst, cap,
                     "HTTP/1.1 200 OK\r\nServer: ceiling\r\nContent-Type: text/html\r\n"
                     "Content-Length: %d\r\n%s\r\n",
                     BODY_LEN, close_conn ? "Connection: close\r\n" : "");
    if (n < 0 || (size_t)n + BODY_LEN > cap)
        exit(2);
    memset(dst + n, 'x', BODY_LEN);
    return (size_t)n + BODY_LEN;
}

int main(int argc, char **argv)
{
    const char *addr = "127.0.0.1:8090";
    long nthreads = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--listen") || !strcmp(argv[i], "-l")) && i + 1 < argc)
            addr = argv[++i];
        else if ((!strcmp(argv[i], "--threads") || !strcmp(argv[i], "-t")) && i + 1 < argc)
            nthreads = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: ceiling [--listen ADDR:PORT] [--threads N]\n");
            return 2;
        }
    }
    if (nthreads < 1 || nthreads > MAX_THREADS)
        nthreads = 1;
    response_len = build_response(response, sizeof(response), false);
    response_close_len = build_response(response_close, sizeof(response_close), true);

    char host[64];
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof(host)) {
        fprintf(stderr, "ceiling: bad --listen %s\n", addr);
        return 2;
    }
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "ceiling: bad address %s\n", host);
        return 2;
    }
    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd < 0)
        die("socket");
    int one = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        die("bind");
    if (listen(listen_fd, 4096) < 0)
        die("listen");
    socklen_t slen = sizeof(sa);
    getsockname(listen_fd, (struct sockaddr *)&sa, &slen);

    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    pthread_t tids[MAX_THREADS];
    for (long i = 1; i < nthreads; i++)
        if (pthread_create(&tids[i], NULL, loop, NULL) != 0)
            die("pthread_create");
    fprintf(stderr, "ceiling: %ld threads, listening on http://%s:%u\n", nthreads, host,
            ntohs(sa.sin_port));
    loop(NULL);
    return 0;
}
