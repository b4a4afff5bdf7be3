/* dictionary_store.c — old versions of files kept by content hash, to compress their
 * successors against (dcz); see dictionary.h.
 *
 * The index is a fixed open-addressing table (linear probing, deletion by backward shift, so
 * no tombstones), twice the capacity, allocated once. Each slot is guarded by a sequence lock:
 * writers (compressor threads, under the store's mutex) make the sequence odd, change the
 * fields, make it even again; a reader (a request thread) copies the fields between two equal
 * even readings. Every field is an atomic word, so the copy is race-free for the memory model
 * too; a reader that meets a slot being changed, or an entry being moved by a deletion, may
 * miss it: that request goes without dcz, which is always a correct answer. */
#include "compress/dictionary.h"

#include "base/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#define HASH_WORDS (DICT_HASH_LEN / 8)
#define SEQ_TRIES 4                  /* a reader's attempts at a slot being changed */
#define KEY_HEX 16
#define NAME_LEN (KEY_HEX + 1 + 2 * DICT_HASH_LEN + sizeof(".dict") - 1)
#define TMP_PREFIX ".dict-tmp-"      /* a write in progress, or one a crash left behind */
#define TMP_NAME_LEN 64
#define TMP_TRIES 16
#define TMP_STALE_S 600              /* a temporary file this old is a crash's leftover */

struct slot {
    _Atomic uint64_t seq;            /* odd while a writer changes the slot */
    _Atomic uint64_t hash[HASH_WORDS];
    _Atomic uint64_t size;           /* 0: the slot is empty */
    _Atomic uint64_t key;
    uint64_t stamp;                  /* when stored (the store's clock): under the mutex */
};

struct dict_store {
    int dirfd;
    struct dict_store_limits lim;
    pthread_mutex_t lock;            /* writers: the slots' contents, clock */
    uint64_t clock;
    size_t mask;                     /* slots - 1 */
    struct slot slots[];
};

/* ---- slots ----------------------------------------------------------------------------------- */

static size_t home_of(const struct dict_store *s, const unsigned char *hash)
{
    uint64_t w;
    memcpy(&w, hash, sizeof(w)); /* a SHA-256's bits are as good as any hash of them */
    return (size_t)w & s->mask;
}

/* A reader's copy of a slot; false when it kept changing. */
static bool slot_read(const struct slot *sl, struct dict_entry *e)
{
    for (int t = 0; t < SEQ_TRIES; t++) {
        uint64_t q = atomic_load_explicit(&sl->seq, memory_order_acquire);
        if (q & 1)
            continue;
        for (int i = 0; i < HASH_WORDS; i++) {
            uint64_t w = atomic_load_explicit(&sl->hash[i], memory_order_relaxed);
            memcpy(e->hash + 8 * i, &w, sizeof(w));
        }
        e->size = atomic_load_explicit(&sl->size, memory_order_relaxed);
        e->pattern_key = atomic_load_explicit(&sl->key, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&sl->seq, memory_order_relaxed) == q)
            return true;
    }
    return false;
}

