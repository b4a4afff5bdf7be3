/* test_timer.c — unit tests for server/lf/timer.c: order, cancel, re-scheduling, precision */
#include "lf/handle_set.h"
#include "test.h"
#include "lf/thread_pool.h"
#include "lf/timer.h"

#include <stdlib.h>
#include <string.h>

struct probe {
    struct timer_entry t;
    int id;
    int64_t fired_at;
    int fired;
};

static int order[16];
static int norder;
static int nmany;

static void fire_many(struct timer_entry *t, struct worker *w)
{
    (void)t;
    (void)w;
    nmany++;
}

static void fire(struct timer_entry *t, struct worker *w)
{
    struct probe *p = (struct probe *)t;
    (void)w;
    p->fired++;
    p->fired_at = timer_now();
    order[norder++] = p->id;
}

/* Wait for the timer handle and dispatch its events until `n` callbacks ran or 3 s pass. */
static void run_until(struct handle_set *hs, int n)
{
    struct worker w;
    memset(&w, 0, sizeof(w));
    int64_t end = timer_now() + 3000;
    while (norder < n && timer_now() < end) {
        struct epoll_event ev[4];
        int k = hs_wait(hs, ev, 4, 100);
        for (int i = 0; i < k; i++) {
            struct event_handler *eh = ev[i].data.ptr;
            eh->ops->handle_event(eh, ev[i].events, &w);
        }
    }
}

int main(void)
{
    struct handle_set hs;
    struct timer_heap th;
    ok(hs_init(&hs) == 0, "handle set");
    ok(timer_init(&th, &hs) == 0, "timer");

    struct probe p[8];
    memset(p, 0, sizeof(p));
    int64_t t0 = timer_now();
    int delays[8] = { 80, 20, 60, 40, 100, 10, 70, 30 };
    for (int i = 0; i < 8; i++) {
        p[i].t.fire = fire;
        p[i].id = i;
        ok(timer_add(&th, &p[i].t, t0 + delays[i]) == 0, "add %d ms", delays[i]);
    }
    is_int(timer_pending(&th), 8, "8 pending");
    ok(timer_cancel(&th, &p[2].t), "cancel a scheduled entry");
    ok(!timer_cancel(&th, &p[2].t), "cancel twice: false");
    is_int(timer_pending(&th), 7, "7 pending");
    run_until(&hs, 7);
    is_int(norder, 7, "7 fired");
    static const int want[7] = { 5, 1, 7, 3, 6, 0, 4 };
    int good = 1;
    for (int i = 0; i < 7; i++)
        good &= order[i] == want[i];
    ok(good, "fired in deadline order");
    is_int(p[2].fired, 0, "the cancelled entry never fired");
    for (int i = 0; i < 8; i++)
        if (i != 2)
            ok(p[i].fired_at >= t0 + delays[i] && p[i].fired_at < t0 + delays[i] + 250,
               "entry %d fired at +%lld ms (due +%d)", i, (long long)(p[i].fired_at - t0),
               delays[i]);
    ok(!timer_cancel(&th, &p[0].t), "cancel after firing: false");

    /* Re-schedule from nothing, and an earlier entry added after a later one. */
    norder = 0;
    t0 = timer_now();
    ok(timer_add(&th, &p[0].t, t0 + 200) == 0 && timer_add(&th, &p[1].t, t0 + 20) == 0,
       "re-add");
    run_until(&hs, 1);
    ok(norder == 1 && order[0] == 1 && timer_now() - t0 < 190, "the earlier one fires first");
    run_until(&hs, 2);
    ok(norder == 2 && order[1] == 0, "then the later one");

    /* Many entries due at once. */
    static struct probe many[300];
    t0 = timer_now();
    for (int i = 0; i < 300; i++) {
        many[i].t.fire = fire_many;
        many[i].id = 1;
        timer_add(&th, &many[i].t, t0 + 5);
    }
    struct worker w;
    memset(&w, 0, sizeof(w));
    int events = 0;
    int64_t end = timer_now() + 3000;
    while (nmany < 300 && timer_now() < end) {
        struct epoll_event ev[4];
        int k = hs_wait(&hs, ev, 4, 100);
        for (int i = 0; i < k; i++) {
            struct event_handler *eh = ev[i].data.ptr;
            eh->ops->handle_event(eh, ev[i].events, &w);
            events++;
        }
    }
    is_int(nmany, 300, "300 entries due at once all fire");
    ok(events >= 3, "over several events (%d), a batch each", events);
    timer_destroy(&th);
    hs_close(&hs);
    return test_done();
}
