/* schedule.c — renewal time, backoff and Retry-After (schedule.h). */
#include "acme/schedule.h"

#include "http/http_date.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RENEW_NUM 2
#define RENEW_DEN 3
/* 2^MAX_DOUBLINGS * min_s overflows nothing a 32-bit unsigned holds for sane minimums. */
#define MAX_DOUBLINGS 20

time_t schedule_renew_at(time_t not_before, time_t not_after)
{
    if (not_after <= not_before)
        return not_before;
    return not_before + (not_after - not_before) / RENEW_DEN * RENEW_NUM;
}

unsigned schedule_backoff(unsigned attempt, unsigned min_s, unsigned max_s, uint32_t rnd)
{
    uint64_t d = min_s ? min_s : 1;
    unsigned i, half;

    if (max_s < d)
        max_s = (unsigned)d;
    for (i = 0; i < attempt && i < MAX_DOUBLINGS && d < max_s; i++)
        d *= 2;
    if (d > max_s)
        d = max_s;
    /* Equal jitter: half of the delay is fixed, the other half random, so processes that
     * failed together (a CA outage) do not come back together. */
    half = (unsigned)(d / 2);
    d = half + rnd % ((unsigned)d - half + 1);
    if (d < min_s)
        d = min_s;
    return (unsigned)(d > max_s ? max_s : d);
}

long schedule_retry_after(const char *value, time_t now, long max_s)
{
    time_t t;
    char *end;
    long s;

    if (!value || !*value)
        return -1;
    if (isdigit((unsigned char)value[0])) {
        s = strtol(value, &end, 10);
        if (*end != '\0' || s < 0)
            return -1;
    } else if (http_date_parse(value, strlen(value), &t) == 0) {
        s = t > now ? (long)(t - now) : 0;
    } else {
        return -1;
    }
    return s > max_s ? max_s : s;
}

int schedule_rfc3339(const char *s, time_t *t)
{
    struct tm tm = {0};
    const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;

    if (!p || !isdigit((unsigned char)s[0]))
        return -1;
    if (*p == '.') /* fractional seconds: dropped */
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    if (strcmp(p, "Z") != 0 && strcmp(p, "z") != 0 && strcmp(p, "+00:00") != 0)
        return -1;
    *t = timegm(&tm);
    return 0;
}

time_t schedule_in_window(time_t start, time_t end, uint32_t rnd)
{
    if (end <= start)
        return start;
    return start + (time_t)(rnd % (uint64_t)(end - start));
}
