/* file_cache.h — the open-file cache: JAWS's "cached virtual filesystem".
 *
 * Maps (location, normalised path) to what answering it needs: the open fd, the stat data,
 * the validators, the precomputed header block, the whole content of small files, and the
 * precompressed variants beside the file — or the fact that the path is missing, a directory,
 * or needs a redirect. A hot file then costs no open/fstat/pread per request.
 *
 * Concurrency: the table is split into shards, each with its own read-write lock; the hit path
 * takes one shard's read lock and bumps the entry's reference count (no global lock). Entries
 * are immutable once published; a changed file gets a new entry, and the old one is freed when
 * its last user (e.g. a connection still sending it) releases it.
 *
 * Freshness: an entry is revalidated (reopened and compared by device, inode, size and mtime)
 * at most once per `interval_ms`, by the first thread that sees it stale; a file that changed or
 * disappeared is therefore never served past the interval, and an entry's fd always refers to
 * the file whose length its headers announce (a replaced file has a new inode, hence a new
 * entry; content cached in memory is a snapshot taken while size and mtime did not change). */
#ifndef LF_FILE_CACHE_H
#define LF_FILE_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "compress/coding.h"
#include "compress/dictionary.h"
#include "exchange/exchange.h"

struct loc_conf;
struct mime_table;

enum fc_kind {
    FC_FILE = 0,      /* a regular file (for a directory URL: its index file) */
    FC_MISSING,       /* open failed: `err` says why (ENOENT, EACCES, EXDEV...) */
    FC_DIR_REDIRECT,  /* a directory requested without its trailing slash */
    FC_DIR,           /* a directory URL with no index file */
    FC_OTHER,         /* FIFO, device, socket: never served */
};

/* Where an on-the-fly variant of an entry stands (variants.c). */
enum fc_otf_state { FC_OTF_NONE = 0, FC_OTF_BUSY, FC_OTF_DONE };

/* What a representation is sent as: identity, a coding (enum coding), or compressed against a
 * dictionary (dcz; a dcb would be one more). */
enum { FC_SENT_IDENTITY = -1, FC_SENT_DCZ = CODING_COUNT, FC_SENT_COUNT };

/* The dcz variants of an entry a compress_dictionary pattern covers (dict_variants.c): one per
 * dictionary a client offered, at most FC_DCZ_SLOTS (the store keeps DICT_STORE_PER_PATTERN
 * versions of a pattern by default, so a few cover the clients of a few releases). A slot goes
 * EMPTY -> CLAIMED (a request is writing the hash) -> HASHED (the hash is readable, the job is
 * on its way) -> DONE (`v` set, or NULL: not worth it, or failed). Slots never go back from
 * DONE: a reader that saw DONE may use `v` while it holds the entry. */
#define FC_DCZ_SLOTS 4
enum { FC_DCZ_EMPTY = 0, FC_DCZ_CLAIMED, FC_DCZ_HASHED, FC_DCZ_DONE };
struct fc_dcz_slot {
    _Atomic unsigned char state;
    _Atomic uint64_t hash[DICT_HASH_LEN / 8];
    _Atomic(struct fc_entry *) v;
};

struct fc_entry {
    _Atomic int refs;
    _Atomic int64_t validated_ms;
    _Atomic int revalidating;
    enum fc_kind kind;
    int err;                        /* FC_MISSING: errno */
    int fd;                         /* FC_FILE without `body`: O_RDONLY; -1 otherwise */
    struct stat st;
    const char *type;               /* Content-Type */
    char etag[96];                  /* a variant's: its file's + "-br11.1.0.9" */
    size_t etag_len;
    char last_modified[30];
    char *body;                     /* whole content when st_size <= FC_SMALL_MAX, else NULL */
    char *headers;                  /* precomputed header lines for 200/206 (CRLF-terminated) */
    size_t headers_len;
    size_t headers_200_len;         /* headers_len plus the "Content-Length: st_size" line that
                                     * follows them in `headers`: the whole file-dependent part
                                     * of a 200's head (the entry is per location and per
                                     * configuration generation, so the location's headers are
                                     * constant for it) */
    struct fc_entry *variant[CODING_COUNT]; /* precompressed representations (FC_FILE entries) */
    bool has_variants;
    bool vary;                      /* responses carry Vary: Accept-Encoding */
    const char *auto_cache_control; /* cache_policy auto's Cache-Control (static), or NULL:
                                     * in `headers`, and for a 304 (conditional.c) */
    bool compressible;              /* on-the-fly variants may be made (variants.c) */
    bool unsettled;                 /* the file kept changing while the entry was made: its
                                     * stat is only the latest seen, so no request trusts it
                                     * for the revalidation interval */
    /* On-the-fly variants (variants.c): each set at most once, by fc_attach(), and released
     * with the entry; otf_state says whether one is on its way or will never come. */
    _Atomic(struct fc_entry *) otf[CODING_COUNT];
    _Atomic unsigned char otf_state[CODING_COUNT]; /* enum fc_otf_state */
    /* compress_dictionary (dict_variants.c): the pattern that covers the path (NULL: none;
     * the location's, which lives as long as the entry), whether this version went into the
     * dictionary store (enum fc_otf_state), its dcz variants (allocated with the entry when
     * covered; variants have none). */
    const struct dict_pattern *dict;
    _Atomic unsigned char dict_stored;
    signed char sent_as;            /* FC_SENT_*: what this representation is */
    struct fc_dcz_slot *dcz;

