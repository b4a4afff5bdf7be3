/* test_thread_pool.c — unit tests for server/lf/thread_pool.c, under each concurrency strategy.
 *
 * The pool runs real handle sets with eventfds as handles; the handlers below record what
 * they see. What is checked:
 *   - exactly one leader per handle set: epoll_wait is wrapped (below) to count the threads
 *     inside it per epoll instance, which must never exceed one, and at rest a leader waits
 *     while every other thread follows;
 *   - promotion before processing: while one thread processes an event, the next event must
 *     be picked up by another thread — every thread of the pool can be processing at once
 *     (events fired one after the other, each handler waiting for all of them);
 *   - no lost wake-up: producers on other threads write eventfds as fast as they can, with
 *     batches of 1 and 8; every write must be read;
 *   - shutdown: tp_stop from outside while the pool is idle, from a handler, and with every
 *     worker busy (and, for half-sync-half-async, the queue full): tp_run returns, every
 *     thread has left;
 *   - one owner: a handle's handler never runs on two threads at once (leader-followers-edge
 *     keeps this with the ownership word, not EPOLLONESHOT: the producers' writes that come
 *     while a handler runs are its "more", run again by the same thread — every write is read);
 *   - reclamation (leader-followers-edge): a retired handle is not freed while a thread that
 *     may hold an event for it (the leader, inside epoll_wait) has not finished its batch, and
 *     is freed once it has; under EPOLLONESHOT it is freed at once. */
#include "lf/handle_set.h"
#include "test.h"
#include "lf/hsha.h"
#include "lf/thread_pool.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---- epoll_wait, counted ------------------------------------------------------------------ *
 * The pool calls epoll_wait through hs_wait(); this definition in the test binary takes its
 * place and calls the next one (libc's, or a sanitizer's interceptor). */

#define MAX_FD 4096
static _Atomic int in_wait[MAX_FD];
static _Atomic int max_in_wait[MAX_FD];
static _Atomic uint64_t waits_total;

int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout);
int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
    static int (*real)(int, struct epoll_event *, int, int);
    if (!real)
        real = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
    if (epfd < 0 || epfd >= MAX_FD)
        return real(epfd, evs, max, timeout);
    int now = atomic_fetch_add(&in_wait[epfd], 1) + 1;
    int seen = atomic_load(&max_in_wait[epfd]);
    while (now > seen && !atomic_compare_exchange_weak(&max_in_wait[epfd], &seen, now))
        ;
    atomic_fetch_add(&waits_total, 1);
    int n = real(epfd, evs, max, timeout);
    int saved = errno;
    atomic_fetch_sub(&in_wait[epfd], 1);
    errno = saved;
    return n;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void ev_write(int fd, uint64_t v)
{
    ssize_t n = write(fd, &v, sizeof(v));
    (void)n;
}

static uint64_t ev_read(int fd)
{
    uint64_t v = 0;
    ssize_t n = read(fd, &v, sizeof(v));
    return n == (ssize_t)sizeof(v) ? v : 0;
}

/* A failure bound, never a measurement: something that should happen at once and has not
 * after this long is a deadlock. */
#define STALL_MS 30000

/* ---- the handles ---------------------------------------------------------------------------- */

enum kind { K_STOP, K_COUNT, K_GATHER, K_STOPPER, K_HOLD };

struct test_pool;

struct th {
    struct event_handler eh;   /* first member */
    enum kind kind;
    struct handle_set *hs;     /* the set it is registered in */
    struct test_pool *p;
    _Atomic int running;       /* K_COUNT: a handler is running it */
};

struct test_pool {
    struct thread_pool tp;
    struct handle_set *hs;
    unsigned nhs;
    pthread_t runner;
    _Atomic bool run_returned;
    struct th stop;            /* registered in every set */

    /* K_COUNT */
    _Atomic uint64_t counted;
    _Atomic unsigned handled_by[16];
    _Atomic unsigned overlaps;  /* a K_COUNT handler entered while another ran it */

    /* K_GATHER: every thread processing at once */
    pthread_mutex_t lock;
    pthread_cond_t cv;
    unsigned inside;           /* handlers inside K_GATHER (lock) */
    unsigned gather_target;
    unsigned gather_ok;        /* handlers that saw everyone arrive (lock) */
    unsigned gather_threads_mask;

