/* fuzz_connection.c — libFuzzer harness over a whole in-process connection.
 *
 * A server object with no listeners and no pool threads: its handle set, router, static
 * handler and MIME table are real, and so is the connection (conn_create on one end of a
 * socketpair). The fuzzing thread plays both the Leader/Followers pool — epoll_wait on the
 * handle set, then the handler of each reported handle — and the client: it writes the input
 * in pieces whose sizes come from the input, and reads (and sometimes stops reading) whatever
 * the server answers, checking that stream: well-formed heads, exact Content-Length bodies,
 * nothing after a "Connection: close" response. At the end it half-closes or just stops, and
 * finally expires the connection through the timer sweep, as a timeout would. The connection
 * must then be gone with everything it held released (ASan/LSan check the memory, the harness
 * the fds).
 *
 * Input: [config byte][4 seed bytes][the byte stream]. Config byte: bit 0 small limits, bit 1
 * half-close at the end, bit 2 a client that stops reading after the first response bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn/connection.h"
#include "fuzz_common.h"
#include "lf/handle_set.h"
#include "log/log.h"
#include "static/mime.h"
#include "conf/runtime.h"
#include "daemon/server.h"
#include "conn/sink.h"
#include "lf/thread_pool.h"

static struct server srv;
static struct listener listener; /* a plain listener: no TLS, no PROXY header */
static struct worker worker;
static char root[64];

/* conn_hooks.closed: no listener to resume, no drain to end. */
static void conn_closed(void *arg, unsigned left)
{
    (void)arg;
    (void)left;
}

static void put_file(const char *rel, size_t size, char fill)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        abort();
    char block[4096];
    memset(block, fill, sizeof(block));
    for (size_t done = 0; done < size;) {
        size_t n = size - done < sizeof(block) ? size - done : sizeof(block);
        if (write(fd, block, n) != (ssize_t)n)
            abort();
        done += n;
    }
    close(fd);
}

static void remove_root(void)
{
    static const char *const files[] = { "index.html", "one.txt", "kib.txt", "big.bin",
                                         "sub/index.html", "sub/a.css", ".hidden" };
    char path[256];
    for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", root, files[i]);
        unlink(path);
    }
    snprintf(path, sizeof(path), "%s/sub", root);
    rmdir(path);
    rmdir(root);
}

/* Which descriptors in [lo, lo + 64) are open, lo being the lowest free one when an input
 * starts: everything an input opens lands there. */
static uint64_t open_fds(int lo)
{
    uint64_t mask = 0;
    for (int i = 0; i < 64; i++)
        if (fcntl(lo + i, F_GETFD) >= 0)
            mask |= UINT64_C(1) << i;
    return mask;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_init(LOG_ERROR, 2);
    snprintf(root, sizeof(root), "/tmp/lfhttpd-fuzz-XXXXXX");
    if (!mkdtemp(root))
        abort();
    atexit(remove_root);
    char sub[128];
    snprintf(sub, sizeof(sub), "%s/sub", root);
    mkdir(sub, 0755);
    put_file("index.html", 40, 'i');
    put_file("one.txt", 1, '1');
    put_file("kib.txt", 1024, 'k');
    put_file("big.bin", 300 * 1024, 'b'); /* > 16 KiB: head, then sendfile, parked */
    put_file("sub/index.html", 30, 's');
    put_file("sub/a.css", 20, 'c');
    put_file(".hidden", 5, 'h');

    /* The server object without listeners or threads (what server_init would build); each
     * input gets a fresh runtime (see LLVMFuzzerTestOneInput). */
    log_init(LOG_ERROR, 2);
    srv.view.ops = &daemon_view_ops;
    static const struct conn_hooks hooks = { .closed = conn_closed };
    conn_list_init(&srv.conns, &srv, &srv.pool, &srv.timers, &exchange_layer, &hooks);
    atomic_store(&srv.conns.max, 1000);
    static struct handle_set hs;
    if (hs_init(&hs) < 0)
        abort();
    srv.hs = &hs;
    srv.nhs = 1;
    listener.conns = &srv.conns;
    listener.hs = &hs;
    worker.srv = &srv;
    return 0;
}

