/* variants.c — compressed variants of static files, made on the fly and hung off their
 * open-file-cache entries; see variants.h. The codings, the compressor's threads and its cache
 * directories are compression's (handlers/compress/); what a variant is of, and where it is
 * kept, is the static handler's. */
#include "static/variants.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compress/codec.h"
#include "compress/compress_conf.h"
#include "compress/compressor.h"
#include "conf/runtime.h"
#include "conf/site.h"
#include "static/file_cache.h"

/* A job for the compressor's threads: make variant `enc` of `e` (or, with `v`, write that
 * in-line variant to the cache directory). */
struct otf_job {
    struct compress_work work;  /* first member: the compressor's queue */
    struct runtime *rt;         /* held: keeps the cache, the location and its instance */
    struct otf_loc *cl;
    struct fc_entry *e;         /* held */
    struct fc_entry *v;         /* held; set: only write this variant (made in-line) to disk */
    enum coding enc;
};

/* The cache file name of variant `enc` of `e`: a hash of what makes its bytes what they are
 * (the location's root, the path, the file's size, mtime and ctime, the coding, its level and
 * the library's version). ctime changes with every write and rename, even when a tool keeps
 * the mtime. */
static void cache_name(const struct otf_loc *cl, const struct fc_entry *e,
                       enum coding enc, char name[COMPRESS_NAME_MAX])
{
    char key[8192];
    int n = snprintf(key, sizeof(key),
                     "lfhttpd-compress-1\n%s\n%s\n%llu %lld.%09ld %lld.%09ld\n%s", cl->root,
                     e->path, (unsigned long long)e->st.st_size,
                     (long long)e->st.st_mtim.tv_sec, e->st.st_mtim.tv_nsec,
                     (long long)e->st.st_ctim.tv_sec, e->st.st_ctim.tv_nsec,
                     cl->etag_suffix[enc]);
    compress_dir_name(key, n > 0 && (size_t)n < sizeof(key) ? (size_t)n : sizeof(key) - 1, enc,
                      name);
}

/* A variant from the cache directory, or NULL. Pool threads: one open + fstat (+ one read of
 * a small file). A hit refreshes the file's mtime, the eviction order. */
static struct fc_entry *disk_lookup(struct otf_loc *cl, struct fc_entry *e,
                                    enum coding enc)
{
    char name[COMPRESS_NAME_MAX];
    cache_name(cl, e, enc, name);
    int fd = compress_dir_open(cl->dir, name);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        st.st_size >= e->st.st_size) {
        close(fd);
        return NULL;
    }
    futimens(fd, NULL); /* (the file is ours: best effort) */
    char *body = NULL;
    size_t size = (size_t)st.st_size;
    if (size <= FC_SMALL_MAX) {
        body = malloc(size);
        if (!body || pread(fd, body, size, 0) != (ssize_t)size) {
            free(body);
            close(fd);
            return NULL;
        }
    }
    stat_add(&cl->cz->disk_hits, 1);
    return fc_variant_new(e, enc, body, fd, size, body != NULL, cl->etag_suffix[enc]);
}

/* Write the in-line variant `v` of `e` to the directory (a job of its own). */
static void persist(struct compressor *cz, struct otf_loc *cl, struct fc_entry *e,
                    enum coding enc, struct fc_entry *v)
{
    struct compress_dir *d = cl->dir;
    char name[COMPRESS_NAME_MAX], tmp[64];
    cache_name(cl, e, enc, name);
    int fd = compress_dir_tmpfile(d, tmp);
    if (fd < 0) {
        compress_dir_broken(d, "cannot write", errno);
        return;
    }
    struct codec_sink out = { .fd = fd, .limit = UINT64_MAX };
    int rc = codec_sink_put(&out, v->body, (size_t)v->st.st_size);
    if (rc < 0) {
        compress_dir_broken(d, "cannot write", -rc);
        if (tmp[0])
            unlinkat(d->fd, tmp, 0);
    } else {
        compress_dir_commit(cz, d, fd, tmp, name, out.total);
    }
    close(fd);
}

bool otf_source_changed(const struct fc_entry *e)
{
    struct stat st;
    return fstat(e->fd, &st) < 0 || st.st_size != e->st.st_size ||
           st.st_mtim.tv_sec != e->st.st_mtim.tv_sec ||
           st.st_mtim.tv_nsec != e->st.st_mtim.tv_nsec ||
           st.st_ctim.tv_sec != e->st.st_ctim.tv_sec || st.st_ctim.tv_nsec != e->st.st_ctim.tv_nsec;
}

/* Make variant `enc` of `e` on a compressor thread: into the cache directory (then served
 * from there) or into a sealed memfd. Returns the variant or NULL. */