    /* K_HOLD: handlers that wait for `release` */
    bool release;              /* (lock) */
    unsigned holding;          /* (lock) */
    _Atomic unsigned held_done;
};

static void on_event(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct th *h = (struct th *)eh;
    struct test_pool *p = h->p;
    (void)events;
    switch (h->kind) {
    case K_STOP:
        break; /* not re-armed: the thread that saw it finds the pool stopping */
    case K_COUNT:
        if (atomic_exchange(&h->running, 1))
            atomic_fetch_add(&p->overlaps, 1);
        atomic_fetch_add(&p->counted, ev_read(eh->fd));
        atomic_fetch_add(&p->handled_by[w->index & 15], 1);
        atomic_store(&h->running, 0);
        hs_rearm(h->hs, eh, EPOLLIN);
        break;
    case K_GATHER: {
        ev_read(eh->fd);
        int64_t end = mono_ms() + STALL_MS;
        pthread_mutex_lock(&p->lock);
        p->inside++;
        p->gather_threads_mask |= 1u << (w->index & 31);
        pthread_cond_broadcast(&p->cv);
        while (p->inside < p->gather_target && mono_ms() < end) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&p->cv, &p->lock, &ts);
        }
        if (p->inside >= p->gather_target)
            p->gather_ok++;
        pthread_mutex_unlock(&p->lock);
        break; /* not re-armed */
    }
    case K_STOPPER:
        ev_read(eh->fd);
        tp_stop(&p->tp);
        ev_write(p->stop.eh.fd, 1); /* as server.c does: wake the leaders */
        break;
    case K_HOLD: {
        ev_read(eh->fd);
        int64_t end = mono_ms() + STALL_MS;
        pthread_mutex_lock(&p->lock);
        p->holding++;
        pthread_cond_broadcast(&p->cv);
        while (!p->release && mono_ms() < end) {
            pthread_mutex_unlock(&p->lock);
            usleep(1000);
            pthread_mutex_lock(&p->lock);
        }
        pthread_mutex_unlock(&p->lock);
        atomic_fetch_add(&p->held_done, 1);
        break;
    }
    }
}

static const struct event_handler_ops th_ops = { .handle_event = on_event };

static struct th *th_new(struct test_pool *p, enum kind kind, unsigned set)
{
    struct th *h = calloc(1, sizeof(*h));
    h->eh.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    h->eh.ops = &th_ops;
    h->kind = kind;
    h->hs = &p->hs[set % p->nhs];
    h->p = p;
    hs_add(h->hs, &h->eh, EPOLLIN);
    return h;
}

static void th_free(struct th *h)
{
    close(h->eh.fd);
    free(h);
}

static void *runner(void *arg)
{
    struct test_pool *p = arg;
    tp_run(&p->tp);
    atomic_store(&p->run_returned, true);
    return NULL;
}

static bool pool_start(struct test_pool *p, enum concurrency mode, unsigned nthreads, int batch)
{
    memset(p, 0, sizeof(*p));
    p->nhs = mode == CONC_REUSEPORT ? nthreads : 1;
    p->hs = calloc(p->nhs, sizeof(*p->hs));
    for (unsigned i = 0; i < p->nhs; i++) {
        if (tp_handle_set_init(&p->hs[i], mode) < 0)
            return false;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->stop.eh.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    p->stop.eh.ops = &th_ops;
    p->stop.kind = K_STOP;
    p->stop.p = p;
    for (unsigned i = 0; i < p->nhs; i++)
        hs_add(&p->hs[i], &p->stop.eh, EPOLLIN);
    for (unsigned i = 0; i < p->nhs; i++)
        atomic_store(&max_in_wait[p->hs[i].epfd], 0);
    if (tp_init(&p->tp, NULL, mode, p->hs, p->nhs, nthreads, batch) < 0)
        return false;
    return pthread_create(&p->runner, NULL, runner, p) == 0;
}

/* Stop from outside (as SIGTERM's drain does, from the timer's thread): tp_stop, then wake the
 * leaders through the stop handle. True if tp_run returned and every thread left. */
static bool pool_join(struct test_pool *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += STALL_MS / 1000;
    return pthread_timedjoin_np(p->runner, NULL, &ts) == 0;
}

static bool pool_stop(struct test_pool *p)
{
    tp_stop(&p->tp);
    ev_write(p->stop.eh.fd, 1);
    return pool_join(p);
}

static void pool_free(struct test_pool *p)
{
    tp_destroy(&p->tp);
    close(p->stop.eh.fd);
    for (unsigned i = 0; i < p->nhs; i++)
        hs_close(&p->hs[i]);
    free(p->hs);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cv);
}

