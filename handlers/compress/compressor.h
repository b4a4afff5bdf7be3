/* compressor.h — the compressor: the process-wide state behind compression (the static handler
 * type's process slot). Its threads run background work for a layer above (static/variants.c:
 * a file's variants), its cache directories keep variants across restarts, and its counters
 * feed /server-status and /metrics (compress_stats.c). Nothing here knows the open-file
 * cache: work is a callback, a cache file is a name.
 *
 * Thread affinity: compressor_submit() runs on pool threads; work->run() on a compressor
 * thread; the directory functions on either, as each says. */
#ifndef LF_COMPRESSOR_H
#define LF_COMPRESSOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "compress/compress.h"
#include "compress/dictionary.h"

/* Cache file names: 160 bits of SHA-256, in hex, then the coding's suffix. */
#define COMPRESS_NAME_HEX 40
#define COMPRESS_NAME_MAX (COMPRESS_NAME_HEX + 8)

enum { DIR_UNKNOWN = 0, DIR_OK, DIR_BROKEN };

struct compressor;

struct compress_dir {
    struct compress_dir *next;  /* the compressor's list (under its lock) */
    unsigned refs;              /* under the compressor's lock */
    _Atomic int state;          /* DIR_*: probed by the first job that needs the directory */
    int fd;                     /* the directory (valid once DIR_OK is published) */
    int rfd;                    /* opened at start-up if it existed: lookups before the probe
                                 * (variants made by an earlier run are served at once) */
    bool tmpfile;               /* O_TMPFILE works there */
    _Atomic bool reprobe;       /* given up, then taken up again by a reload */
    pthread_mutex_t lock;       /* bytes, eviction and commits */
    uint64_t bytes;             /* of our files in it */
    _Atomic uint64_t max_bytes; /* compress_cache_size (the newest configuration's) */
    /* compress_dictionary's store, in the subfolder COMPRESS_DICT_SUBDIR: opened by the first
     * job that needs it (compress_dir_dicts), read lock-free by request threads once
     * published, closed with the directory. */
    _Atomic(struct dict_store *) dicts;
    bool dicts_failed;          /* under `lock`: tried, and logged once */
    char path[];
};

/* Background work: run() on a compressor thread, then free(); free() alone when the compressor
 * stops before running it. */
struct compress_work {
    struct compress_work *next;
    void (*run)(struct compress_work *w, struct compressor *cz);
    void (*free)(struct compress_work *w);
};

struct compressor {
    pthread_mutex_t lock;       /* the queue, the directory list */
    pthread_cond_t cv;
    struct compress_work *head, *tail;
    unsigned queued;
    _Atomic bool stop;
    pthread_t thread[COMPRESS_THREADS];
    unsigned nthreads;
    struct compress_dir *dirs;
    _Atomic unsigned running;
    _Atomic uint64_t made[CODING_COUNT], bytes_in, bytes_out, not_smaller, failed, disk_hits,
        disk_writes, disk_evictions, dropped;
    /* Responses sent compressed and the bytes that saved (identity's length minus theirs),
     * by coding and dcz; dcz variants made, dictionaries stored. */
    _Atomic uint64_t sent[COMPRESS_SENT_CODINGS], saved[COMPRESS_SENT_CODINGS], dcz_made,
        dicts_stored;
    struct compress_streams streams;
};

static inline void stat_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* The compressor in the process slot, started (with its threads) if it is not there yet.
 * NULL with a reason in err when out of memory. */
struct compressor *compressor_start(_Atomic(void *) *process, char *err, size_t errlen);
/* Queue `w` (owned by the queue from then on). Returns 0, or -EAGAIN when the queue is full
 * or stopping (nothing taken; counted as dropped). */
int compressor_submit(struct compressor *cz, struct compress_work *w);

/* The cache directory at `path` (shared by the locations naming it; `max` bytes: the newest
 * configuration's), and its release. NULL when out of memory. */
struct compress_dir *compress_dir_get(struct compressor *cz, const char *path, uint64_t max);
void compress_dir_put(struct compressor *cz, struct compress_dir *d);
/* Close and free a directory no one holds any more (its last put, or the compressor's end). */
void compress_dir_free(struct compress_dir *d);
/* The first job that needs the directory: create it if missing, check that it can be written,
 * count what it holds. Compressor threads only. */
void compress_dir_probe(struct compressor *cz, struct compress_dir *d);
/* Give up on a directory (logged once per directory and generation). */
void compress_dir_broken(struct compress_dir *d, const char *what, int err);
/* The cache file name of a variant in `enc` whose identity is `key` (n bytes). */
void compress_dir_name(const char *key, size_t n, enum coding enc,
                       char name[COMPRESS_NAME_MAX]);
/* Open cache file `name` for reading when the directory can be read (probed, or found at
 * start-up): a descriptor, or -1. Pool threads: one open. */
int compress_dir_open(struct compress_dir *d, const char *name);
/* The dictionary store of directory `d` (probed DIR_OK), opened on first use with the
 * default bounds; NULL when it cannot be (logged once). Compressor threads only. */
#define COMPRESS_DICT_SUBDIR "dictionaries"
struct dict_store *compress_dir_dicts(struct compress_dir *d);
/* A file to write a variant into: anonymous (O_TMPFILE) or named `tmp`. */
int compress_dir_tmpfile(struct compress_dir *d, char tmp[64]);
/* Give the complete file `fd` (`size` bytes) its name, making room first. Returns 0, or -1
 * when it is not kept. */
int compress_dir_commit(struct compressor *cz, struct compress_dir *d, int fd, const char *tmp,
                        const char *name, uint64_t size);

#endif