/* Writers (under the mutex): set slot i to `e` (NULL: empty). */
static void slot_write(struct dict_store *s, size_t i, const struct dict_entry *e, uint64_t stamp)
{
    struct slot *sl = &s->slots[i];
    uint64_t q = atomic_load_explicit(&sl->seq, memory_order_relaxed);
    atomic_store_explicit(&sl->seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (int w = 0; w < HASH_WORDS; w++) {
        uint64_t v = 0;
        if (e)
            memcpy(&v, e->hash + 8 * w, sizeof(v));
        atomic_store_explicit(&sl->hash[w], v, memory_order_relaxed);
    }
    atomic_store_explicit(&sl->size, e ? e->size : 0, memory_order_relaxed);
    atomic_store_explicit(&sl->key, e ? e->pattern_key : 0, memory_order_relaxed);
    sl->stamp = stamp;
    atomic_store_explicit(&sl->seq, q + 2, memory_order_release);
}

/* Writers: the slot of `hash`, or SIZE_MAX. (No writer changes slots meanwhile: reads are
 * stable.) */
static size_t slot_find(const struct dict_store *s, const unsigned char *hash)
{
    size_t i = home_of(s, hash);
    for (size_t n = 0; n <= s->mask; n++, i = (i + 1) & s->mask) {
        struct dict_entry e;
        slot_read(&s->slots[i], &e);
        if (e.size == 0)
            return SIZE_MAX;
        if (!memcmp(e.hash, hash, DICT_HASH_LEN))
            return i;
    }
    return SIZE_MAX;
}

/* Writers: empty slot i, moving back the entries after it whose probe sequence passed it. */
static void slot_remove(struct dict_store *s, size_t i)
{
    for (size_t j = (i + 1) & s->mask;; j = (j + 1) & s->mask) {
        struct dict_entry e;
        slot_read(&s->slots[j], &e);
        if (e.size == 0)
            break;
        size_t home = home_of(s, e.hash);
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        slot_write(s, i, &e, s->slots[j].stamp);
        i = j;
    }
    slot_write(s, i, NULL, 0);
}

static void slot_insert(struct dict_store *s, const struct dict_entry *e)
{
    size_t i = home_of(s, e->hash);
    while (atomic_load_explicit(&s->slots[i].size, memory_order_relaxed) != 0)
        i = (i + 1) & s->mask; /* never full: twice the capacity */
    slot_write(s, i, e, ++s->clock);
}

bool dict_usable(const struct dict_store *s, const struct dict_pattern *p, struct strview path,
                 const unsigned char hash[DICT_HASH_LEN], struct dict_entry *out)
{
    return dict_path_matches(p, path) && dict_store_lookup(s, hash, out) &&
           out->pattern_key == p->key;
}

bool dict_store_lookup(const struct dict_store *s, const unsigned char hash[DICT_HASH_LEN],
                       struct dict_entry *out)
{
    size_t i = home_of(s, hash);
    for (size_t n = 0; n <= s->mask; n++, i = (i + 1) & s->mask) {
        struct dict_entry e;
        if (!slot_read(&s->slots[i], &e) || e.size == 0)
            return false;
        if (!memcmp(e.hash, hash, DICT_HASH_LEN)) {
            *out = e;
            return true;
        }
    }
    return false;
}

/* ---- names and bounds ------------------------------------------------------------------------ */

static void entry_name(const struct dict_entry *e, char name[NAME_LEN + 1])
{
    int n = snprintf(name, NAME_LEN + 1, "%016llx-", (unsigned long long)e->pattern_key);
    for (int i = 0; i < DICT_HASH_LEN; i++)
        n += snprintf(name + n, NAME_LEN + 1 - (size_t)n, "%02x", e->hash[i]);
    snprintf(name + n, NAME_LEN + 1 - (size_t)n, ".dict");
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Parse one of our names into e (size not set). */
static bool parse_name(const char *name, struct dict_entry *e)
{
    if (strlen(name) != NAME_LEN || name[KEY_HEX] != '-' || strcmp(name + NAME_LEN - 5, ".dict"))
        return false;
    uint64_t key = 0;
    for (int i = 0; i < KEY_HEX; i++) {
        int d = hex_value(name[i]);
        if (d < 0)
            return false;
        key = (key << 4) | (uint64_t)d;
    }
    for (int i = 0; i < DICT_HASH_LEN; i++) {
        int hi = hex_value(name[KEY_HEX + 1 + 2 * i]), lo = hex_value(name[KEY_HEX + 2 + 2 * i]);
        if (hi < 0 || lo < 0)
            return false;
        e->hash[i] = (unsigned char)(hi << 4 | lo);
    }
    e->pattern_key = key;
    return key != 0;
}

/* Under the mutex: how many entries of pattern `key` (0: all), their bytes, and the slot of the
 * oldest (SIZE_MAX when none). */
static unsigned tally(const struct dict_store *s, uint64_t key, uint64_t *bytes, size_t *oldest)
{
    unsigned n = 0;
    uint64_t b = 0, best = UINT64_MAX;
    *oldest = SIZE_MAX;
    for (size_t i = 0; i <= s->mask; i++) {
        uint64_t size = atomic_load_explicit(&s->slots[i].size, memory_order_relaxed);
        if (!size || (key && atomic_load_explicit(&s->slots[i].key, memory_order_relaxed) != key))
            continue;
        n++;
        b += size;
        if (s->slots[i].stamp < best) {
            best = s->slots[i].stamp;
            *oldest = i;
        }
    }
    *bytes = b;
    return n;
}

/* Under the mutex: forget slot i and delete its file. */
static void evict(struct dict_store *s, size_t i)
{
    struct dict_entry e;
    char name[NAME_LEN + 1];
    slot_read(&s->slots[i], &e);
    entry_name(&e, name);
    unlinkat(s->dirfd, name, 0);
    slot_remove(s, i);
}

/* Under the mutex: evict the oldest until an entry of `len` bytes for `key` fits. */
static void make_room(struct dict_store *s, uint64_t key, uint64_t len)
{
    uint64_t bytes;
    size_t old;
    while ((tally(s, key, &bytes, &old) + 1 > s->lim.per_pattern ||
            bytes + len > s->lim.per_pattern_bytes) && old != SIZE_MAX)
        evict(s, old);
    while (tally(s, 0, &bytes, &old) + 1 > s->lim.capacity && old != SIZE_MAX)
        evict(s, old);
}

unsigned dict_store_count(struct dict_store *s, uint64_t pattern_key, uint64_t *bytes)
{
    uint64_t b;
    size_t old;
    pthread_mutex_lock(&s->lock);
    unsigned n = tally(s, pattern_key, &b, &old);
    pthread_mutex_unlock(&s->lock);
    if (bytes)
        *bytes = b;
    return n;
}

/* ---- opening: what an earlier run left ------------------------------------------------------- */

struct found {
    struct dict_entry e;
    int64_t mtime_ns;
};

static int cmp_found(const void *a, const void *b)
{
    const struct found *x = a, *y = b;
    if (x->mtime_ns != y->mtime_ns)
        return x->mtime_ns < y->mtime_ns ? -1 : 1;
    return memcmp(x->e.hash, y->e.hash, DICT_HASH_LEN);
}

/* One directory entry: ours, a leftover temporary file (removed), or something else (left
 * alone). True when it was ours and went into *f. */
static bool scan_one(struct dict_store *s, const char *name, struct found *f)
{
    struct stat st;
    if (!strncmp(name, TMP_PREFIX, sizeof(TMP_PREFIX) - 1)) {
        /* A recent one may be another store's write in progress (the old generation's during
         * a reload): its rename would fail. */
        if (fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_mtime < time(NULL) - TMP_STALE_S)
            unlinkat(s->dirfd, name, 0);
        return false;
    }
    if (!parse_name(name, &f->e) || fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISREG(st.st_mode))
        return false;
    if (st.st_size <= 0) { /* never written so: truncated */
        unlinkat(s->dirfd, name, 0);
        return false;
    }
    f->e.size = (uint64_t)st.st_size;
    f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return true;
}

/* Index what the directory holds, oldest first, so that the bounds keep the newest. Files
 * are checked against their hash when read (dict_store_load), not here: opening stays one
 * stat per file. */
static int scan_dir(struct dict_store *s)
{
    int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* its own offset */
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0)
            close(fd);
        return -errno;
    }
    struct found *items = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(dir))) {
        if (n == cap) {
            struct found *ni = realloc(items, (cap = cap ? cap * 2 : 64) * sizeof(*items));
            if (!ni) {
                rc = -ENOMEM;
                break;
            }
            items = ni;
        }
        if (scan_one(s, de->d_name, &items[n]))
            n++;
    }
    closedir(dir);
    if (n)
        qsort(items, n, sizeof(*items), cmp_found);
    for (size_t i = 0; i < n; i++) {
        if (items[i].e.size > s->lim.per_pattern_bytes ||
            slot_find(s, items[i].e.hash) != SIZE_MAX) {
            char name[NAME_LEN + 1];
            entry_name(&items[i].e, name); /* too large now, or a twin under another pattern */
            unlinkat(s->dirfd, name, 0);
            continue;
        }
        make_room(s, items[i].e.pattern_key, items[i].e.size);
        slot_insert(s, &items[i].e);
    }
    free(items);
    return rc;
}

