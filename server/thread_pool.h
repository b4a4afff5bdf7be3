/* thread_pool.h — the Thread Pool participant of Leader/Followers.
 *
 * N threads share one handle set. At most one thread (the leader) waits in epoll_wait; the
 * others (followers) wait on one condition variable. When the leader detects events it gives
 * up leadership and signals exactly one waiting follower (promote_new_leader) BEFORE it
 * processes what it detected, so the handle set is never left without a waiter while there is
 * a thread free to wait. After processing, the thread rejoins as a follower (or becomes leader
 * at once if the leader role is vacant). There is no queue and no dispatcher thread: the thread
 * that detects an event is the thread that processes it.
 *
 * Variant (measured in docs/PERFORMANCE.md): the leader may take a small batch of events from one
 * epoll_wait; EPOLLONESHOT guarantees that each belongs to it alone. */
#ifndef LF_THREAD_POOL_H
#define LF_THREAD_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct handle_set;
struct server;

enum worker_role { ROLE_FOLLOWING = 0, ROLE_LEADING, ROLE_PROCESSING };

/* Per-thread counters: written only by their own thread (relaxed atomics so that readers on
 * other threads, e.g. /server-status, read them without a data race); summed when read. */
struct worker_stats {
    _Atomic uint64_t events;        /* events processed */
    _Atomic uint64_t waits;         /* epoll_wait calls made as leader */
    _Atomic uint64_t promotions;    /* leader hand-offs that woke a waiting follower */
    _Atomic uint64_t no_follower;   /* hand-offs with no follower waiting */
    _Atomic uint64_t requests;
    _Atomic uint64_t bytes_out;
    _Atomic uint64_t accepted;
};

/* A pool thread's context, passed to every handler it runs. */
struct worker {
    struct thread_pool *pool;
    struct server *srv;
    unsigned index;
    pthread_t thread;
    _Atomic int role;                /* enum worker_role, for status pages */
    struct worker_stats stats;
    time_t date_sec;                 /* this thread's cached Date header (refreshed per second) */
    char date[32];
};

struct thread_pool {
    struct handle_set *hs;
    struct server *srv;
    unsigned nthreads;
    int batch;                       /* max events taken per epoll_wait (1 = the classic pattern) */
    struct worker *workers;

    pthread_mutex_t lock;            /* guards the three fields below */
    pthread_cond_t followers_cv;     /* followers wait here to become leader */
    bool leader_present;
    unsigned followers_waiting;
    bool stopping;
};

/* Allocate the pool. Returns 0 or -errno. */
int tp_init(struct thread_pool *tp, struct server *srv, struct handle_set *hs, unsigned nthreads,
            int batch);
/* Run the pool: start nthreads-1 threads, join the pool on the calling thread, return when the
 * pool has been stopped and every thread has left. */
void tp_run(struct thread_pool *tp);
/* Ask every thread to leave the pool. Safe from any pool thread (called from a handler). The
 * leader is woken by the caller through the handle set (see server.c's stop event). */
void tp_stop(struct thread_pool *tp);
bool tp_stopping(struct thread_pool *tp);
void tp_destroy(struct thread_pool *tp);

#endif