/* Threads inside epoll_wait on set i right now / at most so far. */
static int waiting_in(struct test_pool *p, unsigned i)
{
    return atomic_load(&in_wait[p->hs[i].epfd]);
}

static int max_waiting(struct test_pool *p)
{
    int m = 0;
    for (unsigned i = 0; i < p->nhs; i++) {
        int v = atomic_load(&max_in_wait[p->hs[i].epfd]);
        m = v > m ? v : m;
    }
    return m;
}

/* At rest: every set has its one leader in epoll_wait, and (leader-followers) every other
 * thread waits as a follower; half-sync-half-async: the reactor waits, every worker waits for
 * the queue. Polls until it is so (the threads may still be on their way). */
static bool at_rest(struct test_pool *p)
{
    int64_t end = mono_ms() + STALL_MS;
    for (;;) {
        bool rest = true;
        for (unsigned i = 0; i < p->nhs; i++)
            rest &= waiting_in(p, i) == 1;
        for (unsigned g = 0; g < p->tp.ngroups; g++) {
            pthread_mutex_lock(&p->tp.groups[g].lock);
            unsigned members = p->tp.nthreads / p->tp.ngroups;
            rest &= p->tp.groups[g].leader_present &&
                    p->tp.groups[g].followers_waiting == members - 1;
            pthread_mutex_unlock(&p->tp.groups[g].lock);
        }
        struct hsha_queue_state q;
        if (hsha_queue_state(&p->tp, &q))
            rest &= q.waiting == p->tp.nthreads && q.count == 0;
        if (rest)
            return true;
        if (mono_ms() > end)
            return false;
        usleep(1000);
    }
}

/* ---- the tests ------------------------------------------------------------------------------- */

#define NTHREADS 3
#define COUNT_HANDLES 24
#define PRODUCERS 2
#define WRITES 15000

struct producer_arg {
    struct th **hs;
    unsigned seed;
};

static void *producer(void *arg)
{
    struct producer_arg *a = arg;
    unsigned x = a->seed;
    for (unsigned i = 0; i < WRITES; i++) {
        x = x * 1103515245u + 12345u;
        ev_write(a->hs[(x >> 16) % COUNT_HANDLES]->eh.fd, 1);
        if ((i & 127) == 0)
            sched_yield();
    }
    return NULL;
}

