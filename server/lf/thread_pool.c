/* thread_pool.c — Leader/Followers thread pool, and the strategies it is compared with; see
 * thread_pool.h for the contract. */
#include "lf/thread_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf/event_handler.h"
#include "lf/handle_set.h"
#include "log/log.h"
#include "log/metrics.h"

#define TP_MAX_BATCH 64
#define QUEUE_CAP 1024   /* half-sync-half-async: events queued before the reactor waits */

const char *const concurrency_names[CONC_COUNT] = { "leader-followers", "half-sync-half-async",
                                                    "reuseport", "leader-followers-edge" };

static void set_role(struct worker *w, enum worker_role r)
{
    atomic_store_explicit(&w->role, r, memory_order_relaxed);
}

static void dispatch(struct worker *w, const struct epoll_event *evs, int n)
{
    set_role(w, ROLE_PROCESSING);
    mx_event_begin(); /* the start of the exchanges these events complete (metrics.h) */
    for (int i = 0; i < n; i++) {
        struct event_handler *eh = evs[i].data.ptr;
        eh->ops->handle_event(eh, evs[i].events, w);
    }
    atomic_fetch_add_explicit(&w->stats.events, (uint64_t)n, memory_order_relaxed);
}

/* Edge mode: run the events of the batch this thread can take (handle_set.h), then what their
 * handlers left on the thread's again list, oldest first, until it is empty: the batch is
 * served before a handle that keeps finding more (a transfer spending its send budget over
 * and over) has this thread again. */
static void dispatch_edge(struct worker *w, const struct epoll_event *evs, int n)
{
    set_role(w, ROLE_PROCESSING);
    mx_event_begin();
    uint64_t runs = 0;
    for (int i = 0; i < n; i++) {
        struct event_handler *eh = evs[i].data.ptr;
        if (!hs_take(eh, evs[i].events))
            continue; /* its owner runs it again */
        eh->ops->handle_event(eh, evs[i].events, w);
        runs++;
    }
    struct hs_pending p;
    while (hs_again_pop(&w->again, &p)) {
        p.eh->ops->handle_event(p.eh, p.events, w);
        runs++;
    }
    atomic_fetch_add_explicit(&w->stats.events, runs, memory_order_relaxed);
}

/* ---- reclamation (edge mode; thread_pool.h) ------------------------------------------------ */

static void free_list(struct tp_retired *r)
{
    while (r) {
        struct tp_retired *next = r->next;
        r->free(r);
        r = next;
    }
}

/* Advance the grace periods (retire_lock held); returns what may be freed now. */
static struct tp_retired *reclaim_locked(struct thread_pool *tp)
{
    struct tp_retired *done = NULL;
    if (tp->waiting) {
        for (unsigned i = 0; i < tp->nthreads; i++) {
            uint64_t s = tp->snap[i];
            if ((s & 1) && atomic_load(&tp->workers[i].qs) == s)
                return NULL; /* that thread still runs the batch it held */
        }
        done = tp->waiting;
        tp->waiting = NULL;
    }
    if (tp->fresh) {
        tp->waiting = tp->fresh;
        tp->fresh = NULL;
        for (unsigned i = 0; i < tp->nthreads; i++)
            tp->snap[i] = atomic_load(&tp->workers[i].qs);
    }
    return done;
}

static unsigned list_len(const struct tp_retired *r)
{
    unsigned n = 0;
    for (; r; r = r->next)
        n++;
    return n;
}

static void reclaim(struct thread_pool *tp, bool wait_for_lock)
{
    if (wait_for_lock)
        pthread_mutex_lock(&tp->retire_lock);
    else if (pthread_mutex_trylock(&tp->retire_lock) != 0)
        return;
    struct tp_retired *done = reclaim_locked(tp);
    pthread_mutex_unlock(&tp->retire_lock);
    if (done) {
        atomic_fetch_sub_explicit(&tp->retired, list_len(done), memory_order_relaxed);
        free_list(done);
    }
}

void tp_retire(struct thread_pool *tp, struct tp_retired *r)
{
    if (tp->mode != CONC_LEADER_FOLLOWERS_EDGE) {
        r->free(r);
        return;
    }
    /* The caller closed the handle's descriptor before: a thread found offline from here on
     * enters epoll_wait after the close, and cannot be given an event for it. */
    atomic_thread_fence(memory_order_seq_cst);
    atomic_fetch_add_explicit(&tp->retired, 1, memory_order_relaxed);
    pthread_mutex_lock(&tp->retire_lock);
    r->next = tp->fresh;
    tp->fresh = r;
    pthread_mutex_unlock(&tp->retire_lock);
    reclaim(tp, true);
}

/* The thread may hold events from here on (before epoll_wait), or holds none any more. */
static void qs_online(struct worker *w)
{
    atomic_store(&w->qs, atomic_load_explicit(&w->qs, memory_order_relaxed) + 1);
}

