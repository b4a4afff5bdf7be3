/* test_handle_set.c — unit tests for server/lf/handle_set.c: the EPOLLONESHOT contract the
 * pool relies on. A reported handle stays silent until it is re-armed, whatever arrives
 * meanwhile; re-arming a handle that is still ready reports it again at once (level-triggered);
 * a handle is woken for what it asked for and nothing else (a half-closed peer does not wake a
 * handle waiting to write); and with several threads waiting on one set, every event goes to
 * exactly one of them. And the edge set's ownership word (handle_set_edge.c, test_edge). */
#include "lf/handle_set.h"
#include "test.h"
#include "lf/handle_set_edge.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void ev_write(int fd, uint64_t v)
{
    ssize_t n = write(fd, &v, sizeof(v));
    (void)n;
}

static uint64_t ev_read(int fd)
{
    uint64_t v = 0;
    ssize_t n = read(fd, &v, sizeof(v));
    return n == (ssize_t)sizeof(v) ? v : 0;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const struct event_handler_ops no_ops = { NULL };

/* ---- several threads on one set ----------------------------------------------------------- */

#define HANDLES 32
#define WAITERS 4
#define PRODUCERS 2
#define WRITES_PER_PRODUCER 20000

struct shared_handle {
    struct event_handler eh;
    _Atomic int owner;        /* 0, or the waiter processing it */
    _Atomic uint64_t got;     /* sum of the eventfd values read */
};

static struct handle_set shared;
static struct shared_handle handles[HANDLES];
static _Atomic uint64_t total_got;
static _Atomic unsigned double_owner; /* an event delivered while another thread held it */
static _Atomic bool stop_waiters;
static _Atomic unsigned events_seen[WAITERS];

static void *waiter(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    while (!atomic_load(&stop_waiters)) {
        struct epoll_event ev;
        int n = hs_wait(&shared, &ev, 1, 50);
        if (n != 1)
            continue;
        struct shared_handle *h = ev.data.ptr;
        int expected = 0;
        if (!atomic_compare_exchange_strong(&h->owner, &expected, (int)id + 1))
            atomic_fetch_add(&double_owner, 1);
        atomic_fetch_add(&events_seen[id], 1);
        /* Hold it for a moment while producers keep writing: no other waiter may get it. */
        if (atomic_load(&events_seen[id]) % 16 == 0)
            sched_yield();
        uint64_t v = ev_read(h->eh.fd);
        atomic_fetch_add(&h->got, v);
        atomic_fetch_add(&total_got, v);
        atomic_store(&h->owner, 0);
        hs_rearm(&shared, &h->eh, EPOLLIN);
    }
    return NULL;
}

static void *producer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < WRITES_PER_PRODUCER; i++) {
        seed = seed * 1103515245u + 12345u;
        ev_write(handles[(seed >> 16) % HANDLES].eh.fd, 1);
        if ((i & 255) == 0)
            sched_yield();
    }
    return NULL;
}

static void interrupted(int sig)
{
    (void)sig;
}

struct sleeper {
    struct handle_set *hs;
    _Atomic int result;
    _Atomic bool entered;
};

static void *sleep_in_wait(void *arg)
{
    struct sleeper *s = arg;
    struct epoll_event ev;
    atomic_store(&s->entered, true);
    atomic_store(&s->result, hs_wait(s->hs, &ev, 1, 20000));
    return NULL;
}

/* ---- edge mode: the ownership word ---------------------------------------------------------- */

