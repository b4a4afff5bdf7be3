/* test_acme_schedule.c — unit tests for server/acme/schedule.c: renewal time, backoff bounds
 * and Retry-After. */
#include "acme/schedule.h"
#include "test.h"

#include <stdint.h>

#define DAY (24 * 3600)

static void renewal(void)
{
    /* a 90-day certificate: renewed 60 days in, 30 days before its end */
    is_int(schedule_renew_at(1000, 1000 + 90 * DAY), 1000 + 60 * DAY, "90 days: at day 60");
    is_int(schedule_renew_at(0, 6 * DAY), 4 * DAY, "6 days: at day 4");
    is_int(schedule_renew_at(0, 3), 2, "3 s: at 2 s");
    is_int(schedule_renew_at(500, 500), 500, "no lifetime: now");
    is_int(schedule_renew_at(500, 100), 500, "backwards: at its start, not before");
    /* pebble's 5-year certificates must not overflow */
    is_int(schedule_renew_at(1800000000LL, 1800000000LL + 157766400LL),
           1800000000LL + 157766400LL / 3 * 2, "5 years");
}

static void backoff(void)
{
    static const uint32_t rnds[] = {0, 1, 7, 12345, 0x7fffffff, 0xffffffff};
    unsigned a, i, d, bad = 0;

    for (a = 0; a < 40; a++)
        for (i = 0; i < sizeof(rnds) / sizeof(rnds[0]); i++) {
            d = schedule_backoff(a, 60, 86400, rnds[i]);
            if (d < 60 || d > 86400)
                bad++;
        }
    is_int(bad, 0, "always within [min, max], for any attempt and randomness");
    is_int(schedule_backoff(0, 60, 86400, 0), 60, "first retry, least jitter: min");
    is_int(schedule_backoff(0, 60, 86400, 30), 60, "first retry: never below min");
    is_int(schedule_backoff(3, 60, 86400, 0), 240, "4th retry, least: half of 480");
    is_int(schedule_backoff(3, 60, 86400, 240), 480, "4th retry, most: 480");
    is_int(schedule_backoff(1000, 60, 86400, 0xffffffff) <= 86400, 1, "huge attempt: capped");
    is_int(schedule_backoff(1000, 60, 86400, 0) >= 43200, 1, "capped, and at least half the cap");
    for (a = 0; a < 20; a++) {
        /* the doubling: 1, 2, 4, 4, ... */
        unsigned cap = a >= 2 ? 4 : 1u << a;
        d = schedule_backoff(a, 1, 4, 0xffffffff);
        if (d < 1 || d > cap)
            bad++;
    }
    is_int(bad, 0, "the end-to-end test's settings (1..4 s): doubled, then capped");
    is_int(schedule_backoff(0, 0, 0, 5), 1, "zero settings: 1 s, never a busy loop");
    is_int(schedule_backoff(2, 10, 5, 0), 10, "max below min: min wins");
}

static void retry_after(void)
{
    is_int(schedule_retry_after("120", 0, 3600), 120, "delta-seconds");
    is_int(schedule_retry_after("0", 0, 3600), 0, "zero");
    is_int(schedule_retry_after("999999999999999999999", 0, 3600), 3600, "huge: clamped");
    is_int(schedule_retry_after("7200", 0, 3600), 3600, "clamped to the max");
    is_int(schedule_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 60, 3600), 60,
           "an HTTP-date, a minute away");
    is_int(schedule_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 + 60, 3600), 0,
           "an HTTP-date in the past: now");
    is_int(schedule_retry_after("12abc", 0, 3600), -1, "junk after digits");
    is_int(schedule_retry_after("-5", 0, 3600), -1, "negative");
    is_int(schedule_retry_after("soon", 0, 3600), -1, "not a date");
    is_int(schedule_retry_after("", 0, 3600), -1, "empty");
    is_int(schedule_retry_after(NULL, 0, 3600), -1, "absent");
}

static void ari_window(void)
{
    time_t t = 0;
    unsigned i, bad = 0;

    is_int(schedule_rfc3339("2026-09-01T00:00:00Z", &t), 0, "RFC 3339");
    is_int(t, 1788220800, "its time");
    is_int(schedule_rfc3339("2026-09-01T00:00:00.123456Z", &t), 0, "fractional seconds");
    is_int(t, 1788220800, "dropped");
    is_int(schedule_rfc3339("2026-09-01T00:00:00+00:00", &t), 0, "+00:00");
    is_int(schedule_rfc3339("2026-09-01T00:00:00+02:00", &t), -1, "another offset: refused");
    is_int(schedule_rfc3339("2026-09-01 00:00:00Z", &t), -1, "a space for the T");
    is_int(schedule_rfc3339("2026-09-01T00:00:00Zjunk", &t), -1, "trailing junk");
    is_int(schedule_rfc3339("tomorrow", &t), -1, "not a time");
    is_int(schedule_rfc3339(NULL, &t), -1, "absent");
    for (i = 0; i < 1000; i++) {
        time_t w = schedule_in_window(1000, 2000, i * 2654435761u);
        bad += w < 1000 || w >= 2000;
    }
    is_int(bad, 0, "a point inside [start, end), whatever the randomness");
    is_int(schedule_in_window(500, 500, 7), 500, "an empty window: its start");
    is_int(schedule_in_window(500, 100, 7), 500, "a backwards window: its start");
}

int main(void)
{
    ari_window();
    renewal();
    backoff();
    retry_after();
    return done_testing();
}
