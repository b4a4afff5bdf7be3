/* compressor.c — the compressor's threads, queue and counters; see compressor.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "compress/compressor.h"

#include "base/threads.h"
#include "log/log.h"

static void *compressor_main(void *arg)
{
    struct compressor *cz = arg;
    /* Compression is background work: requests come first. */
    setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
    pthread_mutex_lock(&cz->lock);
    for (;;) {
        while (!cz->head && !atomic_load(&cz->stop))
            pthread_cond_wait(&cz->cv, &cz->lock);
        struct compress_work *job = cz->head;
        if (!job || atomic_load(&cz->stop))
            break;
        cz->head = job->next;
        if (!cz->head)
            cz->tail = NULL;
        cz->queued--;
        atomic_fetch_add(&cz->running, 1);
        pthread_mutex_unlock(&cz->lock);
        job->run(job, cz);
        job->free(job);
        atomic_fetch_sub(&cz->running, 1);
        pthread_mutex_lock(&cz->lock);
    }
    pthread_mutex_unlock(&cz->lock);
    return NULL;
}

/* The static handler type's process-wide state: made by the first location that compresses,
 * kept in the server's slot for the type. */
struct compressor *compressor_start(_Atomic(void *) *process, char *err, size_t errlen)
{
    struct compressor *cz = atomic_load(process);
    if (cz)
        return cz;
    cz = calloc(1, sizeof(*cz));
    if (!cz) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&cz->lock, NULL);
    pthread_cond_init(&cz->cv, NULL);
    int rc;
    cz->nthreads = threads_start(cz->thread, COMPRESS_THREADS, compressor_main, cz,
                                 "lfhttpd-compress", &rc);
    if (!cz->nthreads) /* small files are still compressed in-line */
        log_warn("compression: cannot start a thread (%s): larger files are served identity",
                 strerror(rc));
    atomic_store(process, cz);
    return cz;
}

int compressor_submit(struct compressor *cz, struct compress_work *w)
{
    pthread_mutex_lock(&cz->lock);
    if (cz->queued >= COMPRESS_QUEUE_MAX || atomic_load(&cz->stop) || !cz->nthreads) {
        pthread_mutex_unlock(&cz->lock);
        stat_add(&cz->dropped, 1);
        return -EAGAIN;
    }
    w->next = NULL;
    if (cz->tail)
        cz->tail->next = w;
    else
        cz->head = w;
    cz->tail = w;
    cz->queued++;
    pthread_cond_signal(&cz->cv);
    pthread_mutex_unlock(&cz->lock);
    return 0;
}

void *compress_process_start(_Atomic(void *) *process, char *err, size_t errlen)
{
    return compressor_start(process, err, errlen);
}

struct compress_streams *compress_streams_of(void *process)
{
    return process ? &((struct compressor *)process)->streams : NULL;
}

const char *const compress_sent_names[COMPRESS_SENT_CODINGS] = { "br", "zstd", "gzip", "dcz" };

void compress_count_sent(void *process, int which, uint64_t saved)
{
    struct compressor *cz = process;
    stat_add(&cz->sent[which], 1);
    stat_add(&cz->saved[which], saved);
}

void compress_get_stats(void *process, struct compress_stats *out)
{
    memset(out, 0, sizeof(*out));
    struct compressor *cz = process;
    if (!cz)
        return;
    for (int i = 0; i < CODING_COUNT; i++)
        out->made[i] = atomic_load_explicit(&cz->made[i], memory_order_relaxed);
    for (int i = 0; i < COMPRESS_SENT_CODINGS; i++) {
        out->sent[i] = atomic_load_explicit(&cz->sent[i], memory_order_relaxed);
        out->saved[i] = atomic_load_explicit(&cz->saved[i], memory_order_relaxed);
    }
#define GET(f) out->f = atomic_load_explicit(&cz->f, memory_order_relaxed)
    GET(dcz_made);
    GET(dicts_stored);
    GET(bytes_in);
    GET(bytes_out);
    GET(not_smaller);
    GET(failed);
    GET(disk_hits);
    GET(disk_writes);
    GET(disk_evictions);
    GET(dropped);
    GET(running);
#undef GET
    const struct compress_streams *st = &cz->streams;
    for (int i = 0; i < CODING_COUNT; i++)
        out->stream_made[i] = atomic_load_explicit(&st->made[i], memory_order_relaxed);
    out->stream_in = atomic_load_explicit(&st->bytes_in, memory_order_relaxed);
    out->stream_out = atomic_load_explicit(&st->bytes_out, memory_order_relaxed);
    out->stream_busy = atomic_load_explicit(&st->busy, memory_order_relaxed);
    out->stream_failed = atomic_load_explicit(&st->failed, memory_order_relaxed);
    out->stream_active = atomic_load_explicit(&st->active, memory_order_relaxed);
    pthread_mutex_lock(&cz->lock);
    out->queued = cz->queued;
    pthread_mutex_unlock(&cz->lock);
}

void compress_dir_free(struct compress_dir *d)
{
    if (d->fd >= 0)
        close(d->fd);
    if (d->rfd >= 0)
        close(d->rfd);
    dict_store_close(atomic_load(&d->dicts));
    pthread_mutex_destroy(&d->lock);
    free(d);
}

void compress_release(void *process)
{
    struct compressor *cz = process;
    pthread_mutex_lock(&cz->lock);
    atomic_store(&cz->stop, true);
    pthread_cond_broadcast(&cz->cv);
    pthread_mutex_unlock(&cz->lock);
    for (unsigned i = 0; i < cz->nthreads; i++)
        pthread_join(cz->thread[i], NULL);
    while (cz->head) {
        struct compress_work *job = cz->head;
        cz->head = job->next;
        job->free(job); /* may free the last runtime: its instances give their directories back */
    }
    while (cz->dirs) { /* only if a runtime outlived this call (it should not) */
        struct compress_dir *d = cz->dirs;
        cz->dirs = d->next;
        compress_dir_free(d);
    }
    pthread_mutex_destroy(&cz->lock);
    pthread_cond_destroy(&cz->cv);
    free(cz);
}
