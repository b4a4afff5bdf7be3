/* handle_set_edge.c — leader-followers-edge: the edge set (the ownership word, the again list)
 * and the pool's side of it (running the again list, reclamation); see handle_set_edge.h. */
#include "lf/handle_set_edge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lf/thread_pool.h"
#include "lf/tp_variant.h"
#include "log/metrics.h"

/* ---- the ownership word ------------------------------------------------------------------- */

/* event_handler.hs_word: "more" (event bits recorded for the owner, epoll's own values), the
 * interest registered with the kernel (IN, OUT, RDHUP shifted up), whether the handle is in
 * the set, and whether a thread owns it. */
#define OWN_MORE (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLRDHUP)
#define OWN_INTEREST_SHIFT 16
#define OWN_WANTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP)
#define OWN_INTEREST ((uint32_t)OWN_WANTS << OWN_INTEREST_SHIFT)
#define OWN_REG (1u << 30)
#define OWN_BUSY (1u << 31)
_Static_assert((OWN_MORE & OWN_INTEREST) == 0 && (OWN_INTEREST & (OWN_REG | OWN_BUSY)) == 0,
               "the fields of the ownership word do not overlap");

#define AGAIN_FIRST_CAP 64 /* entries of a thread's again list when it first needs one */

static inline uint32_t interest_of(uint32_t events)
{
    return (events & OWN_WANTS) << OWN_INTEREST_SHIFT;
}

static _Thread_local struct hs_again *tl_again;

void hs_again_attach(struct hs_again *a)
{
    tl_again = a;
}

static bool again_push(struct hs_again *a, struct event_handler *eh, uint32_t events)
{
    if (a->n == a->cap) {
        unsigned cap = a->cap ? a->cap * 2 : AGAIN_FIRST_CAP;
        struct hs_pending *v = malloc(cap * sizeof(*v));
        if (!v)
            return false;
        for (unsigned i = 0; i < a->n; i++)
            v[i] = a->v[(a->head + i) % a->cap];
        free(a->v);
        a->v = v;
        a->head = 0;
        a->cap = cap;
    }
    a->v[(a->head + a->n++) % a->cap] = (struct hs_pending){ eh, events };
    return true;
}

bool hs_again_pop(struct hs_again *a, struct hs_pending *out)
{
    if (a->n == 0)
        return false;
    *out = a->v[a->head];
    a->head = (a->head + 1) % a->cap;
    a->n--;
    return true;
}

void hs_again_free(struct hs_again *a)
{
    free(a->v);
    *a = (struct hs_again){ 0 };
}

bool hs_take(struct event_handler *eh, uint32_t events)
{
    uint32_t old = atomic_load_explicit(&eh->hs_word, memory_order_relaxed);
    for (;;) {
        uint32_t next = old & OWN_BUSY ? old | (events & OWN_MORE) : old | OWN_BUSY;
        if (next == old)
            return false; /* owned, and these events are recorded already */
        if (atomic_compare_exchange_weak_explicit(&eh->hs_word, &old, next, memory_order_acq_rel,
                                                  memory_order_relaxed))
            return !(old & OWN_BUSY);
    }
}

/* ---- the set's operations --------------------------------------------------------------- */

/* Register `fd` for `eh`, edge-triggered. A handle nobody owns yet (a new one) is live from the
 * ADD on; an owner adding its handle back releases it as hs_rearm does. */
