/* test_timer_threads.c — server/lf/timer.c under concurrent use: several threads add and cancel
 * entries while a Leader/Followers pool (thread_pool.c) fires them, and some callbacks schedule
 * their entry again. Checked: every entry fires exactly once per scheduling unless a cancel
 * returned true (then never), never before its deadline; the heap stays a heap with every
 * entry's slot pointing at itself (checked under the heap lock while all this goes on); nothing
 * is left pending at the end. */
#include "lf/handle_set.h"
#include "test.h"
#include "lf/thread_pool.h"
#include "lf/timer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define ADDERS 4
#define PER_ADDER 2000
#define STALL_MS 30000 /* a failure bound: what should happen at once and has not is a hang */

struct probe {
    struct timer_entry t;      /* first member */
    int64_t due;               /* the deadline of the current scheduling */
    _Atomic int fired;
    _Atomic int early;         /* fired before its deadline */
    bool again;                /* schedules itself once more from its callback */
    _Atomic bool cancelled;    /* a cancel returned true */
};

static struct timer_heap th;
static struct probe probes[ADDERS][PER_ADDER];
static _Atomic uint64_t fired_total;
static _Atomic unsigned add_errors;
static _Atomic bool stop_checker;
static _Atomic unsigned heap_bad;
static _Atomic unsigned heap_checks;

static void on_fire(struct timer_entry *t, struct worker *w)
{
    struct probe *p = (struct probe *)t;
    (void)w;
    if (timer_now() < p->due)
        atomic_fetch_add(&p->early, 1);
    int n = atomic_fetch_add(&p->fired, 1) + 1;
    if (p->again && n == 1) {
        p->due = timer_now() + 3;
        if (timer_add(&th, &p->t, p->due) < 0)
            atomic_fetch_add(&add_errors, 1);
    }
    atomic_fetch_add(&fired_total, 1);
}

static void *adder(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    uint32_t x = 0x9e3779b9u * (id + 1);
    for (unsigned i = 0; i < PER_ADDER; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        struct probe *p = &probes[id][i];
        p->t.fire = on_fire;
        p->again = (x & 7) == 0;
        p->due = timer_now() + (int64_t)(x % 40);
        if (timer_add(&th, &p->t, p->due) < 0)
            atomic_fetch_add(&add_errors, 1);
        /* Cancel one in five: some before they fire, some racing with the pop. */
        if ((x >> 8) % 5 == 0 && !p->again && timer_cancel(&th, &p->t))
            atomic_store(&p->cancelled, true);
        if ((i & 63) == 0)
            usleep(200);
    }
    return NULL;
}

/* Under the heap lock: the heap property, and slots that point back at their entries. */
static void *checker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_checker)) {
        pthread_mutex_lock(&th.lock);
        for (unsigned i = 0; i < th.n; i++) {
            if (th.heap[i]->slot != i + 1)
                atomic_fetch_add(&heap_bad, 1);
            if (i > 0 && th.heap[(i - 1) / 2]->due > th.heap[i]->due)
                atomic_fetch_add(&heap_bad, 1);
        }
        pthread_mutex_unlock(&th.lock);
        atomic_fetch_add(&heap_checks, 1);
        usleep(500);
    }
    return NULL;
}

struct stopper {
    struct event_handler eh;
};

static void on_stop(struct event_handler *eh, uint32_t events, struct worker *w)
{
    (void)eh;
    (void)events;
    (void)w;
}

static const struct event_handler_ops stop_ops = { .handle_event = on_stop };

static struct thread_pool pool;

static void *run_pool(void *arg)
{
    (void)arg;
    tp_run(&pool);
    return NULL;
}

int main(void)
{
    struct handle_set hs;
    ok(hs_init(&hs) == 0, "handle set");
    ok(timer_init(&th, &hs) == 0, "timer heap in the set");
    struct stopper stop = { { .fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), .ops = &stop_ops } };
    hs_add(&hs, &stop.eh, EPOLLIN);
    ok(tp_init(&pool, NULL, CONC_LEADER_FOLLOWERS, &hs, 1, 3, 8) == 0, "a pool of 3 threads");
    pthread_t runner, chk, add[ADDERS];
    pthread_create(&runner, NULL, run_pool, NULL);
    pthread_create(&chk, NULL, checker, NULL);
    for (unsigned i = 0; i < ADDERS; i++)
        pthread_create(&add[i], NULL, adder, (void *)(uintptr_t)i);
    for (unsigned i = 0; i < ADDERS; i++)
        pthread_join(add[i], NULL);

    uint64_t want = 0;
    for (unsigned a = 0; a < ADDERS; a++)
        for (unsigned i = 0; i < PER_ADDER; i++)
            want += atomic_load(&probes[a][i].cancelled) ? 0 : probes[a][i].again ? 2 : 1;
    int64_t end = timer_now() + STALL_MS;
    while (atomic_load(&fired_total) < want && timer_now() < end)
        usleep(1000);
    usleep(100 * 1000); /* anything firing twice would show up in this time too */
    atomic_store(&stop_checker, true);
    pthread_join(chk, NULL);
    tp_stop(&pool);
    uint64_t one = 1;
    ssize_t wr = write(stop.eh.fd, &one, sizeof(one));
    (void)wr;
    pthread_join(runner, NULL);

    is_int(atomic_load(&add_errors), 0, "every timer_add succeeded");
    ok(atomic_load(&fired_total) == want, "%llu callbacks ran, as scheduled and not cancelled "
       "(%llu)", (unsigned long long)want, (unsigned long long)atomic_load(&fired_total));
    unsigned wrong = 0, early = 0, cancelled = 0, again = 0;
    for (unsigned a = 0; a < ADDERS; a++)
        for (unsigned i = 0; i < PER_ADDER; i++) {
            struct probe *p = &probes[a][i];
            int expect = atomic_load(&p->cancelled) ? 0 : p->again ? 2 : 1;
            wrong += atomic_load(&p->fired) != expect;
            early += atomic_load(&p->early);
            cancelled += atomic_load(&p->cancelled);
            again += p->again;
        }
    is_int(wrong, 0, "each entry fired exactly once per scheduling; a cancelled one never");
    is_int(early, 0, "no entry fired before its deadline");
    ok(cancelled > 0 && again > 0, "the run had cancels that won (%u) and callbacks that "
       "scheduled again (%u)", cancelled, again);
    ok(atomic_load(&heap_checks) > 0 && atomic_load(&heap_bad) == 0,
       "the heap stayed a heap with correct slots (%u checks)", atomic_load(&heap_checks));
    is_int(timer_pending(&th), 0, "nothing left pending");
    tp_destroy(&pool);
    timer_destroy(&th);
    close(stop.eh.fd);
    hs_close(&hs);
    return test_done();
}
