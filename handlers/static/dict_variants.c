/* dict_variants.c — dictionary versions into the store, dcz variants out of it; see
 * dict_variants.h. The jobs run on the compressor's threads, like variants.c's: they hold the
 * runtime (and with it the location, its instance and its cache) and the entry. */
#include "static/dict_variants.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compress/codec.h"
#include "compress/compressor.h"
#include "compress/dictionary.h"
#include "conf/runtime.h"
#include "conf/site.h"
#include "http/http_request.h"
#include "static/file_cache.h"
#include "static/variants.h"

#define HASH_WORDS (DICT_HASH_LEN / 8)
#define ETAG_HASH_HEX 12            /* of the dictionary's hash in a dcz variant's ETag */
#define STORE_JOB (-1)              /* dict_job.slot: put the version into the store */

/* A job: put e's version into the store (slot STORE_JOB), or make e's dcz variant against the
 * dictionary in e->dcz[slot]. */
struct dict_job {
    struct compress_work work;      /* first member: the compressor's queue */
    struct runtime *rt;             /* held */
    struct otf_loc *cl;
    struct fc_entry *e;             /* held */
    int slot;
};

/* The bytes of e's version: its cached body, or a new buffer read through its descriptor
 * (*owned set). NULL when it cannot be read or changed meanwhile. */
static const char *read_version(const struct fc_entry *e, bool *owned)
{
    *owned = false;
    if (e->body)
        return e->body;
    size_t size = (size_t)e->st.st_size;
    char *buf = malloc(size);
    if (!buf)
        return NULL;
    for (size_t off = 0; off < size;) {
        ssize_t r = pread(e->fd, buf + off, size - off, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(buf);
            return NULL;
        }
        off += (size_t)r;
    }
    if (otf_source_changed(e)) { /* what was read may not be the version e describes */
        free(buf);
        return NULL;
    }
    *owned = true;
    return buf;
}

/* The store of the location's cache directory, once the directory is usable. */
static struct dict_store *job_store(struct compressor *cz, struct otf_loc *cl)
{
    compress_dir_probe(cz, cl->dir);
    if (atomic_load_explicit(&cl->dir->state, memory_order_acquire) != DIR_OK)
        return NULL;
    return compress_dir_dicts(cl->dir);
}

static void store_version(struct compressor *cz, struct dict_job *job)
{
    struct fc_entry *e = job->e;
    struct dict_store *s = job_store(cz, job->cl);
    uint64_t size = (uint64_t)e->st.st_size;
    if (s && size > 0 && size <= DICT_STORE_BYTES_DEFAULT) {
        bool owned;
        const char *data = read_version(e, &owned);
        if (data && dict_store_put(s, e->dict->key, data, (size_t)size, NULL) == 0)
            stat_add(&cz->dicts_stored, 1);
        if (owned)
            free((void *)(uintptr_t)data);
    }
    atomic_store_explicit(&e->dict_stored, FC_OTF_DONE, memory_order_release);
}

/* The cache file name of e's dcz variant against `hash`: what makes its bytes (as variants.c's
 * names) and the dictionary. */
static void dcz_name(const struct otf_loc *cl, const struct fc_entry *e,
                     const unsigned char hash[DICT_HASH_LEN], char name[COMPRESS_NAME_MAX])
{
    char key[8192], hex[2 * DICT_HASH_LEN + 1];
    for (int i = 0; i < DICT_HASH_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", hash[i]);
    int n = snprintf(key, sizeof(key),
                     "lfhttpd-dcz-1\n%s\n%s\n%llu %lld.%09ld %lld.%09ld\n%s\n%s", cl->root,
                     e->path, (unsigned long long)e->st.st_size,
                     (long long)e->st.st_mtim.tv_sec, e->st.st_mtim.tv_nsec,
                     (long long)e->st.st_ctim.tv_sec, e->st.st_ctim.tv_nsec, cl->dcz_suffix, hex);
    compress_dir_name(key, n > 0 && (size_t)n < sizeof(key) ? (size_t)n : sizeof(key) - 1,
                      CODING_ZSTD, name);
}

/* The variant entry for dcz bytes in `body` (small) or `fd`; its ETag names the dictionary. */
static struct fc_entry *dcz_entry(struct otf_loc *cl, struct fc_entry *e,
                                  const unsigned char hash[DICT_HASH_LEN], char *body, int fd,
                                  uint64_t size, bool in_memory)
{
    char suffix[sizeof(cl->dcz_suffix) + 2 + ETAG_HASH_HEX];
    int n = snprintf(suffix, sizeof(suffix), "%s-", cl->dcz_suffix);
    for (int i = 0; i < ETAG_HASH_HEX / 2 && n > 0; i++)
        n += snprintf(suffix + n, sizeof(suffix) - (size_t)n, "%02x", hash[i]);
    return fc_variant_named(e, "dcz", FC_SENT_DCZ, body, fd, size, in_memory, suffix);
}

/* A dcz variant an earlier run left in the cache directory, or NULL. */
static struct fc_entry *dcz_from_disk(struct otf_loc *cl, struct fc_entry *e,
                                      const unsigned char hash[DICT_HASH_LEN])
{
    char name[COMPRESS_NAME_MAX];
    dcz_name(cl, e, hash, name);
    int fd = compress_dir_open(cl->dir, name);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= DCZ_HEADER_LEN ||
        st.st_size >= e->st.st_size) {
        close(fd);
        return NULL;
    }
    futimens(fd, NULL); /* the eviction order */
    char *body = NULL;
    size_t size = (size_t)st.st_size;
    if (size <= FC_SMALL_MAX &&
        (!(body = malloc(size)) || pread(fd, body, size, 0) != (ssize_t)size)) {
        free(body);
        close(fd);
        return NULL;
    }
    stat_add(&cl->cz->disk_hits, 1);
    return dcz_entry(cl, e, hash, body, fd, size, body != NULL);
}

