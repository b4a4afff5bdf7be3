/* file_cache.c — the open-file cache; see file_cache.h. */
#include "static/file_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "compress/compress.h"
#include "compress/compress_conf.h"
#include "base/digest.h"
#include "http/http_date.h"
#include "http/http_response.h"
#include "log/log.h"
#include "static/mime.h"
#include "conf/site.h"
#include "static/cache_policy.h"
#include "static/static_conf.h"

#define FC_SHARDS 64

struct fc_shard {
    pthread_rwlock_t lock;
    struct fc_entry **buckets;
    unsigned nbuckets;          /* power of two */
    unsigned entries;
    size_t bytes;
    struct fc_entry *oldest, *newest;
    _Atomic uint64_t hits, misses, revalidations, evictions;
};

struct file_cache {
    unsigned max_entries_per_shard;
    size_t max_bytes_per_shard;
    unsigned interval_ms;
    const struct mime_table *mime;
    struct fc_shard shards[FC_SHARDS];
};

static const char *const enc_suffix[CODING_COUNT] = { ".br", ".zst", ".gz" };

/* ---- opening beneath a root ----------------------------------------------------------------- */

static _Atomic int openat2_missing;

/* Fallback as strict as RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS for kernels or sandboxes without
 * openat2: walk the (normalised, ".."-free) path one component at a time, following no
 * symlink. */
static int open_walk(int root_fd, const char *rel, int flags)
{
    char comp[256];
    int dir = root_fd;
    const char *p = rel;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len >= sizeof(comp)) {
            if (dir != root_fd)
                close(dir);
            return -ENAMETOOLONG;
        }
        memcpy(comp, p, len);
        comp[len] = '\0';
        bool last = !slash || slash[1] == '\0';
        int fd = openat(dir, comp,
                        last ? flags | O_NOFOLLOW : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int err = errno;
        if (dir != root_fd)
            close(dir);
        if (fd < 0)
            return err == ELOOP ? -EXDEV : -err;
        if (last)
            return fd;
        dir = fd;
        p = slash + 1;
    }
}

/* The real path of an open fd (via /proc/self/fd). Returns its length or -1. */
static ssize_t fd_path(int fd, char *buf, size_t cap)
{
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, buf, cap - 1);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

/* RESOLVE_BENEATH refuses every absolute symlink, even one whose target lies inside the root.
 * Open such a path by following links, then accept the file only if its real path is inside
 * the root's real path: checked on the opened fd, so no race can swap the target. */
static int open_checked(int root_fd, const char *rel, int flags)
{
    int fd = openat(root_fd, rel, flags);
    if (fd < 0)
        return -errno;
    char root[4096], file[4096];
    ssize_t rl = fd_path(root_fd, root, sizeof(root));
    ssize_t fl = fd_path(fd, file, sizeof(file));
    bool inside = rl > 0 && fl > rl &&
                  (!strncmp(file, root, (size_t)rl) && (file[rl] == '/' || (rl == 1 && root[0] == '/')));
    if (!inside) {
        close(fd);
        return -EXDEV;
    }
    return fd;
}

int fc_open_beneath(int root_fd, const char *rel, int symlinks, int extra_flags)
{
    int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | extra_flags; /* NONBLOCK: FIFOs */
    if (symlinks == SYMLINKS_ANY) {
        /* The path has no ".." (normalised): only a symlink can lead out, and that is allowed. */
        int fd = openat(root_fd, rel, flags);
        return fd < 0 ? -errno : fd;
    }
    if (!atomic_load_explicit(&openat2_missing, memory_order_relaxed)) {
        struct open_how how = { .flags = (uint64_t)flags,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
                                           (symlinks == SYMLINKS_OFF ? RESOLVE_NO_SYMLINKS : 0) };
        long fd = syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
        if (fd >= 0)
            return (int)fd;
        if (errno == EXDEV && symlinks == SYMLINKS_INSIDE)
            return open_checked(root_fd, rel, flags); /* an absolute symlink, maybe inside */
        if (errno != ENOSYS && errno != EPERM)
            return errno == ELOOP && symlinks == SYMLINKS_OFF ? -EXDEV : -errno;
        if (!atomic_exchange(&openat2_missing, 1))
            log_warn("openat2 unavailable (%s): symlinks will not be followed", strerror(errno));
    }
    return open_walk(root_fd, rel, flags);
}

