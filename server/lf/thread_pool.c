/* thread_pool.c — the Leader/Followers thread pool: join, wait, promote, process, stop. The
 * other strategies are variants of it in files of their own (tp_variant.h); see thread_pool.h
 * for the contract. */
#include "lf/thread_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf/event_handler.h"
#include "lf/handle_set.h"
#include "lf/tp_variant.h"
#include "log/log.h"
#include "log/metrics.h"

const char *const concurrency_names[CONC_COUNT] = { "leader-followers", "half-sync-half-async",
                                                    "reuseport", "leader-followers-edge" };

/* ---- Leader/Followers ----------------------------------------------------------------------- */

/* The steps are `inline` (external definitions all the same, for the variants that call them):
 * lf_loop then compiles to one function, as when they were written out in it. */

inline bool lf_join(struct worker *w)
{
    struct thread_pool *tp = w->pool;
    struct lf_group *g = w->group;
    pthread_mutex_lock(&g->lock);
    while (g->leader_present && !atomic_load_explicit(&tp->stopping, memory_order_relaxed)) {
        tp_set_role(w, ROLE_FOLLOWING);
        g->followers_waiting++;
        pthread_cond_wait(&g->followers_cv, &g->lock);
        g->followers_waiting--;
    }
    bool ok = !atomic_load_explicit(&tp->stopping, memory_order_relaxed);
    if (ok)
        g->leader_present = true;
    pthread_mutex_unlock(&g->lock);
    return ok;
}

inline int lf_wait(struct worker *w, struct epoll_event *evs, int max)
{
    tp_set_role(w, ROLE_LEADING);
    int n = hs_wait(w->group->hs, evs, max, -1);
    atomic_fetch_add_explicit(&w->stats.waits, 1, memory_order_relaxed);
    if (n < 0)
        log_error("epoll_wait: %s", strerror(-n));
    return n;
}

inline void lf_promote(struct worker *w)
{
    struct lf_group *g = w->group;
    pthread_mutex_lock(&g->lock);
    g->leader_present = false;
    bool woke = g->followers_waiting > 0;
    if (woke)
        pthread_cond_signal(&g->followers_cv);
    pthread_mutex_unlock(&g->lock);
    atomic_fetch_add_explicit(woke ? &w->stats.promotions : &w->stats.no_follower, 1,
                              memory_order_relaxed);
}

inline void tp_process(struct worker *w, const struct epoll_event *evs, int n)
{
    tp_set_role(w, ROLE_PROCESSING);
    mx_event_begin(); /* the start of the exchanges these events complete (metrics.h) */
    for (int i = 0; i < n; i++) {
        struct event_handler *eh = evs[i].data.ptr;
        eh->ops->handle_event(eh, evs[i].events, w);
    }
    atomic_fetch_add_explicit(&w->stats.events, (uint64_t)n, memory_order_relaxed);
}

void lf_loop(struct worker *w)
{
    struct epoll_event evs[TP_MAX_BATCH];
    while (lf_join(w)) {
        int n = lf_wait(w, evs, w->pool->batch);
        lf_promote(w); /* before processing: the set is never left without a waiter */
        if (n >= 0)
            tp_process(w, evs, n);
    }
    tp_set_role(w, ROLE_FOLLOWING);
}

static const struct tp_variant tp_leader_followers = { .loop = lf_loop };

static const struct tp_variant *const variants[CONC_COUNT] = {
    [CONC_LEADER_FOLLOWERS] = &tp_leader_followers,
    [CONC_HALF_SYNC_HALF_ASYNC] = &tp_hsha,
    [CONC_REUSEPORT] = &tp_reuseport,
    [CONC_LEADER_FOLLOWERS_EDGE] = &tp_edge,
};

static const struct tp_variant *variant_of(enum concurrency mode)
{
    return (unsigned)mode < CONC_COUNT ? variants[mode] : NULL;
}

/* ---- the pool ------------------------------------------------------------------------------ */

int tp_handle_set_init(struct handle_set *hs, enum concurrency mode)
{
    const struct tp_variant *v = variant_of(mode);
    if (!v) {
        hs->epfd = -1;
        return -EINVAL;
    }
    return v->hs_init ? v->hs_init(hs) : hs_init(hs);
}

static unsigned groups_of(const struct tp_variant *v, unsigned nthreads)
{
    return v->groups == TP_GROUP_PER_THREAD ? nthreads : v->groups == TP_ONE_GROUP ? 1 : 0;
}

static void groups_destroy(struct thread_pool *tp)
{
    for (unsigned i = 0; i < tp->ngroups; i++) {
        pthread_mutex_destroy(&tp->groups[i].lock);
        pthread_cond_destroy(&tp->groups[i].followers_cv);
    }
    free(tp->groups);
    tp->groups = NULL;
    tp->ngroups = 0;
}

/* The workers (on cache lines of their own: each writes its counters per event). */
static int workers_alloc(struct thread_pool *tp)
{
    size_t size = tp->nworkers * sizeof(*tp->workers);
    tp->workers = aligned_alloc(TP_CACHE_LINE, size);
    if (!tp->workers)
        return -ENOMEM;
    memset(tp->workers, 0, size);
    return 0;
}

