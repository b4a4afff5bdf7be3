/* timer.c — timer heap behind a timerfd in the handle set; see timer.h. */
#include "lf/timer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "lf/handle_set.h"
#include "log/log.h"

#define TIMER_BATCH 128 /* callbacks run per event; the rest go to the next event (any thread) */
#define TIMER_FIRST_CAP 256 /* heap slots when the first entry is scheduled */

/* ---- the heap (caller holds th->lock) --------------------------------------------------- */

static void heap_set(struct timer_heap *th, unsigned i, struct timer_entry *t)
{
    th->heap[i] = t;
    t->slot = i + 1;
}

static void sift_up(struct timer_heap *th, unsigned i)
{
    struct timer_entry *t = th->heap[i];
    while (i > 0) {
        unsigned parent = (i - 1) / 2;
        if (th->heap[parent]->due <= t->due)
            break;
        heap_set(th, i, th->heap[parent]);
        i = parent;
    }
    heap_set(th, i, t);
}

static void sift_down(struct timer_heap *th, unsigned i)
{
    struct timer_entry *t = th->heap[i];
    for (;;) {
        unsigned l = 2 * i + 1, r = l + 1, min = i;
        int64_t min_due = t->due;
        if (l < th->n && th->heap[l]->due < min_due) {
            min = l;
            min_due = th->heap[l]->due;
        }
        if (r < th->n && th->heap[r]->due < min_due)
            min = r;
        if (min == i)
            break;
        heap_set(th, i, th->heap[min]);
        i = min;
    }
    heap_set(th, i, t);
}

static void heap_remove(struct timer_heap *th, unsigned i)
{
    struct timer_entry *t = th->heap[i];
    t->slot = 0;
    th->n--;
    if (i == th->n)
        return;
    heap_set(th, i, th->heap[th->n]);
    if (i > 0 && th->heap[(i - 1) / 2]->due > th->heap[i]->due)
        sift_up(th, i);
    else
        sift_down(th, i);
}

/* Program the timerfd for the earliest entry (caller holds the lock, so a concurrent add and
 * the expiry handler cannot overwrite each other's setting). */
static void program(struct timer_heap *th)
{
    int64_t due = th->n ? th->heap[0]->due : 0;
    if (due == th->programmed)
        return;
    th->programmed = due;
    struct itimerspec its = { { 0, 0 }, { 0, 0 } };
    if (due) {
        if (due < 1)
            due = 1; /* 0 would disarm */
        its.it_value.tv_sec = due / CLOCK_MS_PER_S;
        its.it_value.tv_nsec = (long)(due % CLOCK_MS_PER_S) * CLOCK_NS_PER_MS;
    }
    if (timerfd_settime(th->eh.fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        log_error("timerfd_settime: %s", strerror(errno));
}

/* ---- the handle ------------------------------------------------------------------------- */

static void on_expiry(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct timer_heap *th = (struct timer_heap *)eh;
    (void)events;
    uint64_t ticks;
    ssize_t rd = read(eh->fd, &ticks, sizeof(ticks));
    (void)rd;

    struct timer_entry *due[TIMER_BATCH];
    unsigned n = 0;
    int64_t now = timer_now();
    pthread_mutex_lock(&th->lock);
    while (th->n && th->heap[0]->due <= now && n < TIMER_BATCH) {
        due[n++] = th->heap[0];
        heap_remove(th, 0);
    }
    /* More due than one batch: fire again at once, so another thread can take them. */
    th->programmed = -1;
    if (th->n && th->heap[0]->due <= now) {
        struct itimerspec its = { { 0, 0 }, { 0, 1 } };
        timerfd_settime(th->eh.fd, 0, &its, NULL);
    } else {
        program(th);
    }
    pthread_mutex_unlock(&th->lock);
    /* Re-arm before running callbacks: the next expiry need not wait for them. */
    hs_rearm(th->hs, eh, EPOLLIN);
    for (unsigned i = 0; i < n; i++)
        due[i]->fire(due[i], w);
}

static const struct event_handler_ops timer_ops = { .handle_event = on_expiry };

int timer_init(struct timer_heap *th, struct handle_set *hs)
{
    memset(th, 0, sizeof(*th));
    th->hs = hs;
    pthread_mutex_init(&th->lock, NULL);
    th->eh.ops = &timer_ops;
    th->eh.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (th->eh.fd < 0)
        return -errno;
    return hs_add(hs, &th->eh, EPOLLIN);
}

void timer_destroy(struct timer_heap *th)
{
    if (!th->hs)
        return; /* never initialised */
    if (th->eh.fd >= 0)
        close(th->eh.fd);
    th->eh.fd = -1;
    for (unsigned i = 0; i < th->n; i++)
        th->heap[i]->slot = 0;
    free(th->heap);
    th->heap = NULL;
    th->n = th->cap = 0;
    pthread_mutex_destroy(&th->lock);
}

int timer_add(struct timer_heap *th, struct timer_entry *t, int64_t due)
{
    pthread_mutex_lock(&th->lock);
    if (th->n == th->cap) {
        unsigned cap = th->cap ? th->cap * 2 : TIMER_FIRST_CAP;
        struct timer_entry **h = realloc(th->heap, cap * sizeof(*h));
        if (!h) {
            pthread_mutex_unlock(&th->lock);
            return -ENOMEM;
        }
        th->heap = h;
        th->cap = cap;
    }
    t->due = due;
    th->heap[th->n] = t;
    th->n++;
    sift_up(th, th->n - 1);
    if (t->slot == 1)
        program(th);
    pthread_mutex_unlock(&th->lock);
    return 0;
}

bool timer_cancel(struct timer_heap *th, struct timer_entry *t)
{
    pthread_mutex_lock(&th->lock);
    bool removed = t->slot != 0;
    if (removed) {
        heap_remove(th, t->slot - 1);
        program(th);
    }
    pthread_mutex_unlock(&th->lock);
    return removed;
}

unsigned timer_pending(struct timer_heap *th)
{
    pthread_mutex_lock(&th->lock);
    unsigned n = th->n;
    pthread_mutex_unlock(&th->lock);
    return n;
}
