/* compress.c — compression of static files on the fly, paid once; see compress.h. */
#include "compress/compress.h"

#include <brotli/encode.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "base/digest.h"
#include "exchange/handler.h"
#include "log/log.h"
#include "conf/runtime.h"
#include "conf/site.h"

#define CHUNK (64 * 1024)        /* input read per step (background jobs) */
#define OUT_CHUNK (16 * 1024)    /* output per step */
#define KEY_HEX 40               /* cache file names: 160 bits of SHA-256, in hex */

static const char *const cache_suffix[FC_NENC] = { ".br", ".zst", ".gz" };

/* ---- eligibility ---------------------------------------------------------------------------- */

/* Does media type `t` (`n` bytes, lower-case or not) match pattern `p` (lower-case, at most one
 * '*', which matches any run of characters but '/')? */
static bool type_matches(const char *p, const char *t, size_t n)
{
    const char *star = strchr(p, '*');
    if (!star)
        return strlen(p) == n && !strncasecmp(p, t, n);
    size_t pre = (size_t)(star - p), suf = strlen(star + 1);
    if (n < pre + suf || strncasecmp(p, t, pre) || strncasecmp(star + 1, t + n - suf, suf))
        return false;
    return !memchr(t + pre, '/', n - pre - suf);
}

bool compress_type_ok(const struct loc_conf *lc, const char *type, size_t len)
{
    size_t n = 0; /* the media type without its parameters */
    while (n < len && type[n] != ';' && type[n] != ' ' && type[n] != '\t')
        n++;
    for (int i = 0; i < lc->ncompress_types; i++)
        if (type_matches(lc->compress_types[i], type, n))
            return true;
    return false;
}

bool compress_eligible(const struct loc_conf *lc, const char *type, uint64_t size)
{
    if (!lc->compress || size == 0 || size < (uint64_t)lc->compress_min_size ||
        size > COMPRESS_MAX_INPUT || !type)
        return false;
    return compress_type_ok(lc, type, strlen(type));
}

/* ---- negotiation ------------------------------------------------------------------------------ */

/* q-value of one Accept-Encoding element's parameters, in thousandths (1000 when absent);
 * -1 when malformed. */
static int parse_q(const char *p, const char *end)
{
    while (p < end) {
        while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
            p++;
        if (end - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            p += 2;
            if (p == end || (*p != '0' && *p != '1'))
                return -1;
            int q = (*p++ - '0') * 1000;
            if (p < end && *p == '.') {
                p++;
                for (int scale = 100; p < end && *p >= '0' && *p <= '9'; scale /= 10)
                    q += (*p++ - '0') * scale;
            }
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            return p == end && q <= 1000 ? q : -1;
        }
        while (p < end && *p != ';')
            p++;
    }
    return 1000;
}

void compress_accept_parse(struct strview hdr, struct accept_enc *ae)
{
    static const char *const names[FC_NENC] = { "br", "zstd", "gzip" };
    int star = -1;
    for (int i = 0; i < FC_NENC; i++)
        ae->q[i] = -1;
    ae->identity = -1;
    struct strview item;
    while (hdr.ptr && sv_list_next(&hdr, &item)) {
        const char *semi = memchr(item.ptr, ';', item.len);
        struct strview coding = sv_trim((struct strview){ item.ptr, semi ? (size_t)(semi - item.ptr) : item.len });
        int q = semi ? parse_q(semi, item.ptr + item.len) : 1000;
        if (q < 0)
            continue;
        if (SV_CASE_EQ(coding, "*"))
            star = q;
        else if (SV_CASE_EQ(coding, "identity"))
            ae->identity = q;
        else if (SV_CASE_EQ(coding, "x-gzip"))
            ae->q[FC_GZIP] = q;
        for (int i = 0; i < FC_NENC; i++)
            if (sv_case_eq(coding, names[i], strlen(names[i])))
                ae->q[i] = q;
    }
    for (int i = 0; i < FC_NENC; i++)
        if (ae->q[i] < 0)
            ae->q[i] = star >= 0 ? star : 0;
    /* Unlisted identity is acceptable (unless `*;q=0` excludes it) but not preferred over a
     * coding the client listed, whatever that coding's q. */
    if (ae->identity < 0)
        ae->identity = star >= 0 ? (star == 0 ? 0 : 1) : 1;
}