/* Encode e's version against the dictionary into a new buffer: its length, or < 0 (-EFBIG:
 * not smaller than the file). The job's memory is the core's bound (dcz_encode). */
static ssize_t dcz_bytes(struct dict_store *s, struct otf_loc *cl, struct fc_entry *e,
                         const unsigned char hash[DICT_HASH_LEN], char **out)
{
    size_t size = (size_t)e->st.st_size;
    if (size <= DCZ_HEADER_LEN + 1 || size > COMPRESS_MAX_INPUT)
        return -EFBIG;
    void *dict = NULL;
    size_t dict_len = 0;
    int rc = dict_store_load(s, hash, &dict, &dict_len);
    if (rc < 0)
        return rc;
    bool owned;
    const char *in = read_version(e, &owned);
    *out = in ? malloc(size - 1) : NULL;
    ssize_t n = !in ? -ESTALE : !*out ? -ENOMEM
              : dcz_encode(dict, dict_len, hash, in, size, *out, size - 1, cl->level[CODING_ZSTD]);
    free(dict);
    if (owned)
        free((void *)(uintptr_t)in);
    if (n < 0) {
        free(*out);
        *out = NULL;
    }
    return n;
}

/* Make e's dcz variant against `hash`: into the cache directory (a small one kept in memory
 * too), or NULL. */
static struct fc_entry *dcz_make(struct compressor *cz, struct dict_store *s,
                                 struct otf_loc *cl, struct fc_entry *e,
                                 const unsigned char hash[DICT_HASH_LEN])
{
    char *out;
    ssize_t n = dcz_bytes(s, cl, e, hash, &out);
    if (n < 0) {
        stat_add(n == -EFBIG ? &cz->not_smaller : &cz->failed, n != -ENOENT && n != -ESTALE);
        return NULL;
    }
    struct compress_dir *d = cl->dir;
    char name[COMPRESS_NAME_MAX], tmp[64];
    dcz_name(cl, e, hash, name);
    int fd = compress_dir_tmpfile(d, tmp);
    struct codec_sink sink = { .fd = fd, .limit = UINT64_MAX };
    int rc = fd < 0 ? -errno : codec_sink_put(&sink, out, (size_t)n);
    if (rc < 0 || compress_dir_commit(cz, d, fd, tmp, name, (uint64_t)n) < 0) {
        if (rc < 0 && fd >= 0 && tmp[0]) /* (a failed commit removed its own) */
            unlinkat(d->fd, tmp, 0);
        if (fd >= 0)
            close(fd);
        fd = -1; /* not kept on disk: served from memory, if it fits there */
    }
    stat_add(&cz->dcz_made, 1);
    stat_add(&cz->bytes_in, (uint64_t)e->st.st_size);
    stat_add(&cz->bytes_out, (uint64_t)n);
    bool small = (size_t)n <= FC_SMALL_MAX;
    if (!small && fd < 0) {
        free(out);
        return NULL;
    }
    if (!small) {
        free(out);
        out = NULL;
    }
    return dcz_entry(cl, e, hash, out, fd, (uint64_t)n, small);
}

static void make_dcz(struct compressor *cz, struct dict_job *job)
{
    struct fc_entry *e = job->e;
    struct fc_dcz_slot *sl = &e->dcz[job->slot];
    unsigned char hash[DICT_HASH_LEN];
    for (int i = 0; i < HASH_WORDS; i++) {
        uint64_t w = atomic_load_explicit(&sl->hash[i], memory_order_relaxed);
        memcpy(hash + 8 * i, &w, sizeof(w));
    }
    struct dict_store *s = job_store(cz, job->cl);
    struct fc_entry *v = NULL;
    if (s && fc_cached(job->cl->fc, e)) {
        v = dcz_from_disk(job->cl, e, hash);
        if (!v)
            v = dcz_make(cz, s, job->cl, e, hash);
    }
    if (v)
        fc_attach_slot(job->cl->fc, e, &sl->v, v);
    atomic_store_explicit(&sl->state, FC_DCZ_DONE, memory_order_release);
}

