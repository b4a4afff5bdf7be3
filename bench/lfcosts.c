/* lfcosts.c — the costs the Leader/Followers hand-off is made of, on this machine
 * (docs/PERFORMANCE.md, "Past two cores"). Not a server benchmark: each figure is one
 * primitive, measured in a loop, median of the per-iteration times.
 *
 *   promotion   a thread blocked in futex_wait (as a follower waits for the leader role) is
 *               woken by another: ns from the waker's futex_wake to the wakee running
 *               (CLOCK_MONOTONIC stamps on both sides), and the waker's cost of the wake call
 *   epoll_wait  one epoll_wait that returns B ready events (level-triggered sockets with data),
 *               B = 1, 8, 64: ns per call
 *   rearm       EPOLL_CTL_MOD (EPOLLIN | EPOLLONESHOT) of one socket: ns per call, one thread
 *               alone, then two threads re-arming different sockets of the same set at once
 *               (the set's lock is shared)
 *
 * Build: make build/lfcosts; run: build/lfcosts [iterations] (default 20000). */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_u64);
    printf("%-44s median %7.0f ns   p10 %7.0f   p90 %7.0f   p99 %7.0f\n", what,
           (double)v[n / 2], (double)v[n / 10], (double)v[n * 9 / 10], (double)v[n * 99 / 100]);
}

/* ---- promotion: futex wake to running ---- */

static _Atomic uint32_t turn;    /* whose move: 0 the waker, 1 the wakee */
static _Atomic uint64_t stamp;   /* the waker's time just before futex_wake */
static uint64_t *lat, *cost;
static int iters;

static void fwait(_Atomic uint32_t *addr, uint32_t val)
{
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void fwake(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *wakee(void *arg)
{
    (void)arg;
    for (int i = 0; i < iters; i++) {
        while (atomic_load(&turn) != 1)
            fwait(&turn, 0);
        lat[i] = now_ns() - atomic_load(&stamp);
        atomic_store(&turn, 0);
        fwake(&turn);
    }
    return NULL;
}

static void promotion(void)
{
    pthread_t t;
    pthread_create(&t, NULL, wakee, NULL);
    for (int i = 0; i < iters; i++) {
        usleep(50); /* let the wakee sleep in futex_wait, as a follower does */
        atomic_store(&stamp, now_ns());
        atomic_store(&turn, 1);
        uint64_t t0 = now_ns();
        fwake(&turn);
        cost[i] = now_ns() - t0;
        while (atomic_load(&turn) != 0)
            fwait(&turn, 1);
    }
    pthread_join(t, NULL);
    report("promotion: futex_wake to the wakee running", lat, iters);
    report("promotion: the waker's futex_wake call", cost, iters);
}

/* ---- epoll_wait with B ready events, and the re-arm ---- */

#define NSOCK 64
static int ep, sv[NSOCK][2];
static _Atomic int go;

static void epoll_setup(void)
{
    ep = epoll_create1(0);
    for (int i = 0; i < NSOCK; i++) {
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]);
        (void)!write(sv[i][1], "x", 1); /* readable for good: level-triggered events */
    }
}

static void epoll_batches(void)
{
    static const int sizes[] = { 1, 8, 64 };
    struct epoll_event evs[NSOCK];
    for (int s = 0; s < 3; s++) {
        int b = sizes[s];
        for (int i = 0; i < NSOCK; i++) {
            struct epoll_event e = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
            epoll_ctl(ep, i < b ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, sv[i][0], &e);
        }
        for (int i = 0; i < iters; i++) {
            uint64_t t0 = now_ns();
            int n = epoll_wait(ep, evs, b, 0);
            lat[i] = now_ns() - t0;
            if (n != b) {
                fprintf(stderr, "epoll_wait gave %d of %d\n", n, b);
                exit(1);
            }
        }
        char what[64];
        snprintf(what, sizeof(what), "epoll_wait returning %d event(s)", b);
        report(what, lat, iters);
        for (int i = 0; i < b; i++)
            epoll_ctl(ep, EPOLL_CTL_DEL, sv[i][0], NULL);
    }
}

static void rearm_loop(int fd, uint64_t *out)
{
    struct epoll_event e = { .events = EPOLLIN | EPOLLONESHOT };
    for (int i = 0; i < iters; i++) {
        uint64_t t0 = now_ns();
        epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
        out[i] = now_ns() - t0;
    }
}

static void *rearm_other(void *arg)
{
    while (!atomic_load(&go))
        ;
    rearm_loop(sv[1][0], (uint64_t *)arg);
    return NULL;
}

static void rearm(void)
{
    struct epoll_event e = { .events = EPOLLIN | EPOLLONESHOT };
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[0][0], &e);
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[1][0], &e);
    rearm_loop(sv[0][0], lat);
    report("re-arm (EPOLL_CTL_MOD), one thread", lat, iters);
    uint64_t *other = calloc((size_t)iters, sizeof(uint64_t));
    pthread_t t;
    pthread_create(&t, NULL, rearm_other, other);
    atomic_store(&go, 1);
    rearm_loop(sv[0][0], lat);
    pthread_join(t, NULL);
    report("re-arm, two threads on one set at once", lat, iters);
    free(other);
}

int main(int argc, char **argv)
{
    iters = argc > 1 ? atoi(argv[1]) : 20000;
    if (iters < 100)
        iters = 100;
    lat = calloc((size_t)iters, sizeof(uint64_t));
    cost = calloc((size_t)iters, sizeof(uint64_t));
    if (!lat || !cost)
        return 1;
    promotion();
    epoll_setup();
    epoll_batches();
    rearm();
    return 0;
}