/* The table's size: a power of two, at least twice the capacity (probes stay short, and an
 * insertion always finds an empty slot). */
static size_t table_slots(unsigned capacity)
{
    size_t n = 2;
    while (n < 2 * (size_t)capacity)
        n *= 2;
    return n;
}

struct dict_store *dict_store_open(const char *dir, const struct dict_store_limits *limits,
                                   char *err, size_t errlen)
{
    struct dict_store_limits lim = *limits;
    if (!lim.per_pattern || !lim.per_pattern_bytes || !lim.capacity ||
        lim.capacity > DICT_STORE_CAPACITY_MAX) {
        snprintf(err, errlen, "dictionary store %s: invalid bounds", dir);
        return NULL;
    }
    size_t nslots = table_slots(lim.capacity);
    struct dict_store *s = calloc(1, sizeof(*s) + nslots * sizeof(struct slot));
    if (!s) {
        snprintf(err, errlen, "dictionary store %s: out of memory", dir);
        return NULL;
    }
    s->lim = lim;
    s->mask = nslots - 1;
    const char *what = "cannot create";
    int e = 0;
    if (mkdir(dir, 0700) < 0 && (e = errno) != EEXIST)
        goto fail_dir;
    what = "cannot open";
    if ((s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        e = errno;
        goto fail_dir;
    }
    what = "cannot make its lock";
    if ((e = pthread_mutex_init(&s->lock, NULL)) != 0)
        goto fail_mutex;
    what = "cannot read";
    if ((e = -scan_dir(s)) > 0)
        goto fail_scan;
    return s;

fail_scan:
    pthread_mutex_destroy(&s->lock);
fail_mutex:
    close(s->dirfd);
fail_dir:
    snprintf(err, errlen, "dictionary store %s: %s: %s", dir, what, strerror(e));
    free(s);
    return NULL;
}

void dict_store_close(struct dict_store *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->lock);
    close(s->dirfd);
    free(s);
}