static void job_run(struct compress_work *w, struct compressor *cz)
{
    struct dict_job *job = (struct dict_job *)w;
    if (job->slot == STORE_JOB)
        store_version(cz, job);
    else
        make_dcz(cz, job);
}

static void job_free(struct compress_work *w)
{
    struct dict_job *job = (struct dict_job *)w;
    fc_release(job->e);
    runtime_unref(job->rt);
    free(job);
}

/* Queue a job (it takes references to rt and e). 0, or -EAGAIN: nothing queued. */
static int enqueue(struct otf_loc *cl, struct runtime *rt, struct fc_entry *e, int slot)
{
    struct dict_job *job = malloc(sizeof(*job));
    if (!job)
        return -EAGAIN;
    *job = (struct dict_job){ .work = { .run = job_run, .free = job_free },
                              .rt = rt, .cl = cl, .e = e, .slot = slot };
    runtime_ref(rt);
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    if (compressor_submit(cl->cz, &job->work) < 0) {
        job_free(&job->work);
        return -EAGAIN;
    }
    return 0;
}

void dict_note_served(struct otf_loc *cl, struct runtime *rt, struct fc_entry *e)
{
    if (!cl || !cl->dir ||
        atomic_load_explicit(&e->dict_stored, memory_order_acquire) != FC_OTF_NONE)
        return;
    unsigned char expected = FC_OTF_NONE;
    if (atomic_compare_exchange_strong(&e->dict_stored, &expected, FC_OTF_BUSY) &&
        enqueue(cl, rt, e, STORE_JOB) < 0)
        atomic_store(&e->dict_stored, FC_OTF_NONE); /* a later request tries again */
}

static bool slot_holds(struct fc_dcz_slot *sl, const uint64_t w[HASH_WORDS])
{
    for (int i = 0; i < HASH_WORDS; i++)
        if (atomic_load_explicit(&sl->hash[i], memory_order_relaxed) != w[i])
            return false;
    return true;
}

/* Claim an empty slot for the dictionary `w` and queue its job; a second request for the same
 * dictionary finds it HASHED. (Two racing first requests may claim two slots: the work is
 * done twice, never wrongly.) */
static void claim(struct otf_loc *cl, struct runtime *rt, struct fc_entry *e, int i,
                  const uint64_t w[HASH_WORDS])
{
    struct fc_dcz_slot *sl = &e->dcz[i];
    unsigned char expected = FC_DCZ_EMPTY;
    if (!atomic_compare_exchange_strong(&sl->state, &expected, FC_DCZ_CLAIMED))
        return;
    for (int k = 0; k < HASH_WORDS; k++)
        atomic_store_explicit(&sl->hash[k], w[k], memory_order_relaxed);
    atomic_store_explicit(&sl->state, FC_DCZ_HASHED, memory_order_release);
    if (enqueue(cl, rt, e, i) < 0)
        atomic_store(&sl->state, FC_DCZ_EMPTY); /* a later request tries again */
}

struct fc_entry *dict_want(struct otf_loc *cl, struct runtime *rt, struct fc_entry *e,
                           const struct http_request *req, struct strview aeh)
{
    if (!cl || !cl->dir || !dict_accepts_dcz(aeh))
        return NULL;
    const struct dict_store *s = atomic_load_explicit(&cl->dir->dicts, memory_order_acquire);
    unsigned char hash[DICT_HASH_LEN];
    struct dict_entry de;
    if (!s || !dict_available_parse(HTTP_KNOWN(req, H_AVAILABLE_DICTIONARY), hash) ||
        !dict_usable(s, e->dict, (struct strview){ e->path, e->path_len }, hash, &de))
        return NULL; /* ignored: the ordinary representation */
    uint64_t w[HASH_WORDS];
    memcpy(w, hash, sizeof(w));
    int empty = -1;
    for (int i = 0; i < FC_DCZ_SLOTS; i++) {
        struct fc_dcz_slot *sl = &e->dcz[i];
        unsigned char st = atomic_load_explicit(&sl->state, memory_order_acquire);
        if (st >= FC_DCZ_HASHED && slot_holds(sl, w))
            return st == FC_DCZ_DONE ? atomic_load_explicit(&sl->v, memory_order_acquire)
                                     : NULL;
        if (st == FC_DCZ_EMPTY && empty < 0)
            empty = i;
    }
    if (empty >= 0)
        claim(cl, rt, e, empty, w);
    return NULL;
}