static void test_edge(void)
{
    struct handle_set hs;
    ok(hs_init(&hs) == 0 && !hs_edge(&hs), "hs_init: EPOLLONESHOT unless asked");
    hs_close(&hs);
    ok(hs_init_edge(&hs) == 0 && hs_edge(&hs), "hs_init_edge: the edge set");
    struct event_handler h = { .fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), .ops = &no_ops };
    struct epoll_event ev[4];
    is_int(hs_add(&hs, &h, EPOLLIN), 0, "edge: hs_add");
    ev_write(h.fd, 1);
    ok(hs_wait(&hs, ev, 4, 1000) == 1 && ev[0].data.ptr == &h, "edge: reported");
    ok(hs_take(&h, ev[0].events), "edge: the first thread takes it");
    ev_write(h.fd, 1); /* becomes ready again while owned: an edge for another thread */
    ok(hs_wait(&hs, ev, 4, 1000) == 1, "edge: reported again while owned (no EPOLLONESHOT)");
    ok(!hs_take(&h, ev[0].events), "edge: a second thread cannot take it; it records 'more'");
    is_int(hs_rearm(&hs, &h, EPOLLIN), HS_KEPT,
           "edge: released off the pool with 'more': still the caller's (HS_KEPT)");
    struct hs_again again = { 0 };
    hs_again_attach(&again);
    is_int(hs_rearm(&hs, &h, EPOLLIN), 0, "edge: released on a pool thread with 'more'");
    struct hs_pending p;
    ok(hs_again_pop(&again, &p) && p.eh == &h && (p.events & EPOLLIN),
       "edge: the owner runs it again (its again list), with the recorded events");
    ok(!hs_again_pop(&again, &p), "edge: once");
    ok(!hs_take(&h, 0), "edge: still owned meanwhile");
    is_int(ev_read(h.fd), 2, "edge: both writes read by the owner");
    is_int(hs_rearm(&hs, &h, EPOLLIN), 0, "edge: released with nothing recorded");
    ok(!hs_again_pop(&again, &p), "edge: not run again");
    is_int(hs_wait(&hs, ev, 4, 50), 0, "edge: drained and released: silent, no re-arm needed");
    ev_write(h.fd, 1);
    ok(hs_wait(&hs, ev, 4, 1000) == 1 && hs_take(&h, ev[0].events),
       "edge: the next write is an edge any thread can take");
    ev_read(h.fd);
    hs_more(&hs, &h, EPOLLIN); /* stopped before draining: no edge would come */
    is_int(hs_rearm(&hs, &h, EPOLLIN), 0, "edge: released after hs_more");
    ok(hs_again_pop(&again, &p) && p.eh == &h, "edge: hs_more runs it again");
    /* A changed interest costs a MOD, which reports what is ready now: an eventfd is
     * writable. */
    is_int(hs_rearm(&hs, &h, EPOLLOUT), 0, "edge: re-armed for writing");
    ok(hs_wait(&hs, ev, 4, 1000) == 1 && (ev[0].events & EPOLLOUT),
       "edge: the MOD of a changed interest reports the ready handle");
    ok(hs_take(&h, ev[0].events), "edge: taken");
    hs_forget(&hs, &h);
    is_int(hs_rearm(&hs, &h, EPOLLIN), -ENOENT, "edge: hs_forget took it out of the set");
    hs_again_attach(NULL);
    hs_again_free(&again);
    close(h.fd);
    hs_close(&hs);
}

