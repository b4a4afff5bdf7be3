/* variants.h — compressed variants of static files made on the fly, paid once per (file
 * version, coding).
 *
 * A compressed representation (a "variant": gzip, Brotli or zstd) of a file is made at most once
 * per version of the file and coding, and only when a client would take it: the first request
 * that would choose coding C for file version V asks for it (otf_want). Then, without ever
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
 * Thread affinity: otf_want() runs on pool threads; the jobs on the compressor threads,
 * which a job keeps from the end of its runtime by holding a reference to it. */
#ifndef LF_VARIANTS_H
#define LF_VARIANTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "compress/coding.h"

struct fc_entry;
struct file_cache;
struct loc_conf;
struct runtime;

/* A location's compression settings and its cache directory: part of the static handler's
 * instance. Returns NULL (with *err = '\0') when the location does not compress, or NULL with
 * a reason in err on failure. `process`: the type's process slot (the compressor). */
struct otf_loc;
/* Shared with dict_variants.c, which makes a location's dcz variants the same way. */
struct otf_loc {
    struct compressor *cz;
    struct file_cache *fc;      /* the static handler instance's (its generation's) */
    struct compress_dir *dir;   /* NULL: memory only */
    char *root;                 /* the location's root, for cache keys */
    int level[CODING_COUNT];
    char etag_suffix[CODING_COUNT][48]; /* "-br11.1.0.9": coding, level, library version */
    char dcz_suffix[40];        /* "-dcz19.1.5.4", then the dictionary's hash per variant */
};
struct otf_loc *otf_create(_Atomic(void *) *process, struct file_cache *fc,
                           const struct loc_conf *lc, char *err, size_t errlen);
void otf_destroy(struct otf_loc *cl);

/* A request would take representation `enc` of `e` (an FC_FILE entry of the location's cache)
 * if it existed. Returns the variant if it is available now (borrowed: valid while the caller
 * holds `e`), else NULL after making sure it is on its way (or known not to be worth it). */
struct fc_entry *otf_want(struct otf_loc *cl, struct runtime *rt, struct fc_entry *e,
                          enum coding enc);

/* Did the file change since `e` described it? (A job that read it through e's descriptor
 * throws its work away if so.) */
bool otf_source_changed(const struct fc_entry *e);

#endif