static void qs_offline(struct thread_pool *tp, struct worker *w)
{
    atomic_store(&w->qs, atomic_load_explicit(&w->qs, memory_order_relaxed) + 1);
    if (atomic_load_explicit(&tp->retired, memory_order_relaxed))
        reclaim(tp, false);
}

/* ---- Leader/Followers (one group, or one group per thread for reuseport) ----------------- */

/* Wait until the leader role of the thread's group is vacant and take it. Returns false if the
 * pool is stopping. */
static bool join_as_leader(struct thread_pool *tp, struct worker *w)
{
    struct lf_group *g = w->group;
    pthread_mutex_lock(&g->lock);
    while (g->leader_present && !atomic_load_explicit(&tp->stopping, memory_order_relaxed)) {
        set_role(w, ROLE_FOLLOWING);
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

/* Give up leadership and wake exactly one follower to take it (skipped when none waits). */
static void promote_new_leader(struct worker *w)
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

static void *lf_loop(void *arg)
{
    struct worker *w = arg;
    if (mx_thread_attach() < 0)
        log_warn("metrics: no table for thread %u: counted in the shared one", w->index);
    struct thread_pool *tp = w->pool;
    struct epoll_event evs[TP_MAX_BATCH];
    bool edge = tp->mode == CONC_LEADER_FOLLOWERS_EDGE;
    if (edge) {
        w->again.w = w;
        hs_again_attach(&w->again);
    }

    while (join_as_leader(tp, w)) {
        set_role(w, ROLE_LEADING);
        if (edge)
            qs_online(w);
        int n = hs_wait(w->group->hs, evs, tp->batch, -1);
        atomic_fetch_add_explicit(&w->stats.waits, 1, memory_order_relaxed);
        promote_new_leader(w);
        if (n < 0)
            log_error("epoll_wait: %s", strerror(-n));
        else if (edge)
            dispatch_edge(w, evs, n);
        else
            dispatch(w, evs, n);
        if (edge)
            qs_offline(tp, w);
    }
    if (edge)
        hs_again_attach(NULL);
    set_role(w, ROLE_FOLLOWING);
    return NULL;
}

/* ---- Half-Sync/Half-Async: a reactor, a bounded queue, workers ---------------------------- */

static void *reactor_loop(void *arg)
{
    struct worker *w = arg;
    if (mx_thread_attach() < 0)
        log_warn("metrics: no table for thread %u: counted in the shared one", w->index);
    struct thread_pool *tp = w->pool;
    struct event_queue *q = &tp->q;
    struct epoll_event evs[TP_MAX_BATCH];

    while (!atomic_load_explicit(&tp->stopping, memory_order_relaxed)) {
        set_role(w, ROLE_LEADING);
        int n = hs_wait(tp->hs, evs, TP_MAX_BATCH, -1);
        atomic_fetch_add_explicit(&w->stats.waits, 1, memory_order_relaxed);
        if (n < 0) {
            log_error("epoll_wait: %s", strerror(-n));
            continue;
        }
        pthread_mutex_lock(&q->lock);
        for (int i = 0; i < n; i++) {
            while (q->count == q->cap && !atomic_load_explicit(&tp->stopping, memory_order_relaxed))
                pthread_cond_wait(&q->not_full, &q->lock);
            if (atomic_load_explicit(&tp->stopping, memory_order_relaxed))
                break;
            q->ring[(q->head + q->count++) % q->cap] = evs[i];
            bool woke = q->waiting > 0;
            if (woke)
                pthread_cond_signal(&q->not_empty);
            atomic_fetch_add_explicit(woke ? &w->stats.promotions : &w->stats.no_follower, 1,
                                      memory_order_relaxed);
        }
        pthread_mutex_unlock(&q->lock);
    }
    set_role(w, ROLE_FOLLOWING);
    return NULL;
}

static void *queue_worker_loop(void *arg)
{
    struct worker *w = arg;
    if (mx_thread_attach() < 0)
        log_warn("metrics: no table for thread %u: counted in the shared one", w->index);
    struct thread_pool *tp = w->pool;
    struct event_queue *q = &tp->q;

    pthread_mutex_lock(&q->lock);
    for (;;) {
        set_role(w, ROLE_FOLLOWING);
        while (q->count == 0 && !atomic_load_explicit(&tp->stopping, memory_order_relaxed)) {
            q->waiting++;
            pthread_cond_wait(&q->not_empty, &q->lock);
            q->waiting--;
        }
        if (atomic_load_explicit(&tp->stopping, memory_order_relaxed))
            break;
        struct epoll_event ev = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        if (q->count-- == q->cap)
            pthread_cond_signal(&q->not_full);
        pthread_mutex_unlock(&q->lock);
        dispatch(w, &ev, 1);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    set_role(w, ROLE_FOLLOWING);
    return NULL;
}

/* ---- the pool ------------------------------------------------------------------------------ */

static void group_init(struct lf_group *g, struct handle_set *hs)
{
    g->hs = hs;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->followers_cv, NULL);
}

int tp_init(struct thread_pool *tp, struct server *srv, enum concurrency mode,
            struct handle_set *hs, unsigned nhs, unsigned nthreads, int batch)
{
    memset(tp, 0, sizeof(*tp));
    tp->srv = srv;
    tp->hs = hs;
    tp->mode = mode;
    tp->nthreads = nthreads ? nthreads : 1;
    tp->nworkers = tp->nthreads + (mode == CONC_HALF_SYNC_HALF_ASYNC);
    tp->batch = batch < 1 ? 1 : batch > TP_MAX_BATCH ? TP_MAX_BATCH : batch;
    if (mode == CONC_REUSEPORT && nhs != tp->nthreads)
        return -EINVAL;
    tp->workers = calloc(tp->nworkers, sizeof(*tp->workers));
    tp->snap = calloc(tp->nworkers, sizeof(*tp->snap));
    if (!tp->workers || !tp->snap) {
        free(tp->workers);
        free(tp->snap);
        return -ENOMEM;
    }
    pthread_mutex_init(&tp->retire_lock, NULL);
    if (mode == CONC_HALF_SYNC_HALF_ASYNC) {
        tp->q.cap = QUEUE_CAP;
        tp->q.ring = calloc(QUEUE_CAP, sizeof(*tp->q.ring));
        if (!tp->q.ring) {
            free(tp->workers);
            free(tp->snap);
            return -ENOMEM;
        }
        pthread_mutex_init(&tp->q.lock, NULL);
        pthread_cond_init(&tp->q.not_empty, NULL);
        pthread_cond_init(&tp->q.not_full, NULL);
    } else {
        tp->ngroups = mode == CONC_REUSEPORT ? tp->nthreads : 1;
        tp->groups = calloc(tp->ngroups, sizeof(*tp->groups));
        if (!tp->groups) {
            free(tp->workers);
            free(tp->snap);
            return -ENOMEM;
        }
        for (unsigned i = 0; i < tp->ngroups; i++)
            group_init(&tp->groups[i], &hs[i]);
    }
    for (unsigned i = 0; i < tp->nworkers; i++) {
        struct worker *w = &tp->workers[i];
        w->pool = tp;
        w->srv = srv;
        w->index = i;
        w->group = tp->groups ? &tp->groups[i % tp->ngroups] : NULL;
    }
    return 0;
}

static void *(*loop_of(const struct thread_pool *tp, unsigned i))(void *)
{
    if (tp->mode != CONC_HALF_SYNC_HALF_ASYNC)
        return lf_loop;
    return i == tp->nthreads ? reactor_loop : queue_worker_loop;
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
    return loop_of(w->pool, w->index)(w);
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
    bool lf = tp->mode == CONC_LEADER_FOLLOWERS || tp->mode == CONC_LEADER_FOLLOWERS_EDGE;
    if (failed && !lf) {
        /* Every thread has its own part to play (its handle set, or the reactor): a pool with a
         * hole in it would leave handles nobody waits for. */
        log_error("cannot run %s with %u of its %u threads", concurrency_names[tp->mode],
                  started, tp->nworkers);
        tp_stop(tp);
    } else if (failed) {
        log_error("running with %u threads", started);
    }
    tp->workers[0].thread = pthread_self();
    if (!failed || lf)
        loop_of(tp, 0)(&tp->workers[0]);
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
    if (tp->q.ring) {
        pthread_mutex_lock(&tp->q.lock);
        pthread_cond_broadcast(&tp->q.not_empty);
        pthread_cond_broadcast(&tp->q.not_full);
        pthread_mutex_unlock(&tp->q.lock);
    }
}

void tp_destroy(struct thread_pool *tp)
{
    for (unsigned i = 0; i < tp->ngroups; i++) {
        pthread_mutex_destroy(&tp->groups[i].lock);
        pthread_cond_destroy(&tp->groups[i].followers_cv);
    }
    if (tp->q.ring) {
        pthread_mutex_destroy(&tp->q.lock);
        pthread_cond_destroy(&tp->q.not_empty);
        pthread_cond_destroy(&tp->q.not_full);
        free(tp->q.ring);
    }
    free_list(tp->waiting); /* every thread has left: nobody holds an event */
    free_list(tp->fresh);
    tp->waiting = tp->fresh = NULL;
    pthread_mutex_destroy(&tp->retire_lock);
    free(tp->snap);
    tp->snap = NULL;
    for (unsigned i = 0; i < tp->nworkers; i++)
        hs_again_free(&tp->workers[i].again);
    free(tp->groups);
    free(tp->workers);
    mx_free_all(); /* every thread has left */
    tp->groups = NULL;
    tp->workers = NULL;
}
