/* server.c — server lifecycle: start-up, the timer and signal handles, draining, stop.
 *
 * Besides the listeners and connections, three more handles live in the shared handle set and
 * are processed by whichever pool thread leads when they fire:
 *   - a timerfd ticking every TICK_MS: expires connections past their deadline (the sweep),
 *     re-arms paused listeners, and enforces the drain deadline;
 *   - a signalfd: SIGINT/SIGTERM start the graceful drain, SIGHUP reloads the configuration,
 *     SIGUSR1 reopens the log files; SIGUSR2 renews the ACME certificate now;
 *   - an eventfd that wakes the leader out of epoll_wait when the pool stops. */
#include "daemon/server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
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

#include "base/carry.h"
#include "base/clock.h"
#include "exchange/access_log.h"
#include "conn/acceptor.h"
#include "conn/connection.h"
#include "registry.h"
#include "log/diag.h"
#include "log/log.h"
#include "conf/runtime.h"
#include "acme/acme.h"
#include "daemon/acme_wire.h"
#include "daemon/watch.h"
#include "net/send_probe.h"

#define TICK_MS 250

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

/* conn_hooks.closed: a connection is gone, `left` are open. */
static void conn_closed(void *arg, unsigned left)
{
    struct server *srv = arg;
    if (atomic_load_explicit(&srv->conns.draining, memory_order_acquire)) {
        if (left == 0)
            stop_pool(srv);
        return;
    }
    for (unsigned i = 0; i < srv->nlisteners; i++)
        if (atomic_load_explicit(&srv->listeners[i].paused, memory_order_relaxed))
            acceptor_resume(&srv->listeners[i]);
}

static bool daemon_ready(struct server *srv)
{
    return atomic_load_explicit(&srv->ready, memory_order_relaxed) &&
           !atomic_load_explicit(&srv->stopping, memory_order_relaxed);
}

static bool daemon_stopping(struct server *srv)
{
    return atomic_load_explicit(&srv->stopping, memory_order_relaxed);
}

void server_begin_drain(struct server *srv)
{
    atomic_store(&srv->stopping, true);
    atomic_store(&srv->drain_at, 0);
    bool expected = false;
    if (!atomic_compare_exchange_strong(&srv->conns.draining, &expected, true))
        return;
    unsigned timeout = atomic_load(&srv->drain_timeout);
    atomic_store(&srv->drain_deadline, clock_now_ms() + timeout);
    log_notice("draining: stopped accepting, %u connection(s) open, deadline %u ms",
               atomic_load(&srv->conns.open), timeout);
    systemd_stopping(&srv->sd, atomic_load(&srv->conns.open));
    for (unsigned i = 0; i < srv->nlisteners; i++) {
        hs_del(srv->listeners[i].hs, &srv->listeners[i].eh);
        /* Refuse new connections now; the fd itself stays valid until exit, so an acceptor
         * still running on another thread cannot touch a reused descriptor. A socket from
         * systemd is left as it is: systemd holds it for the next start, and connections
         * made meanwhile wait in its backlog for that instance instead of being refused. */
        if (!srv->listeners[i].inherited)
            shutdown(srv->listeners[i].eh.fd, SHUT_RDWR);
    }
    conn_sweep(&srv->conns, clock_now_ms(), true, false); /* close idle keep-alive connections */
    if (atomic_load(&srv->conns.open) == 0)
        stop_pool(srv);
}

/* The one-line summary systemd's STATUS= carries. */
static void status_summary(void *arg, char *out, size_t size)
{
    struct server *srv = arg;
    uint64_t requests = 0;
    for (unsigned i = 0; i < srv->pool.nworkers; i++)
        requests += atomic_load_explicit(&srv->pool.workers[i].stats.requests,
                                         memory_order_relaxed);
    /* The published runtime's generation: srv->generation belongs to the reloading thread. */
    struct runtime *rt = server_runtime(srv);
    char acme[ACME_ERROR_MAX + ACME_NAME_MAX + 64];
    acme_wire_summary(acme, sizeof(acme)); /* a failing renewal, for `systemctl status` */
    snprintf(out, size, "%s: %u connection(s), %llu request(s), configuration generation %u%s",
             atomic_load(&srv->conns.draining) ? "draining" : "serving",
             atomic_load_explicit(&srv->conns.open, memory_order_relaxed),
             (unsigned long long)requests, rt->generation, acme);
    runtime_unref(rt);
}

