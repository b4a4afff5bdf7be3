/* dictionary.h — Compression Dictionary Transport (RFC 9842) with the dcz coding: the parts that
 * need neither the static handler nor the compressor threads, to be wired into both.
 *
 * The exchange: a response marked `Use-As-Dictionary: match="/assets/app-*.js"` is kept by the
 * browser; its next request for a path that matches carries `Available-Dictionary: :<base64
 * SHA-256>:` and `dcz` in Accept-Encoding, and may be answered with `Content-Encoding: dcz`:
 * a 40-byte header (a zstd skippable frame holding the dictionary's SHA-256) and a zstd frame
 * compressed with the old version as a raw-content dictionary (a prefix).
 *
 * Here:
 *   - negotiation: the request's Available-Dictionary and Accept-Encoding (request threads:
 *     no allocation, no I/O);
 *   - patterns: a configured match pattern checked once at configuration time, its
 *     Use-As-Dictionary field value formatted once, and whether a request path matches it
 *     (what lfhttpd can evaluate itself: a path with '*' wildcards, a subset of URLPattern);
 *   - the dcz encoder (compressor threads: it allocates and takes milliseconds to seconds);
 *   - the dictionary store (dictionary_store.c): old versions kept by content hash in a
 *     directory, bounded per pattern; looked up from request threads without a lock or I/O,
 *     read and written by the compressor threads.
 * dcb (Brotli with a dictionary) needs libbrotli 1.1's shared-dictionary API; Debian bookworm
 * has 1.0.9, so only dcz is made.
 *
 * What the callers owe the protocol: a response carrying Use-As-Dictionary is kept only if it
 * is cacheable (Chromium: for example Cache-Control: max-age); a dcz response, and any
 * response of a path a pattern covers, carries "Vary: Accept-Encoding, Available-Dictionary"
 * (RFC 9842, 6.2), and a dcz variant is made per (dictionary, file version): its cache key
 * holds the dictionary's hash. Browsers offer dictionaries only in secure contexts (HTTPS, or
 * http://127.0.0.1 and localhost). */
#ifndef LF_DICTIONARY_H
#define LF_DICTIONARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/strview.h"

/* A dictionary is named by the SHA-256 of its bytes. */
#define DICT_HASH_LEN 32
/* The dcz header: the magic of a zstd skippable frame (0x184D2A5E, little-endian) with a 32-byte
 * length, then the dictionary's SHA-256 (RFC 9842, section 5). */
#define DCZ_MAGIC_LEN 8
#define DCZ_HEADER_LEN (DCZ_MAGIC_LEN + DICT_HASH_LEN)
extern const unsigned char dcz_magic[DCZ_MAGIC_LEN];

/* ---- negotiation (request threads) ----------------------------------------------------------- */

/* An Available-Dictionary field value: an RFC 8941 sf-binary (":" base64 ":", padding optional,
 * surrounding whitespace allowed, no parameters) of exactly DICT_HASH_LEN bytes. Anything else
 * (absent, malformed, another length, a list of two) is "no dictionary": false, never an
 * error. */
bool dict_available_parse(struct strview value, unsigned char hash[DICT_HASH_LEN]);

/* Does Accept-Encoding list dcz with a non-zero q? Only an explicit "dcz" counts: a client
 * sends it only when it holds a dictionary for the request (RFC 9842, 6.1), so "*" does not
 * stand for it. */
bool dict_accepts_dcz(struct strview accept_encoding);

/* ---- patterns (configuration time; matching on request threads) ----------------------------- */

/* What a configured pattern may hold. */
#define DICT_MATCH_MAX 1024    /* bytes of the match pattern */
#define DICT_ID_MAX 1024       /* characters of the id (RFC 9842, 2.1.3) */
#define DICT_DESTS_MAX 8       /* match-dest values */

/* A configured dictionary pattern. `header` is the Use-As-Dictionary field value, made once:
 *     match="/assets/app-*.js", match-dest=("script"), id="app"
 * `key` names the pattern in the store: the first 64 bits of the SHA-256 of the match, and of
 * the site it serves once dict_pattern_scope has said which (two sites sharing a cache
 * directory and a pattern must not answer with each other's versions). */
struct dict_pattern {
    char *header;
    size_t header_len;
    const char *match;         /* into header; not NUL-terminated */
    size_t match_len;
    uint64_t key;
};

