/* timer.h — one-shot timers in the handle set: a min-heap behind one timerfd.
 *
 * Used where a response must wait without a thread waiting: the test endpoints' delay and drip
 * (test_endpoints.c), and the CGI script timeout (cgi.c). The heap's earliest deadline is
 * programmed into a timerfd (CLOCK_MONOTONIC, absolute, millisecond resolution) that lives in
 * the shared handle set like every other handle: whichever pool thread leads when it fires
 * pops every entry that is due, re-programs the timerfd for the next one, re-arms the handle
 * (so another thread can take the next expiry at once) and only then runs the callbacks.
 *
 * Ownership: an entry belongs to its owner; while it is scheduled the heap only holds a
 * pointer to it. Once popped, its callback runs exactly once, on the thread that popped it,
 * after the heap lock is released; the callback may schedule the same entry again. All heap
 * state is guarded by one mutex, which also orders the owner's writes before the callback's
 * reads. */
#ifndef LF_TIMER_H
#define LF_TIMER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/clock.h"
#include "lf/event_handler.h"

struct handle_set;
struct worker;

struct timer_entry {
    int64_t due;                 /* timer_now() milliseconds */
    unsigned slot;               /* heap index + 1 while scheduled, 0 otherwise (heap lock) */
    void (*fire)(struct timer_entry *t, struct worker *w);
};

struct timer_heap {
    struct event_handler eh;     /* the timerfd; first member */
    struct handle_set *hs;
    pthread_mutex_t lock;
    struct timer_entry **heap;
    unsigned n, cap;
    int64_t programmed;          /* deadline the timerfd is set to, 0 = disarmed */
};

/* The timers' clock, in milliseconds: the exact clock (base/clock.h; CLOCK_MONOTONIC, the clock
 * of the timerfd they are programmed into), not the coarse one: delays are exact. */
static inline int64_t timer_now(void)
{
    return clock_exact_ms();
}

/* Create the timerfd and register it in `hs`. Returns 0 or -errno. */
int timer_init(struct timer_heap *th, struct handle_set *hs);
/* Close the timerfd and drop every scheduled entry (the pool has stopped). */
void timer_destroy(struct timer_heap *th);

/* Schedule `t` (not scheduled now) to fire at timer_now() value `due`. Returns 0 or -ENOMEM.
 * From the moment this returns, the callback may run on another thread. */
int timer_add(struct timer_heap *th, struct timer_entry *t, int64_t due);
/* Unschedule `t`. True when it was removed before firing (its callback will not run); false
 * when it was not scheduled or has already been popped (its callback runs or has run). */
bool timer_cancel(struct timer_heap *th, struct timer_entry *t);
/* Number of scheduled entries (for status pages). */
unsigned timer_pending(struct timer_heap *th);

#endif