static void on_timer(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct server *srv = ((struct server_handle *)eh)->srv;
    (void)events;
    (void)w;
    uint64_t ticks;
    ssize_t n = read(eh->fd, &ticks, sizeof(ticks));
    (void)n;
    int64_t now = clock_now_ms();
    bool draining = atomic_load(&srv->conns.draining);
    bool past_deadline = draining && now >= atomic_load(&srv->drain_deadline);
    int64_t drain_at = atomic_load(&srv->drain_at);
    if (!draining && drain_at && now >= drain_at) {
        log_notice("drain_delay over: stopping to accept");
        server_begin_drain(srv);
        draining = true;
    }
    conn_sweep(&srv->conns, now, draining, past_deadline);
    access_log_tick(now);
    if (!draining)
        for (unsigned i = 0; i < srv->nlisteners; i++)
            acceptor_resume(&srv->listeners[i]);
    const char *pending = draining ? NULL : atomic_exchange(&srv->reload_pending, NULL);
    if (pending)
        server_reload(srv, pending);
    if (!draining)
        watch_tick(srv->watch, now);
    systemd_tick(&srv->sd);
    hs_rearm(srv->hs, eh, EPOLLIN);
}

/* SIGTERM/SIGINT. With drain_delay, report not-ready and keep serving for that long (the timer
 * tick then begins the drain): a load balancer or Kubernetes removes the endpoint meanwhile, so
 * no new connection arrives at a listener about to close. A second signal drains at once. */
static void request_stop(struct server *srv, const char *sig)
{
    unsigned delay = atomic_load(&srv->drain_delay);
    bool again = atomic_exchange(&srv->stopping, true);
    if (again || delay == 0 || atomic_load(&srv->conns.draining)) {
        log_notice("%s received: shutting down gracefully", sig);
        server_begin_drain(srv);
        return;
    }
    atomic_store(&srv->drain_at, clock_now_ms() + delay);
    log_notice("%s received: shutting down gracefully after drain_delay: not ready, still "
               "serving for %u ms", sig, delay);
}

static void on_signal(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct server *srv = ((struct server_handle *)eh)->srv;
    (void)events;
    (void)w;
    struct signalfd_siginfo si;
    while (read(eh->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
            request_stop(srv, si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
        } else if (si.ssi_signo == SIGHUP) {
            log_notice("SIGHUP received: reloading the configuration");
            server_reload(srv, "SIGHUP");
        } else if (si.ssi_signo == SIGUSR1) {
            struct runtime *rt = server_runtime(srv);
            int a = access_log_reopen(rt), e = log_reopen();
            runtime_unref(rt);
            if (a < 0 || e < 0)
                log_error("SIGUSR1: reopening logs failed: %s", strerror(a < 0 ? -a : -e));
            else
                log_notice("SIGUSR1: log files reopened");
        } else if (si.ssi_signo == SIGUSR2) {
            acme_wire_renew();
        }
    }
    hs_rearm(srv->hs, eh, EPOLLIN);
}

static const struct event_handler_ops stop_ops = { .handle_event = on_stop_event };
static const struct event_handler_ops timer_ops = { .handle_event = on_timer };
static const struct event_handler_ops signal_ops = { .handle_event = on_signal };

static int add_handle(struct server *srv, struct server_handle *h, int fd,
                      const struct event_handler_ops *ops, const char *what)
{
    if (fd < 0) {
        diag("lfhttpd: %s: %s\n", what, strerror(errno));
        return -1;
    }
    h->eh.fd = fd;
    h->eh.ops = ops;
    h->srv = srv;
    /* The stop event wakes every thread waiting in epoll_wait: it is in every set. */
    unsigned sets = ops == &stop_ops ? srv->nhs : 1;
    for (unsigned i = 0; i < sets; i++) {
        int rc = hs_add(&srv->hs[i], &h->eh, EPOLLIN);
        if (rc < 0) {
            diag("lfhttpd: %s: epoll: %s\n", what, strerror(-rc));
            return -1;
        }
    }
    return 0;
}

/* Started as root: bind first (done by the caller), then become the configured user (default
 * nobody) for good. Refuses to stay root unless `user root` was configured explicitly. */
static int drop_privileges(const struct config *cfg)
{
    if (geteuid() != 0) {
        if (cfg->user[0])
            log_notice("not started as root: 'user %s' ignored", cfg->user);
        return 0;
    }
    const char *user = cfg->user[0] ? cfg->user : "nobody";
    char buf[4096];
    struct passwd pw, *pwp = NULL;
    if (getpwnam_r(user, &pw, buf, sizeof(buf), &pwp) != 0 || !pwp) {
        diag("lfhttpd: user '%s' does not exist\n", user);
        return -1;
    }
    gid_t gid = pw.pw_gid;
    if (cfg->group[0]) {
        char gbuf[4096];
        struct group gr, *grp = NULL;
        if (getgrnam_r(cfg->group, &gr, gbuf, sizeof(gbuf), &grp) != 0 || !grp) {
            diag("lfhttpd: group '%s' does not exist\n", cfg->group);
            return -1;
        }
        gid = gr.gr_gid;
    }
    if (pw.pw_uid == 0) {
        log_warn("running as root, as configured ('user %s')", user);
        return 0;
    }
    if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(pw.pw_uid) < 0) {
        diag("lfhttpd: cannot become user '%s': %s\n", user, strerror(errno));
        return -1;
    }
    if (setuid(0) == 0) { /* must be impossible now */
        diag("lfhttpd: privileges could not be dropped\n");
        return -1;
    }
    log_notice("running as user %s (uid %u, gid %u)", user, (unsigned)pw.pw_uid, (unsigned)gid);
    return 0;
}