static struct fc_entry *make_variant(struct compressor *cz, struct otf_loc *cl,
                                     struct file_cache *fc, struct fc_entry *e,
                                     enum coding enc)
{
    struct compress_dir *d = cl->dir;
    uint64_t size = (uint64_t)e->st.st_size;
    char name[COMPRESS_NAME_MAX], tmp[64] = "";
    int fd;
    if (d) {
        cache_name(cl, e, enc, name);
        fd = compress_dir_tmpfile(d, tmp);
        if (fd < 0) {
            compress_dir_broken(d, "cannot write", errno);
            return NULL;
        }
    } else {
        fd = memfd_create("lfhttpd-variant", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) {
            stat_add(&cz->failed, 1);
            return NULL;
        }
    }
    char *buf = e->body ? NULL : malloc(CODEC_CHUNK);
    struct codec_source src = { .mem = e->body, .fd = e->fd, .size = size, .buf = buf };
    /* Never larger than the file; in memory, never larger than the cache can hold. */
    struct codec_sink out = { .fd = fd, .limit = size };
    if (!d && fc_entry_budget(fc) < out.limit)
        out.limit = fc_entry_budget(fc);
    int rc = e->body || buf ? codec_encode(enc, cl->level[enc], &src, &out, &cz->stop) : -ENOMEM;
    free(buf);
    if (rc == 0 && !e->body && otf_source_changed(e))
        rc = -ESTALE; /* what was read may not be the version e describes */
    if (rc < 0) {
        stat_add(rc == -EFBIG ? &cz->not_smaller : &cz->failed, rc != -ECANCELED);
        if (d && rc != -EFBIG && rc != -ESTALE && rc != -ECANCELED)
            compress_dir_broken(d, "cannot write", -rc);
        if (tmp[0])
            unlinkat(d->fd, tmp, 0);
        close(fd);
        return NULL;
    }
    bool on_disk = d && compress_dir_commit(cz, d, fd, tmp, name, out.total) == 0;
    if (d && !on_disk && atomic_load(&d->state) == DIR_BROKEN) {
        close(fd);
        return NULL; /* an unwritable directory means identity */
    }
    if (!d)
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    char *body = NULL;
    if (out.total <= FC_SMALL_MAX) {
        body = malloc(out.total ? out.total : 1);
        if (!body || pread(fd, body, out.total, 0) != (ssize_t)out.total) {
            free(body);
            close(fd);
            stat_add(&cz->failed, 1);
            return NULL;
        }
    }
    stat_add(&cz->made[enc], 1);
    stat_add(&cz->bytes_in, size);
    stat_add(&cz->bytes_out, out.total);
    return fc_variant_new(e, enc, body, fd, out.total, body || !on_disk, cl->etag_suffix[enc]);
}

static void job_free(struct compress_work *w)
{
    struct otf_job *job = (struct otf_job *)w;
    fc_release(job->e);
    fc_release(job->v);
    runtime_unref(job->rt);
    free(job);
}

static void job_run(struct compress_work *w, struct compressor *cz)
{
    struct otf_job *job = (struct otf_job *)w;
    struct otf_loc *cl = job->cl;
    struct fc_entry *e = job->e;
    struct file_cache *fc = cl->fc;
    if (cl->dir)
        compress_dir_probe(cz, cl->dir);
    bool dir_ok =
        !cl->dir || atomic_load_explicit(&cl->dir->state, memory_order_acquire) == DIR_OK;
    if (job->v) {
        if (dir_ok)
            persist(cz, cl, e, job->enc, job->v);
        return;
    }
    struct fc_entry *v = NULL;
    if (dir_ok && fc_cached(fc, e)) {
        if (cl->dir)
            v = disk_lookup(cl, e, job->enc);
        if (!v)
            v = make_variant(cz, cl, fc, e, job->enc);
    }
    if (v)
        fc_attach(fc, e, job->enc, v);
    atomic_store_explicit(&e->otf_state[job->enc], FC_OTF_DONE, memory_order_release);
}

/* Queue a job; it takes references of its own to rt, e and v. Returns 0 or -EAGAIN (queue
 * full or stopping: nothing was taken). */
static int enqueue(struct otf_loc *cl, struct runtime *rt, struct fc_entry *e,
                   enum coding enc, struct fc_entry *v)
{
    struct otf_job *job = calloc(1, sizeof(*job));
    if (!job)
        return -EAGAIN;
    *job = (struct otf_job){ .work = { .run = job_run, .free = job_free },
                             .rt = rt, .cl = cl, .e = e, .v = v, .enc = enc };
    /* The references the job holds, taken before it is queued (a compressor thread may run
     * it at once) and given back if it is not. */
    runtime_ref(rt);
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    if (v)
        atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
    if (compressor_submit(cl->cz, &job->work) < 0) {
        job_free(&job->work);
        return -EAGAIN;
    }
    return 0;
}