/* ---- the codings ------------------------------------------------------------------------------ */

/* Where compressed bytes go: a descriptor, or memory. Reaching `limit` bytes aborts the work
 * (-EFBIG): the variant would not be smaller than the file, or would not fit. */
struct encode_out {
    int fd;
    char *mem;
    size_t cap;
    uint64_t total, limit;
};

static int sink_put(struct encode_out *s, const void *p, size_t n)
{
    if (!n)
        return 0;
    if (s->total + n >= s->limit)
        return -EFBIG;
    if (s->fd >= 0) {
        const char *c = p;
        size_t left = n;
        while (left) {
            ssize_t w = write(s->fd, c, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return w < 0 ? -errno : -EIO;
            c += w;
            left -= (size_t)w;
        }
    } else {
        if (s->total + n > s->cap) {
            size_t nc = s->cap ? s->cap * 2 : 4096;
            while (nc < s->total + n)
                nc *= 2;
            char *m = realloc(s->mem, nc);
            if (!m)
                return -ENOMEM;
            s->mem = m;
            s->cap = nc;
        }
        memcpy(s->mem + s->total, p, n);
    }
    s->total += n;
    return 0;
}

/* What is compressed: memory, or `size` bytes of a descriptor read with pread. */
struct source {
    const char *mem;
    int fd;
    uint64_t size, off;
    char *buf;              /* CHUNK bytes for reads from fd */
};

/* The next piece of input: *p, *n (0 at the end). Returns 0, -ESTALE when the file is shorter
 * than it was (truncated meanwhile), or -errno. */
static int source_next(struct source *src, const unsigned char **p, size_t *n)
{
    uint64_t left = src->size - src->off;
    size_t want = left < CHUNK ? (size_t)left : CHUNK;
    if (src->mem) {
        *p = (const unsigned char *)src->mem + src->off;
    } else if (want) {
        ssize_t r;
        do
            r = pread(src->fd, src->buf, want, (off_t)src->off);
        while (r < 0 && errno == EINTR);
        if (r < 0)
            return -errno;
        if ((size_t)r != want)
            return -ESTALE;
        *p = (const unsigned char *)src->buf;
    } else {
        *p = (const unsigned char *)"";
    }
    *n = want;
    src->off += want;
    return 0;
}

static int gzip_run(struct source *src, struct encode_out *out, int level, _Atomic bool *stop)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    /* 15 + 16: a gzip wrapper (mtime 0, no name: the same bytes on every run and replica) */
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    unsigned char ob[OUT_CHUNK];
    int rc = 0;
    bool last = false;
    while (!rc && !last) {
        const unsigned char *p;
        size_t n;
        if (stop && atomic_load_explicit(stop, memory_order_relaxed)) {
            rc = -ECANCELED;
            break;
        }
        if ((rc = source_next(src, &p, &n)) < 0)
            break;
        last = src->off == src->size;
        z.next_in = (unsigned char *)(uintptr_t)p;
        z.avail_in = (unsigned)n;
        do {
            z.next_out = ob;
            z.avail_out = sizeof(ob);
            if (deflate(&z, last ? Z_FINISH : Z_NO_FLUSH) == Z_STREAM_ERROR) {
                rc = -EIO;
                break;
            }
            rc = sink_put(out, ob, sizeof(ob) - z.avail_out);
        } while (!rc && z.avail_out == 0);
    }
    deflateEnd(&z);
    return rc;
}