struct runtime *server_runtime(struct server *srv)
{
    return runtime_current(&srv->conns.current);
}

/* Publish `rt` as the current runtime (taking over the caller's reference) and release the
 * previous one; connections still using it keep it alive until their requests finish. */
static void publish_runtime(struct server *srv, struct runtime *rt)
{
    atomic_store(&srv->conns.max, rt->cfg.max_connections);
    atomic_store(&srv->drain_timeout, rt->cfg.drain_timeout);
    atomic_store(&srv->drain_delay, rt->cfg.drain_delay);
    /* Its values from the environment are hidden on every thread's error log lines from now
     * on, those of the generation it replaces no longer (diag.h). */
    diag_publish(rt->cfg.secrets, rt->cfg.nsecrets);
    runtime_publish(&srv->conns.current, rt);
}

/* The port tls_redirect_http sends plain requests to: the first open TLS listener's. */
static void note_https_port(struct server *srv)
{
    unsigned port = 0;
    for (unsigned i = 0; i < atomic_load(&srv->nlisteners) && !port; i++) {
        const struct listener *l = &srv->listeners[i];
        if (l->addr.tls && !atomic_load(&l->closed))
            port = (unsigned)strtoul(strrchr(l->url, ':') + 1, NULL, 10);
    }
    atomic_store_explicit(&srv->conns.https_port, port, memory_order_relaxed);
}

static bool same_listener(const struct listen_addr *a, const struct listen_addr *b)
{
    return a->sslen == b->sslen && !memcmp(&a->ss, &b->ss, a->sslen) &&
           !strcmp(a->fdname, b->fdname) && a->proxy_protocol == b->proxy_protocol &&
           a->tls == b->tls && a->admin == b->admin;
}

/* Listeners for `la` from the sockets systemd passed (every one it names or whose address it
 * has) from slot `i` on: under reuseport each socket gets one slot per handle set, all on
 * duplicates of the one socket (the kernel cannot spread its connections, but every thread
 * accepts from it). Returns the number of slots used, 0 when no inherited socket matches `la`,
 * or -1 with a message printed (nothing left open). */
