/* compress.h — compression: of static files' variants, made once per (file version, coding)
 * on the compressor's threads or in-line (static/variants.h), and of streamed responses, per
 * request as they are written (compress_stream.c). This layer holds what both use and nothing
 * of the static handler's: the codings and their codecs (codec.h), Accept-Encoding
 * (accept_encoding.h), which responses are eligible, the compressor (compressor.h: threads,
 * cache directories, counters) and the streamed-body filter. */
#ifndef LF_COMPRESS_H
#define LF_COMPRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strview.h"
#include "compress/coding.h"

struct ex_filter_ops;
struct loc_conf;

/* Files up to this size are compressed in-line by the request that first wants a coding. */
#define COMPRESS_INLINE_MAX (4 * 1024)
/* Larger files are never compressed on the fly (precompress them: x.br, x.zst, x.gz). */
#define COMPRESS_MAX_INPUT (32 * 1024 * 1024)
/* Background threads (started with the first location that compresses) and their queue. */
#define COMPRESS_THREADS 2
#define COMPRESS_QUEUE_MAX 256

/* Does Content-Type `type` (`len` bytes, parameters allowed) match `lc`'s compress_types? */
bool compress_type_ok(const struct loc_conf *lc, const char *type, size_t len);
/* Is a file of Content-Type `type` and `size` bytes compressed on the fly in `lc`? (compress
 * on, compress_min_size <= size <= COMPRESS_MAX_INPUT, type matches compress_types) */
bool compress_eligible(const struct loc_conf *lc, const char *type, uint64_t size);

/* Compression of streamed responses (compress_dynamic, compress_stream.c): process-wide
 * accounting, in the compressor's state. */
struct compress_streams {
    _Atomic unsigned active;             /* compressing now (at most compress_dynamic_max) */
    _Atomic uint64_t made[CODING_COUNT]; /* responses compressed, per coding (zstd, gzip) */
    _Atomic uint64_t bytes_in, bytes_out, busy, failed;
};

/* What the sent-response counters count: the codings (enum coding), then dcz. */
#define COMPRESS_SENT_DCZ CODING_COUNT
#define COMPRESS_SENT_CODINGS (CODING_COUNT + 1)
extern const char *const compress_sent_names[COMPRESS_SENT_CODINGS];

/* A response of a representation compressed as `which` (COMPRESS_SENT_*, an enum coding) went
 * out, `saved` bytes shorter than identity (process: the compressor). */
void compress_count_sent(void *process, int which, uint64_t saved);

struct compress_stats {
    uint64_t made[CODING_COUNT];  /* variants made, per coding (br, zstd, gzip) */
    uint64_t sent[COMPRESS_SENT_CODINGS], saved[COMPRESS_SENT_CODINGS]; /* and dcz */
    uint64_t dcz_made, dicts_stored;
    uint64_t bytes_in, bytes_out; /* of the variants made */
    uint64_t not_smaller, failed, disk_hits, disk_writes, disk_evictions, dropped;
    unsigned queued, running;
    /* streamed responses (compress_dynamic) */
    uint64_t stream_made[CODING_COUNT], stream_in, stream_out, stream_busy, stream_failed;
    unsigned stream_active;
};
/* The counters of the compressor (the static handler type's process-wide state, NULL when no
 * location compresses: all zero). */
void compress_get_stats(void *process, struct compress_stats *out);
/* The same, written for /server-status (JSON) or /metrics (compress_stats.c). */
struct stats_writer;
void compress_write_stats(void *process, struct stats_writer *w);

/* The static handler type's process-wide state (the compressor), made if it is not there yet:
 * what compress_dynamic needs even where no location compresses files. NULL (with a reason in
 * err) when out of memory. */
void *compress_process_start(_Atomic(void *) *process, char *err, size_t errlen);
/* Its streams' accounting (process: the compressor, or NULL). */
struct compress_streams *compress_streams_of(void *process);
/* The streamed-body filter (compress_stream.c): the static handler type installs it in every
 * generation where a location says compress_dynamic on. */
extern const struct ex_filter_ops compress_stream_filter;

/* At exit, after the server's last runtime reference is gone (queued jobs hold runtimes): stop
 * the compressor threads (a job in progress stops at its next chunk), drop the queued jobs and
 * free the rest. The static handler type's release() hook. */
void compress_release(void *process);

#endif