int main(void)
{
    test_edge();
    struct handle_set hs;
    ok(hs_init(&hs) == 0 && hs.epfd >= 0, "hs_init");

    /* One handle, reported once. */
    struct event_handler a = { .fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), .ops = &no_ops };
    is_int(hs_add(&hs, &a, EPOLLIN), 0, "hs_add an eventfd");
    is_int(hs_add(&hs, &a, EPOLLIN), -EEXIST, "hs_add twice: -EEXIST");
    struct epoll_event ev[4];
    is_int(hs_wait(&hs, ev, 4, 0), 0, "nothing ready: no event");
    ev_write(a.fd, 1);
    int n = hs_wait(&hs, ev, 4, 1000);
    ok(n == 1 && ev[0].data.ptr == &a && (ev[0].events & EPOLLIN), "ready: one event, data.ptr "
       "is the event handler");
    /* ONESHOT: still readable, more data arrives, but no second event until re-armed. */
    ev_write(a.fd, 1);
    is_int(hs_wait(&hs, ev, 4, 50), 0, "reported handle stays silent though still ready");
    /* Level-triggered re-arm: data left unread is reported again at once. */
    is_int(hs_rearm(&hs, &a, EPOLLIN), 0, "hs_rearm");
    n = hs_wait(&hs, ev, 4, 1000);
    ok(n == 1 && ev[0].data.ptr == &a, "re-armed while still ready: reported again at once");
    is_int(ev_read(a.fd), 2, "both writes were kept for the reader");
    is_int(hs_rearm(&hs, &a, EPOLLIN), 0, "re-armed after draining");
    is_int(hs_wait(&hs, ev, 4, 50), 0, "drained and re-armed: silent");
    /* The edge set's duties cost nothing here: level-triggered, the kernel keeps the state. */
    ev_write(a.fd, 1);
    ok(hs_wait(&hs, ev, 4, 1000) == 1, "reported");
    hs_more(&hs, &a, EPOLLIN);
    is_int(atomic_load(&a.hs_word), 0, "hs_more on the textbook set: nothing recorded");
    is_int(hs_rearm(&hs, &a, EPOLLIN), 0, "re-armed, not drained");
    ok(hs_wait(&hs, ev, 4, 1000) == 1, "what is left is reported again without hs_more");
    hs_forget(&hs, &a);
    is_int(hs_rearm(&hs, &a, EPOLLIN), 0, "hs_forget on the textbook set: still registered");
    is_int(ev_read(a.fd), 1, "drained");
    ev_write(a.fd, 5);
    n = hs_wait(&hs, ev, 4, 1000);
    ok(n == 1 && ev[0].data.ptr == &a, "new data after the re-arm: reported");

    /* A changed interest on re-arm. */
    int sp[2];
    ok(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) == 0, "socketpair");
    struct event_handler s = { .fd = sp[0], .ops = &no_ops };
    is_int(hs_add(&hs, &s, EPOLLIN), 0, "hs_add a socket for reading");
    is_int(hs_wait(&hs, ev, 4, 50), 0, "a socket with nothing to read: silent");
    is_int(hs_rearm(&hs, &s, EPOLLOUT), 0, "re-armed for writing");
    n = hs_wait(&hs, ev, 4, 1000);
    ok(n == 1 && ev[0].data.ptr == &s && (ev[0].events & EPOLLOUT) && !(ev[0].events & EPOLLIN),
       "EPOLLOUT reported (and not EPOLLIN)");
    /* A half-closed peer: reported as exactly what the handle asked for. */
    shutdown(sp[1], SHUT_WR);
    is_int(hs_rearm(&hs, &s, EPOLLIN), 0, "re-armed for reading");
    n = hs_wait(&hs, ev, 4, 1000);
    ok(n == 1 && ev[0].data.ptr == &s && (ev[0].events & EPOLLIN) &&
           !(ev[0].events & EPOLLRDHUP),
       "the peer's half-close wakes a reader (EPOLLIN, no EPOLLRDHUP it did not ask for)");
    is_int(hs_rearm(&hs, &s, EPOLLIN | EPOLLRDHUP), 0, "re-armed for reading and hang-ups");
    n = hs_wait(&hs, ev, 4, 1000);
    ok(n == 1 && ev[0].data.ptr == &s && (ev[0].events & EPOLLRDHUP),
       "asked for, the half-close is reported as EPOLLRDHUP");
    /* Waiting only to write, with the socket buffer full and the peer half-closed and not
     * reading: silent (a hang-up it did not ask for would report it at every re-arm). */
    char junk[4096];
    memset(junk, 'j', sizeof(junk));
    while (write(sp[0], junk, sizeof(junk)) > 0)
        ;
    is_int(hs_rearm(&hs, &s, EPOLLOUT), 0, "re-armed for writing with the buffer full");
    is_int(hs_wait(&hs, ev, 4, 50), 0, "a writer is not woken by the peer's half-close");

    /* Deleted handles are never reported; re-arming one fails. */
    is_int(hs_del(&hs, &a), 0, "hs_del");
    ev_write(a.fd, 1);
    is_int(hs_wait(&hs, ev, 4, 50), 0, "a deleted handle is not reported");
    is_int(hs_rearm(&hs, &a, EPOLLIN), -ENOENT, "re-arming a deleted handle: -ENOENT");
    is_int(hs_del(&hs, &a), -ENOENT, "deleting twice: -ENOENT");
    struct event_handler bad = { .fd = 100000, .ops = &no_ops };
    is_int(hs_add(&hs, &bad, EPOLLIN), -EBADF, "hs_add of a closed descriptor: -EBADF");

    /* A batch: several ready handles in one wait, each once. */
    struct event_handler b[3];
    for (int i = 0; i < 3; i++) {
        b[i] = (struct event_handler){ .fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC),
                                       .ops = &no_ops };
        hs_add(&hs, &b[i], EPOLLIN);
    }
    n = hs_wait(&hs, ev, 4, 1000);
    bool each_once = n == 3;
    for (int i = 0; i < n && each_once; i++)
        for (int j = i + 1; j < n; j++)
            each_once &= ev[i].data.ptr != ev[j].data.ptr;
    ok(each_once, "three ready handles: three events in one wait, each handle once (%d)", n);
    is_int(hs_wait(&hs, ev, 4, 50), 0, "and then none: all three disarmed");

    /* EINTR: a signal that interrupts the wait returns 0 (not an error). */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = interrupted; /* no SA_RESTART (epoll_wait is never restarted anyway) */
    sigaction(SIGUSR1, &sa, NULL);
    struct sleeper sl = { .hs = &hs, .result = -1 };
    pthread_t st;
    pthread_create(&st, NULL, sleep_in_wait, &sl);
    while (!atomic_load(&sl.entered))
        sched_yield();
    /* The thread may not be inside epoll_wait yet: signal until it has returned. */
    int64_t give_up = mono_ms() + 10000;
    while (atomic_load(&sl.result) == -1 && mono_ms() < give_up) {
        pthread_kill(st, SIGUSR1);
        usleep(10000);
    }
    pthread_join(st, NULL);
    is_int(atomic_load(&sl.result), 0, "a signal during hs_wait: 0 events, no error");

    for (int i = 0; i < 3; i++)
        close(b[i].fd);
    close(a.fd);
    close(sp[0]);
    close(sp[1]);
    hs_close(&hs);
    is_int(hs.epfd, -1, "hs_close");

    /* Several waiters, one set, handles written concurrently: each event to exactly one
     * thread, and every write is read by someone. */
    ok(hs_init(&shared) == 0, "shared set");
    for (int i = 0; i < HANDLES; i++) {
        handles[i].eh = (struct event_handler){ .fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC),
                                                .ops = &no_ops };
        hs_add(&shared, &handles[i].eh, EPOLLIN);
    }
    pthread_t wt[WAITERS], pt[PRODUCERS];
    for (unsigned i = 0; i < WAITERS; i++)
        pthread_create(&wt[i], NULL, waiter, (void *)(uintptr_t)i);
    for (unsigned i = 0; i < PRODUCERS; i++)
        pthread_create(&pt[i], NULL, producer, (void *)(uintptr_t)(i * 7919 + 1));
    for (unsigned i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    const uint64_t want = (uint64_t)PRODUCERS * WRITES_PER_PRODUCER;
    int64_t deadline = mono_ms() + 30000; /* a lost event would stall: fail, don't hang */
    while (atomic_load(&total_got) < want && mono_ms() < deadline)
        usleep(1000);
    atomic_store(&stop_waiters, true);
    for (unsigned i = 0; i < WAITERS; i++)
        pthread_join(wt[i], NULL);
    is_int(atomic_load(&total_got), want, "every write was read (no event lost)");
    is_int(atomic_load(&double_owner), 0, "no event went to a thread while another held the handle");
    for (int i = 0; i < HANDLES; i++)
        close(handles[i].eh.fd);
    hs_close(&shared);
    return test_done();
}
