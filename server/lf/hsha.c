/* hsha.c — the half-sync-half-async strategy: the baseline the pattern paper argues against.
 *
 * One reactor thread (workers[nthreads]) waits in epoll_wait on the shared handle set and puts
 * each event into a bounded queue; N worker threads take events from the queue and process
 * them. Every event crosses threads. The handle set is the textbook's: EPOLLONESHOT keeps a
 * queued handle from being queued again before its handler re-arms it. */
#include "lf/hsha.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lf/tp_variant.h"
#include "log/log.h"

#define QUEUE_CAP 1024 /* events queued before the reactor waits for room */

struct event_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    struct epoll_event *ring;
    unsigned cap, head, count;
    unsigned waiting;                /* workers waiting on not_empty */
};

static struct event_queue *queue_of(struct thread_pool *tp)
{
    return tp->variant_state;
}

static bool stopping(struct thread_pool *tp)
{
    return atomic_load_explicit(&tp->stopping, memory_order_relaxed);
}

/* Queue `n` events, waiting for room as needed (q->lock held), unless the pool stops. */
static void enqueue(struct worker *w, struct event_queue *q, const struct epoll_event *evs, int n)
{
    for (int i = 0; i < n; i++) {
        while (q->count == q->cap && !stopping(w->pool))
            pthread_cond_wait(&q->not_full, &q->lock);
        if (stopping(w->pool))
            return;
        q->ring[(q->head + q->count++) % q->cap] = evs[i];
        bool woke = q->waiting > 0;
        if (woke)
            pthread_cond_signal(&q->not_empty);
        atomic_fetch_add_explicit(woke ? &w->stats.promotions : &w->stats.no_follower, 1,
                                  memory_order_relaxed);
    }
}

static void reactor_loop(struct worker *w)
{
    struct thread_pool *tp = w->pool;
    struct event_queue *q = queue_of(tp);
    struct epoll_event evs[TP_MAX_BATCH];

    while (!stopping(tp)) {
        tp_set_role(w, ROLE_LEADING);
        int n = hs_wait(tp->hs, evs, TP_MAX_BATCH, -1);
        atomic_fetch_add_explicit(&w->stats.waits, 1, memory_order_relaxed);
        if (n < 0) {
            log_error("epoll_wait: %s", strerror(-n));
            continue;
        }
        pthread_mutex_lock(&q->lock);
        enqueue(w, q, evs, n);
        pthread_mutex_unlock(&q->lock);
    }
    tp_set_role(w, ROLE_FOLLOWING);
}

static void queue_worker_loop(struct worker *w)
{
    struct thread_pool *tp = w->pool;
    struct event_queue *q = queue_of(tp);

    pthread_mutex_lock(&q->lock);
    for (;;) {
        tp_set_role(w, ROLE_FOLLOWING);
        while (q->count == 0 && !stopping(tp)) {
            q->waiting++;
            pthread_cond_wait(&q->not_empty, &q->lock);
            q->waiting--;
        }
        if (stopping(tp))
            break;
        struct epoll_event ev = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        if (q->count-- == q->cap)
            pthread_cond_signal(&q->not_full);
        pthread_mutex_unlock(&q->lock);
        tp_process(w, &ev, 1);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    tp_set_role(w, ROLE_FOLLOWING);
}

static void hsha_loop(struct worker *w)
{
    if (w->index == w->pool->nthreads)
        reactor_loop(w);
    else
        queue_worker_loop(w);
}

static int hsha_init(struct thread_pool *tp)
{
    struct event_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->cap = QUEUE_CAP;
    q->ring = calloc(QUEUE_CAP, sizeof(*q->ring));
    if (!q->ring)
        goto fail_queue;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    tp->variant_state = q;
    return 0;

fail_queue:
    free(q);
    return -ENOMEM;
}

static void hsha_destroy(struct thread_pool *tp)
{
    struct event_queue *q = queue_of(tp);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    free(q->ring);
    free(q);
    tp->variant_state = NULL;
}

static void hsha_stop(struct thread_pool *tp)
{
    struct event_queue *q = queue_of(tp);
    pthread_mutex_lock(&q->lock);
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->lock);
}

bool hsha_queue_state(struct thread_pool *tp, struct hsha_queue_state *out)
{
    if (tp->variant != &tp_hsha)
        return false;
    struct event_queue *q = queue_of(tp);
    pthread_mutex_lock(&q->lock);
    *out = (struct hsha_queue_state){ q->count, q->cap, q->waiting };
    pthread_mutex_unlock(&q->lock);
    return true;
}

const struct tp_variant tp_hsha = {
    .groups = TP_NO_GROUPS,
    .extra_threads = 1,              /* the reactor */
    .every_thread = true,            /* without the reactor nobody waits for events */
    .init = hsha_init,
    .destroy = hsha_destroy,
    .loop = hsha_loop,
    .stop = hsha_stop,
};