static int adopt_listener(struct server *srv, unsigned i, const struct listen_addr *la)
{
    unsigned copies = srv->pool.mode == CONC_REUSEPORT ? srv->nhs : 1, n = 0;
    for (unsigned s = 0; s < srv->sd.nsockets; s++) {
        if (!systemd_socket_matches(&srv->sd.sockets[s], la))
            continue;
        for (unsigned k = 0; k < copies; k++) {
            if (i + n >= SERVER_MAX_LISTENERS) {
                diag("lfhttpd: too many listeners over the server's lifetime (%d)\n",
                     SERVER_MAX_LISTENERS);
                goto fail;
            }
            struct listener *l = &srv->listeners[i + n];
            memset(l, 0, sizeof(*l));
            l->addr = *la;
            l->hs = &srv->hs[k];
            l->copy = k;
            if (acceptor_adopt(&srv->conns, l, srv->sd.sockets[s].fd) < 0)
                goto fail;
            n++;
        }
    }
    if (n == 0 && la->fdname[0]) {
        diag("lfhttpd: listen %s: systemd passed no socket named '%s' "
             "(FileDescriptorName= in the .socket unit)\n", la->text, la->fdname);
        return -1;
    }
    return (int)n;
fail:
    for (unsigned j = 0; j < n; j++)
        close(srv->listeners[i + j].eh.fd);
    return -1;
}

/* Bind the listening socket(s) for `la` from slot `i` on (not yet published: the caller
 * publishes the count): one, or under reuseport one per handle set, all on the same port (the
 * first one's, when the configured port is 0); or use the sockets systemd passed for it.
 * Returns the number of slots used, or -1 with a message printed (nothing left open). */
static int open_listener(struct server *srv, unsigned i, const struct listen_addr *la)
{
    int adopted = adopt_listener(srv, i, la);
    if (adopted != 0)
        return adopted;
    bool reuseport = srv->pool.mode == CONC_REUSEPORT;
    unsigned copies = reuseport ? srv->nhs : 1;
    if (i + copies > SERVER_MAX_LISTENERS) {
        diag("lfhttpd: too many listeners over the server's lifetime (%d%s)\n",
             SERVER_MAX_LISTENERS, reuseport ? "; reuseport opens one per thread" : "");
        return -1;
    }
    struct sockaddr_storage bound;
    for (unsigned k = 0; k < copies; k++) {
        struct listener *l = &srv->listeners[i + k];
        memset(l, 0, sizeof(*l));
        l->addr = *la;
        l->eh.fd = -1;
        l->hs = &srv->hs[k];
        l->copy = k;
        /* A path cannot be bound twice: reuseport's other copies share the one socket. */
        int rc = k && la->ss.ss_family == AF_UNIX
                     ? acceptor_adopt(&srv->conns, l, srv->listeners[i].eh.fd)
                     : acceptor_open(&srv->conns, l, reuseport, k ? &bound : NULL);
        l->inherited = false;
        if (rc < 0) {
            for (unsigned j = 0; j < k; j++)
                close(srv->listeners[i + j].eh.fd);
            return -1;
        }
        socklen_t len = sizeof(bound);
        if (k == 0)
            getsockname(l->eh.fd, (struct sockaddr *)&bound, &len);
    }
    return (int)copies;
}

/* watch.h's reload: the same as SIGHUP's. */
static void reload_cb(void *arg, const char *why)
{
    server_reload(arg, why);
}

/* The server's own handles in the shared set: signals, the tick, stop, the handler timers and
 * the reload_on_change watcher. */
