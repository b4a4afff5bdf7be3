/* test_clock.c — unit tests for server/base/clock.h: each clock is monotonic, its units are
 * what its name says, and the coarse clock stays within a tick or so of the exact one. */
#include "base/clock.h"
#include "test.h"

#include <stdint.h>
#include <time.h>

#define SLEEP_MS 30
#define SLACK_MS 20 /* a coarse tick (up to 10 ms at HZ=100) plus scheduling noise */
#define READS 100000

static void sleep_ms(long ms)
{
    struct timespec ts = { 0, ms * CLOCK_NS_PER_MS };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(void)
{
    bool mono = true;
    int64_t ms = clock_now_ms(), xms = clock_exact_ms();
    uint64_t ns = clock_now_ns(), xns = clock_exact_ns();
    for (int i = 0; i < READS && mono; i++) {
        int64_t ms2 = clock_now_ms(), xms2 = clock_exact_ms();
        uint64_t ns2 = clock_now_ns(), xns2 = clock_exact_ns();
        mono = ms2 >= ms && xms2 >= xms && ns2 >= ns && xns2 >= xns;
        ms = ms2, xms = xms2, ns = ns2, xns = xns2;
    }
    ok(mono, "no clock ever goes back");

    int64_t c0 = clock_now_ms(), x0 = clock_exact_ms();
    uint64_t cn0 = clock_now_ns(), xn0 = clock_exact_ns();
    sleep_ms(SLEEP_MS);
    int64_t c1 = clock_now_ms(), x1 = clock_exact_ms();
    uint64_t cn1 = clock_now_ns(), xn1 = clock_exact_ns();
    ok(x1 - x0 >= SLEEP_MS && x1 - x0 < SLEEP_MS + 1000, "exact ms: a sleep of %d ms (%lld)",
       SLEEP_MS, (long long)(x1 - x0));
    ok(c1 - c0 >= SLEEP_MS - SLACK_MS && c1 - c0 < SLEEP_MS + 1000,
       "coarse ms: the same sleep within a tick (%lld)", (long long)(c1 - c0));
    ok(xn1 - xn0 >= (uint64_t)SLEEP_MS * CLOCK_NS_PER_MS, "exact ns counts nanoseconds");
    ok(cn1 - cn0 >= (uint64_t)(SLEEP_MS - SLACK_MS) * CLOCK_NS_PER_MS,
       "coarse ns counts nanoseconds");

    /* Each read between two reads of the other: true however long the test is preempted. */
    int64_t before = clock_exact_ms(), xn = (int64_t)(clock_exact_ns() / CLOCK_NS_PER_MS);
    int64_t after = clock_exact_ms();
    ok(before <= xn && xn <= after, "exact ns and ms read the same clock");
    before = clock_now_ms();
    int64_t cn = (int64_t)(clock_now_ns() / CLOCK_NS_PER_MS);
    after = clock_now_ms();
    ok(before <= cn && cn <= after, "coarse ns and ms read the same clock");
    before = clock_exact_ms();
    int64_t c = clock_now_ms();
    after = clock_exact_ms();
    ok(before - SLACK_MS <= c && c <= after, "the coarse clock is at most a tick behind (%lld ms)",
       (long long)(before - c));

    /* A deadline on the exact clock, normalised: between now + ms read before and after. */
    uint64_t lo = clock_exact_ns() + 1500 * (uint64_t)CLOCK_NS_PER_MS;
    struct timespec ts = clock_deadline_ts(1500);
    uint64_t hi = clock_exact_ns() + 1500 * (uint64_t)CLOCK_NS_PER_MS;
    uint64_t at = (uint64_t)ts.tv_sec * CLOCK_NS_PER_S + (uint64_t)ts.tv_nsec;
    ok(ts.tv_nsec >= 0 && ts.tv_nsec < (long)CLOCK_NS_PER_S, "clock_deadline_ts: tv_nsec in range");
    ok(lo <= at && at <= hi, "clock_deadline_ts: 1500 ms from now on the exact clock");
    return done_testing();
}