    /* Table bookkeeping (under the shard lock). */
    struct fc_entry *next;          /* hash chain */
    struct fc_entry *older, *newer; /* insertion order, for eviction */
    uint64_t hash;
    const struct loc_conf *loc;
    size_t path_len;
    size_t bytes;                   /* memory charged against the cache */
    bool in_table;
    char path[];                    /* normalised request path (NUL-terminated) */
};

#define FC_SMALL_MAX (16 * 1024)

struct file_cache;

/* Create a cache bounded to `max_entries` and `max_bytes` of cached content, revalidating every
 * `interval_ms`. Returns NULL on ENOMEM. */
struct file_cache *fc_create(unsigned max_entries, size_t max_bytes, unsigned interval_ms,
                             const struct mime_table *mime);
void fc_destroy(struct file_cache *fc);

/* Look up (or build) the entry for normalised `path` (starting with '/') in location `lc`. The
 * caller owns one reference and must fc_release() it. Returns NULL only on ENOMEM. A failure to
 * open for lack of descriptors or memory (EMFILE, ENFILE, ENOMEM...) is returned but never
 * cached, and never replaces a cached entry. */
struct fc_entry *fc_get(struct file_cache *fc, const struct loc_conf *lc, const char *path,
                        size_t path_len);
void fc_release(struct fc_entry *e);

/* Open `rel` (relative, no leading '/') beneath root_fd following the location's symlink
 * policy. Returns an fd or -errno. Shared with the directory listing. */
int fc_open_beneath(int root_fd, const char *rel, int symlinks, int extra_flags);

/* The on-the-fly variant `enc` of `e`, or NULL (borrowed: valid while `e` is held). */
static inline struct fc_entry *fc_otf(struct fc_entry *e, enum coding enc)
{
    return atomic_load_explicit(&e->otf[enc], memory_order_acquire);
}

/* A representation of FC_FILE entry `e` in coding `enc` (variants.c): its content is `body`
 * (malloc'd) or else `fd`, `size` bytes, both taken over (released on failure too); charged
 * to the cache's budget when `in_memory`. Its ETag is e's with `etag_suffix` appended inside
 * the quotes. Returns NULL on ENOMEM. */
struct fc_entry *fc_variant_new(const struct fc_entry *e, enum coding enc, char *body,
                                int fd, uint64_t size, bool in_memory, const char *etag_suffix);
/* The same for a representation that is no enum coding (dcz): `encoding` is its
 * Content-Encoding, `sent_as` its FC_SENT_* value. */
struct fc_entry *fc_variant_named(const struct fc_entry *e, const char *encoding, int sent_as,
                                  char *body, int fd, uint64_t size, bool in_memory,
                                  const char *etag_suffix);
/* Make `v` the variant in `slot` (one of e's otf[] or dcz[].v), charged as fc_attach does. */
int fc_attach_slot(struct file_cache *fc, struct fc_entry *e, _Atomic(struct fc_entry *) *slot,
                   struct fc_entry *v);
/* The Vary line of a response of `e` (with its CRLF), or NULL when its responses do not vary:
 * a resource a dictionary pattern covers varies by Available-Dictionary too (RFC 9842, 6.2). */
static inline const char *fc_vary_line(const struct fc_entry *e)
{
    if (e->dict)
        return "Vary: Accept-Encoding, Available-Dictionary\r\n";
    return e->vary ? "Vary: Accept-Encoding\r\n" : NULL;
}
/* The same as exchange Vary bits (EX_VARY_*), for a head the exchange writes (an error). */
static inline unsigned fc_vary_bits(const struct fc_entry *e)
{
    return e->dict ? EX_VARY_ENCODING | EX_VARY_DICTIONARY : e->vary ? EX_VARY_ENCODING : 0;
}
/* Make `v` the on-the-fly variant `enc` of `e`, charged to e's shard (older entries are
 * evicted to make room). Takes the caller's reference to `v` in every case. Returns 0, or -1
 * when `e` has left the cache, already has one, or `v` does not fit the shard's budget. */
int fc_attach(struct file_cache *fc, struct fc_entry *e, enum coding enc,
              struct fc_entry *v);
/* Is `e` still the cache's entry for its path? (A job for an entry that is not is moot.) */
bool fc_cached(struct file_cache *fc, const struct fc_entry *e);
/* The most memory one entry (with its variants) may take: the budget of one shard. */
size_t fc_entry_budget(const struct file_cache *fc);

struct fc_stats {
    uint64_t hits, misses, revalidations, evictions, entries, bytes;
};
void fc_get_stats(struct file_cache *fc, struct fc_stats *out);

struct runtime;
/* The open-file cache in the static type's per-generation state (static_file.c). */
struct file_cache *static_file_cache(const void *generation);
/* The static type's stats() hook (handler.h): its open-file cache and compressor
 * (static_stats.c). */
struct stats_writer;
void static_file_stats(void *process, void *generation, const struct runtime *rt,
                       struct stats_writer *w);

#endif
