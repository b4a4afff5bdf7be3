/* server.c — server lifecycle: start-up, the timer and signal handles, draining, stop.
 *
 * Besides the listeners and connections, three more handles live in the shared handle set and
 * are processed by whichever pool thread leads when they fire:
 *   - a timerfd ticking every TICK_MS: expires connections past their deadline (the sweep),
 *     re-arms paused listeners, and enforces the drain deadline;
 *   - a signalfd for SIGINT/SIGTERM: starts the graceful drain;
 *   - an eventfd that wakes the leader out of epoll_wait when the pool stops. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "acceptor.h"
#include "carry.h"
#include "connection.h"
#include "log.h"
#include "mime.h"
#include "router.h"
#include "tls.h"
#include "transport.h"

#define TICK_MS 250

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void stop_pool(struct server *srv)
{
    tp_stop(&srv->pool);
    uint64_t one = 1;
    ssize_t n = write(srv->stop.eh.fd, &one, sizeof(one)); /* wake the leader */
    (void)n;
}

static void on_stop_event(struct event_handler *eh, uint32_t events, struct worker *w)
{
    (void)eh;
    (void)events;
    (void)w; /* nothing to do: the leader saw the event and will find the pool stopping */
}

void server_conn_closed(struct server *srv)
{
    unsigned left = atomic_fetch_sub_explicit(&srv->nconns, 1, memory_order_acq_rel) - 1;
    if (atomic_load_explicit(&srv->draining, memory_order_acquire)) {
        if (left == 0)
            stop_pool(srv);
        return;
    }
    for (unsigned i = 0; i < srv->nlisteners; i++)
        if (atomic_load_explicit(&srv->listeners[i].paused, memory_order_relaxed))
            acceptor_resume(&srv->listeners[i]);
}

void server_begin_drain(struct server *srv)
{
    bool expected = false;
    if (!atomic_compare_exchange_strong(&srv->draining, &expected, true))
        return;
    atomic_store(&srv->drain_deadline, now_ms() + srv->cfg.drain_timeout);
    log_notice("draining: stopped accepting, %u connection(s) open, deadline %u ms",
               atomic_load(&srv->nconns), srv->cfg.drain_timeout);
    for (unsigned i = 0; i < srv->nlisteners; i++) {
        hs_del(&srv->hs, &srv->listeners[i].eh);
        /* Refuse new connections now; the fd itself stays valid until exit, so an acceptor
         * still running on another thread cannot touch a reused descriptor. */
        shutdown(srv->listeners[i].eh.fd, SHUT_RDWR);
    }
    conn_sweep(srv, now_ms(), true, false); /* close idle keep-alive connections */
    if (atomic_load(&srv->nconns) == 0)
        stop_pool(srv);
}

static void on_timer(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct server *srv = ((struct server_handle *)eh)->srv;
    (void)events;
    (void)w;
    uint64_t ticks;
    ssize_t n = read(eh->fd, &ticks, sizeof(ticks));
    (void)n;
    int64_t now = now_ms();
    bool draining = atomic_load(&srv->draining);
    bool past_deadline = draining && now >= atomic_load(&srv->drain_deadline);
    conn_sweep(srv, now, draining, past_deadline);
    if (!draining)
        for (unsigned i = 0; i < srv->nlisteners; i++)
            acceptor_resume(&srv->listeners[i]);
    hs_rearm(&srv->hs, eh, EPOLLIN);
}