/* Run the handlers of every ready handle, as the leader would (one thread: no promotion).
 * Returns the number of events handled. */
static int pump(void)
{
    struct epoll_event evs[8];
    int n = hs_wait(srv.hs, evs, 8, 0);
    FZ_CHECK(n >= 0);
    for (int i = 0; i < n; i++) {
        struct event_handler *eh = evs[i].data.ptr;
        eh->ops->handle_event(eh, evs[i].events, &worker);
    }
    return n;
}

/* The client checks the response stream as it reads it: a sequence of well-formed heads, each
 * followed by exactly Content-Length body bytes (none for 1xx/204/304 or for HEAD), and nothing
 * at all after a response that said "Connection: close". A response to HEAD is recognised by
 * what follows its head: no fixture file and no error page starts with 'H', every response
 * does. Only the last response may be cut short (the client stopped reading, or the sweep
 * expired the connection). */
struct client {
    int fd;
    bool reading;
    size_t got;           /* bytes read */
    char head[8192];      /* the response head being read */
    size_t hlen;
    bool in_body;
    bool maybe_head;      /* body not started yet: it may be a response to HEAD */
    uint64_t body_left;
    bool closing;         /* the current response said Connection: close */
    bool closed;          /* ... and it is complete: no byte may follow */
    unsigned responses;
};

static bool header_is(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);
    return len > n && !strncasecmp(line, name, n) && line[n] == ':';
}

static void check_head(struct client *cl)
{
    const char *h = cl->head;
    size_t len = cl->hlen - 4; /* without the final CRLF CRLF */
    FZ_CHECK(len >= 12 && !memcmp(h, "HTTP/1.1 ", 9));
    for (int i = 9; i < 12; i++)
        FZ_CHECK(h[i] >= '0' && h[i] <= '9');
    int status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
    FZ_CHECK(status >= 100 && status < 600);
    int cls = 0;
    uint64_t cl_value = 0;
    bool close = false;
    const char *line = memchr(h, '\n', len);
    while (line && (size_t)(line + 1 - h) < len) {
        line++;
        const char *end = memchr(line, '\r', (size_t)(h + len - line));
        size_t ll = end ? (size_t)(end - line) : (size_t)(h + len - line);
        FZ_CHECK(ll > 0 && memchr(line, ':', ll) && !memchr(line, '\n', ll));
        FZ_CHECK(line[0] != ' ' && line[0] != '\t'); /* no folding, no injected lines */
        if (header_is(line, ll, "Content-Length")) {
            cls++;
            char num[32] = "";
            size_t vl = ll - 16 < sizeof(num) - 1 ? ll - 16 : sizeof(num) - 1;
            memcpy(num, line + 16, vl);
            char *e;
            cl_value = strtoull(num, &e, 10);
            FZ_CHECK(*e == '\0' && vl > 0);
        } else if (header_is(line, ll, "Connection")) {
            close = ll == 17 && !strncmp(line + 12, "close", 5);
        }
        line = end ? end + 1 : NULL;
    }
    bool bodiless = status < 200 || status == 204 || status == 304;
    FZ_CHECK(bodiless ? cls == 0 : cls == 1);
    cl->body_left = bodiless ? 0 : cl_value;
    cl->in_body = cl->body_left > 0;
    cl->maybe_head = cl->in_body;
    cl->closing = close;
    cl->closed = close && !cl->in_body;
    cl->responses++;
}