/* ---- building entries ----------------------------------------------------------------------- */

static uint64_t hash_key(const struct loc_conf *lc, const char *path, size_t len)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)lc;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)path[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

static struct fc_entry *entry_alloc(const struct loc_conf *lc, const char *path, size_t len)
{
    struct fc_entry *e = calloc(1, sizeof(*e) + len + 1);
    if (!e)
        return NULL;
    e->fd = -1;
    e->sent_as = FC_SENT_IDENTITY;
    e->loc = lc;
    e->path_len = len;
    memcpy(e->path, path, len);
    e->path[len] = '\0';
    atomic_store_explicit(&e->refs, 1, memory_order_relaxed);
    e->bytes = sizeof(*e) + len + 1;
    return e;
}

static void entry_free(struct fc_entry *e)
{
    if (e->fd >= 0)
        close(e->fd);
    for (int i = 0; i < CODING_COUNT; i++) {
        if (e->variant[i])
            fc_release(e->variant[i]);
        fc_release(atomic_load_explicit(&e->otf[i], memory_order_acquire));
    }
    if (e->dcz) {
        for (int i = 0; i < FC_DCZ_SLOTS; i++)
            fc_release(atomic_load_explicit(&e->dcz[i].v, memory_order_acquire));
        free(e->dcz);
    }
    free(e->body);
    free(e->headers);
    free(e);
}

void fc_release(struct fc_entry *e)
{
    if (e && atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
        entry_free(e);
}

static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (!*buf)
        return;
    if (*len + n > *cap) {
        size_t nc = (*cap ? *cap * 2 : 256) + n;
        char *nb = realloc(*buf, nc);
        if (!nb) {
            free(*buf);
            *buf = NULL;
            return;
        }
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
}
#define APPEND_LIT(b, l, c, lit) append((b), (l), (c), (lit), sizeof(lit) - 1)

/* The entity tag: the same wherever the same file is served (replicas of one image, a
 * restart, a copy), so it names neither the inode nor the device. A small file, whose content
 * is in memory, is tagged by its size and a hash of that content: it changes exactly when the
 * bytes do. A larger one by its size and modification time to the nanosecond, as nginx and
 * Caddy do (to the second there). A variant (a precompressed sibling) adds its coding. */
static void make_etag(struct fc_entry *e, const char *encoding)
{
    char tag[2 * 12 + 1];
    if (!e->body || !digest_hex(e->body, (size_t)e->st.st_size, tag, 24)) {
        snprintf(tag, sizeof(tag), "%llx",
                 (unsigned long long)e->st.st_mtim.tv_sec * 1000000000ULL +
                     (unsigned long long)e->st.st_mtim.tv_nsec);
    }
    e->etag_len = (size_t)snprintf(e->etag, sizeof(e->etag), "\"%llx-%s%s%s\"",
                                   (unsigned long long)e->st.st_size, tag,
                                   encoding ? "-" : "", encoding ? encoding : "");
}

/* `cache_policy auto`'s Cache-Control for entry `e`, or NULL: none when the location says
 * anything about caching itself (cache_control, expires, an add_header Cache-Control or
 * Expires) — an explicit setting always wins. */
static const char *auto_cache_control(const struct fc_entry *e, const char *type)
{
    const struct loc_conf *lc = e->loc;
    const struct static_conf *sc = static_conf(lc);
    if (sc->cache_policy != 1 || sc->cache_control[0] || sc->expires >= 0)
        return NULL;
    for (int i = 0; i < lc->nheaders; i++)
        if (!strcasecmp(lc->headers[i].name, "Cache-Control") ||
            !strcasecmp(lc->headers[i].name, "Expires"))
            return NULL;
    switch (cache_classify(e->path, e->path_len, type)) {
    case CACHE_IMMUTABLE:
        return CACHE_IMMUTABLE_VALUE;
    case CACHE_REVALIDATE:
        return CACHE_REVALIDATE_VALUE;
    default:
        return NULL;
    }
}

/* The header block of a FC_FILE entry whose etag, last_modified and st are set: everything of
 * a 200's head but the status line, Server, Date and Connection. Returns 0 or -ENOMEM. */
static int build_headers(struct fc_entry *e, const char *type, const char *encoding, bool vary)
{
    const struct loc_conf *lc = e->loc;
    const struct static_conf *sc = static_conf(lc);
    e->type = type;
    size_t len = 0, cap = 512;
    char *h = malloc(cap);
    APPEND_LIT(&h, &len, &cap, "Content-Type: ");
    append(&h, &len, &cap, type, strlen(type));
    APPEND_LIT(&h, &len, &cap, "\r\nLast-Modified: ");
    append(&h, &len, &cap, e->last_modified, 29);
    if (sc->etag) {
        APPEND_LIT(&h, &len, &cap, "\r\nETag: ");
        append(&h, &len, &cap, e->etag, e->etag_len);
    }
    APPEND_LIT(&h, &len, &cap, "\r\nAccept-Ranges: bytes\r\n");
    if (encoding) {
        APPEND_LIT(&h, &len, &cap, "Content-Encoding: ");
        append(&h, &len, &cap, encoding, strlen(encoding));
        APPEND_LIT(&h, &len, &cap, "\r\n");
    }
    e->vary = vary;
    const char *vary_line = fc_vary_line(e);
    if (vary_line)
        append(&h, &len, &cap, vary_line, strlen(vary_line));
    if (e->dict) { /* every representation: a dcz response is the next version's dictionary */
        APPEND_LIT(&h, &len, &cap, "Use-As-Dictionary: ");
        append(&h, &len, &cap, e->dict->header, e->dict->header_len);
        APPEND_LIT(&h, &len, &cap, "\r\n");
    }
    e->auto_cache_control = sc->cache_control[0] ? NULL : auto_cache_control(e, type);
    const char *cc = sc->cache_control[0] ? sc->cache_control : e->auto_cache_control;
    if (cc) {
        APPEND_LIT(&h, &len, &cap, "Cache-Control: ");
        append(&h, &len, &cap, cc, strlen(cc));
        APPEND_LIT(&h, &len, &cap, "\r\n");
    }
    for (int i = 0; i < lc->nheaders; i++) {
        append(&h, &len, &cap, lc->headers[i].name, lc->headers[i].name_len);
        APPEND_LIT(&h, &len, &cap, ": ");
        append(&h, &len, &cap, lc->headers[i].value, lc->headers[i].value_len);
        APPEND_LIT(&h, &len, &cap, "\r\n");
    }
    size_t common = len;
    char num[24];
    APPEND_LIT(&h, &len, &cap, "Content-Length: ");
    append(&h, &len, &cap, num, fmt_u64(num, (uint64_t)e->st.st_size));
    APPEND_LIT(&h, &len, &cap, "\r\n");
    if (!h)
        return -ENOMEM;
    e->headers = h;
    e->headers_len = common;
    e->headers_200_len = len;
    e->bytes += cap;
    return 0;
}

/* Fill validators, small-file content and the header block of a FC_FILE entry. `type` is the
 * original's Content-Type (a variant keeps it). Returns 0 or -errno. */
static int finish_file(struct fc_entry *e, const char *type, const char *encoding, bool vary)
{
    /* Snapshot a small file's content; accept it only if the file did not change while we
     * read. If it did (rewritten in place), read again from its new stat, a few times; a file
     * that keeps changing is served from the descriptor with the latest stat seen, and is
     * revalidated by every request until it settles (`unsettled`): its stat from before a
     * rewrite would frame the rewritten bytes with the old length. */
    for (int tries = 0; e->st.st_size <= FC_SMALL_MAX; tries++) {
        size_t size = (size_t)e->st.st_size;
        e->body = malloc(size ? size : 1);
        if (!e->body)
            return -ENOMEM;
        ssize_t n = pread(e->fd, e->body, size, 0);
        struct stat st2;
        bool stat_ok = fstat(e->fd, &st2) == 0;
        if (n != (ssize_t)size || !stat_ok || st2.st_size != e->st.st_size ||
            st2.st_mtim.tv_sec != e->st.st_mtim.tv_sec ||
            st2.st_mtim.tv_nsec != e->st.st_mtim.tv_nsec) {
            free(e->body);
            e->body = NULL; /* changing under us: serve it from the fd, do not cache content */
            e->unsettled = true;
            if (!stat_ok)
                break;
            e->st = st2; /* the latest seen, for the next read or for serving from the fd */
            if (tries == 2)
                break;
            continue;
        }
        e->unsettled = false;
        e->bytes += size;
        /* Served from memory from now on: holding the descriptor would only pin one fd per
         * cached small file. */
        close(e->fd);
        e->fd = -1;
        break;
    }
    for (int i = 0; i < CODING_COUNT; i++)
        if (e->variant[i] && e->variant[i]->unsettled)
            e->unsettled = true; /* a precompressed sibling kept changing */
    http_date_format(e->st.st_mtim.tv_sec, e->last_modified);
    make_etag(e, encoding);
    return build_headers(e, type, encoding, vary);
}

struct fc_entry *fc_variant_new(const struct fc_entry *e, enum coding enc, char *body,
                                int fd, uint64_t size, bool in_memory, const char *etag_suffix)
{
    return fc_variant_named(e, coding_names[enc], (int)enc, body, fd, size, in_memory,
                            etag_suffix);
}

struct fc_entry *fc_variant_named(const struct fc_entry *e, const char *encoding, int sent_as,
                                  char *body, int fd, uint64_t size, bool in_memory,
                                  const char *etag_suffix)
{
    struct fc_entry *v = entry_alloc(e->loc, e->path, e->path_len);
    if (!v) {
        free(body);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    v->kind = FC_FILE;
    v->dict = e->dict;
    v->sent_as = (signed char)sent_as;
    v->st = e->st; /* the original's validators; only the length is the variant's */
    v->st.st_size = (off_t)size;
    v->body = body;
    v->fd = body ? -1 : fd;
    if (body && fd >= 0)
        close(fd);
    if (in_memory)
        v->bytes += size;
    memcpy(v->last_modified, e->last_modified, sizeof(v->last_modified));
    int n = snprintf(v->etag, sizeof(v->etag), "%.*s%s\"", (int)(e->etag_len - 1), e->etag,
                     etag_suffix);
    v->etag_len = n > 0 && (size_t)n < sizeof(v->etag) ? (size_t)n : 0;
    if (!v->etag_len || build_headers(v, e->type, encoding, true) < 0) {
        entry_free(v);
        return NULL;
    }
    return v;
}

/* Open the precompressed representations of `e` (x.br, x.zst, x.gz beside x). A variant
 * older than the original is stale and ignored. */
static void find_variants(struct fc_entry *e, const char *rel)
{
    char vpath[4200];
    for (int i = 0; i < CODING_COUNT; i++) {
        int n = snprintf(vpath, sizeof(vpath), "%s%s", rel, enc_suffix[i]);
        if (n < 0 || (size_t)n >= sizeof(vpath))
            continue;
        int fd = fc_open_beneath(e->loc->root_fd, vpath, static_conf(e->loc)->symlinks, 0);
        if (fd < 0)
            continue;
        struct fc_entry *v = entry_alloc(e->loc, e->path, e->path_len);
        if (!v) {
            close(fd);
            continue;
        }
        v->fd = fd;
        v->dict = e->dict;
        v->sent_as = (signed char)i;
        static const char *const names[CODING_COUNT] = { "br", "zstd", "gzip" };
        if (fstat(fd, &v->st) < 0 || !S_ISREG(v->st.st_mode) ||
            v->st.st_mtim.tv_sec < e->st.st_mtim.tv_sec ||
            finish_file(v, e->type, names[i], true) < 0) {
            entry_free(v);
            continue;
        }
        e->variant[i] = v;
        e->has_variants = true;
        e->bytes += v->bytes;
    }
}

/* A failure that says nothing about the file, only about the moment (no descriptor or memory
 * to spare): never cached, or a descriptor shortage would keep a file failing for as long as
 * file_cache_valid after it ended. */
static bool transient(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOMEM || err == ENOBUFS || err == EAGAIN ||
           err == EINTR;
}

static bool failed_for_now(const struct fc_entry *e)
{
    return e->kind == FC_MISSING && transient(e->err);
}

/* An FC_FILE entry whose fd and st are set: its type, variants and headers. Returns it, or
 * NULL (freed) when out of memory. */
static struct fc_entry *file_entry(struct fc_entry *e, const char *type, const char *rel)
{
    e->kind = FC_FILE;
    e->type = type;
    e->dict = compress_dictionary_for(e->loc, e->path, e->path_len);
    if (e->dict) {
        if (!(e->dcz = calloc(FC_DCZ_SLOTS, sizeof(*e->dcz)))) {
            entry_free(e);
            return NULL;
        }
        e->bytes += FC_DCZ_SLOTS * sizeof(*e->dcz);
    }
    if (static_conf(e->loc)->precompressed)
        find_variants(e, rel);
    e->compressible = compress_eligible(e->loc, type, (uint64_t)e->st.st_size);
    if (finish_file(e, type, NULL, e->has_variants || e->compressible) < 0) {
        entry_free(e);
        return NULL;
    }
    return e;
}

/* A directory URL (`rel` ends with '/', `len` long as a URL path): the first index file that
 * is a regular file, else FC_DIR. */
static struct fc_entry *build_index(struct file_cache *fc, struct fc_entry *e, char *rel,
                                    size_t len)
{
    const struct static_conf *sc = static_conf(e->loc);
    size_t base = len > 1 ? len - 2 : 0; /* length of rel without its trailing '/' */
    for (int i = 0; i < sc->nindex; i++) {
        size_t ilen = strlen(sc->index[i]);
        if (base)
            rel[base] = '/';
        memcpy(rel + base + (base ? 1 : 0), sc->index[i], ilen + 1);
        int fd = fc_open_beneath(e->loc->root_fd, rel, sc->symlinks, 0);
        if (fd < 0 && transient(-fd)) {
            e->kind = FC_MISSING; /* not "a directory without an index": we do not know */
            e->err = -fd;
            return e;
        }
        if (fd < 0)
            continue;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            continue;
        }
        e->st = st;
        e->fd = fd;
        const char *type = mime_lookup(fc->mime, sc->index[i], ilen);
        return file_entry(e, type ? type : sc->default_type, rel);
    }
    e->kind = FC_DIR;
    return e;
}

/* Resolve `path` in `lc` from the file system. Never returns NULL unless out of memory. */
static struct fc_entry *build(struct file_cache *fc, const struct loc_conf *lc, const char *path,
                              size_t len)
{
    struct fc_entry *e = entry_alloc(lc, path, len);
    if (!e)
        return NULL;
    char rel[4200];
    if (len + 64 >= sizeof(rel)) {
        e->kind = FC_MISSING;
        e->err = ENAMETOOLONG;
        return e;
    }
    memcpy(rel, len > 1 ? path + 1 : ".", len > 1 ? len : 2);
    int fd = fc_open_beneath(lc->root_fd, rel, static_conf(lc)->symlinks, 0);
    if (fd < 0) {
        e->kind = FC_MISSING;
        e->err = -fd;
        return e;
    }
    if (fstat(fd, &e->st) < 0) {
        e->kind = FC_MISSING;
        e->err = errno;
        close(fd);
        return e;
    }
    if (S_ISDIR(e->st.st_mode)) {
        close(fd);
        if (path[len - 1] != '/') {
            e->kind = FC_DIR_REDIRECT;
            return e;
        }
        return build_index(fc, e, rel, len);
    }
    if (!S_ISREG(e->st.st_mode)) {
        close(fd);
        e->kind = FC_OTHER;
        return e;
    }
    e->fd = fd;
    const char *type = mime_lookup(fc->mime, path, len);
    return file_entry(e, type ? type : static_conf(lc)->default_type, rel);
}

/* Does `e` still describe what `path` resolves to? Cheap for files: one open + fstat. */
static bool still_valid(struct file_cache *fc, struct fc_entry *e)
{
    struct fc_entry *fresh = build(fc, e->loc, e->path, e->path_len);
    if (!fresh)
        return true; /* out of memory: keep serving the old entry */
    if (failed_for_now(fresh)) {
        entry_free(fresh);
        return true; /* no descriptor to check with: the old entry is the best we know */
    }
    bool same = fresh->kind == e->kind && fresh->err == e->err;
    if (same && e->kind == FC_FILE)
        same = fresh->st.st_dev == e->st.st_dev && fresh->st.st_ino == e->st.st_ino &&
               fresh->st.st_size == e->st.st_size &&
               fresh->st.st_mtim.tv_sec == e->st.st_mtim.tv_sec &&
               fresh->st.st_mtim.tv_nsec == e->st.st_mtim.tv_nsec &&
               fresh->has_variants == e->has_variants;
    for (int i = 0; same && i < CODING_COUNT; i++) {
        struct fc_entry *a = e->variant[i], *b = fresh->variant[i];
        same = (!a && !b) || (a && b && a->st.st_ino == b->st.st_ino &&
                              a->st.st_size == b->st.st_size &&
                              a->st.st_mtim.tv_nsec == b->st.st_mtim.tv_nsec &&
                              a->st.st_mtim.tv_sec == b->st.st_mtim.tv_sec);
    }
    entry_free(fresh);
    return same;
}

/* ---- the table ------------------------------------------------------------------------------ */

struct file_cache *fc_create(unsigned max_entries, size_t max_bytes, unsigned interval_ms,
                             const struct mime_table *mime)
{
    struct file_cache *fc = calloc(1, sizeof(*fc));
    if (!fc)
        return NULL;
    fc->max_entries_per_shard = max_entries / FC_SHARDS ? max_entries / FC_SHARDS : 1;
    fc->max_bytes_per_shard = max_bytes / FC_SHARDS;
    fc->interval_ms = interval_ms;
    fc->mime = mime;
    for (int i = 0; i < FC_SHARDS; i++) {
        struct fc_shard *s = &fc->shards[i];
        pthread_rwlock_init(&s->lock, NULL);
        s->nbuckets = 64;
        while (s->nbuckets < fc->max_entries_per_shard)
            s->nbuckets *= 2;
        s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
        if (!s->buckets) {
            fc_destroy(fc);
            return NULL;
        }
    }
    return fc;
}

/* Unlink `e` from its shard (write lock held) and drop the table's reference. */
static void unlink_entry(struct fc_shard *s, struct fc_entry *e)
{
    struct fc_entry **pp = &s->buckets[e->hash & (s->nbuckets - 1)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    if (e->older)
        e->older->newer = e->newer;
    else
        s->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        s->newest = e->older;
    s->entries--;
    s->bytes -= e->bytes;
    e->in_table = false;
    fc_release(e);
}

void fc_destroy(struct file_cache *fc)
{
    if (!fc)
        return;
    for (int i = 0; i < FC_SHARDS; i++) {
        struct fc_shard *s = &fc->shards[i];
        if (s->buckets)
            while (s->oldest)
                unlink_entry(s, s->oldest);
        free(s->buckets);
        pthread_rwlock_destroy(&s->lock);
    }
    free(fc);
}

static struct fc_entry *find(struct fc_shard *s, uint64_t h, const struct loc_conf *lc,
                             const char *path, size_t len)
{
    for (struct fc_entry *e = s->buckets[h & (s->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && e->loc == lc && e->path_len == len && !memcmp(e->path, path, len))
            return e;
    return NULL;
}

/* Insert `e` (whose one reference becomes the table's), replacing `old` if given. Returns the
 * entry now in the table with a reference for the caller. */
static struct fc_entry *insert(struct file_cache *fc, struct fc_shard *s, struct fc_entry *e,
                               struct fc_entry *old)
{
    pthread_rwlock_wrlock(&s->lock);
    struct fc_entry *cur = find(s, e->hash, e->loc, e->path, e->path_len);
    if (cur && cur != old) {
        /* Another thread built it meanwhile: use theirs. */
        atomic_fetch_add_explicit(&cur->refs, 1, memory_order_relaxed);
        pthread_rwlock_unlock(&s->lock);
        fc_release(e);
        return cur;
    }
    if (cur)
        unlink_entry(s, cur);
    while (s->oldest && (s->entries >= fc->max_entries_per_shard ||
                         s->bytes + e->bytes > fc->max_bytes_per_shard)) {
        unlink_entry(s, s->oldest);
        atomic_fetch_add_explicit(&s->evictions, 1, memory_order_relaxed);
    }
    struct fc_entry **b = &s->buckets[e->hash & (s->nbuckets - 1)];
    e->next = *b;
    *b = e;
    e->older = s->newest;
    e->newer = NULL;
    if (s->newest)
        s->newest->newer = e;
    else
        s->oldest = e;
    s->newest = e;
    s->entries++;
    s->bytes += e->bytes;
    e->in_table = true;
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed); /* the caller's */
    pthread_rwlock_unlock(&s->lock);
    return e;
}

struct fc_entry *fc_get(struct file_cache *fc, const struct loc_conf *lc, const char *path,
                        size_t len)
{
    uint64_t h = hash_key(lc, path, len);
    struct fc_shard *s = &fc->shards[h % FC_SHARDS];
    int64_t now = clock_now_ms();

    pthread_rwlock_rdlock(&s->lock);
    struct fc_entry *e = find(s, h, lc, path, len);
    if (e)
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    pthread_rwlock_unlock(&s->lock);

    if (e) {
        int64_t checked = atomic_load_explicit(&e->validated_ms, memory_order_relaxed);
        if (now - checked < (int64_t)fc->interval_ms && !e->unsettled) {
            atomic_fetch_add_explicit(&s->hits, 1, memory_order_relaxed);
            return e;
        }
        /* Stale: one thread revalidates; the others keep using the entry meanwhile (it is
         * at most one revalidation's duration older than the interval). */
        int expected = 0;
        if (!atomic_compare_exchange_strong(&e->revalidating, &expected, 1)) {
            atomic_fetch_add_explicit(&s->hits, 1, memory_order_relaxed);
            return e;
        }
        atomic_fetch_add_explicit(&s->revalidations, 1, memory_order_relaxed);
        if (!e->unsettled && still_valid(fc, e)) {
            atomic_store_explicit(&e->validated_ms, now, memory_order_relaxed);
            atomic_store(&e->revalidating, 0);
            return e;
        }
        atomic_store(&e->revalidating, 0);
        struct fc_entry *fresh = build(fc, lc, path, len);
        if (!fresh)
            return e;
        if (failed_for_now(fresh)) {
            entry_free(fresh);
            return e;
        }
        fresh->hash = h;
        atomic_store_explicit(&fresh->validated_ms, now, memory_order_relaxed);
        struct fc_entry *got = insert(fc, s, fresh, e);
        fc_release(e);
        return got;
    }

    atomic_fetch_add_explicit(&s->misses, 1, memory_order_relaxed);
    e = build(fc, lc, path, len);
    if (!e || failed_for_now(e))
        return e; /* uncached: its one reference is the caller's */
    e->hash = h;
    atomic_store_explicit(&e->validated_ms, now, memory_order_relaxed);
    return insert(fc, s, e, NULL);
}

int fc_attach(struct file_cache *fc, struct fc_entry *e, enum coding enc,
              struct fc_entry *v)
{
    return fc_attach_slot(fc, e, &e->otf[enc], v);
}

int fc_attach_slot(struct file_cache *fc, struct fc_entry *e, _Atomic(struct fc_entry *) *slot,
                   struct fc_entry *v)
{
    struct fc_shard *s = &fc->shards[e->hash % FC_SHARDS];
    pthread_rwlock_wrlock(&s->lock);
    bool ok = e->in_table && !atomic_load_explicit(slot, memory_order_relaxed) &&
              e->bytes + v->bytes <= fc->max_bytes_per_shard;
    while (ok && s->bytes + v->bytes > fc->max_bytes_per_shard && s->oldest) {
        struct fc_entry *old = s->oldest != e ? s->oldest : e->newer;
        if (!old)
            break;
        unlink_entry(s, old);
        atomic_fetch_add_explicit(&s->evictions, 1, memory_order_relaxed);
    }
    ok = ok && s->bytes + v->bytes <= fc->max_bytes_per_shard;
    if (ok) {
        e->bytes += v->bytes;
        s->bytes += v->bytes;
        atomic_store_explicit(slot, v, memory_order_release);
    }
    pthread_rwlock_unlock(&s->lock);
    if (!ok)
        fc_release(v);
    return ok ? 0 : -1;
}

bool fc_cached(struct file_cache *fc, const struct fc_entry *e)
{
    struct fc_shard *s = &fc->shards[e->hash % FC_SHARDS];
    pthread_rwlock_rdlock(&s->lock);
    bool in = e->in_table;
    pthread_rwlock_unlock(&s->lock);
    return in;
}

size_t fc_entry_budget(const struct file_cache *fc)
{
    return fc->max_bytes_per_shard;
}

void fc_get_stats(struct file_cache *fc, struct fc_stats *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < FC_SHARDS; i++) {
        struct fc_shard *s = &fc->shards[i];
        out->hits += atomic_load(&s->hits);
        out->misses += atomic_load(&s->misses);
        out->revalidations += atomic_load(&s->revalidations);
        out->evictions += atomic_load(&s->evictions);
        pthread_rwlock_rdlock(&s->lock);
        out->entries += s->entries;
        out->bytes += s->bytes;
        pthread_rwlock_unlock(&s->lock);
    }
}