static void on_signal(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct server *srv = ((struct server_handle *)eh)->srv;
    (void)events;
    (void)w;
    struct signalfd_siginfo si;
    while (read(eh->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
            log_notice("%s received: shutting down gracefully",
                       si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
            server_begin_drain(srv);
        }
    }
    hs_rearm(&srv->hs, eh, EPOLLIN);
}

static const struct event_handler_ops stop_ops = { .handle_event = on_stop_event };
static const struct event_handler_ops timer_ops = { .handle_event = on_timer };
static const struct event_handler_ops signal_ops = { .handle_event = on_signal };

static int add_handle(struct server *srv, struct server_handle *h, int fd,
                      const struct event_handler_ops *ops, const char *what)
{
    if (fd < 0) {
        fprintf(stderr, "lfhttpd: %s: %s\n", what, strerror(errno));
        return -1;
    }
    h->eh.fd = fd;
    h->eh.ops = ops;
    h->srv = srv;
    int rc = hs_add(&srv->hs, &h->eh, EPOLLIN);
    if (rc < 0) {
        fprintf(stderr, "lfhttpd: %s: epoll: %s\n", what, strerror(-rc));
        return -1;
    }
    return 0;
}

int server_init(struct server *srv, const struct config *cfg)
{
    memset(srv, 0, sizeof(*srv));
    srv->cfg = *cfg;
    srv->root_fd = -1;
    srv->hs.epfd = -1;
    srv->timer.eh.fd = srv->signals.eh.fd = srv->stop.eh.fd = -1;
    pthread_mutex_init(&srv->conns_lock, NULL);
    srv->started = time(NULL);

    srv->root_fd = open(cfg->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (srv->root_fd < 0) {
        fprintf(stderr, "lfhttpd: document root %s: %s\n", cfg->root, strerror(errno));
        return -1;
    }
    if (faccessat(srv->root_fd, ".", R_OK | X_OK, 0) < 0) {
        fprintf(stderr, "lfhttpd: document root %s: %s\n", cfg->root, strerror(errno));
        return -1;
    }
    char err[512] = "";
    srv->mime = mime_table_load(NULL, err, sizeof(err));
    if (!srv->mime) {
        fprintf(stderr, "lfhttpd: %s\n", err);
        return -1;
    }
    srv->router = calloc(1, sizeof(*srv->router));
    if (!srv->router || router_add(srv->router, srv, "/", "static", NULL, err, sizeof(err)) < 0) {
        fprintf(stderr, "lfhttpd: %s\n", err[0] ? err : "out of memory");
        return -1;
    }

    if (cfg->ncerts > 0) {
        srv->tls = tls_ctx_create(&srv->cfg); /* prints its own error line */
        if (!srv->tls)
            return -1;
    }

    if (cfg->test_only)
        return 0; /* -t: the configuration is valid; bind nothing */

    int rc = hs_init(&srv->hs);
    if (rc < 0) {
        fprintf(stderr, "lfhttpd: epoll_create: %s\n", strerror(-rc));
        return -1;
    }
    for (unsigned i = 0; i < cfg->nlisten; i++) {
        struct listener *l = &srv->listeners[i];
        l->addr = &srv->cfg.listen[i];
        l->eh.fd = -1;
        if (acceptor_open(srv, l) < 0)
            return -1;
        srv->nlisteners++;
    }

    /* Signals are taken from a signalfd in the handle set; block them in every thread (the
     * pool threads inherit this mask). SIGPIPE: writes report EPIPE instead. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (add_handle(srv, &srv->signals, signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC), &signal_ops,
                   "signalfd") < 0)
        return -1;
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec its = { .it_interval = { 0, TICK_MS * 1000000L },
                              .it_value = { 0, TICK_MS * 1000000L } };
    if (tfd >= 0)
        timerfd_settime(tfd, 0, &its, NULL);
    if (add_handle(srv, &srv->timer, tfd, &timer_ops, "timerfd") < 0)
        return -1;
    if (add_handle(srv, &srv->stop, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), &stop_ops, "eventfd") < 0)
        return -1;

    rc = tp_init(&srv->pool, srv, &srv->hs, cfg->threads, cfg->batch);
    if (rc < 0) {
        fprintf(stderr, "lfhttpd: thread pool: %s\n", strerror(-rc));
        return -1;
    }
    for (unsigned i = 0; i < srv->nlisteners; i++) {
        rc = acceptor_start(&srv->listeners[i]);
        if (rc < 0) {
            fprintf(stderr, "lfhttpd: epoll add listener: %s\n", strerror(-rc));
            return -1;
        }
    }
    return 0;
}

void server_run(struct server *srv)
{
    for (unsigned i = 0; i < srv->nlisteners; i++)
        log_notice("listening on %s", srv->listeners[i].url);
    log_notice("lfhttpd serving %s with %u threads (leader/followers)", srv->cfg.root,
               srv->pool.nthreads);
    tp_run(&srv->pool);
    log_notice("stopped");
}

void server_destroy(struct server *srv)
{
    /* The pool has stopped: no thread runs a handler any more. Close what is left (connections
     * still open when the drain deadline passed). */
    while (srv->conns) {
        struct conn *c = srv->conns;
        srv->conns = c->next;
        if (c->tp->release)
            c->tp->release(c);
        close(c->eh.fd);
        if (c->file_fd >= 0)
            close(c->file_fd);
        carry_put(c->in);
        carry_put(c->out);
        free(c);
    }
    for (unsigned i = 0; i < srv->nlisteners; i++)
        close(srv->listeners[i].eh.fd);
    if (srv->timer.eh.fd >= 0)
        close(srv->timer.eh.fd);
    if (srv->signals.eh.fd >= 0)
        close(srv->signals.eh.fd);
    if (srv->stop.eh.fd >= 0)
        close(srv->stop.eh.fd);
    if (srv->pool.workers)
        tp_destroy(&srv->pool);
    hs_close(&srv->hs);
    if (srv->router) {
        router_destroy(srv->router);
        free(srv->router);
    }
    if (srv->tls)
        tls_ctx_unref(srv->tls);
    mime_table_free(srv->mime);
    if (srv->root_fd >= 0)
        close(srv->root_fd);
    pthread_mutex_destroy(&srv->conns_lock);
    carry_pool_release();
}