/* ---- reading and writing (compressor threads) ------------------------------------------------ */

static bool sha256(const void *data, size_t len, unsigned char out[DICT_HASH_LEN])
{
    unsigned int n = 0;
    return EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) == 1 && n == DICT_HASH_LEN;
}

/* A new temporary file in the directory, its name in tmp. -errno on failure. */
static int open_temp(struct dict_store *s, char tmp[TMP_NAME_LEN])
{
    static _Atomic unsigned long serial; /* unique among this process's writers */
    for (int tries = 0; tries < TMP_TRIES; tries++) {
        snprintf(tmp, TMP_NAME_LEN, TMP_PREFIX "%ld-%lu", (long)getpid(),
                 atomic_fetch_add(&serial, 1));
        int fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd >= 0 ? fd : -errno;
    }
    return -EEXIST;
}

/* Write data to a new temporary file, fsync it and rename it to `name`, then fsync the
 * directory: the name never points at bytes not yet on disk. 0 or -errno. */
static int write_file(struct dict_store *s, const char *name, const void *data, size_t len)
{
    char tmp[TMP_NAME_LEN];
    int fd = open_temp(s, tmp);
    if (fd < 0)
        return fd;
    int rc = fd_write_all(fd, data, len);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(s->dirfd, tmp, s->dirfd, name) < 0)
        rc = -errno;
    if (rc < 0) {
        unlinkat(s->dirfd, tmp, 0);
        return rc;
    }
    fsync(s->dirfd); /* the rename itself: a crash may lose it, never tear the file */
    return 0;
}

