/* thread_pool.h — the Thread Pool participant of Leader/Followers, and the two strategies it is
 * measured against (`concurrency`, docs/PERFORMANCE.md).
 *
 * leader-followers (default): N threads share one handle set. At most one thread (the leader)
 * waits in epoll_wait; the others (followers) wait on one condition variable. When the leader
 * detects events it gives up leadership and signals exactly one waiting follower
 * (promote_new_leader) BEFORE it processes what it detected, so the handle set is never left
 * without a waiter while there is a thread free to wait. After processing, the thread rejoins
 * as a follower (or becomes leader at once if the leader role is vacant). There is no queue and
 * no dispatcher thread: the thread that detects an event is the thread that processes it.
 * Variant: the leader may take a small batch of events from one epoll_wait; EPOLLONESHOT
 * guarantees that each belongs to it alone.
 *
 * reuseport (the paper's "Leader/Followers with multiple handle sets"): one handle set per
 * thread, each with its own SO_REUSEPORT listening sockets; each thread is the only member of
 * its group, so it leads its own set and never hands off. The kernel spreads connections over
 * the listeners; a connection stays with its thread for life.
 *
 * half-sync-half-async (the baseline the pattern paper argues against): one reactor thread waits
 * in epoll_wait on the shared handle set and puts each event into a bounded queue; N worker
 * threads take events from the queue and process them. Every event crosses threads.
 *
 * leader-followers-edge: the leader-followers pool, with its handles registered edge-triggered
 * and without EPOLLONESHOT. The kernel no longer hands a handle to one thread at a time; the
 * handle's ownership word does (handle_set.h), and a handle that became ready again while its
 * owner ran it is run again by that owner, from its thread's "again" list, before the thread
 * goes back to wait. The common keep-alive request then costs no epoll_ctl at all.
 *
 * All four run the same event handlers: a handler never knows which strategy called it.
 *
 * Reclamation (leader-followers-edge): without EPOLLONESHOT another thread may hold, in the batch
 * epoll_wait gave it, an event for a handle that its owner closes meanwhile. Such a handle is
 * retired (tp_retire), not freed: each thread publishes `qs`, odd from the moment it enters
 * epoll_wait until it has run the whole batch (and its again list), even otherwise. A handle
 * retired at time T is freed once every thread that was odd at T has changed its `qs` since:
 * every batch that could hold a stale event for it is finished. A closed handle is never
 * released, so its ownership word stays owned and such a stale event is dropped without
 * touching anything else. (The descriptor number may be reused at once: stale events are
 * recognised by the handle's pointer and its word, never by the fd.) The leader may sleep in
 * epoll_wait with an odd `qs`; the server's 250 ms tick bounds how long a retired handle waits. */
#ifndef LF_THREAD_POOL_H
#define LF_THREAD_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>

#include "lf/handle_set.h"

struct server;

/* A closed handle waiting for the threads that may still hold an event for it (edge mode). */
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

/* half-sync-half-async: the queue between the reactor and the workers. */
struct event_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    struct epoll_event *ring;
    unsigned cap, head, count;
    unsigned waiting;                /* workers waiting on not_empty */
};

/* A pool thread's context, passed to every handler it runs. */
struct worker {
    struct thread_pool *pool;
    struct server *srv;
    struct lf_group *group;          /* NULL for half-sync-half-async threads */
    unsigned index;
    pthread_t thread;
    _Atomic int role;                /* enum worker_role, for status pages */
    struct worker_stats stats;
    time_t date_sec;                 /* this thread's cached Date header (refreshed per second) */
    char date[32];
    _Atomic uint64_t qs;             /* edge mode: odd while it may hold events (see above) */
    struct hs_again again;           /* edge mode: handles it owns and must run again */
};

struct thread_pool {
    struct server *srv;
    struct handle_set *hs;           /* the first (leader-followers, HS/HA: the only) set */
    enum concurrency mode;
    unsigned nthreads;               /* threads that run handlers */
    unsigned nworkers;               /* nthreads, plus the reactor under half-sync-half-async
                                        (workers[nthreads]) */
    int batch;                       /* max events taken per epoll_wait (1 = the classic pattern) */
    struct worker *workers;
    struct lf_group *groups;         /* leader-followers: 1; reuseport: nthreads; HS/HA: none */
    unsigned ngroups;
    struct event_queue q;            /* half-sync-half-async only */
    _Atomic bool stopping;
    /* leader-followers-edge: retired handles. `waiting` are freed once the grace period that
     * began with `snap` (every worker's qs then) is over; `fresh` came after it began. */
    pthread_mutex_t retire_lock;
    struct tp_retired *waiting, *fresh;
    uint64_t *snap;
    _Atomic unsigned retired;        /* how many wait (a hint, read without the lock) */
};

/* Allocate the pool over `nhs` handle sets (reuseport: one per thread; otherwise one). Returns
 * 0 or -errno. */
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
 * it. Under the other strategies (EPOLLONESHOT: nobody else holds one) at once. Any thread. */
void tp_retire(struct thread_pool *tp, struct tp_retired *r);

#endif