int hs_add_fd(struct handle_set *hs, struct event_handler *eh, int fd, uint32_t events)
{
    uint32_t old = atomic_load_explicit(&eh->hs_word, memory_order_relaxed);
    if (!(old & OWN_BUSY)) {
        /* Published before the ADD: the thread that takes the first event acquires it. */
        atomic_store_explicit(&eh->hs_word, OWN_REG | interest_of(events), memory_order_release);
    }
    struct epoll_event ev = { .events = events | EPOLLET, .data.ptr = eh };
    if (epoll_ctl(hs->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int err = errno;
        if (!(old & OWN_BUSY))
            atomic_store_explicit(&eh->hs_word, 0, memory_order_relaxed);
        return -err;
    }
    if (!(old & OWN_BUSY))
        return 0;
    atomic_fetch_and_explicit(&eh->hs_word, ~OWN_INTEREST, memory_order_relaxed);
    atomic_fetch_or_explicit(&eh->hs_word, OWN_REG | interest_of(events), memory_order_relaxed);
    return hs_rearm_fd(hs, eh, fd, events);
}

/* The release: see handle_set_edge.h. */
int hs_rearm_fd(struct handle_set *hs, struct event_handler *eh, int fd, uint32_t events)
{
    uint32_t old = atomic_load_explicit(&eh->hs_word, memory_order_relaxed);
    if (!(old & OWN_REG))
        return -ENOENT; /* not in the set (any more): the caller still owns it */
    uint32_t want = interest_of(events);
    if ((old & OWN_INTEREST) != want) {
        struct epoll_event ev = { .events = events | EPOLLET, .data.ptr = eh };
        if (epoll_ctl(hs->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
            return -errno;
    }
    for (;;) {
        uint32_t more = old & OWN_MORE & (events | EPOLLERR | EPOLLHUP);
        uint32_t keep = (old & ~(OWN_MORE | OWN_INTEREST)) | want;
        struct hs_again *a = tl_again;
        uint32_t next = more ? keep | (a ? 0 : (old & OWN_MORE)) : keep & ~OWN_BUSY;
        if (!atomic_compare_exchange_weak_explicit(&eh->hs_word, &old, next,
                                                   memory_order_acq_rel, memory_order_relaxed))
            continue;
        if (!more)
            return 0;
        if (!a)
            return HS_KEPT; /* "more" stays recorded for the pool thread it goes to */
        if (!again_push(a, eh, more))
            eh->ops->handle_event(eh, more, a->w); /* no memory for the list: run it now */
        return 0;
    }
}

int hs_del_fd(struct handle_set *hs, struct event_handler *eh, int fd)
{
    int rc = epoll_ctl(hs->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 ? -errno : 0;
    atomic_fetch_and_explicit(&eh->hs_word, ~(OWN_REG | OWN_INTEREST), memory_order_relaxed);
    return rc;
}

static int edge_add(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
    return hs_add_fd(hs, eh, eh->fd, events);
}

static int edge_rearm(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
    return hs_rearm_fd(hs, eh, eh->fd, events);
}

static int edge_del(struct handle_set *hs, struct event_handler *eh)
{
    return hs_del_fd(hs, eh, eh->fd);
}

static void edge_more(struct event_handler *eh, uint32_t events)
{
    atomic_fetch_or_explicit(&eh->hs_word, events & OWN_WANTS, memory_order_relaxed);
}

/* A closed descriptor leaves the set only with its last reference, and a child process may hold
 * one for a moment (posix_spawn, between its clone and its exec): an enabled edge-triggered
 * registration could then still report the closed handle. Deleted first if registered. */
static void edge_forget(struct handle_set *hs, struct event_handler *eh)
{
    if (atomic_load_explicit(&eh->hs_word, memory_order_relaxed) & OWN_REG)
        edge_del(hs, eh);
}

static const struct hs_ops edge_ops = {
    .add = edge_add,
    .rearm = edge_rearm,
    .del = edge_del,
    .more = edge_more,
    .forget = edge_forget,
    .edge = true,
};

int hs_init_edge(struct handle_set *hs)
{
    int rc = hs_init(hs);
    hs->ops = &edge_ops;
    return rc;
}

/* ---- the pool's side: the again list and reclamation ------------------------------------ */

/* A pool thread's part (on a cache line of its own: it writes qs twice per batch). */
struct edge_thread {
    _Alignas(TP_CACHE_LINE) _Atomic uint64_t qs; /* odd while it may hold events */
    struct hs_again again;           /* handles it owns and must run again */
};

/* `waiting` are freed once the grace period that began with `snap` (every thread's qs then) is
 * over; `fresh` came after it began. */
struct edge_pool {
    struct edge_thread *threads;     /* tp->nthreads */
    pthread_mutex_t retire_lock;     /* guards the lists and snap */
    struct tp_retired *waiting, *fresh;
    _Atomic unsigned retired;        /* how many wait (a hint, read without the lock) */
    uint64_t snap[];                 /* tp->nthreads */
};

static struct edge_pool *edge_pool_of(struct thread_pool *tp)
{
    return tp->variant_state;
}

static void free_list(struct tp_retired *r)
{
    while (r) {
        struct tp_retired *next = r->next;
        r->free(r);
        r = next;
    }
}

/* Advance the grace periods (retire_lock held); returns what may be freed now. */
static struct tp_retired *reclaim_locked(struct edge_pool *ep, unsigned nthreads)
{
    struct tp_retired *done = NULL;
    if (ep->waiting) {
        for (unsigned i = 0; i < nthreads; i++) {
            uint64_t s = ep->snap[i];
            if ((s & 1) && atomic_load(&ep->threads[i].qs) == s)
                return NULL; /* that thread still runs the batch it held */
        }
        done = ep->waiting;
        ep->waiting = NULL;
    }
    if (ep->fresh) {
        ep->waiting = ep->fresh;
        ep->fresh = NULL;
        for (unsigned i = 0; i < nthreads; i++)
            ep->snap[i] = atomic_load(&ep->threads[i].qs);
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
    struct edge_pool *ep = edge_pool_of(tp);
    if (wait_for_lock)
        pthread_mutex_lock(&ep->retire_lock);
    else if (pthread_mutex_trylock(&ep->retire_lock) != 0)
        return;
    struct tp_retired *done = reclaim_locked(ep, tp->nthreads);
    pthread_mutex_unlock(&ep->retire_lock);
    if (done) {
        atomic_fetch_sub_explicit(&ep->retired, list_len(done), memory_order_relaxed);
        free_list(done);
    }
}

static void edge_retire(struct thread_pool *tp, struct tp_retired *r)
{
    struct edge_pool *ep = edge_pool_of(tp);
    /* The caller closed the handle's descriptor before: a thread found offline from here on
     * enters epoll_wait after the close, and cannot be given an event for it. */
    atomic_thread_fence(memory_order_seq_cst);
    atomic_fetch_add_explicit(&ep->retired, 1, memory_order_relaxed);
    pthread_mutex_lock(&ep->retire_lock);
    r->next = ep->fresh;
    ep->fresh = r;
    pthread_mutex_unlock(&ep->retire_lock);
    reclaim(tp, true);
}

/* The thread may hold events from here on (before epoll_wait), or holds none any more. */
static void qs_online(struct edge_thread *t)
{
    atomic_store(&t->qs, atomic_load_explicit(&t->qs, memory_order_relaxed) + 1);
}

static void qs_offline(struct thread_pool *tp, struct edge_thread *t)
{
    atomic_store(&t->qs, atomic_load_explicit(&t->qs, memory_order_relaxed) + 1);
    if (atomic_load_explicit(&edge_pool_of(tp)->retired, memory_order_relaxed))
        reclaim(tp, false);
}

/* Run the events of the batch this thread can take, then what their handlers left on the
 * thread's again list, oldest first, until it is empty: the batch is served before a handle
 * that keeps finding more (a transfer spending its send budget over and over) has this thread
 * again. */
static void edge_process(struct worker *w, struct hs_again *again, const struct epoll_event *evs,
                         int n)
{
    tp_set_role(w, ROLE_PROCESSING);
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
    while (hs_again_pop(again, &p)) {
        p.eh->ops->handle_event(p.eh, p.events, w);
        runs++;
    }
    atomic_fetch_add_explicit(&w->stats.events, runs, memory_order_relaxed);
}

/* The textbook loop, with the thread's counter odd around each batch and its again list drained
 * before it rejoins. */
static void edge_loop(struct worker *w)
{
    struct thread_pool *tp = w->pool;
    struct edge_thread *t = &edge_pool_of(tp)->threads[w->index];
    struct epoll_event evs[TP_MAX_BATCH];
    t->again.w = w;
    hs_again_attach(&t->again);
    while (lf_join(w)) {
        qs_online(t);
        int n = lf_wait(w, evs, tp->batch);
        lf_promote(w);
        if (n >= 0)
            edge_process(w, &t->again, evs, n);
        qs_offline(tp, t);
    }
    hs_again_attach(NULL);
    tp_set_role(w, ROLE_FOLLOWING);
}

static int edge_init(struct thread_pool *tp)
{
    unsigned n = tp->nthreads;
    struct edge_pool *ep = calloc(1, sizeof(*ep) + n * sizeof(ep->snap[0]));
    if (!ep)
        return -ENOMEM;
    size_t size = n * sizeof(*ep->threads);
    ep->threads = aligned_alloc(TP_CACHE_LINE, size);
    if (!ep->threads)
        goto fail_pool;
    memset(ep->threads, 0, size);
    pthread_mutex_init(&ep->retire_lock, NULL);
    tp->variant_state = ep;
    return 0;

fail_pool:
    free(ep);
    return -ENOMEM;
}

static void edge_destroy(struct thread_pool *tp)
{
    struct edge_pool *ep = edge_pool_of(tp);
    free_list(ep->waiting); /* every thread has left: nobody holds an event */
    free_list(ep->fresh);
    pthread_mutex_destroy(&ep->retire_lock);
    for (unsigned i = 0; i < tp->nthreads; i++)
        hs_again_free(&ep->threads[i].again);
    free(ep->threads);
    free(ep);
    tp->variant_state = NULL;
}

const struct tp_variant tp_edge = {
    .hs_init = hs_init_edge,
    .init = edge_init,
    .destroy = edge_destroy,
    .loop = edge_loop,
    .retire = edge_retire,
};
