/* acceptor.c — accepting connections inside the Leader/Followers pool; see acceptor.h. */
#include "conn/acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn/connection.h"
#include "lf/handle_set.h"
#include "log/diag.h"
#include "log/log.h"

#define ACCEPT_BATCH 32

/* An accept failed for lack of descriptors or memory and that was logged; cleared (and the
 * recovery logged) by the next successful accept. Process-wide, like the shortage. Changed
 * and logged under shortage_lock, so that the lines come out in the order of the changes
 * when several listeners (reuseport's copies, one per thread) meet the shortage at once;
 * the flag alone is read without it on every accept. */
static _Atomic bool shortage_logged;
static pthread_mutex_t shortage_lock = PTHREAD_MUTEX_INITIALIZER;

/* The shortage begins: log it once (the first caller of a shortage). */
static void shortage_begins(const char *url, const char *what, const char *until)
{
    pthread_mutex_lock(&shortage_lock);
    if (!atomic_load_explicit(&shortage_logged, memory_order_relaxed)) {
        atomic_store_explicit(&shortage_logged, true, memory_order_relaxed);
        log_error("accept on %s: %s; pausing accepts until %s", url, what, until);
    }
    pthread_mutex_unlock(&shortage_lock);
}

/* An accept succeeded: if a shortage was logged, log its end (once). */
static inline void shortage_ends(const char *url)
{
    if (!atomic_load_explicit(&shortage_logged, memory_order_relaxed))
        return;
    pthread_mutex_lock(&shortage_lock);
    if (atomic_load_explicit(&shortage_logged, memory_order_relaxed)) {
        atomic_store_explicit(&shortage_logged, false, memory_order_relaxed);
        log_notice("accepting on %s again", url);
    }
    pthread_mutex_unlock(&shortage_lock);
}

static void acceptor_on_event(struct event_handler *eh, uint32_t events, struct worker *w);
static const struct event_handler_ops acceptor_ops = { .handle_event = acceptor_on_event };

int acceptor_open(struct conn_list *conns, struct listener *l, bool reuseport,
                  const struct sockaddr_storage *bind_to)
{
    int fd = listen_open(&l->addr, reuseport, bind_to);
    if (fd < 0)
        return -1;
    listen_url(fd, l->addr.tls, l->url, sizeof(l->url));
    l->eh.fd = fd;
    l->eh.ops = &acceptor_ops;
    l->conns = conns;
    return 0;
}

int acceptor_adopt(struct conn_list *conns, struct listener *l, int fd)
{
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) {
        diag("lfhttpd: listen %s: %s\n", l->addr.text, strerror(errno));
        return -1;
    }
    listen_url(copy, l->addr.tls, l->url, sizeof(l->url));
    l->eh.fd = copy;
    l->eh.ops = &acceptor_ops;
    l->conns = conns;
    l->inherited = true;
    return 0;
}

void acceptor_tune(struct listener *l)
{
    int one = 1; /* a socket that is not TCP refuses it: nothing to do then */
    setsockopt(l->eh.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int acceptor_start(struct listener *l)
{
    return hs_add(l->hs, &l->eh, EPOLLIN);
}

void acceptor_resume(struct listener *l)
{
    struct conn_list *cl = l->conns;
    if (atomic_load_explicit(&cl->draining, memory_order_acquire) ||
        atomic_load_explicit(&cl->open, memory_order_relaxed) >=
            atomic_load_explicit(&cl->max, memory_order_relaxed))
        return;
    int expected = 1;
    if (!atomic_compare_exchange_strong(&l->paused, &expected, 0))
        return;
    /* Edge mode: the backlog may hold connections that brought their edge while paused. */
    hs_more(l->hs, &l->eh, EPOLLIN);
    if (hs_rearm(l->hs, &l->eh, EPOLLIN) == HS_KEPT)
        atomic_store(&l->paused, 1); /* off the pool: the timer's tick resumes it */
}

/* Accept up to ACCEPT_BATCH connections; the first is held for this thread to serve (*held),
 * the others go to the handle set. Returns whether the listener is to be re-armed. */
static bool accept_batch(struct listener *l, struct worker *w, struct conn **held)
{
    struct conn_list *cl = l->conns;
    if (atomic_load_explicit(&l->closed, memory_order_relaxed))
        return false; /* removed by a reload (edge mode: an event from before): leave it */
    int i;
    for (i = 0; i < ACCEPT_BATCH; i++) {
        if (atomic_load_explicit(&cl->draining, memory_order_acquire))
            return false; /* stop accepting: leave the listener disarmed */
        if (atomic_load_explicit(&cl->open, memory_order_relaxed) >=
            atomic_load_explicit(&cl->max, memory_order_relaxed)) {
            /* At the limit: pause; the next connection to close re-arms us. */
            atomic_store(&l->paused, 1);
            acceptor_resume(l); /* in case every connection closed meanwhile */
            return false;
        }
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);
        int fd = accept4(l->eh.fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int err = errno;
            if (err == EAGAIN)
                break;
            if (err == EINTR || err == ECONNABORTED || err == EPROTO || err == EPERM)
                continue;
            if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                /* Out of descriptors or memory: pause instead of spinning on a ready socket.
                 * The timer re-arms paused listeners every tick (250 ms) to try again; the
                 * shortage is logged once, not on every retry. */
                shortage_begins(l->url, strerror(err), "resources free up");
                atomic_store(&l->paused, 1);
                return false;
            }
            log_error("accept on %s: %s", l->url, strerror(err));
            break;
        }
        atomic_fetch_add_explicit(&cl->open, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->stats.accepted, 1, memory_order_relaxed);
        if (conn_create(l, fd, &peer, w, *held ? NULL : held) == -ENOMEM) {
            /* No memory for the connection (it got a 503 if it could): a shortage like one of
             * descriptors, retried on the timer tick. */
            shortage_begins(l->url, "out of memory for a new connection", "memory frees up");
            atomic_store(&l->paused, 1);
            return false;
        }
        shortage_ends(l->url);
    }
    if (i == ACCEPT_BATCH)
        hs_more(l->hs, &l->eh, EPOLLIN); /* edge mode: stopped before EAGAIN */
    return true;
}

/* Accept, give the listener back (the leader takes the next connections), then serve the
 * first one accepted here: its request or TLS hello is usually in already, and serving it on
 * the accepting thread saves the hand-off to another thread and an epoll round trip (nginx
 * does the same after a deferred accept). */
static void acceptor_on_event(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct listener *l = (struct listener *)eh;
    struct conn *held = NULL;
    (void)events;
    if (accept_batch(l, w, &held))
        hs_rearm(l->hs, &l->eh, EPOLLIN);
    if (held)
        conn_serve_held(held, w);
}
