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
 * All three run the same event handlers: a handler never knows which strategy called it. */
#ifndef LF_THREAD_POOL_H
#define LF_THREAD_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>

struct handle_set;
struct server;

enum concurrency { CONC_LEADER_FOLLOWERS = 0, CONC_HALF_SYNC_HALF_ASYNC, CONC_REUSEPORT };
extern const char *const concurrency_names[3]; /* "leader-followers", ... */

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

#endif
