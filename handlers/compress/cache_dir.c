/* cache_dir.c — the compression cache directories: variants kept across restarts, one file per
 * (path, file version, coding, level, library version), named by a SHA-256 of that key,
 * written to an anonymous file and linked into place once complete (no torn files), bounded to
 * `compress_cache_size` (the least recently used go first; only files named like ours are ever
 * counted or removed). A directory that cannot be created or written means identity for its
 * locations, with one log line; the next configuration generation (SIGHUP) tries again. See
 * compressor.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "compress/compressor.h"
#include "log/log.h"

static const char *const cache_suffix[CODING_COUNT] = { ".br", ".zst", ".gz" };

void compress_dir_name(const char *key, size_t n, enum coding enc, char name[COMPRESS_NAME_MAX])
{
    digest_hex(key, n, name, COMPRESS_NAME_HEX);
    snprintf(name + COMPRESS_NAME_HEX, 8, "%s", cache_suffix[enc]);
}

int compress_dir_open(struct compress_dir *d, const char *name)
{
    int state = atomic_load_explicit(&d->state, memory_order_acquire);
    int dfd = state == DIR_OK ? d->fd : state == DIR_UNKNOWN ? d->rfd : -1;
    if (dfd < 0)
        return -1;
    return openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
}

/* Is `name` one of our cache files (40 hex digits and a coding's suffix)? */
static bool is_cache_name(const char *name)
{
    for (int i = 0; i < COMPRESS_NAME_HEX; i++)
        if (!isxdigit((unsigned char)name[i]) || isupper((unsigned char)name[i]))
            return false;
    for (int i = 0; i < CODING_COUNT; i++)
        if (!strcmp(name + COMPRESS_NAME_HEX, cache_suffix[i]))
            return true;
    return false;
}

struct cache_file {
    char name[COMPRESS_NAME_HEX + 8];
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

void compress_dir_broken(struct compress_dir *d, const char *what, int err)
{
    if (atomic_exchange(&d->state, DIR_BROKEN) != DIR_BROKEN)
        log_warn("compress_cache_dir %s: %s: %s; its locations serve identity", d->path, what,
                 strerror(err));
}

void compress_dir_probe(struct compressor *cz, struct compress_dir *d)
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
        compress_dir_broken(d, "cannot create", errno);
        pthread_mutex_unlock(&d->lock);
        return;
    }
    if (fd < 0)
        fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        compress_dir_broken(d, "cannot open", errno);
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
        compress_dir_broken(d, "cannot write", err);
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

struct dict_store *compress_dir_dicts(struct compress_dir *d)
{
    struct dict_store *s = atomic_load_explicit(&d->dicts, memory_order_acquire);
    if (s)
        return s;
    pthread_mutex_lock(&d->lock);
    if (!(s = atomic_load(&d->dicts)) && !d->dicts_failed) {
        const struct dict_store_limits lim = { DICT_STORE_PER_PATTERN_DEFAULT,
                                               DICT_STORE_BYTES_DEFAULT,
                                               DICT_STORE_CAPACITY_DEFAULT };
        char path[4200], err[512];
        snprintf(path, sizeof(path), "%s/" COMPRESS_DICT_SUBDIR, d->path);
        s = dict_store_open(path, &lim, err, sizeof(err));
        if (s)
            atomic_store_explicit(&d->dicts, s, memory_order_release);
        else if ((d->dicts_failed = true))
            log_warn("compress_dictionary: %s; responses are not compressed against "
                     "dictionaries", err);
    }
    pthread_mutex_unlock(&d->lock);
    return s;
}

int compress_dir_tmpfile(struct compress_dir *d, char tmp[64])
{
    tmp[0] = '\0';
    if (d->tmpfile)
        return openat(d->fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    static _Atomic unsigned seq;
    snprintf(tmp, 64, ".tmp-%d-%u", (int)getpid(), atomic_fetch_add(&seq, 1));
    return openat(d->fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

int compress_dir_commit(struct compressor *cz, struct compress_dir *d, int fd, const char *tmp,
                      const char *name, uint64_t size)
{
    uint64_t max = atomic_load(&d->max_bytes);
    if (size > max / 2) {
        if (tmp[0])
            unlinkat(d->fd, tmp, 0);
        return -1; /* would crowd everything else out */
    }
    if (fsync(fd) < 0) { /* the name must never point at bytes not yet on disk */
        compress_dir_broken(d, "cannot write", errno);
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
        compress_dir_broken(d, "cannot write", errno);
        if (tmp[0])
            unlinkat(d->fd, tmp, 0);
    }
    return rc;
}

struct compress_dir *compress_dir_get(struct compressor *cz, const char *path, uint64_t max)
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

void compress_dir_put(struct compressor *cz, struct compress_dir *d)
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
    if (d)
        compress_dir_free(d);
}