struct fc_entry *otf_want(struct otf_loc *cl, struct runtime *rt, struct fc_entry *e,
                          enum coding enc)
{
    if (!cl || !e->compressible)
        return NULL;
    struct fc_entry *v = fc_otf(e, enc);
    if (v)
        return v;
    unsigned char expected = FC_OTF_NONE;
    if (!atomic_compare_exchange_strong(&e->otf_state[enc], &expected, FC_OTF_BUSY))
        return NULL; /* on its way, or never */
    int dir_state =
        cl->dir ? atomic_load_explicit(&cl->dir->state, memory_order_acquire) : DIR_OK;
    if (dir_state == DIR_BROKEN) {
        atomic_store(&e->otf_state[enc], FC_OTF_DONE);
        return NULL;
    }
    if (cl->dir)
        v = disk_lookup(cl, e, enc);
    if (!v && dir_state == DIR_OK && e->body && (uint64_t)e->st.st_size <= COMPRESS_INLINE_MAX) {
        struct codec_source src = { .mem = e->body, .size = (uint64_t)e->st.st_size };
        struct codec_sink out = { .fd = -1, .limit = src.size };
        int rc = codec_encode(enc, cl->level[enc], &src, &out, NULL);
        if (rc == 0) {
            stat_add(&cl->cz->made[enc], 1);
            stat_add(&cl->cz->bytes_in, src.size);
            stat_add(&cl->cz->bytes_out, out.total);
            v = fc_variant_new(e, enc, out.mem, -1, out.total, true, cl->etag_suffix[enc]);
            if (v && cl->dir)
                enqueue(cl, rt, e, enc, v); /* to disk (if the queue is full: made again after
                                             * a restart) */
        } else {
            free(out.mem);
            stat_add(rc == -EFBIG ? &cl->cz->not_smaller : &cl->cz->failed, 1);
        }
        if (v && fc_attach(cl->fc, e, enc, v) < 0)
            v = NULL;
        atomic_store_explicit(&e->otf_state[enc], FC_OTF_DONE, memory_order_release);
        return v;
    }
    if (v) {
        if (fc_attach(cl->fc, e, enc, v) < 0)
            v = NULL;
        atomic_store_explicit(&e->otf_state[enc], FC_OTF_DONE, memory_order_release);
        return v;
    }
    if (enqueue(cl, rt, e, enc, NULL) < 0)
        atomic_store(&e->otf_state[enc], FC_OTF_NONE); /* a later request tries again */
    return NULL;
}

struct otf_loc *otf_create(_Atomic(void *) *process, struct file_cache *fc,
                           const struct loc_conf *lc, char *err, size_t errlen)
{
    err[0] = '\0';
    const struct compress_conf *cc = compress_conf(lc);
    if (cc->ndicts > 0 && cc->compress && !cc->cache_dir[0]) {
        snprintf(err, errlen, "compress_dictionary (%s) needs compress_cache_dir: the "
                 "dictionary store lives there", cc->dicts_where ? cc->dicts_where : "");
        return NULL;
    }
    if (!cc->compress)
        return NULL;
    struct otf_loc *cl = calloc(1, sizeof(*cl));
    if (!cl || !(cl->root = strdup(lc->root))) {
        free(cl);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cl->fc = fc;
    cl->cz = compressor_start(process, err, errlen);
    if (!cl->cz) {
        free(cl->root);
        free(cl);
        return NULL;
    }
    if (cc->cache_dir[0]) {
        cl->dir = compress_dir_get(cl->cz, cc->cache_dir, (uint64_t)cc->cache_size);
        if (!cl->dir) {
            otf_destroy(cl);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
    }
    /* The ETag of a variant names what makes its bytes: coding, level, library version. */
    for (int i = 0; i < CODING_COUNT; i++) {
        char ver[24];
        codecs[i]->version(ver, sizeof(ver));
        cl->level[i] = cc->level[i];
        snprintf(cl->etag_suffix[i], sizeof(cl->etag_suffix[i]), "-%.4s%d.%.23s",
                 coding_names[i], cl->level[i], ver);
        if (i == CODING_ZSTD) /* dcz is zstd with a dictionary, at zstd's level */
            snprintf(cl->dcz_suffix, sizeof(cl->dcz_suffix), "-dcz%d.%.23s", cl->level[i], ver);
    }
    return cl;
}

void otf_destroy(struct otf_loc *cl)
{
    if (!cl)
        return;
    if (cl->dir)
        compress_dir_put(cl->cz, cl->dir);
    free(cl->root);
    free(cl);
}
