/* compress.h — compression of static files on the fly, paid once per (file version, coding).
 *
 * A compressed representation (a "variant": gzip, Brotli or zstd) of a file is made at most once
 * per version of the file and coding, and only when a client would take it: the first request
 * that would choose coding C for file version V asks for it (compress_want). Then, without ever
 * making a request wait for a compressor:
 *   - a location with a `compress_cache_dir` first looks for the variant there (made by an
 *     earlier run: one open + fstat);
 *   - a small file (<= COMPRESS_INLINE_MAX) is compressed in-line, on the requesting thread,
 *     once (bounded work: a few milliseconds at the highest levels), and that request gets it;
 *   - a larger one is queued for the compressor threads outside the pool (COMPRESS_THREADS,
 *     like CGI's spawners: a blocking job moved out). Requests arriving before it is done get
 *     identity or a sibling the user made (x.br, x.zst, x.gz), which always wins over a
 *     variant of the same coding.
 * A variant hangs off its file's open-file-cache entry (file_cache.h: fc_entry.otf), counted
 * in the cache's byte budget, and goes with it: a changed, replaced or truncated file gets a
 * new entry, so a variant of an old version is never served for a new one. The compressor
 * reads the file through the entry's descriptor and throws its work away if the file's size,
 * mtime or ctime changed meanwhile.
 *
 * The cache directory holds variants across restarts: one file per (path, file version,
 * coding, level, library version), named by a SHA-256 of that key, written to an anonymous
 * file and linked into place once complete (no torn files), bounded to `compress_cache_size`
 * (the least recently used go first; only files named like ours are ever counted or removed).
 * A directory that cannot be created or written means identity for its locations, with one
 * log line; the next configuration generation (SIGHUP) tries again.
 *
 * Thread affinity: compress_want() runs on pool threads; the jobs on the compressor threads,
 * which a job keeps from the end of its runtime by holding a reference to it. */
#ifndef LF_COMPRESS_H
#define LF_COMPRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "static/file_cache.h"
#include "base/strview.h"

struct ex_filter_ops;
struct loc_conf;
struct runtime;
struct server;

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

/* A location's compression settings and its cache directory: part of the static handler's
 * instance. Returns NULL (with *err = '\0') when the location does not compress, or NULL with
 * a reason in err on failure. */
struct compress_loc;
struct compress_loc *compress_loc_create(_Atomic(void *) *process, struct file_cache *fc,
                                         const struct loc_conf *lc, char *err, size_t errlen);
void compress_loc_destroy(struct compress_loc *cl);

/* A request would take representation `enc` of `e` (an FC_FILE entry of the location's cache)
 * if it existed. Returns the variant if it is available now (borrowed: valid while the caller
 * holds `e`), else NULL after making sure it is on its way (or known not to be worth it). */
struct fc_entry *compress_want(struct compress_loc *cl, struct runtime *rt, struct fc_entry *e,
                               enum fc_encoding enc);

/* What a client's Accept-Encoding (RFC 9110 12.5.3) accepts: q-values in thousandths per
 * coding (br, zstd, gzip: 0 = not acceptable) and for identity (unlisted identity is 1: still
 * acceptable, but below any coding the client listed). Absent header: identity only. */
struct accept_enc {
    int q[FC_NENC];
    int identity;
};
void compress_accept_parse(struct strview hdr, struct accept_enc *ae);

/* Compression of streamed responses (compress_dynamic, compress_stream.c): process-wide
 * accounting, in the compressor's state. */
struct compress_streams {
    _Atomic unsigned active;           /* compressing now (at most compress_dynamic_max) */
    _Atomic uint64_t made[FC_NENC];    /* responses compressed, per coding (zstd, gzip) */
    _Atomic uint64_t bytes_in, bytes_out, busy, failed;
};

struct compress_stats {
    uint64_t made[FC_NENC];     /* variants made, per coding (br, zstd, gzip) */
    uint64_t bytes_in, bytes_out; /* of the variants made */
    uint64_t not_smaller, failed, disk_hits, disk_writes, disk_evictions, dropped;
    unsigned queued, running;
    /* streamed responses (compress_dynamic) */
    uint64_t stream_made[FC_NENC], stream_in, stream_out, stream_busy, stream_failed;
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