int tp_init(struct thread_pool *tp, struct server *srv, enum concurrency mode,
            struct handle_set *hs, unsigned nhs, unsigned nthreads, int batch)
{
    memset(tp, 0, sizeof(*tp));
    const struct tp_variant *v = variant_of(mode);
    if (!v)
        return -EINVAL;
    tp->srv = srv;
    tp->hs = hs;
    tp->mode = mode;
    tp->variant = v;
    tp->nthreads = nthreads ? nthreads : 1;
    tp->nworkers = tp->nthreads + v->extra_threads;
    tp->batch = batch < 1 ? 1 : batch > TP_MAX_BATCH ? TP_MAX_BATCH : batch;
    unsigned ngroups = groups_of(v, tp->nthreads);
    if (v->groups == TP_GROUP_PER_THREAD && nhs != ngroups)
        return -EINVAL; /* each group leads a set of its own */

    int rc = workers_alloc(tp);
    if (rc < 0)
        return rc;
    rc = -ENOMEM;
    if (ngroups && !(tp->groups = calloc(ngroups, sizeof(*tp->groups))))
        goto fail_workers;
    for (; tp->ngroups < ngroups; tp->ngroups++) {
        struct lf_group *g = &tp->groups[tp->ngroups];
        g->hs = &hs[tp->ngroups];
        pthread_mutex_init(&g->lock, NULL);
        pthread_cond_init(&g->followers_cv, NULL);
    }
    for (unsigned i = 0; i < tp->nworkers; i++) {
        struct worker *w = &tp->workers[i];
        w->pool = tp;
        w->srv = srv;
        w->index = i;
        w->group = ngroups ? &tp->groups[i % ngroups] : NULL;
    }
    if (v->init && (rc = v->init(tp)) < 0)
        goto fail_groups;
    return 0;

fail_groups:
    groups_destroy(tp);
fail_workers:
    free(tp->workers);
    tp->workers = NULL;
    return rc;
}

/* A thread's life: its metrics table, then the strategy's loop. */
static void run_worker(struct worker *w)
{
    if (mx_thread_attach() < 0)
        log_warn("metrics: no table for thread %u: counted in the shared one", w->index);
    w->pool->variant->loop(w);
}

/* A started thread names itself (for top -H, perf, gdb): on itself that is a prctl, where
 * naming it from the starting thread writes /proc/self/task/TID/comm, after the startup
 * notices and racing the thread's first events. */
static void *thread_main(void *arg)
{
    struct worker *w = arg;
    char name[16];
    snprintf(name, sizeof(name), w->index == w->pool->nthreads ? "lfhttpd-reactor" : "lfhttpd-%u",
             w->index);
    pthread_setname_np(pthread_self(), name);
    run_worker(w);
    return NULL;
}

void tp_run(struct thread_pool *tp)
{
    unsigned started = 1;
    bool failed = false;
    for (unsigned i = 1; i < tp->nworkers; i++) {
        int rc = pthread_create(&tp->workers[i].thread, NULL, thread_main, &tp->workers[i]);
        if (rc != 0) {
            log_error("pthread_create: %s", strerror(rc));
            failed = true;
            break;
        }
        started++;
    }
    bool whole = tp->variant->every_thread;
    if (failed && whole) {
        /* Every thread has its own part to play (its handle set, or the reactor): a pool with a
         * hole in it would leave handles nobody waits for. */
        log_error("cannot run %s with %u of its %u threads", concurrency_names[tp->mode],
                  started, tp->nworkers);
        tp_stop(tp);
    } else if (failed) {
        log_error("running with %u threads", started);
    }
    tp->workers[0].thread = pthread_self();
    if (!failed || !whole)
        run_worker(&tp->workers[0]);
    for (unsigned i = 1; i < started; i++)
        pthread_join(tp->workers[i].thread, NULL);
}

void tp_stop(struct thread_pool *tp)
{
    atomic_store_explicit(&tp->stopping, true, memory_order_relaxed);
    /* Take each lock before waking, so that no thread between its check of `stopping` and its
     * wait misses the broadcast. */
    for (unsigned i = 0; i < tp->ngroups; i++) {
        pthread_mutex_lock(&tp->groups[i].lock);
        pthread_cond_broadcast(&tp->groups[i].followers_cv);
        pthread_mutex_unlock(&tp->groups[i].lock);
    }
    if (tp->variant && tp->variant->stop)
        tp->variant->stop(tp);
}

void tp_destroy(struct thread_pool *tp)
{
    if (tp->variant->destroy)
        tp->variant->destroy(tp); /* every thread has left */
    groups_destroy(tp);
    free(tp->workers);
    mx_free_all(); /* every thread has left */
    tp->workers = NULL;
}

void tp_retire(struct thread_pool *tp, struct tp_retired *r)
{
    /* No variant: a pool never initialised (a harness running the handlers itself, no thread
     * but its own), where nobody else can hold an event either. */
    const struct tp_variant *v = tp->variant;
    if (v && v->retire)
        v->retire(tp, r);
    else
        r->free(r);
}