static void client_take(struct client *cl, const char *p, size_t n)
{
    while (n > 0) {
        FZ_CHECK(!cl->closed); /* bytes after a "Connection: close" response */
        if (cl->in_body) {
            if (cl->maybe_head && p[0] == 'H') {
                cl->in_body = false; /* a response to HEAD: the next one starts here */
                cl->closed = cl->closing;
                continue;
            }
            cl->maybe_head = false;
            size_t take = n < cl->body_left ? n : (size_t)cl->body_left;
            cl->body_left -= take;
            p += take;
            n -= take;
            if (cl->body_left == 0) {
                cl->in_body = false;
                cl->closed = cl->closing;
            }
            continue;
        }
        FZ_CHECK(cl->hlen < sizeof(cl->head));
        cl->head[cl->hlen++] = *p++;
        n--;
        if (cl->hlen >= 4 && !memcmp(cl->head + cl->hlen - 4, "\r\n\r\n", 4)) {
            check_head(cl);
            cl->hlen = 0;
        }
    }
}

static void client_read(struct client *cl)
{
    char buf[65536];
    while (cl->reading) {
        ssize_t n = read(cl->fd, buf, sizeof(buf));
        if (n <= 0)
            return;
        cl->got += (size_t)n;
        client_take(cl, buf, (size_t)n);
    }
}

static bool conn_alive(void)
{
    return srv.conns.head != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    uint8_t sel = data[0];
    struct fz_rng rng = { ((uint64_t)data[1] << 24 | (uint64_t)data[2] << 16 |
                           (uint64_t)data[3] << 8 | data[4]) * 2654435761u + 1 };
    const uint8_t *in = data + 5;
    size_t len = size - 5;
    int lo = dup(0);
    if (lo < 0)
        abort();
    close(lo);
    uint64_t fds_before = open_fds(lo);

    /* A fresh configuration generation: its file cache's descriptors go with it at the end,
     * so the descriptor check below stays exact. */
    static unsigned generation;
    struct config cfg;
    fz_config(&cfg, root);
    fz_limits(&cfg, sel);
    struct runtime *rt = runtime_build(&srv, &cfg, ++generation);
    FZ_CHECK(rt != NULL);
    atomic_store(&srv.conns.current.rt, rt);

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        abort();
    /* Small buffers, so that large responses park and resume on EPOLLOUT. */
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_storage peer = { .ss_family = AF_INET };
    atomic_fetch_add(&srv.conns.open, 1);
    FZ_CHECK(conn_create(&listener, sv[0], &peer, &worker, NULL) == 0);
    static struct client cl;
    memset(&cl, 0, sizeof(cl));
    cl.fd = sv[1];
    cl.reading = true;

    size_t off = 0;
    unsigned idle = 0;
    while (off < len && conn_alive() && idle < 64) {
        size_t n = fz_chunk(&rng, len - off);
        ssize_t w = write(cl.fd, in + off, n);
        if (w > 0)
            off += (size_t)w;
        else if (w < 0 && errno != EAGAIN)
            break; /* the server closed its end */
        int handled = pump();
        client_read(&cl);
        if ((sel & 4) && cl.got > 0)
            cl.reading = false; /* a client that stops reading mid-response */
        idle = (w <= 0 && handled == 0) ? idle + 1 : 0;
    }
    if (sel & 2)
        shutdown(cl.fd, SHUT_WR);
    for (unsigned i = 0; i < 256 && conn_alive(); i++) {
        int handled = pump();
        client_read(&cl);
        if (!handled)
            break;
    }
    /* Whatever is still open now is waiting for the client: expire it like the timer does. */
    if (conn_alive()) {
        conn_sweep(&srv.conns, INT64_MAX, true, true);
        for (unsigned i = 0; i < 16 && conn_alive(); i++)
            pump();
    }
    if (getenv("FZ_DEBUG"))
        fprintf(stderr, "fz: fed %zu/%zu bytes, client read %zu bytes, %u response(s)\n", off,
                len, cl.got, cl.responses);
    FZ_CHECK(!conn_alive());
    FZ_CHECK(atomic_load(&srv.conns.open) == 0);
    close(cl.fd);
    atomic_store(&srv.conns.current.rt, NULL);
    runtime_unref(rt);
    FZ_CHECK(open_fds(lo) == fds_before); /* socket and any file being sent are closed */
    return 0;
}
