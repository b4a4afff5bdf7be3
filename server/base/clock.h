/* clock.h — the process's monotonic clock, in milliseconds: deadlines, ticks and debounces
 * compare times taken here and nowhere else. */
#ifndef LF_CLOCK_H
#define LF_CLOCK_H

#include <stdint.h>
#include <time.h>

#define CLOCK_MS_PER_S 1000
#define CLOCK_NS_PER_MS 1000000

static inline int64_t clock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * CLOCK_MS_PER_S + ts.tv_nsec / CLOCK_NS_PER_MS;
}

#endif