static int add_core_handles(struct server *srv)
{
    /* Signals are taken from a signalfd in the handle set; block them in every thread (the
     * pool threads inherit this mask). SIGPIPE: writes report EPIPE instead. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
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
    int rc = timer_init(&srv->timers, srv->hs);
    if (rc < 0) {
        diag("lfhttpd: timerfd: %s\n", strerror(-rc));
        return -1;
    }
    srv->watch = watch_new(&srv->hs[0], reload_cb, srv);
    if (!srv->watch)
        return -1;
    return 0;
}

/* The sockets systemd passed, then every configured listener (on a passed socket where one
 * matches it, else bound here); a passed socket that no listener takes is an error. */
static int open_listeners(struct server *srv, const struct config *c)
{
    const struct systemd_socket *unused = systemd_unclaimed(&srv->sd, c->listen, c->nlisten);
    if (unused) {
        diag("lfhttpd: socket '%s' passed by systemd is used by no listener (add "
             "'listen systemd:%s' or 'tls_listen systemd:%s', or listen on its "
             "address)\n", unused->name, unused->name, unused->name);
        return -1;
    }
    for (unsigned i = 0, n = 0; i < c->nlisten; i++) {
        int used = open_listener(srv, n, &c->listen[i]);
        if (used < 0)
            return -1;
        n += (unsigned)used;
        atomic_store(&srv->nlisteners, n);
    }
    note_https_port(srv);
    return 0;
}

/* No listener configured, and systemd passed sockets: serve on them instead of the default
 * (socket activation with a configuration that names no address). */
static void listen_on_passed(const struct systemd_state *sd, struct config *cfg)
{
    if (!cfg->listen_default || !sd->nsockets)
        return;
    cfg->nlisten--; /* the default, added last */
    cfg->nlisten += systemd_listeners(sd, cfg->listen + cfg->nlisten,
                                      CONFIG_MAX_LISTEN - cfg->nlisten);
}

/* The sockets systemd passed, before the first runtime is built (their listeners are part of
 * its configuration). A socket refused is not a configuration error: its reason is a line of
 * the error log in its format, as a port in use is (see server_init). */
static int take_passed(struct server *srv, struct config *cfg)
{
    if (systemd_init(&srv->sd, TICK_MS) < 0) {
        if (log_open(cfg->error_log) == 0)
            log_error("%s", srv->sd.error);
        return -1;
    }
    srv->sd.summary = status_summary;
    srv->sd.summary_arg = srv;
    listen_on_passed(&srv->sd, cfg);
    return 0;
}

int server_init(struct server *srv, struct config *cfg, int argc, char **argv,
                const struct exchange_layer *layer)
{
    memset(srv, 0, sizeof(*srv));
    srv->view.ops = &daemon_view_ops;
    struct conn_hooks hooks = { .closed = conn_closed, .arg = srv };
    conn_list_init(&srv->conns, srv, &srv->pool, &srv->timers, layer, &hooks);
    srv->timer.eh.fd = srv->signals.eh.fd = srv->stop.eh.fd = -1;
    srv->timers.eh.fd = -1;
    srv->argc = argc;
    srv->argv = argv;
    pthread_mutex_init(&srv->reload_lock, NULL);
    srv->started = time(NULL);

    bool test_only = cfg->test_only;
    /* -t takes no socket: they stay for the server it checks for */
    if (!test_only && take_passed(srv, cfg) < 0)
        return -1;
    struct runtime *rt = runtime_build(srv, cfg, ++srv->generation);
    if (!rt)
        return -1;
    publish_runtime(srv, rt);
    if (test_only)
        return 0; /* -t: the configuration is valid; bind nothing */
    const struct config *c = &rt->cfg;
    /* The configuration is accepted (its errors, as -t prints them, are behind us): from here
     * on every message, a port in use or a Unix socket another server accepts on included, is
     * a line of the error log in its format. Opened as root, like the listeners. */
    if (log_open(c->error_log) < 0)
        return -1;

    /* The pool before the listeners: they follow its strategy (reuseport: one per thread). */
    srv->nhs = c->concurrency == CONC_REUSEPORT ? c->threads : 1;
    srv->hs = calloc(srv->nhs, sizeof(*srv->hs));
    if (!srv->hs) {
        diag("lfhttpd: out of memory\n");
        return -1;
    }
    for (unsigned i = 0; i < srv->nhs; i++)
        srv->hs[i].epfd = -1;
    for (unsigned i = 0; i < srv->nhs; i++) {
        int rc = tp_handle_set_init(&srv->hs[i], (enum concurrency)c->concurrency);
        if (rc < 0) {
            diag("lfhttpd: epoll_create: %s\n", strerror(-rc));
            return -1;
        }
    }
    int rc = tp_init(&srv->pool, srv, (enum concurrency)c->concurrency, srv->hs, srv->nhs,
                     c->threads, c->batch);
    if (rc < 0) {
        diag("lfhttpd: thread pool: %s\n", strerror(-rc));
        return -1;
    }
    if (open_listeners(srv, c) < 0)
        return -1;

    if (add_core_handles(srv) < 0)
        return -1;

    if (drop_privileges(c) < 0)
        return -1;

    for (unsigned i = 0; i < srv->nlisteners; i++) {
        acceptor_tune(&srv->listeners[i]);
        rc = acceptor_start(&srv->listeners[i]);
        if (rc < 0) {
            diag("lfhttpd: epoll add listener: %s\n", strerror(-rc));
            return -1;
        }
    }
    /* after the listeners (a challenge is answered as soon as it is published) and after
     * dropping privileges (its files belong to the user the server runs as) */
    if (acme_wire_apply(rt, "start") < 0)
        return -1; /* (logged) */
    char err[128];
    /* after dropping privileges: watch what the server can still read */
    if (watch_update(srv->watch, c, err, sizeof(err)) < 0) {
        diag("lfhttpd: reload_on_change: %s\n", err);
        return -1;
    }
    return 0;
}

/* Settings a reload cannot change: say so, and keep running with the old ones. */
static void warn_restart_only(const struct config *cfg, const struct runtime *cur,
                              const char *why)
{
    if (cfg->threads != cur->cfg.threads || cfg->batch != cur->cfg.batch ||
        cfg->concurrency != cur->cfg.concurrency ||
        strcmp(cfg->user, cur->cfg.user) || strcmp(cfg->group, cur->cfg.group) ||
        strcmp(cfg->error_log, cur->cfg.error_log) ||
        cfg->error_log_json != cur->cfg.error_log_json ||
        (cur->limits && cfg->limit_table_size != cur->cfg.limit_table_size))
        log_warn("%s: threads, leader_batch, concurrency, user, group, error_log, "
                 "error_log_format and limit_table_size take effect only after a restart", why);
}

/* Bind the listeners of `c` that are not open yet, from slot *n on (slots not yet published:
 * other threads see them only when the count is), advancing *n. Returns 0, or -1 with a
 * message printed and nothing of them left open, so that a failure leaves everything as it
 * was. */
static int bind_new_listeners(struct server *srv, const struct config *c, unsigned *n)
{
    unsigned first_new = *n;
    for (unsigned i = 0; i < c->nlisten; i++) {
        bool have = false;
        for (unsigned j = 0; j < first_new && !have; j++)
            have = !srv->listeners[j].closed &&
                   same_listener(&srv->listeners[j].addr, &c->listen[i]);
        if (have)
            continue;
        int used = open_listener(srv, *n, &c->listen[i]);
        if (used <= 0) {
            for (unsigned j = first_new; j < *n; j++)
                close(srv->listeners[j].eh.fd);
            return -1;
        }
        *n += (unsigned)used;
    }
    return 0;
}

/* Stop listening on what `c` no longer names, among the published slots before `end`. */
static void close_gone_listeners(struct server *srv, const struct config *c, unsigned end,
                                 const char *why)
{
    for (unsigned j = 0; j < end; j++) {
        struct listener *l = &srv->listeners[j];
        bool keep = false;
        for (unsigned i = 0; i < c->nlisten && !keep; i++)
            keep = same_listener(&l->addr, &c->listen[i]);
        if (!keep && !atomic_load(&l->closed)) {
            /* Refuse new connections; the fd stays open (an acceptor may be running on it).
             * A socket from systemd is only no longer watched (systemd.h). */
            atomic_store(&l->closed, true);
            hs_del(l->hs, &l->eh);
            if (!l->inherited)
                shutdown(l->eh.fd, SHUT_RDWR);
            if (l->copy == 0)
                log_notice("%s: stopped listening on %s", why, l->url);
        }
    }
}

/* Publish the slots [first_new, n) bound by bind_new_listeners and start accepting on them. */
static void start_new_listeners(struct server *srv, unsigned first_new, unsigned n,
                                const char *why)
{
    for (unsigned j = first_new; j < n; j++)
        acceptor_tune(&srv->listeners[j]);
    atomic_store(&srv->nlisteners, n);
    note_https_port(srv);
    for (unsigned j = first_new; j < n; j++) {
        if (acceptor_start(&srv->listeners[j]) < 0)
            log_error("%s: cannot watch %s", why, srv->listeners[j].url);
        else if (srv->listeners[j].copy == 0)
            log_notice("listening on %s", srv->listeners[j].url);
    }
}

/* Parse the configuration again, build its runtime, open and close listeners to match it and
 * publish it; on any failure keep everything as it is. The caller holds reload_lock. */
static void reload(struct server *srv, const char *why)
{
    struct runtime *cur = NULL, *rt = NULL;
    /* Far too large for a pool thread's stack (paths of PATH_MAX); a reload is rare. */
    struct config *cfg = calloc(1, sizeof(*cfg));
    if (!cfg) {
        log_error("%s: out of memory", why);
        goto not_reloaded;
    }
    if (config_from_args(cfg, srv->argc, srv->argv) != CONFIG_OK)
        goto not_reloaded; /* (it freed what it had parsed) */
    cur = server_runtime(srv);
    warn_restart_only(cfg, cur, why);
    listen_on_passed(&srv->sd, cfg);
    const struct systemd_socket *unused = systemd_unclaimed(&srv->sd, cfg->listen, cfg->nlisten);
    if (unused) {
        log_error("%s: socket '%s' passed by systemd would be used by no listener; "
                  "configuration not reloaded, keeping generation %u", why, unused->name,
                  srv->generation);
        config_free(cfg);
        goto out;
    }
    rt = runtime_build(srv, cfg, srv->generation + 1); /* takes over cfg's allocations */
    if (!rt)
        goto not_reloaded;
    unsigned first_new = atomic_load(&srv->nlisteners), n = first_new;
    if (bind_new_listeners(srv, &rt->cfg, &n) < 0)
        goto not_reloaded;
    close_gone_listeners(srv, &rt->cfg, first_new, why);
    start_new_listeners(srv, first_new, n, why);
    srv->generation = rt->generation;
    runtime_unref(cur); /* the slot's reference keeps it until publish_runtime drops it */
    cur = NULL;
    publish_runtime(srv, rt);
    acme_wire_apply(rt, why); /* the slot's reference keeps rt; logs its own failure */
    rt = NULL;
    access_log_flush(); /* the lines of the old configuration's log, before the new one's */
    log_notice("%s: configuration reloaded (generation %u)", why, srv->generation);
    goto out;
not_reloaded:
    log_error("%s: configuration not reloaded (see the line above); keeping generation %u",
              why, srv->generation);
out:
    diag_secrets(NULL, 0); /* before the runtime that holds them may go */
    runtime_unref(rt);
    runtime_unref(cur);
    free(cfg);
}

void server_reload(struct server *srv, const char *why)
{
    if (pthread_mutex_trylock(&srv->reload_lock) != 0) {
        atomic_store(&srv->reload_pending, why); /* the tick reloads once this one is done */
        return;
    }
    if (!atomic_load(&srv->conns.draining)) {
        systemd_reloading(&srv->sd);
        reload(srv, why);
        systemd_ready(&srv->sd);
    }
    /* After every attempt: what the running configuration names (a failed reload keeps it). */
    struct runtime *rt = server_runtime(srv);
    char err[128];
    if (watch_update(srv->watch, &rt->cfg, err, sizeof(err)) < 0)
        log_error("%s: reload_on_change: %s; changes are not watched", why, err);
    runtime_unref(rt);
    pthread_mutex_unlock(&srv->reload_lock);
}

void server_run(struct server *srv)
{
    for (unsigned i = 0; i < srv->nlisteners; i++)
        if (srv->listeners[i].copy == 0)
            log_notice("listening on %s", srv->listeners[i].url);
    struct runtime *rt = server_runtime(srv);
    /* A root from the environment is shown as its reference (diag.h); only the root: a
     * count or a model's name may well equal a short value taken from the environment. */
    const char *root = rt->cfg.sites.sites[0].base.root;
    char shown[PATH_MAX];
    diag_secrets(rt->cfg.secrets, rt->cfg.nsecrets);
    diag_scrub(root, strlen(root), shown, sizeof(shown));
    diag_secrets(NULL, 0);
    log_notice("lfhttpd serving %s with %u threads (%s; %s)", shown, srv->pool.nthreads,
               concurrency_names[srv->pool.mode], rt->cfg.threads_reason);
    if (rt->cfg.sendfile_auto && send_probe_last()) {
        char line[320];
        send_probe_describe(send_probe_last(), line, sizeof(line));
        log_notice("%s", line);
    }
    runtime_unref(rt);
    /* Every listener is in the handle set; requests are answered from the first tp_run
     * iteration on. (Before this, a probe's connection waits in the listen queue.) */
    atomic_store(&srv->ready, true);
    systemd_ready(&srv->sd);
    tp_run(&srv->pool);
    access_log_flush(); /* the rest of the drain's lines (an aborted exchange's at destroy) */
    log_notice("stopped");
}

static _Atomic(void *) *daemon_handler_state(struct server *srv, unsigned slot)
{
    return &srv->handler_state[slot];
}

static void daemon_gauges(struct server *srv, struct server_gauges *g)
{
    memset(g, 0, sizeof(*g));
    g->uptime = (int64_t)(time(NULL) - srv->started);
    g->draining = atomic_load_explicit(&srv->conns.draining, memory_order_relaxed);
    g->ready = server_ready(srv);
    g->concurrency = concurrency_names[srv->pool.mode];
    g->threads = srv->pool.nworkers;
    for (unsigned i = 0; i < srv->pool.nworkers; i++) {
        struct worker *w = &srv->pool.workers[i];
        int role = atomic_load_explicit(&w->role, memory_order_relaxed);
        if (role < 0 || role >= GAUGE_ROLES)
            role = 0;
        g->role[role]++;
#define LOAD(f) atomic_load_explicit(&w->stats.f, memory_order_relaxed)
        uint64_t ev = LOAD(events), rq = LOAD(requests), by = LOAD(bytes_out),
                 pr = LOAD(promotions), nf = LOAD(no_follower);
        g->events += ev;
        g->waits += LOAD(waits);
        g->promotions += pr;
        g->no_follower += nf;
        g->requests += rq;
        g->bytes_out += by;
        g->accepted += LOAD(accepted);
#undef LOAD
        if (i < GAUGES_MAX_WORKERS) {
            g->worker[i].role = role;
            g->worker[i].events = ev;
            g->worker[i].requests = rq;
            g->worker[i].bytes_out = by;
            g->worker[i].promotions = pr;
            g->worker[i].no_follower = nf;
            g->nworkers = i + 1;
        }
    }
    g->conns_open = conn_gauges(&srv->conns, g->conns);
    g->timers = timer_pending(&srv->timers);
    limit_table_stats(atomic_load_explicit(&srv->limits, memory_order_acquire), &g->limits);
}

/* What handlers see of the server (exchange/server_view.h): the first member of every server. */
const struct server_view_ops daemon_view_ops = {
    .gauges = daemon_gauges,
    .ready = daemon_ready,
    .stopping = daemon_stopping,
    .handler_state = daemon_handler_state,
    .handler_stats = handlers_stats,
};

void server_destroy(struct server *srv)
{
    /* The pool has stopped: no pool thread runs a handler any more. Handler types' own threads
     * stop next (they could touch an exchange), then what is left is freed (connections still
     * open when the drain deadline passed: their exchanges are aborted). */
    acme_wire_stop(); /* its thread touches no connection: only the TLS store */
    timer_destroy(&srv->timers); /* before what its entries live in */
    watch_free(srv->watch);
    srv->watch = NULL;
    handlers_stop(srv);
    conn_free_open(&srv->conns);
    for (unsigned i = 0; i < srv->nlisteners; i++) {
        const struct listener *l = &srv->listeners[i];
        if (l->copy == 0 && !l->inherited && !atomic_load(&l->closed))
            listen_unlink(&l->addr); /* our socket file: no stale one left behind */
        close(l->eh.fd);
    }
    systemd_close(&srv->sd);
    if (srv->timer.eh.fd >= 0)
        close(srv->timer.eh.fd);
    if (srv->signals.eh.fd >= 0)
        close(srv->signals.eh.fd);
    if (srv->stop.eh.fd >= 0)
        close(srv->stop.eh.fd);
    if (srv->pool.workers)
        tp_destroy(&srv->pool);
    for (unsigned i = 0; srv->hs && i < srv->nhs; i++)
        hs_close(&srv->hs[i]);
    free(srv->hs);
    srv->hs = NULL;
    conn_list_destroy(&srv->conns); /* the list's lock, the last runtime */
    handlers_release(srv); /* after the last runtime: their work may hold runtimes */
    limit_table_free(atomic_exchange(&srv->limits, NULL)); /* no connection holds a slot now */
    pthread_mutex_destroy(&srv->reload_lock);
    carry_pool_release();
}