static int brotli_run(struct source *src, struct encode_out *out, int level, _Atomic bool *stop)
{
    BrotliEncoderState *b = BrotliEncoderCreateInstance(NULL, NULL, NULL);
    if (!b)
        return -ENOMEM;
    /* The window: the smallest that holds the whole file (less memory, the same result). */
    int lgwin = BROTLI_MIN_WINDOW_BITS;
    while (lgwin < BROTLI_MAX_WINDOW_BITS && ((uint64_t)1 << lgwin) - 16 < src->size)
        lgwin++;
    BrotliEncoderSetParameter(b, BROTLI_PARAM_QUALITY, (uint32_t)level);
    BrotliEncoderSetParameter(b, BROTLI_PARAM_LGWIN, (uint32_t)lgwin);
    BrotliEncoderSetParameter(b, BROTLI_PARAM_SIZE_HINT,
                              src->size < (1u << 30) ? (uint32_t)src->size : 1u << 30);
    unsigned char ob[OUT_CHUNK];
    const unsigned char *p = NULL;
    size_t avail_in = 0;
    int rc = 0;
    bool last = false;
    while (!rc) {
        if (!avail_in && !last) {
            if (stop && atomic_load_explicit(stop, memory_order_relaxed)) {
                rc = -ECANCELED;
                break;
            }
            if ((rc = source_next(src, &p, &avail_in)) < 0)
                break;
            last = src->off == src->size;
        }
        size_t avail_out = sizeof(ob);
        unsigned char *next_out = ob;
        if (!BrotliEncoderCompressStream(b, last ? BROTLI_OPERATION_FINISH
                                                 : BROTLI_OPERATION_PROCESS,
                                         &avail_in, &p, &avail_out, &next_out, NULL)) {
            rc = -EIO;
            break;
        }
        rc = sink_put(out, ob, sizeof(ob) - avail_out);
        if (BrotliEncoderIsFinished(b))
            break;
    }
    BrotliEncoderDestroyInstance(b);
    return rc;
}

static int zstd_run(struct source *src, struct encode_out *out, int level, _Atomic bool *stop)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    if (!z)
        return -ENOMEM;
    /* The content size in the frame header; a checksum for the decoder. Levels up to 19 use
     * windows of at most 8 MiB, what browsers accept (RFC 9659). */
    ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setPledgedSrcSize(z, src->size);
    unsigned char ob[OUT_CHUNK];
    int rc = 0;
    bool last = false;
    while (!rc && !last) {
        const unsigned char *p;
        size_t n;
        if (stop && atomic_load_explicit(stop, memory_order_relaxed)) {
            rc = -ECANCELED;
            break;
        }
        if ((rc = source_next(src, &p, &n)) < 0)
            break;
        last = src->off == src->size;
        ZSTD_inBuffer in = { p, n, 0 };
        for (;;) {
            ZSTD_outBuffer o = { ob, sizeof(ob), 0 };
            size_t r = ZSTD_compressStream2(z, &o, &in, last ? ZSTD_e_end : ZSTD_e_continue);
            if (ZSTD_isError(r)) {
                rc = -EIO;
                break;
            }
            if ((rc = sink_put(out, ob, o.pos)) < 0)
                break;
            if (last ? r == 0 : in.pos == in.size)
                break;
        }
    }
    ZSTD_freeCCtx(z);
    return rc;
}

/* Compress all of `src` into `out`. Returns 0, -EFBIG (reached out->limit), -ESTALE (the file
 * shrank), -ECANCELED (stopping) or -errno. */
static int encode(enum fc_encoding enc, int level, struct source *src, struct encode_out *out,
                  _Atomic bool *stop)
{
    switch (enc) {
    case FC_BR:
        return brotli_run(src, out, level, stop);
    case FC_ZSTD:
        return zstd_run(src, out, level, stop);
    case FC_GZIP:
        return gzip_run(src, out, level, stop);
    default:
        return -EINVAL;
    }
}

/* ---- the compressor: threads, queue, cache directories ------------------------------------- */

enum { DIR_UNKNOWN = 0, DIR_OK, DIR_BROKEN };

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
    char path[];
};

struct compress_job {
    struct compress_job *next;
    struct runtime *rt;         /* held: keeps the cache, the location and its instance */
    struct compress_loc *cl;
    struct fc_entry *e;         /* held */
    struct fc_entry *v;         /* held; set: only write this variant (made in-line) to disk */
    enum fc_encoding enc;
};

struct compressor {
    pthread_mutex_t lock;       /* the queue, the directory list */
    pthread_cond_t cv;
    struct compress_job *head, *tail;
    unsigned queued;
    _Atomic bool stop;
    pthread_t thread[COMPRESS_THREADS];
    unsigned nthreads;
    struct compress_dir *dirs;
    _Atomic unsigned running;
    _Atomic uint64_t made[FC_NENC], bytes_in, bytes_out, not_smaller, failed, disk_hits,
        disk_writes, disk_evictions, dropped;
    struct compress_streams streams;
};

struct compress_loc {
    struct compressor *cz;
    struct file_cache *fc;      /* the static handler instance's (its generation's) */
    struct compress_dir *dir;   /* NULL: memory only */
    char *root;                 /* the location's root, for cache keys */
    int level[FC_NENC];
    char etag_suffix[FC_NENC][48]; /* "-br11.1.0.9": coding, level, library version */
};

