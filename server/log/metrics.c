/* metrics.c — per-thread labelled counters, summed at scrape time; see metrics.h. */
#include "log/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llhttp.h>

#include "base/clock.h"

#define MX_MAX_TABLES 1100 /* threads (at most 1024) and the reactor, with room to spare */

const char *const mx_method_names[MX_NMETHODS] = {
    "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE", "OTHER",
};

/* The statuses with a slot of their own, in slot order; then 1xx..5xx and other. */
const char *const mx_code_names[] = {
    "200", "201", "202", "204", "206", "301", "302", "303", "304", "307", "308",
    "400", "401", "403", "404", "405", "406", "408", "409", "410", "411", "412", "413", "414",
    "415", "416", "417", "421", "422", "429", "431", "499",
    "500", "501", "502", "503", "504", "505",
    "1xx", "2xx", "3xx", "4xx", "5xx", "other",
};
#define MX_CODE_CLASS 38 /* slot of "1xx" */

const double mx_bucket_bounds[MX_NBUCKETS - 1] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};
static const uint64_t bucket_ns[MX_NBUCKETS - 1] = {
    500000, 1000000, 2500000, 5000000, 10000000, 25000000, 50000000, 100000000, 250000000,
    500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};

/* status -> slot + 1 for the statuses of the table (0: counted in its class) */
static uint8_t code_slot[600];
static pthread_once_t code_once = PTHREAD_ONCE_INIT;

static void code_init(void)
{
    for (unsigned i = 0; i < MX_CODE_CLASS; i++)
        code_slot[atoi(mx_code_names[i])] = (uint8_t)(i + 1);
}

static __thread struct mx_table *self; /* this thread's table; NULL outside the pool */
static struct mx_table shared;         /* everyone else's, with atomic adds */
static struct mx_table *tables[MX_MAX_TABLES];
static _Atomic unsigned ntables;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* attach, and the names */

static char names[MX_VHOSTS][MX_NAME_MAX];
static _Atomic unsigned nnames;

int mx_thread_attach(void)
{
    pthread_once(&code_once, code_init);
    struct mx_table *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load_explicit(&ntables, memory_order_relaxed);
    if (n == MX_MAX_TABLES) {
        pthread_mutex_unlock(&lock);
        free(t);
        return -ENOMEM; /* the thread counts into the shared table */
    }
    tables[n] = t;
    atomic_store_explicit(&ntables, n + 1, memory_order_release);
    pthread_mutex_unlock(&lock);
    self = t;
    return 0;
}

void mx_free_all(void)
{
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load_explicit(&ntables, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++) {
        free(tables[i]);
        tables[i] = NULL;
    }
    atomic_store_explicit(&ntables, 0, memory_order_release);
    pthread_mutex_unlock(&lock);
    self = NULL; /* the caller (the main thread, which ran in the pool) counts into the shared one */
}

uint8_t mx_vhost_slot(const char *name)
{
    if (!name || !name[0])
        return MX_VH_DEFAULT;
    uint8_t slot = MX_VH_OTHER;
    pthread_mutex_lock(&lock);
    unsigned n = atomic_load_explicit(&nnames, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++)
        if (!strcmp(names[i], name)) {
            slot = (uint8_t)i;
            goto out;
        }
    if (n < MX_VHOSTS && strlen(name) < MX_NAME_MAX) {
        snprintf(names[n], MX_NAME_MAX, "%s", name);
        atomic_store_explicit(&nnames, n + 1, memory_order_release); /* the name, then the count */
        slot = (uint8_t)n;
    }
out:
    pthread_mutex_unlock(&lock);
    return slot;
}

const char *mx_vhost_name(unsigned v)
{
    if (v < MX_VHOSTS)
        return v < atomic_load_explicit(&nnames, memory_order_acquire) ? names[v] : NULL;
    return v == MX_VH_DEFAULT ? "default" : v == MX_VH_OTHER ? "other" : "admin";
}

