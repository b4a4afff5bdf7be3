/* schedule.h — when the ACME client acts next: renewal at two thirds of a certificate's
 * lifetime, exponential backoff with jitter after a failure, and a CA's Retry-After.
 * Pure functions; the randomness is the caller's. */
#ifndef LF_ACME_SCHEDULE_H
#define LF_ACME_SCHEDULE_H

#include <stdint.h>
#include <time.h>

/* The moment to renew a certificate valid over [not_before, not_after]: two thirds into it
 * (Caddy's and Let's Encrypt's advice: 30 days before the end of a 90-day certificate). */
time_t schedule_renew_at(time_t not_before, time_t not_after);

/* The delay in seconds before retry number `attempt` (0 = the first retry): min_s doubled per
 * attempt, capped at max_s, then "equal jitter" from `rnd` (a random 32-bit value): a delay in
 * [d/2, d], never below min_s, never above max_s. */
unsigned schedule_backoff(unsigned attempt, unsigned min_s, unsigned max_s, uint32_t rnd);

/* A Retry-After value (delta-seconds or an HTTP-date, RFC 9110 10.2.3) as seconds from `now`,
 * clamped to [0, max_s]; -1 when absent or malformed. */
long schedule_retry_after(const char *value, time_t now, long max_s);

/* An RFC 3339 UTC time as ARI sends it ("2025-01-02T04:00:00Z", fractional seconds
 * allowed, "Z" or "+00:00"). 0, or -1 when malformed. */
int schedule_rfc3339(const char *s, time_t *t);

/* The moment to renew inside an ARI suggested window [start, end) (RFC 9773 4.2): a random
 * point from `rnd`, so that a CA's many clients do not all come at once. */
time_t schedule_in_window(time_t start, time_t end, uint32_t rnd);

#endif