/* Check and prepare a pattern: `match` is a path that starts with '/', of URL path characters
 * and '*' wildcards (no CR, LF, quotes, backslashes, spaces, URLPattern groups or modifiers
 * ":name ( ) { } ? +", no "#", no "%" but before two hex digits); `dests` (ndests, may be 0)
 * request destinations of the Fetch standard ("script", "style", "document", ...); `id` (NULL
 * or "": none) printable ASCII. Returns 0, or -1 with "WHERE: reason" in err (where:
 * the directive's FILE:LINE). Allocates: release with dict_pattern_free. */
int dict_pattern_init(struct dict_pattern *p, const char *where, const char *match,
                      const char *const *dests, int ndests, const char *id, char *err,
                      size_t errlen);
void dict_pattern_free(struct dict_pattern *p);
/* The tree whose files the pattern covers (a location's root): part of its store key. */
void dict_pattern_scope(struct dict_pattern *p, const char *scope);

/* Does the request path (as received: percent-encoded, without the query) match the pattern?
 * '*' matches any run of characters, '/' included, as in URLPattern's pathname; the query is
 * not part of the match (a pattern without "?" leaves the search component a wildcard). */
bool dict_path_matches(const struct dict_pattern *p, struct strview path);

/* ---- the dcz encoder (compressor threads) ---------------------------------------------------- */

/* A client takes a window of max(8 MiB, 1.25 x the dictionary), at most 128 MiB (RFC 9842, 5):
 * the encoder picks the smallest power of two that covers dictionary + input, within that. */
#define DCZ_WINDOW_LOG_FLOOR 23         /* 8 MiB */
#define DCZ_WINDOW_LOG_CEILING 27       /* 128 MiB */
/* Dictionary + input beyond this are not encoded (-E2BIG): the delta would lose the start of
 * the dictionary anyway, and a job's memory stays bounded (dcz_job_memory). */
#define DCZ_MAX_TOTAL ((size_t)128 << 20)
/* The level of a variant made once per (dictionary, file version) in the background. */
#define DCZ_LEVEL_DEFAULT 19

/* The zstd window log for a dictionary of dict_len bytes and an input of in_len. */
int dcz_window_log(size_t dict_len, size_t in_len);
/* The most bytes dcz_encode may write for in_len bytes of input. */
size_t dcz_bound(size_t in_len);
/* About what one job takes, in bytes: the dictionary and the input (in memory), the output
 * (dcz_bound, or the streaming buffers) and zstd's context at `level` for that window (zstd's
 * own estimate). For example, at level 19: 130 KiB + 130 KiB ~9 MiB, 1 + 1 MiB ~36 MiB,
 * 4 + 4 MiB ~93 MiB, 32 + 32 MiB ~177 MiB; at level 3, 4 + 4 MiB ~13 MiB. */
size_t dcz_job_memory(size_t dict_len, size_t in_len, int level, bool streaming);
/* No job takes more than this: the encoder lowers the level until the job fits (so a pool of
 * N compressor threads takes at most N x 256 MiB for dcz), and refuses (-E2BIG) what does not
 * fit even at level 1. */
#define DCZ_JOB_MEMORY_MAX ((size_t)256 << 20)
/* `level`, or the highest level below it whose job fits DCZ_JOB_MEMORY_MAX; 0 when none does. */
int dcz_fit_level(size_t dict_len, size_t in_len, int level, bool streaming);

/* Encode `in` as dcz against `dict` (whose SHA-256 is `hash`): header + zstd frame into
 * out[cap], at `level` or lower (dcz_fit_level). Returns the length, or -EFBIG (does not fit
 * in cap: pass cap < in_len to make "not smaller" a failure), -E2BIG (dict_len + in_len >
 * DCZ_MAX_TOTAL, or over DCZ_JOB_MEMORY_MAX at any level), -ENOMEM or -EIO. */
ssize_t dcz_encode(const void *dict, size_t dict_len, const unsigned char hash[DICT_HASH_LEN],
                   const void *in, size_t in_len, void *out, size_t cap, int level);

/* The same, streaming: in_len bytes read from in_fd (from its current offset), the result
 * written to out_fd; *out_len gets its length. 0, or -EIO when in_fd gave fewer than in_len
 * bytes (the file changed) or a read or write failed, -E2BIG, -ENOMEM. */
