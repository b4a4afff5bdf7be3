/* thread_pool.h — the Thread Pool participant of Leader/Followers, and the strategies it is
 * measured against (`concurrency`, docs/PERFORMANCE.md).
 *
 * leader-followers (default, thread_pool.c): N threads share one handle set. At most one thread
 * (the leader) waits in epoll_wait; the others (followers) wait on one condition variable.
 * When the leader detects events it gives up leadership and signals exactly one waiting
 * follower (promote_new_leader) BEFORE it processes what it detected, so the handle set is
 * never left without a waiter while there is a thread free to wait. After processing, the
 * thread rejoins as a follower (or becomes leader at once if the leader role is vacant). There
 * is no queue and no dispatcher thread: the thread that detects an event is the thread that
 * processes it. Variant: the leader may take a small batch of events from one epoll_wait;
 * EPOLLONESHOT guarantees that each belongs to it alone.
 *
 * The other strategies are variants of it, each in a file of its own (tp_variant.h), chosen
 * once by tp_init:
 *   reuseport (reuseport.c): one handle set per thread, each thread the only member of its
 *     group (the paper's "Leader/Followers with multiple handle sets");
 *   leader-followers-edge (handle_set_edge.c): the same pool over the edge set, whose handles
 *     are edge-triggered without EPOLLONESHOT; a handle that became ready again while its
 *     owner ran it is run again by that owner, and a closed handle is freed only once no
 *     thread can hold an event for it (tp_retire);
 *   half-sync-half-async (hsha.c): the baseline the pattern paper argues against, a reactor
 *     thread and a bounded queue in front of N workers.
 *
 * All four run the same event handlers through the same calls (event_handler.h says what the
 * edge set asks of them in addition). */
#ifndef LF_THREAD_POOL_H
#define LF_THREAD_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "lf/handle_set.h"

struct server;

/* A closed handle waiting for the threads that may still hold an event for it (tp_retire). */
struct tp_retired {
    struct tp_retired *next;
    void (*free)(struct tp_retired *r);
};

enum concurrency { CONC_LEADER_FOLLOWERS = 0, CONC_HALF_SYNC_HALF_ASYNC, CONC_REUSEPORT,
                   CONC_LEADER_FOLLOWERS_EDGE };
#define CONC_COUNT 4
extern const char *const concurrency_names[CONC_COUNT]; /* "leader-followers", ... */

/* leading: waiting for events in epoll_wait (an LF leader, a reuseport thread, the HS/HA
 * reactor); processing: running handlers; following: waiting to lead (LF) or for a queued
 * event (HS/HA workers). */
enum worker_role { ROLE_FOLLOWING = 0, ROLE_LEADING, ROLE_PROCESSING };

/* Per-thread counters: written only by their own thread (relaxed atomics so that readers on
 * other threads, e.g. /server-status, read them without a data race); summed when read. */
struct worker_stats {
    _Atomic uint64_t events;        /* events processed */
    _Atomic uint64_t waits;         /* epoll_wait calls made as leader (or reactor) */
    _Atomic uint64_t promotions;    /* hand-offs that woke a waiting thread (LF: a follower
                                       promoted; HS/HA: a worker woken for a queued event) */
    _Atomic uint64_t no_follower;   /* hand-offs with nobody waiting */
    _Atomic uint64_t requests;
    _Atomic uint64_t bytes_out;
    _Atomic uint64_t accepted;
};

/* One handle set and the threads that take turns leading it (all of them under
 * leader-followers; one per group under reuseport). */
struct lf_group {
    struct handle_set *hs;
    pthread_mutex_t lock;            /* guards the two fields below */
    pthread_cond_t followers_cv;     /* followers wait here to become leader */
    bool leader_present;
    unsigned followers_waiting;
};

#define TP_CACHE_LINE 64

/* A pool thread's context, passed to every handler it runs. */
struct worker {
    struct thread_pool *pool;
    struct server *srv;
    struct lf_group *group;          /* NULL for half-sync-half-async threads */
    unsigned index;
    pthread_t thread;
    _Atomic int role;                /* enum worker_role, for status pages */
    _Alignas(TP_CACHE_LINE) struct worker_stats stats; /* its counters on lines of their own */
};

struct tp_variant;

struct thread_pool {
    struct server *srv;
    struct handle_set *hs;           /* the first (leader-followers, HS/HA: the only) set */
    enum concurrency mode;
    const struct tp_variant *variant; /* what the strategy changes (tp_variant.h) */
    void *variant_state;             /* and its own state (HS/HA: the queue; edge: retirement) */
    unsigned nthreads;               /* threads that run handlers */
    unsigned nworkers;               /* nthreads, plus the reactor under half-sync-half-async
                                        (workers[nthreads]) */
    int batch;                       /* max events taken per epoll_wait (1 = the classic pattern) */
    struct worker *workers;
    struct lf_group *groups;         /* leader-followers: 1; reuseport: nthreads; HS/HA: none */
    unsigned ngroups;
    _Atomic bool stopping;
};

/* Create handle set `hs` of the kind `mode` runs over (hs_init, or hs_init_edge for
 * leader-followers-edge). 0 or -errno; hs_close is safe either way. */
int tp_handle_set_init(struct handle_set *hs, enum concurrency mode);
/* Allocate the pool over `nhs` handle sets made by tp_handle_set_init (reuseport: one per
 * thread; otherwise one). Returns 0 or -errno (nothing left to destroy). */
int tp_init(struct thread_pool *tp, struct server *srv, enum concurrency mode,
            struct handle_set *hs, unsigned nhs, unsigned nthreads, int batch);
/* Run the pool: start the other threads, join the pool on the calling thread, return when the
 * pool has been stopped and every thread has left. */
void tp_run(struct thread_pool *tp);
/* Ask every thread to leave the pool. Safe from any pool thread (called from a handler). Threads
 * waiting in epoll_wait are woken by the caller through the handle sets (server.c's stop
 * event, which is registered in every set). */
void tp_stop(struct thread_pool *tp);
void tp_destroy(struct thread_pool *tp);
/* A handle closed while the pool runs: free it (r->free) once no thread can hold an event for
 * it: under EPOLLONESHOT (nobody else holds one) at once, under leader-followers-edge once
 * every batch taken before the close is done (handle_set_edge.c). Any thread. */
void tp_retire(struct thread_pool *tp, struct tp_retired *r);

#endif
