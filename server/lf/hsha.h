/* hsha.h — the half-sync-half-async strategy's queue, as seen from outside (hsha.c). */
#ifndef LF_HSHA_H
#define LF_HSHA_H

#include <stdbool.h>

#include "lf/thread_pool.h"

struct hsha_queue_state {
    unsigned count;                  /* events queued */
    unsigned cap;
    unsigned waiting;                /* workers waiting for one */
};

/* The queue between the reactor and the workers, read under its lock. False: `tp` runs
 * another strategy (no queue). */
bool hsha_queue_state(struct thread_pool *tp, struct hsha_queue_state *out);

#endif