static void test_strategy(enum concurrency mode, int batch)
{
    const char *name = concurrency_names[mode];
    struct test_pool *p = calloc(1, sizeof(*p));
    ok(pool_start(p, mode, NTHREADS, batch), "%s, batch %d: pool started", name, batch);
    ok(at_rest(p), "%s, batch %d: at rest, one leader per set and the others waiting", name,
       batch);

    /* Load: producers on other threads, handles spread over the sets. */
    struct th *hs[COUNT_HANDLES];
    for (unsigned i = 0; i < COUNT_HANDLES; i++)
        hs[i] = th_new(p, K_COUNT, i);
    pthread_t pt[PRODUCERS];
    struct producer_arg pa[PRODUCERS];
    for (unsigned i = 0; i < PRODUCERS; i++) {
        pa[i] = (struct producer_arg){ hs, 7919u * i + 17u };
        pthread_create(&pt[i], NULL, producer, &pa[i]);
    }
    for (unsigned i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    const uint64_t want = (uint64_t)PRODUCERS * WRITES;
    int64_t end = mono_ms() + STALL_MS;
    while (atomic_load(&p->counted) < want && mono_ms() < end)
        usleep(1000);
    ok(atomic_load(&p->counted) == want,
       "%s, batch %d: no lost wake-up: all %llu writes of the producers processed (%llu)", name,
       batch, (unsigned long long)want, (unsigned long long)atomic_load(&p->counted));
    ok(atomic_load(&p->overlaps) == 0, "%s, batch %d: no handler ran on two threads at once "
       "(%u overlaps)", name, batch, atomic_load(&p->overlaps));
    ok(max_waiting(p) == 1, "%s, batch %d: never more than one thread in epoll_wait on a set "
       "(one leader; at most %d seen)", name, batch, max_waiting(p));
    ok(at_rest(p), "%s, batch %d: after the load, at rest again", name, batch);

    /* Promotion before processing: fire one event per thread, each only once the previous
     * one's handler is running; each handler waits until all are inside. A leader that
     * processed before promoting would leave the next event with nobody to wait for it. */
    pthread_mutex_lock(&p->lock);
    p->inside = 0;
    p->gather_ok = 0;
    p->gather_threads_mask = 0;
    p->gather_target = NTHREADS;
    pthread_mutex_unlock(&p->lock);
    struct th *g[NTHREADS];
    for (unsigned i = 0; i < NTHREADS; i++)
        g[i] = th_new(p, K_GATHER, i);
    bool fired_all = true;
    for (unsigned i = 0; i < NTHREADS; i++) {
        ev_write(g[i]->eh.fd, 1);
        int64_t until = mono_ms() + STALL_MS;
        pthread_mutex_lock(&p->lock);
        while (p->inside < i + 1 && mono_ms() < until) {
            pthread_mutex_unlock(&p->lock);
            usleep(500);
            pthread_mutex_lock(&p->lock);
        }
        fired_all &= p->inside >= i + 1;
        pthread_mutex_unlock(&p->lock);
    }
    end = mono_ms() + STALL_MS;
    pthread_mutex_lock(&p->lock);
    while (p->gather_ok < NTHREADS && mono_ms() < end) {
        pthread_mutex_unlock(&p->lock);
        usleep(1000);
        pthread_mutex_lock(&p->lock);
    }
    unsigned gathered = p->gather_ok, mask = p->gather_threads_mask;
    pthread_mutex_unlock(&p->lock);
    ok(fired_all && gathered == NTHREADS && (unsigned)__builtin_popcount(mask) == NTHREADS,
       "%s, batch %d: all %d threads processing at once: each leader promoted before processing", name, batch, NTHREADS);
    ok(at_rest(p), "%s, batch %d: at rest again afterwards", name, batch);

    /* Shutdown while idle, from outside. */
    ok(pool_stop(p), "%s, batch %d: tp_stop while idle: tp_run returns, every thread has left", name, batch);
    bool all_following = true;
    for (unsigned i = 0; i < p->tp.nworkers; i++)
        all_following &= atomic_load(&p->tp.workers[i].role) == ROLE_FOLLOWING;
    ok(all_following, "%s, batch %d: every worker's role is back to following", name, batch);
    int left = 0;
    for (unsigned i = 0; i < p->nhs; i++)
        left += waiting_in(p, i);
    ok(left == 0, "%s, batch %d: nobody left in epoll_wait", name, batch);
    for (unsigned i = 0; i < COUNT_HANDLES; i++)
        th_free(hs[i]);
    for (unsigned i = 0; i < NTHREADS; i++)
        th_free(g[i]);
    pool_free(p);
    free(p);
}

/* tp_stop from a handler, as the drain does: the pool stops without outside help. */
static void test_stop_from_handler(enum concurrency mode)
{
    const char *name = concurrency_names[mode];
    struct test_pool *p = calloc(1, sizeof(*p));
    ok(pool_start(p, mode, NTHREADS, 8) && at_rest(p), "%s: pool at rest", name);
    struct th *s = th_new(p, K_STOPPER, 0);
    ev_write(s->eh.fd, 1);
    ok(pool_join(p), "%s: tp_stop from a handler: tp_run returns", name);
    th_free(s);
    pool_free(p);
    free(p);
}

/* tp_stop while every thread is busy in a handler (half-sync-half-async: and the queue full,
 * the reactor waiting for room): the pool stops once the handlers return. */
static void test_stop_busy(enum concurrency mode)
{
    const char *name = concurrency_names[mode];
    struct test_pool *p = calloc(1, sizeof(*p));
    ok(pool_start(p, mode, NTHREADS, 1) && at_rest(p), "%s: pool at rest", name);
    unsigned nhold = NTHREADS;
    unsigned nextra = mode == CONC_HALF_SYNC_HALF_ASYNC ? 1024 + 8 : 0; /* > the queue */
    struct th **h = calloc(nhold + nextra, sizeof(*h));
    for (unsigned i = 0; i < nhold; i++)
        h[i] = th_new(p, K_HOLD, i);
    for (unsigned i = 0; i < nhold; i++)
        ev_write(h[i]->eh.fd, 1);
    int64_t end = mono_ms() + STALL_MS;
    pthread_mutex_lock(&p->lock);
    while (p->holding < nhold && mono_ms() < end) {
        pthread_mutex_unlock(&p->lock);
        usleep(1000);
        pthread_mutex_lock(&p->lock);
    }
    unsigned holding = p->holding;
    pthread_mutex_unlock(&p->lock);
    ok(holding == nhold, "%s: every thread busy in a handler", name);
    bool queue_full = true;
    if (nextra) {
        for (unsigned i = 0; i < nextra; i++) {
            h[nhold + i] = th_new(p, K_COUNT, 0);
            ev_write(h[nhold + i]->eh.fd, 1);
        }
        end = mono_ms() + STALL_MS;
        for (;;) {
            struct hsha_queue_state q;
            queue_full = hsha_queue_state(&p->tp, &q) && q.count == q.cap;
            if (queue_full || mono_ms() > end)
                break;
            usleep(1000);
        }
        ok(queue_full, "%s: the queue is full and the reactor waits for room", name);
    }
    tp_stop(&p->tp);
    ev_write(p->stop.eh.fd, 1);
    ok(!atomic_load(&p->run_returned), "%s: tp_run does not return while handlers run", name);
    pthread_mutex_lock(&p->lock);
    p->release = true;
    pthread_mutex_unlock(&p->lock);
    ok(pool_join(p), "%s: stopped while busy: tp_run returns once the handlers return", name);
    ok(atomic_load(&p->held_done) == nhold, "%s: every busy handler finished", name);
    for (unsigned i = 0; i < nhold + nextra; i++)
        th_free(h[i]);
    free(h);
    pool_free(p);
    free(p);
}

/* ---- reclamation ------------------------------------------------------------------------- */

struct retiree {
    struct tp_retired r;
    _Atomic bool *freed;
};

static void retiree_free(struct tp_retired *r)
{
    struct retiree *x = (struct retiree *)r;
    atomic_store(x->freed, true);
    free(x);
}

static void test_retire(enum concurrency mode)
{
    const char *name = concurrency_names[mode];
    struct test_pool *p = calloc(1, sizeof(*p));
    ok(pool_start(p, mode, NTHREADS, 8) && at_rest(p), "%s: pool at rest", name);
    static _Atomic bool freed;
    atomic_store(&freed, false);
    struct retiree *x = calloc(1, sizeof(*x));
    x->r.free = retiree_free;
    x->freed = &freed;
    tp_retire(&p->tp, &x->r);
    if (mode != CONC_LEADER_FOLLOWERS_EDGE) {
        ok(atomic_load(&freed), "%s: a retired handle is freed at once", name);
    } else {
        /* The leader sits in epoll_wait (at rest): it may come back with an event for the
         * handle, whatever time passes, until something wakes it. */
        ok(!atomic_load(&freed), "%s: not freed while the leader may still return an event "
           "for it", name);
        struct th *h = th_new(p, K_COUNT, 0);
        ev_write(h->eh.fd, 1); /* the leader's batch ends: its next one cannot hold it */
        int64_t end = mono_ms() + STALL_MS;
        while (!atomic_load(&freed) && mono_ms() < end)
            usleep(1000);
        ok(atomic_load(&freed), "%s: freed once the batch the leader held is done", name);
        ok(pool_stop(p), "%s: stopped", name);
        th_free(h);
        pool_free(p);
        free(p);
        return;
    }
    ok(pool_stop(p), "%s: stopped", name);
    pool_free(p);
    free(p);
}

/* ---- choosing the strategy ------------------------------------------------------------------ */

static bool freed_at_once;

static void note_freed(struct tp_retired *r)
{
    (void)r;
    freed_at_once = true;
}

/* The handle set and the pool a strategy is made of; refusals leave nothing to destroy. */
static void test_setup(void)
{
    static const enum concurrency modes[] = { CONC_LEADER_FOLLOWERS, CONC_HALF_SYNC_HALF_ASYNC,
                                              CONC_REUSEPORT, CONC_LEADER_FOLLOWERS_EDGE };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        struct handle_set hs;
        ok(tp_handle_set_init(&hs, modes[i]) == 0 &&
           hs_edge(&hs) == (modes[i] == CONC_LEADER_FOLLOWERS_EDGE),
           "%s: its kind of handle set", concurrency_names[modes[i]]);
        struct thread_pool tp;
        struct hsha_queue_state q;
        ok(tp_init(&tp, NULL, modes[i], &hs, 1, 1, 8) == 0, "%s: pool of one thread",
           concurrency_names[modes[i]]);
        ok(hsha_queue_state(&tp, &q) == (modes[i] == CONC_HALF_SYNC_HALF_ASYNC),
           "%s: a queue only under half-sync-half-async", concurrency_names[modes[i]]);
        ok(tp.nworkers == (modes[i] == CONC_HALF_SYNC_HALF_ASYNC ? 2u : 1u),
           "%s: threads (HS/HA: and the reactor)", concurrency_names[modes[i]]);
        tp_destroy(&tp);
        hs_close(&hs);
    }
    struct handle_set hs;
    is_int(tp_handle_set_init(&hs, CONC_COUNT), -EINVAL, "an unknown strategy: no handle set");
    is_int(hs.epfd, -1, "and nothing to close");
    struct thread_pool tp;
    is_int(tp_init(&tp, NULL, CONC_COUNT, NULL, 0, 1, 1), -EINVAL, "an unknown strategy: no pool");
    ok(tp_handle_set_init(&hs, CONC_REUSEPORT) == 0, "reuseport: a handle set");
    is_int(tp_init(&tp, NULL, CONC_REUSEPORT, &hs, 1, 2, 1), -EINVAL,
           "reuseport: one handle set per thread, or no pool");
    ok(tp.workers == NULL && tp.groups == NULL, "refused: nothing left to destroy");
    hs_close(&hs);
    memset(&tp, 0, sizeof(tp));
    struct tp_retired r = { .free = note_freed };
    tp_retire(&tp, &r);
    ok(freed_at_once, "a pool never initialised (one thread, its own) frees a handle at once");
}