static void stat_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* The cache file name of variant `enc` of `e`: a hash of what makes its bytes what they are
 * (the location's root, the path, the file's size, mtime and ctime, the coding, its level and
 * the library's version). ctime changes with every write and rename, even when a tool keeps
 * the mtime. */
static void cache_name(const struct compress_loc *cl, const struct fc_entry *e,
                       enum fc_encoding enc, char name[KEY_HEX + 8])
{
    char key[8192];
    int n = snprintf(key, sizeof(key), "lfhttpd-compress-1\n%s\n%s\n%llu %lld.%09ld %lld.%09ld\n%s",
                     cl->root, e->path, (unsigned long long)e->st.st_size,
                     (long long)e->st.st_mtim.tv_sec, e->st.st_mtim.tv_nsec,
                     (long long)e->st.st_ctim.tv_sec, e->st.st_ctim.tv_nsec,
                     cl->etag_suffix[enc]);
    digest_hex(key, n > 0 && (size_t)n < sizeof(key) ? (size_t)n : sizeof(key) - 1, name,
               KEY_HEX);
    snprintf(name + KEY_HEX, 8, "%s", cache_suffix[enc]);
}

/* Is `name` one of our cache files (40 hex digits and a coding's suffix)? */
static bool is_cache_name(const char *name)
{
    for (int i = 0; i < KEY_HEX; i++)
        if (!isxdigit((unsigned char)name[i]) || isupper((unsigned char)name[i]))
            return false;
    for (int i = 0; i < FC_NENC; i++)
        if (!strcmp(name + KEY_HEX, cache_suffix[i]))
            return true;
    return false;
}

/* A variant from the cache directory, or NULL. Pool threads: one open + fstat (+ one read of
 * a small file). A hit refreshes the file's mtime, the eviction order. */
static struct fc_entry *disk_lookup(struct compress_loc *cl, struct fc_entry *e,
                                    enum fc_encoding enc)
{
    struct compress_dir *d = cl->dir;
    int state = atomic_load_explicit(&d->state, memory_order_acquire);
    int dfd = state == DIR_OK ? d->fd : state == DIR_UNKNOWN ? d->rfd : -1;
    if (dfd < 0)
        return NULL;
    char name[KEY_HEX + 8];
    cache_name(cl, e, enc, name);
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
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

struct cache_file {
    char name[KEY_HEX + 8];
    uint64_t size;
    int64_t mtime;
};

static int cmp_mtime(const void *a, const void *b)
{
    const struct cache_file *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Count our files in the directory; when `max` is exceeded, remove the least recently used
 * until `target` bytes are left. Compressor threads only, under d->lock. */
static void dir_scan(struct compressor *cz, struct compress_dir *d, uint64_t max, uint64_t target)
{
    int fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* its own offset */
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct cache_file *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        struct stat st;
        if (strlen(de->d_name) >= sizeof(items->name) || !is_cache_name(de->d_name) ||
            fstatat(d->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        total += (uint64_t)st.st_size;
        if (n == cap) {
            struct cache_file *ni = realloc(items, (cap = cap ? cap * 2 : 256) * sizeof(*items));
            if (!ni)
                break;
            items = ni;
        }
        memcpy(items[n].name, de->d_name, strlen(de->d_name) + 1); /* (length checked above) */
        items[n].size = (uint64_t)st.st_size;
        items[n].mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        n++;
    }
    closedir(dir);
    if (total > max) {
        qsort(items, n, sizeof(*items), cmp_mtime);
        for (size_t i = 0; i < n && total > target; i++)
            if (unlinkat(d->fd, items[i].name, 0) == 0) {
                total -= items[i].size;
                stat_add(&cz->disk_evictions, 1);
            }
    }
    free(items);
    d->bytes = total;
}

/* Give up on a directory (one log line per directory and configuration generation). */
static void dir_broken(struct compress_dir *d, const char *what, int err)
{
    if (atomic_exchange(&d->state, DIR_BROKEN) != DIR_BROKEN)
        log_warn("compress_cache_dir %s: %s: %s; its locations serve identity", d->path, what,
                 strerror(err));
}

/* The first job that needs the directory: create it if missing, check that it can be
 * written, count what it holds. Compressor threads only (after privileges were dropped). */
static void dir_probe(struct compressor *cz, struct compress_dir *d)
{
    pthread_mutex_lock(&d->lock);
    if (atomic_load(&d->state) != DIR_UNKNOWN) {
        pthread_mutex_unlock(&d->lock);
        return;
    }
    /* Probed before (a reload took the directory up again): its descriptor stays, since a
     * thread that saw it usable may still be using it. */
    int fd = d->fd;
    if (fd < 0 && mkdir(d->path, 0700) < 0 && errno != EEXIST) {
        dir_broken(d, "cannot create", errno);
        pthread_mutex_unlock(&d->lock);
        return;
    }
    if (fd < 0)
        fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        dir_broken(d, "cannot open", errno);
        pthread_mutex_unlock(&d->lock);
        return;
    }
    int t = openat(fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (t >= 0) {
        d->tmpfile = true;
        close(t);
    } else if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) {
        /* no O_TMPFILE here: temporary names and rename() */
        char tmp[64];
        snprintf(tmp, sizeof(tmp), ".probe-%d", (int)getpid());
        t = openat(fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (t >= 0) {
            close(t);
            unlinkat(fd, tmp, 0);
        }
    }
    if (t < 0) {
        int err = errno;
        if (fd != d->fd)
            close(fd);
        dir_broken(d, "cannot write", err);
        pthread_mutex_unlock(&d->lock);
        return;
    }
    d->fd = fd;
    if (atomic_exchange(&d->reprobe, false))
        log_notice("compress_cache_dir %s: written again", d->path);
    uint64_t max = atomic_load(&d->max_bytes);
    dir_scan(cz, d, max, max - max / 10);
    atomic_store_explicit(&d->state, DIR_OK, memory_order_release);
    pthread_mutex_unlock(&d->lock);
}

/* A file in the directory to write a variant into: anonymous (O_TMPFILE) or named `tmp`. */
static int dir_tmpfile(struct compress_dir *d, char tmp[64])
{
    tmp[0] = '\0';
    if (d->tmpfile)
        return openat(d->fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    static _Atomic unsigned seq;
    snprintf(tmp, 64, ".tmp-%d-%u", (int)getpid(), atomic_fetch_add(&seq, 1));
    return openat(d->fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

/* Give the complete file `fd` (`size` bytes) its name, making room first. Returns 0, or -1
 * when it is not kept (too large for the directory, or a write error: logged, directory
 * given up). */
static int dir_commit(struct compressor *cz, struct compress_dir *d, int fd, const char *tmp,
                      const char *name, uint64_t size)
{
    uint64_t max = atomic_load(&d->max_bytes);
    if (size > max / 2) {
        if (tmp[0])
            unlinkat(d->fd, tmp, 0);
        return -1; /* would crowd everything else out */
    }
    if (fsync(fd) < 0) { /* the name must never point at bytes not yet on disk */
        dir_broken(d, "cannot write", errno);
        if (tmp[0])
            unlinkat(d->fd, tmp, 0);
        return -1;
    }
    pthread_mutex_lock(&d->lock);
    if (d->bytes + size > max)
        dir_scan(cz, d, max - size, max - max / 10 - size);
    int rc;
    if (tmp[0]) {
        rc = renameat(d->fd, tmp, d->fd, name);
    } else {
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        rc = linkat(AT_FDCWD, proc, d->fd, name, AT_SYMLINK_FOLLOW);
        if (rc < 0 && errno == EEXIST)
            rc = 0; /* another thread or process made the same bytes: one copy is enough */
    }
    if (rc == 0) {
        d->bytes += size;
        stat_add(&cz->disk_writes, 1);
    }
    pthread_mutex_unlock(&d->lock);
    if (rc < 0) {
        dir_broken(d, "cannot write", errno);
        if (tmp[0])
            unlinkat(d->fd, tmp, 0);
    }
    return rc;
}

/* Write the in-line variant `v` of `e` to the directory (a job of its own). */
static void persist(struct compressor *cz, struct compress_loc *cl, struct fc_entry *e,
                    enum fc_encoding enc, struct fc_entry *v)
{
    struct compress_dir *d = cl->dir;
    char name[KEY_HEX + 8], tmp[64];
    cache_name(cl, e, enc, name);
    int fd = dir_tmpfile(d, tmp);
    if (fd < 0) {
        dir_broken(d, "cannot write", errno);
        return;
    }
    struct encode_out out = { .fd = fd, .limit = UINT64_MAX };
    int rc = sink_put(&out, v->body, (size_t)v->st.st_size);
    if (rc < 0) {
        dir_broken(d, "cannot write", -rc);
        if (tmp[0])
            unlinkat(d->fd, tmp, 0);
    } else {
        dir_commit(cz, d, fd, tmp, name, out.total);
    }
    close(fd);
}

/* Did the file change since `e` described it? (A job read it through e's descriptor.) */
static bool source_changed(const struct fc_entry *e)
{
    struct stat st;
    return fstat(e->fd, &st) < 0 || st.st_size != e->st.st_size ||
           st.st_mtim.tv_sec != e->st.st_mtim.tv_sec ||
           st.st_mtim.tv_nsec != e->st.st_mtim.tv_nsec ||
           st.st_ctim.tv_sec != e->st.st_ctim.tv_sec || st.st_ctim.tv_nsec != e->st.st_ctim.tv_nsec;
}

/* Make variant `enc` of `e` on a compressor thread: into the cache directory (then served
 * from there) or into a sealed memfd. Returns the variant or NULL. */
static struct fc_entry *make_variant(struct compressor *cz, struct compress_loc *cl,
                                     struct file_cache *fc, struct fc_entry *e,
                                     enum fc_encoding enc)
{
    struct compress_dir *d = cl->dir;
    uint64_t size = (uint64_t)e->st.st_size;
    char name[KEY_HEX + 8], tmp[64] = "";
    int fd;
    if (d) {
        cache_name(cl, e, enc, name);
        fd = dir_tmpfile(d, tmp);
        if (fd < 0) {
            dir_broken(d, "cannot write", errno);
            return NULL;
        }
    } else {
        fd = memfd_create("lfhttpd-variant", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) {
            stat_add(&cz->failed, 1);
            return NULL;
        }
    }
    char *buf = e->body ? NULL : malloc(CHUNK);
    struct source src = { .mem = e->body, .fd = e->fd, .size = size, .buf = buf };
    /* Never larger than the file; in memory, never larger than the cache can hold. */
    struct encode_out out = { .fd = fd, .limit = size };
    if (!d && fc_entry_budget(fc) < out.limit)
        out.limit = fc_entry_budget(fc);
    int rc = e->body || buf ? encode(enc, cl->level[enc], &src, &out, &cz->stop) : -ENOMEM;
    free(buf);
    if (rc == 0 && !e->body && source_changed(e))
        rc = -ESTALE; /* what was read may not be the version e describes */
    if (rc < 0) {
        stat_add(rc == -EFBIG ? &cz->not_smaller : &cz->failed, rc != -ECANCELED);
        if (d && rc != -EFBIG && rc != -ESTALE && rc != -ECANCELED)
            dir_broken(d, "cannot write", -rc);
        if (tmp[0])
            unlinkat(d->fd, tmp, 0);
        close(fd);
        return NULL;
    }
    bool on_disk = d && dir_commit(cz, d, fd, tmp, name, out.total) == 0;
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

static void job_free(struct compress_job *job)
{
    fc_release(job->e);
    fc_release(job->v);
    runtime_unref(job->rt);
    free(job);
}

static void job_run(struct compressor *cz, struct compress_job *job)
{
    struct compress_loc *cl = job->cl;
    struct fc_entry *e = job->e;
    struct file_cache *fc = cl->fc;
    if (cl->dir)
        dir_probe(cz, cl->dir);
    bool dir_ok = !cl->dir || atomic_load_explicit(&cl->dir->state, memory_order_acquire) == DIR_OK;
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

static void *compressor_main(void *arg)
{
    struct compressor *cz = arg;
    /* Compression is background work: requests come first. */
    setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
    pthread_mutex_lock(&cz->lock);
    for (;;) {
        while (!cz->head && !atomic_load(&cz->stop))
            pthread_cond_wait(&cz->cv, &cz->lock);
        struct compress_job *job = cz->head;
        if (!job || atomic_load(&cz->stop))
            break;
        cz->head = job->next;
        if (!cz->head)
            cz->tail = NULL;
        cz->queued--;
        atomic_fetch_add(&cz->running, 1);
        pthread_mutex_unlock(&cz->lock);
        job_run(cz, job);
        job_free(job);
        atomic_fetch_sub(&cz->running, 1);
        pthread_mutex_lock(&cz->lock);
    }
    pthread_mutex_unlock(&cz->lock);
    return NULL;
}

/* Queue a job; the caller's references to rt, e and v go with it. Returns 0 or -EAGAIN (queue
 * full or stopping: nothing was taken). */
static int enqueue(struct compress_loc *cl, struct runtime *rt, struct fc_entry *e,
                   enum fc_encoding enc, struct fc_entry *v)
{
    struct compressor *cz = cl->cz;
    struct compress_job *job = calloc(1, sizeof(*job));
    if (!job)
        return -EAGAIN;
    pthread_mutex_lock(&cz->lock);
    if (cz->queued >= COMPRESS_QUEUE_MAX || atomic_load(&cz->stop) || !cz->nthreads) {
        pthread_mutex_unlock(&cz->lock);
        free(job);
        stat_add(&cz->dropped, 1);
        return -EAGAIN;
    }
    runtime_ref(rt);
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    if (v)
        atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
    *job = (struct compress_job){ .rt = rt, .cl = cl, .e = e, .v = v, .enc = enc };
    if (cz->tail)
        cz->tail->next = job;
    else
        cz->head = job;
    cz->tail = job;
    cz->queued++;
    pthread_cond_signal(&cz->cv);
    pthread_mutex_unlock(&cz->lock);
    return 0;
}

/* ---- requests ----------------------------------------------------------------------------- */

struct fc_entry *compress_want(struct compress_loc *cl, struct runtime *rt, struct fc_entry *e,
                               enum fc_encoding enc)
{
    if (!cl || !e->compressible)
        return NULL;
    struct fc_entry *v = fc_otf(e, enc);
    if (v)
        return v;
    unsigned char expected = FC_OTF_NONE;
    if (!atomic_compare_exchange_strong(&e->otf_state[enc], &expected, FC_OTF_BUSY))
        return NULL; /* on its way, or never */
    int dir_state = cl->dir ? atomic_load_explicit(&cl->dir->state, memory_order_acquire) : DIR_OK;
    if (dir_state == DIR_BROKEN) {
        atomic_store(&e->otf_state[enc], FC_OTF_DONE);
        return NULL;
    }
    if (cl->dir)
        v = disk_lookup(cl, e, enc);
    if (!v && dir_state == DIR_OK && e->body && (uint64_t)e->st.st_size <= COMPRESS_INLINE_MAX) {
        struct source src = { .mem = e->body, .size = (uint64_t)e->st.st_size };
        struct encode_out out = { .fd = -1, .limit = src.size };
        int rc = encode(enc, cl->level[enc], &src, &out, NULL);
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

/* ---- set-up and shutdown ---------------------------------------------------------------------- */

/* The static handler type's process-wide state: made by the first location that compresses,
 * kept in the server's slot for the type. */
static struct compressor *compressor_start(_Atomic(void *) *process, char *err, size_t errlen)
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
    /* Signals belong to the pool's signalfd: the compressor threads block them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = 0;
    for (unsigned i = 0; i < COMPRESS_THREADS && !rc; i++) {
        rc = pthread_create(&cz->thread[i], NULL, compressor_main, cz);
        if (!rc) {
            pthread_setname_np(cz->thread[i], "lfhttpd-compress");
            cz->nthreads++;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!cz->nthreads) /* small files are still compressed in-line */
        log_warn("compression: cannot start a thread (%s): larger files are served identity",
                 strerror(rc));
    atomic_store(process, cz);
    return cz;
}

static struct compress_dir *dir_get(struct compressor *cz, const char *path, uint64_t max)
{
    pthread_mutex_lock(&cz->lock);
    struct compress_dir *d = cz->dirs;
    while (d && strcmp(d->path, path))
        d = d->next;
    if (d) {
        d->refs++;
        atomic_store(&d->max_bytes, max); /* the newest configuration's bound */
        /* A reload tries a directory that was given up again (README): the next job that
         * needs it probes it anew. */
        int broken = DIR_BROKEN;
        if (atomic_compare_exchange_strong(&d->state, &broken, DIR_UNKNOWN))
            atomic_store(&d->reprobe, true);
    } else if ((d = calloc(1, sizeof(*d) + strlen(path) + 1))) {
        strcpy(d->path, path);
        d->refs = 1;
        d->fd = -1;
        d->rfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        atomic_store(&d->max_bytes, max);
        pthread_mutex_init(&d->lock, NULL);
        d->next = cz->dirs;
        cz->dirs = d;
    }
    pthread_mutex_unlock(&cz->lock);
    return d;
}

static void dir_put(struct compressor *cz, struct compress_dir *d)
{
    pthread_mutex_lock(&cz->lock);
    if (--d->refs == 0) {
        struct compress_dir **pp = &cz->dirs;
        while (*pp != d)
            pp = &(*pp)->next;
        *pp = d->next;
    } else {
        d = NULL;
    }
    pthread_mutex_unlock(&cz->lock);
    if (d) {
        if (d->fd >= 0)
            close(d->fd);
        if (d->rfd >= 0)
            close(d->rfd);
        pthread_mutex_destroy(&d->lock);
        free(d);
    }
}

static void version_text(char *out, size_t cap, unsigned major, unsigned minor, unsigned patch)
{
    snprintf(out, cap, "%u.%u.%u", major, minor, patch);
}

struct compress_loc *compress_loc_create(_Atomic(void *) *process, struct file_cache *fc,
                                         const struct loc_conf *lc, char *err, size_t errlen)
{
    err[0] = '\0';
    if (!lc->compress)
        return NULL;
    struct compress_loc *cl = calloc(1, sizeof(*cl));
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
    if (lc->compress_cache_dir[0]) {
        cl->dir = dir_get(cl->cz, lc->compress_cache_dir, (uint64_t)lc->compress_cache_size);
        if (!cl->dir) {
            compress_loc_destroy(cl);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
    }
    /* The ETag of a variant names what makes its bytes: coding, level, library version. */
    char ver[FC_NENC][24];
    uint32_t bv = BrotliEncoderVersion();
    version_text(ver[FC_BR], sizeof(ver[0]), bv >> 24, (bv >> 12) & 0xfff, bv & 0xfff);
    unsigned zv = ZSTD_versionNumber();
    version_text(ver[FC_ZSTD], sizeof(ver[0]), zv / 10000, zv / 100 % 100, zv % 100);
    snprintf(ver[FC_GZIP], sizeof(ver[0]), "%s", zlibVersion());
    for (int i = 0; i < FC_NENC; i++) {
        cl->level[i] = lc->compress_level[i];
        snprintf(cl->etag_suffix[i], sizeof(cl->etag_suffix[i]), "-%.4s%d.%.23s",
                 fc_encoding_names[i], cl->level[i], ver[i]);
    }
    return cl;
}

void compress_loc_destroy(struct compress_loc *cl)
{
    if (!cl)
        return;
    if (cl->dir)
        dir_put(cl->cz, cl->dir);
    free(cl->root);
    free(cl);
}

void *compress_process_start(_Atomic(void *) *process, char *err, size_t errlen)
{
    return compressor_start(process, err, errlen);
}

struct compress_streams *compress_streams_of(void *process)
{
    return process ? &((struct compressor *)process)->streams : NULL;
}

void compress_get_stats(void *process, struct compress_stats *out)
{
    memset(out, 0, sizeof(*out));
    struct compressor *cz = process;
    if (!cz)
        return;
    for (int i = 0; i < FC_NENC; i++)
        out->made[i] = atomic_load_explicit(&cz->made[i], memory_order_relaxed);
#define GET(f) out->f = atomic_load_explicit(&cz->f, memory_order_relaxed)
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
    for (int i = 0; i < FC_NENC; i++)
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
        struct compress_job *job = cz->head;
        cz->head = job->next;
        job_free(job); /* may free the last runtime: its instances give their directories back */
    }
    while (cz->dirs) { /* only if a runtime outlived this call (it should not) */
        struct compress_dir *d = cz->dirs;
        cz->dirs = d->next;
        if (d->fd >= 0)
            close(d->fd);
        if (d->rfd >= 0)
            close(d->rfd);
        pthread_mutex_destroy(&d->lock);
        free(d);
    }
    pthread_mutex_destroy(&cz->lock);
    pthread_cond_destroy(&cz->cv);
    free(cz);
}