int dict_store_put(struct dict_store *s, uint64_t pattern_key, const void *data, size_t len,
                   unsigned char hash[DICT_HASH_LEN])
{
    if (!len || !pattern_key)
        return -EINVAL;
    if (len > s->lim.per_pattern_bytes || len > DCZ_MAX_TOTAL)
        return -E2BIG;
    struct dict_entry e = { .size = len, .pattern_key = pattern_key };
    if (!sha256(data, len, e.hash))
        return -ENOMEM;
    if (hash)
        memcpy(hash, e.hash, DICT_HASH_LEN);
    char name[NAME_LEN + 1];
    entry_name(&e, name);
    pthread_mutex_lock(&s->lock);
    size_t i = slot_find(s, e.hash);
    if (i != SIZE_MAX) { /* there already: now the newest, here and after a restart */
        s->slots[i].stamp = ++s->clock;
        pthread_mutex_unlock(&s->lock);
        utimensat(s->dirfd, name, NULL, 0);
        return 0;
    }
    pthread_mutex_unlock(&s->lock);
    int rc = write_file(s, name, data, len); /* outside the mutex: other jobs go on */
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&s->lock);
    if (slot_find(s, e.hash) == SIZE_MAX) { /* (another job may have stored it meanwhile) */
        make_room(s, pattern_key, len);
        slot_insert(s, &e);
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* Forget dictionary `hash` and delete its file: it is corrupt, truncated or gone. */
static void drop(struct dict_store *s, const unsigned char *hash)
{
    pthread_mutex_lock(&s->lock);
    size_t i = slot_find(s, hash);
    if (i != SIZE_MAX)
        evict(s, i);
    pthread_mutex_unlock(&s->lock);
}

/* Read the whole file (exactly `size` bytes, no more) into a new buffer. 0, -EBADMSG when it
 * has another size, or -errno. */
static int read_file(int fd, uint64_t size, void **data)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if ((uint64_t)st.st_size != size)
        return -EBADMSG;
    char *buf = malloc(size);
    if (!buf)
        return -ENOMEM;
    for (uint64_t off = 0; off < size;) {
        ssize_t r = pread(fd, buf + off, size - off, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int rc = r < 0 ? -errno : -EBADMSG; /* shorter than it said: truncated meanwhile */
            free(buf);
            return rc;
        }
        off += (uint64_t)r;
    }
    *data = buf;
    return 0;
}

int dict_store_load(struct dict_store *s, const unsigned char hash[DICT_HASH_LEN], void **data,
                    size_t *len)
{
    struct dict_entry e;
    if (!dict_store_lookup(s, hash, &e))
        return -ENOENT;
    char name[NAME_LEN + 1];
    entry_name(&e, name);
    int fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int rc = -errno;
        if (rc == -ENOENT)
            drop(s, hash);
        return rc;
    }
    void *buf = NULL;
    int rc = read_file(fd, e.size, &buf);
    close(fd);
    unsigned char md[DICT_HASH_LEN];
    if (rc == 0 && !sha256(buf, e.size, md))
        rc = -ENOMEM;
    else if (rc == 0 && memcmp(md, hash, DICT_HASH_LEN))
        rc = -EBADMSG;
    if (rc < 0) {
        free(buf);
        if (rc == -EBADMSG)
            drop(s, hash);
        return rc;
    }
    *data = buf;
    *len = e.size;
    return 0;
}