int main(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2048 && rl.rlim_max >= 2048) {
        rl.rlim_cur = 2048;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    static const enum concurrency modes[] = { CONC_LEADER_FOLLOWERS, CONC_HALF_SYNC_HALF_ASYNC,
                                              CONC_REUSEPORT, CONC_LEADER_FOLLOWERS_EDGE };
    test_setup();
    test_strategy(CONC_LEADER_FOLLOWERS, 1);
    test_strategy(CONC_LEADER_FOLLOWERS, 8);
    test_strategy(CONC_HALF_SYNC_HALF_ASYNC, 8);
    test_strategy(CONC_REUSEPORT, 1);
    test_strategy(CONC_REUSEPORT, 8);
    test_strategy(CONC_LEADER_FOLLOWERS_EDGE, 1);
    test_strategy(CONC_LEADER_FOLLOWERS_EDGE, 8);
    test_strategy(CONC_LEADER_FOLLOWERS_EDGE, 64);
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        test_stop_from_handler(modes[i]);
        test_stop_busy(modes[i]);
    }
    test_retire(CONC_LEADER_FOLLOWERS);
    test_retire(CONC_LEADER_FOLLOWERS_EDGE);
    ok(atomic_load(&waits_total) > 0, "epoll_wait was counted (%llu calls)",
       (unsigned long long)atomic_load(&waits_total));
    return test_done();
}
