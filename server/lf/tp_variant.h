/* tp_variant.h — what a concurrency strategy changes in the pool: the interface between
 * thread_pool.c (the textbook Leader/Followers pool: join, wait, promote, process, stop) and
 * the files of the other strategies (reuseport.c, handle_set_edge.c, hsha.c). Private to lf/:
 * users of the pool see thread_pool.h only.
 *
 * A strategy is one `struct tp_variant`, chosen by tp_init from the configured `concurrency`;
 * nothing on the pool's paths asks which strategy runs. */
#ifndef LF_TP_VARIANT_H
#define LF_TP_VARIANT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "lf/handle_set.h"
#include "lf/thread_pool.h"

#define TP_MAX_BATCH 64 /* events taken per epoll_wait at most (thread_pool.h: `batch`) */

/* How the handler threads group around handle sets: all in one group over the one set, one
 * group per thread and set, or none (threads that do not lead). */
enum tp_groups { TP_ONE_GROUP = 0, TP_GROUP_PER_THREAD, TP_NO_GROUPS };

struct tp_variant {
    enum tp_groups groups;
    unsigned extra_threads;          /* threads beyond the handler threads (HS/HA's reactor) */
    bool every_thread;               /* run only with every thread started: each has a part
                                        nobody else plays (its own set, the reactor) */
    /* The handle set it runs over (tp_handle_set_init). NULL: hs_init. */
    int (*hs_init)(struct handle_set *hs);
    /* Set up the variant's own state (tp->variant_state) once the workers and groups exist:
     * 0, or -errno with nothing left to undo. NULL: none. */
    int (*init)(struct thread_pool *tp);
    /* Free it, after every thread has left. NULL: none. */
    void (*destroy)(struct thread_pool *tp);
    /* A thread's life in the pool: returns when the pool stops (tp->stopping). */
    void (*loop)(struct worker *w);
    /* Wake threads that wait on the variant's own conditions (tp_stop). NULL: none. */
    void (*stop)(struct thread_pool *tp);
    /* tp_retire. NULL: free at once (EPOLLONESHOT: no other thread holds an event). */
    void (*retire)(struct thread_pool *tp, struct tp_retired *r);
};

extern const struct tp_variant tp_reuseport;   /* reuseport.c */
extern const struct tp_variant tp_edge;        /* handle_set_edge.c */
extern const struct tp_variant tp_hsha;        /* hsha.c */

/* ---- the textbook's steps, for the variants built from them (thread_pool.c) -------------- */

static inline void tp_set_role(struct worker *w, enum worker_role r)
{
    atomic_store_explicit(&w->role, r, memory_order_relaxed);
}

/* Wait until the leader role of the thread's group is vacant and take it. False: the pool is
 * stopping. */
bool lf_join(struct worker *w);
/* As leader, wait for up to `max` events of the group's set: their count, or -errno (logged). */
int lf_wait(struct worker *w, struct epoll_event *evs, int max);
/* Give up leadership and wake exactly one follower to take it (skipped when none waits). */
void lf_promote(struct worker *w);
/* Run the handlers of `n` detected events on this thread. */
void tp_process(struct worker *w, const struct epoll_event *evs, int n);
/* The textbook loop: join, wait, promote, process (leader-followers, reuseport). */
void lf_loop(struct worker *w);

#endif
