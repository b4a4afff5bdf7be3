/* access_buffer.c — see access_buffer.h. */
#include "log/access_buffer.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "log/logfile.h"

struct abuf {
    pthread_mutex_t lock;
    struct logfile *lf;     /* whose lines it holds; NULL while empty */
    char *data;
    size_t cap, len;        /* cap: the size it was allocated for (access_log_buffer) */
    uint64_t lines;
    int64_t since;          /* when its first line came (monotonic ms) */
    unsigned flush_ms;      /* the interval of the runtime of its last line */
    _Atomic bool owned;     /* a live thread's */
    struct abuf *next;      /* the registry: set before it is published, never changed */
};

/* Every buffer ever made: a thread's while it lives, then free for the next thread. They are
 * never freed, so walking the list needs no lock; adding to it takes reg_lock. */
static _Atomic(struct abuf *) registry;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Thread_local struct abuf *mine;

static void report(struct logfile *lf, enum logfile_result r, int err, uint64_t lost)
{
    if (lf->report && (r == LOGFILE_FAILING || r == LOGFILE_RECOVERED))
        lf->report(lf->report_arg, r, err, lost);
}

static void write_now(struct logfile *lf, const char *buf, size_t len, uint64_t lines)
{
    int err = 0;
    uint64_t lost = 0;
    enum logfile_result r = logfile_write_lines(lf, buf, len, lines, &err, &lost);
    report(lf, r, err, lost);
}

/* Write what `b` holds (its lock held). */
static void flush_locked(struct abuf *b)
{
    if (b->len)
        write_now(b->lf, b->data, b->len, b->lines);
    b->len = 0;
    b->lines = 0;
    b->lf = NULL;
}

/* A thread ends: its lines go out and its buffer is free for another thread. */
static void on_thread_exit(void *arg)
{
    struct abuf *b = arg;
    pthread_mutex_lock(&b->lock);
    flush_locked(b);
    free(b->data);
    b->data = NULL;
    b->cap = 0;
    pthread_mutex_unlock(&b->lock);
    atomic_store(&b->owned, false);
}

static void make_key(void)
{
    if (pthread_key_create(&exit_key, on_thread_exit) != 0)
        exit_key = (pthread_key_t)-1;
}

/* The calling thread's buffer: a free one, or a new one. NULL without memory. */
static struct abuf *claim(void)
{
    pthread_once(&key_once, make_key);
    pthread_mutex_lock(&reg_lock);
    struct abuf *b = atomic_load(&registry);
    for (bool no = false; b && !atomic_compare_exchange_strong(&b->owned, &no, true); no = false)
        b = b->next;
    if (!b && (b = calloc(1, sizeof(*b)))) {
        pthread_mutex_init(&b->lock, NULL);
        atomic_store(&b->owned, true);
        b->next = atomic_load(&registry);
        atomic_store(&registry, b);
    }
    pthread_mutex_unlock(&reg_lock);
    if (b && exit_key != (pthread_key_t)-1)
        pthread_setspecific(exit_key, b);
    return mine = b;
}

void access_buffer_append(struct logfile *lf, const char *line, size_t len, size_t size,
                          unsigned flush_ms)
{
    struct abuf *b = mine ? mine : claim();
    if (!b) {
        write_now(lf, line, len, 1);
        return;
    }
    pthread_mutex_lock(&b->lock);
    /* Not a regular file: writes of more than PIPE_BUF could interleave with another thread's. */
    size_t cap = atomic_load_explicit(&lf->plain, memory_order_relaxed) && size > PIPE_BUF
                     ? PIPE_BUF : size;
    if (b->lf != lf || b->len + len > cap || b->cap != size)
        flush_locked(b);
    if (b->cap != size) { /* the first line, or a reload changed the size */
        free(b->data);
        b->data = malloc(size);
        b->cap = b->data ? size : 0;
    }
    if (len > cap || !b->data) {
        write_now(lf, line, len, 1); /* under the lock: after the lines before it */
    } else {
        if (!b->len) {
            b->lf = lf;
            b->since = clock_now_ms();
        }
        memcpy(b->data + b->len, line, len);
        b->len += len;
        b->lines++;
        b->flush_ms = flush_ms;
    }
    pthread_mutex_unlock(&b->lock);
}

void access_buffer_tick(int64_t now_ms)
{
    for (struct abuf *b = atomic_load(&registry); b; b = b->next) {
        if (pthread_mutex_trylock(&b->lock) != 0)
            continue; /* its thread is appending: the next tick */
        if (b->len && now_ms - b->since >= (int64_t)b->flush_ms)
            flush_locked(b);
        pthread_mutex_unlock(&b->lock);
    }
}

void access_buffer_flush(void)
{
    for (struct abuf *b = atomic_load(&registry); b; b = b->next) {
        pthread_mutex_lock(&b->lock);
        flush_locked(b);
        pthread_mutex_unlock(&b->lock);
    }
}

/* The buffers held by access_buffer_hold (the registry may grow meanwhile). */
static struct abuf *held;

void access_buffer_hold(void)
{
    held = atomic_load(&registry);
    for (struct abuf *b = held; b; b = b->next) {
        pthread_mutex_lock(&b->lock);
        flush_locked(b);
    }
}

void access_buffer_release(void)
{
    for (struct abuf *b = held; b; b = b->next)
        pthread_mutex_unlock(&b->lock);
    held = NULL;
}

void access_buffer_forget(struct logfile *lf)
{
    for (struct abuf *b = atomic_load(&registry); b; b = b->next) {
        pthread_mutex_lock(&b->lock);
        if (b->lf == lf)
            flush_locked(b);
        pthread_mutex_unlock(&b->lock);
    }
}
