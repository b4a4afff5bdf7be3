/* thread_pool.c — Leader/Followers thread pool; see thread_pool.h for the contract. */
#include "thread_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "handle_set.h"
#include "log.h"

#define TP_MAX_BATCH 64

int tp_init(struct thread_pool *tp, struct server *srv, struct handle_set *hs, unsigned nthreads,
            int batch)
{
    memset(tp, 0, sizeof(*tp));
    tp->hs = hs;
    tp->srv = srv;
    tp->nthreads = nthreads ? nthreads : 1;
    tp->batch = batch < 1 ? 1 : batch > TP_MAX_BATCH ? TP_MAX_BATCH : batch;
    tp->workers = calloc(tp->nthreads, sizeof(*tp->workers));
    if (!tp->workers)
        return -ENOMEM;
    for (unsigned i = 0; i < tp->nthreads; i++) {
        tp->workers[i].pool = tp;
        tp->workers[i].srv = srv;
        tp->workers[i].index = i;
    }
    pthread_mutex_init(&tp->lock, NULL);
    pthread_cond_init(&tp->followers_cv, NULL);
    return 0;
}

/* Wait until the leader role is vacant and take it. Returns false if the pool is stopping. */
static bool join_as_leader(struct thread_pool *tp, struct worker *w)
{
    pthread_mutex_lock(&tp->lock);
    while (tp->leader_present && !tp->stopping) {
        atomic_store_explicit(&w->role, ROLE_FOLLOWING, memory_order_relaxed);
        tp->followers_waiting++;
        pthread_cond_wait(&tp->followers_cv, &tp->lock);
        tp->followers_waiting--;
    }
    bool ok = !tp->stopping;
    if (ok)
        tp->leader_present = true;
    pthread_mutex_unlock(&tp->lock);
    return ok;
}

/* Give up leadership and wake exactly one follower to take it (skipped when none waits). */
static void promote_new_leader(struct thread_pool *tp, struct worker *w)
{
    pthread_mutex_lock(&tp->lock);
    tp->leader_present = false;
    bool woke = tp->followers_waiting > 0;
    if (woke)
        pthread_cond_signal(&tp->followers_cv);
    pthread_mutex_unlock(&tp->lock);
    atomic_fetch_add_explicit(woke ? &w->stats.promotions : &w->stats.no_follower, 1,
                              memory_order_relaxed);
}

static void *worker_loop(void *arg)
{
    struct worker *w = arg;
    struct thread_pool *tp = w->pool;
    struct epoll_event evs[TP_MAX_BATCH];

    while (join_as_leader(tp, w)) {
        atomic_store_explicit(&w->role, ROLE_LEADING, memory_order_relaxed);
        int n = hs_wait(tp->hs, evs, tp->batch, -1);
        atomic_fetch_add_explicit(&w->stats.waits, 1, memory_order_relaxed);
        promote_new_leader(tp, w);
        if (n < 0) {
            log_error("epoll_wait: %s", strerror(-n));
            continue;
        }
        atomic_store_explicit(&w->role, ROLE_PROCESSING, memory_order_relaxed);
        for (int i = 0; i < n; i++) {
            struct event_handler *eh = evs[i].data.ptr;
            eh->ops->handle_event(eh, evs[i].events, w);
        }
        atomic_fetch_add_explicit(&w->stats.events, (uint64_t)n, memory_order_relaxed);
    }
    atomic_store_explicit(&w->role, ROLE_FOLLOWING, memory_order_relaxed);
    return NULL;
}

void tp_run(struct thread_pool *tp)
{
    unsigned started = 1;
    for (unsigned i = 1; i < tp->nthreads; i++) {
        int rc = pthread_create(&tp->workers[i].thread, NULL, worker_loop, &tp->workers[i]);
        if (rc != 0) {
            log_error("pthread_create: %s; running with %u threads", strerror(rc), started);
            break;
        }
        started++;
    }
    tp->workers[0].thread = pthread_self();
    worker_loop(&tp->workers[0]);
    for (unsigned i = 1; i < started; i++)
        pthread_join(tp->workers[i].thread, NULL);
}

void tp_stop(struct thread_pool *tp)
{
    pthread_mutex_lock(&tp->lock);
    tp->stopping = true;
    pthread_cond_broadcast(&tp->followers_cv);
    pthread_mutex_unlock(&tp->lock);
}

bool tp_stopping(struct thread_pool *tp)
{
    pthread_mutex_lock(&tp->lock);
    bool s = tp->stopping;
    pthread_mutex_unlock(&tp->lock);
    return s;
}

void tp_destroy(struct thread_pool *tp)
{
    pthread_mutex_destroy(&tp->lock);
    pthread_cond_destroy(&tp->followers_cv);
    free(tp->workers);
    tp->workers = NULL;
}