uint8_t mx_method_slot(int method)
{
    switch (method) {
    case HTTP_GET: return 0;
    case HTTP_HEAD: return 1;
    case HTTP_POST: return 2;
    case HTTP_PUT: return 3;
    case HTTP_DELETE: return 4;
    case HTTP_OPTIONS: return 5;
    case HTTP_PATCH: return 6;
    case HTTP_CONNECT: return 7;
    case HTTP_TRACE: return 8;
    default: return MX_NMETHODS - 1;
    }
}

uint64_t mx_now_ns(void)
{
    return clock_exact_ns();
}

static __thread uint64_t event_ns; /* this pool thread's current batch of events */

void mx_event_begin(void)
{
    event_ns = mx_now_ns();
}

uint64_t mx_event_ns(void)
{
    return event_ns ? event_ns : mx_now_ns();
}

/* One writer per table: a load and a store, no read-modify-write instruction. */
static inline void bump(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

void mx_count(uint8_t vhost, uint8_t method, int status, uint64_t bytes, uint64_t ns)
{
    unsigned code;
    if (status >= 100 && status < 600) {
        code = code_slot[status];
        code = code ? code - 1 : MX_CODE_CLASS + (unsigned)status / 100 - 1;
    } else {
        code = MX_NCODES - 1;
    }
    unsigned b = 0;
    while (b < MX_NBUCKETS - 1 && ns > bucket_ns[b])
        b++;
    struct mx_table *t = self;
    if (t) {
        bump(&t->requests[vhost][method][code], 1);
        bump(&t->bytes[vhost], bytes);
        bump(&t->duration[b], 1);
        bump(&t->duration_ns, ns);
        return;
    }
    pthread_once(&code_once, code_init);
    t = &shared;
    atomic_fetch_add_explicit(&t->requests[vhost][method][code], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->bytes[vhost], bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->duration[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->duration_ns, ns, memory_order_relaxed);
}

void mx_count_tls(bool resumed)
{
    struct mx_table *t = self;
    if (t) {
        bump(&t->tls_handshakes, 1);
        bump(&t->tls_resumed, resumed);
    } else {
        atomic_fetch_add_explicit(&shared.tls_handshakes, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&shared.tls_resumed, resumed, memory_order_relaxed);
    }
}

static void add_table(struct mx_totals *s, struct mx_table *t)
{
    for (unsigned v = 0; v < MX_NVHOSTS; v++) {
        for (unsigned m = 0; m < MX_NMETHODS; m++)
            for (unsigned c = 0; c < MX_NCODES; c++)
                s->requests[v][m][c] +=
                    atomic_load_explicit(&t->requests[v][m][c], memory_order_relaxed);
        s->bytes[v] += atomic_load_explicit(&t->bytes[v], memory_order_relaxed);
    }
    for (unsigned b = 0; b < MX_NBUCKETS; b++)
        s->duration[b] += atomic_load_explicit(&t->duration[b], memory_order_relaxed);
    s->duration_ns += atomic_load_explicit(&t->duration_ns, memory_order_relaxed);
    s->tls_handshakes += atomic_load_explicit(&t->tls_handshakes, memory_order_relaxed);
    s->tls_resumed += atomic_load_explicit(&t->tls_resumed, memory_order_relaxed);
}

void mx_sum(struct mx_totals *t)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_lock(&lock); /* against mx_free_all at exit */
    unsigned n = atomic_load_explicit(&ntables, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        add_table(t, tables[i]);
    pthread_mutex_unlock(&lock);
    add_table(t, &shared);
}

_Static_assert(sizeof(mx_code_names) / sizeof(mx_code_names[0]) == MX_NCODES && MX_CODE_CLASS + 6 == MX_NCODES,
               "the status table, its classes and other fill MX_NCODES");
_Static_assert(sizeof(struct mx_table) == 236520, "the size metrics.h and README.md state");