int dcz_encode_fd(const void *dict, size_t dict_len, const unsigned char hash[DICT_HASH_LEN],
                  int in_fd, uint64_t in_len, int out_fd, int level, uint64_t *out_len);

/* ---- the dictionary store (dictionary_store.c) ---------------------------------------------- */

/* Old versions of files, kept to compress their successors against. One file per dictionary
 * in the store's directory, named "<pattern key, 16 hex>-<SHA-256, 64 hex>.dict" (nothing else
 * there is ever counted or removed), written to a temporary name, fsynced and renamed into
 * place (no torn files), and checked against its name's hash when read: a corrupt or
 * truncated file is deleted and never used.
 *
 * Bounds: per pattern, at most `per_pattern` dictionaries and `per_pattern_bytes` bytes (the
 * oldest stored go first); `capacity` entries in all (the oldest of any pattern go first).
 *
 * Threads: dict_store_lookup runs on request threads: no lock, no I/O, no allocation (a
 * sequence lock per slot of a fixed table; a lookup racing a change may miss, which means
 * "no dictionary" for that request). Everything else runs on compressor threads (or at
 * start-up), serialized among themselves by one mutex held only for the index's changes. */
#define DICT_STORE_PER_PATTERN_DEFAULT 4
#define DICT_STORE_BYTES_DEFAULT ((uint64_t)64 << 20)
#define DICT_STORE_CAPACITY_DEFAULT 256
#define DICT_STORE_CAPACITY_MAX 65536

struct dict_store_limits {
    unsigned per_pattern;
    uint64_t per_pattern_bytes;
    unsigned capacity;
};

struct dict_entry {
    unsigned char hash[DICT_HASH_LEN];
    uint64_t size;
    uint64_t pattern_key;
};

struct dict_store;

/* Open (creating it, mode 0700, if missing) the directory and index what it holds: temporary
 * files a crash left (older than 10 minutes) are removed, entries over the bounds evicted.
 * Meant to be opened once per directory and process (the compressor's state, not a
 * generation's): two stores on one directory stay correct, but each evicts by its own index.
 * NULL with a reason in err. */
struct dict_store *dict_store_open(const char *dir, const struct dict_store_limits *limits,
                                   char *err, size_t errlen);
void dict_store_close(struct dict_store *s);

/* Request threads: is the dictionary `hash` in the store? Copies its entry. */
bool dict_store_lookup(const struct dict_store *s, const unsigned char hash[DICT_HASH_LEN],
                       struct dict_entry *out);

/* Request threads: may a request for `path` that offers dictionary `hash` get dcz against it
 * under pattern `p`? The path matches the pattern and the store holds `hash` as a dictionary
 * of that pattern (an old version of a file served under it: not any file of the site that a
 * client could name by its hash). Copies the entry. */
bool dict_usable(const struct dict_store *s, const struct dict_pattern *p, struct strview path,
                 const unsigned char hash[DICT_HASH_LEN], struct dict_entry *out);

/* Compressor threads: keep `data` (len bytes, the version of a file served with the pattern
 * `pattern_key`) as a dictionary; its SHA-256 goes to hash (may be NULL). Storing one that is
 * there already makes it the newest (it stays with the pattern that stored it first). 0, or
 * -E2BIG (larger than per_pattern_bytes or DCZ_MAX_TOTAL), -EINVAL (empty), or the errno of a
 * failed write (nothing is left behind). */
int dict_store_put(struct dict_store *s, uint64_t pattern_key, const void *data, size_t len,
                   unsigned char hash[DICT_HASH_LEN]);

/* Compressor threads: the bytes of dictionary `hash` (malloc'ed into *data, *len), checked
 * against the hash. 0, -ENOENT (not in the store, or gone), -EBADMSG (corrupt or truncated:
 * deleted and dropped from the index), -ENOMEM or another errno of the read. */
int dict_store_load(struct dict_store *s, const unsigned char hash[DICT_HASH_LEN], void **data,
                    size_t *len);

/* The number of dictionaries indexed, and their bytes (of one pattern, or of all when
 * pattern_key is 0). Compressor threads (takes the mutex). */
unsigned dict_store_count(struct dict_store *s, uint64_t pattern_key, uint64_t *bytes);

#endif
