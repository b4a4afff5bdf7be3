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

#endif
