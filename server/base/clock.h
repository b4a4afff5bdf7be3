/* clock.h — the monotonic clocks, in the units their callers count in.
 *
 * Two clocks. The coarse one (CLOCK_MONOTONIC_COARSE) is the kernel's last tick read from the
 * vDSO, a few nanoseconds a read at a few milliseconds' resolution: what timeouts, retries,
 * debounces and rate limits need, and cheap enough to read per request. The exact one
 * (CLOCK_MONOTONIC) costs a little more and is what durations that are measured or slept to the
 * millisecond need: latency histograms, short deadlines, timers. A time from one clock is never
 * compared with a time from the other. */
#ifndef LF_CLOCK_H
#define LF_CLOCK_H

#include <stdint.h>
#include <time.h>

#define CLOCK_MS_PER_S 1000
#define CLOCK_NS_PER_US 1000
#define CLOCK_NS_PER_MS 1000000
#define CLOCK_NS_PER_S UINT64_C(1000000000)

/* Nanoseconds on `id`. */
static inline uint64_t clock_ns_on(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * CLOCK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Coarse milliseconds. */
static inline int64_t clock_now_ms(void)
{
    return (int64_t)(clock_ns_on(CLOCK_MONOTONIC_COARSE) / CLOCK_NS_PER_MS);
}

/* Coarse nanoseconds (a multiple of the tick). */
static inline uint64_t clock_now_ns(void)
{
    return clock_ns_on(CLOCK_MONOTONIC_COARSE);
}

/* Exact milliseconds. */
static inline int64_t clock_exact_ms(void)
{
    return (int64_t)(clock_ns_on(CLOCK_MONOTONIC) / CLOCK_NS_PER_MS);
}

/* Exact nanoseconds. */
static inline uint64_t clock_exact_ns(void)
{
    return clock_ns_on(CLOCK_MONOTONIC);
}

/* The exact clock `ms` milliseconds from now, as a timespec: the deadline of a
 * pthread_cond_timedwait() whose condition variable waits on CLOCK_MONOTONIC
 * (pthread_condattr_setclock). */
static inline struct timespec clock_deadline_ts(uint64_t ms)
{
    uint64_t ns = clock_exact_ns() + ms * CLOCK_NS_PER_MS;
    return (struct timespec){ .tv_sec = (time_t)(ns / CLOCK_NS_PER_S),
                              .tv_nsec = (long)(ns % CLOCK_NS_PER_S) };
}

#endif
