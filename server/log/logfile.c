/* logfile.c — see logfile.h. */
#include "log/logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

#define CHUNK (1024 * 1024)  /* reserved ahead at a time */
#define SLACK (64 * 1024)    /* kept reserved beyond the estimated end: what the estimate may
                                miss (another writer, lines from before a reopen, stderr) */

static void start_over(struct logfile *lf)
{
    struct stat st;
    bool regular = fstat(lf->fd, &st) == 0 && S_ISREG(st.st_mode);
    atomic_store(&lf->plain, !regular);
    atomic_store(&lf->end, regular ? (uint64_t)st.st_size : 0);
    atomic_store(&lf->reserved, 0); /* the first line reserves */
}

void logfile_init(struct logfile *lf, int fd)
{
    lf->fd = fd;
    lf->report = NULL;
    lf->report_arg = NULL;
    atomic_store(&lf->failing, false);
    atomic_store(&lf->lost, 0);
    atomic_store(&lf->err, 0);
    atomic_store(&lf->retry_at, 0);
    pthread_mutex_init(&lf->lock, NULL);
    start_over(lf);
}

void logfile_destroy(struct logfile *lf)
{
    pthread_mutex_destroy(&lf->lock);
}

void logfile_reopened(struct logfile *lf)
{
    pthread_mutex_lock(&lf->lock);
    start_over(lf);
    pthread_mutex_unlock(&lf->lock);
}

/* Reserve so that a line ending at `need` fits with SLACK to spare (caller holds the lock).
 * 0, or -errno when the space cannot be had. A target that cannot reserve at all turns
 * plain. */
static int reserve(struct logfile *lf, uint64_t need)
{
    if (need + SLACK <= atomic_load(&lf->reserved))
        return 0; /* another thread did it meanwhile */
    struct stat st;
    if (fstat(lf->fd, &st) < 0)
        return -errno;
    uint64_t size = (uint64_t)st.st_size;
    /* Catch up with what the estimate missed (someone else appended), or start over from the
     * size if the file shrank under us (truncated: the lines counted would land from its new
     * end). */
    uint64_t end = atomic_load(&lf->end);
    if (size > end || size + SLACK < end) {
        atomic_fetch_add(&lf->end, size - end); /* wraps to a subtraction when it shrank */
        need += size - end;
        end = size;
    }
    uint64_t want[2] = { end + CHUNK, need + SLACK };
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        if (want[i] <= size)
            want[i] = size + SLACK;
        if (fallocate(lf->fd, FALLOC_FL_KEEP_SIZE, (off_t)size, (off_t)(want[i] - size)) == 0) {
            atomic_store(&lf->reserved, want[i]);
            return 0;
        }
        rc = -errno;
        if (rc != -ENOSPC && rc != -EDQUOT)
            break;
    }
    if (rc == -EOPNOTSUPP || rc == -ENODEV || rc == -ESPIPE || rc == -EINVAL) {
        atomic_store(&lf->plain, true); /* no reservations here: plain writes */
        return 0;
    }
    return rc;
}

/* `lines` lines were dropped: count them, and say whether it begins an episode. */
static enum logfile_result dropped(struct logfile *lf, uint64_t lines, int err, int *err_out)
{
    atomic_fetch_add(&lf->lost, lines);
    atomic_store(&lf->retry_at, clock_now_ms() + LOGFILE_RETRY_MS);
    if (atomic_load(&lf->failing))
        return LOGFILE_LOST;
    pthread_mutex_lock(&lf->lock);
    bool first = !atomic_exchange(&lf->failing, true);
    if (first)
        atomic_store(&lf->err, err);
    pthread_mutex_unlock(&lf->lock);
    if (err_out)
        *err_out = err;
    return first ? LOGFILE_FAILING : LOGFILE_LOST;
}

/* A line was written: if it ends an episode, say how many were lost. */
static enum logfile_result written(struct logfile *lf, int *err_out, uint64_t *lost_out)
{
    if (!atomic_load_explicit(&lf->failing, memory_order_relaxed))
        return LOGFILE_WRITTEN;
    pthread_mutex_lock(&lf->lock);
    bool last = atomic_exchange(&lf->failing, false);
    uint64_t lost = atomic_exchange(&lf->lost, 0);
    int err = atomic_load(&lf->err);
    pthread_mutex_unlock(&lf->lock);
    if (!last)
        return LOGFILE_WRITTEN;
    if (lost_out)
        *lost_out = lost;
    if (err_out)
        *err_out = err;
    return LOGFILE_RECOVERED;
}

enum logfile_result logfile_write(struct logfile *lf, const char *line, size_t len, int *err,
                                  uint64_t *lost)
{
    return logfile_write_lines(lf, line, len, 1, err, lost);
}

/* How many whole lines the first `n` bytes of `buf` hold. */
static uint64_t lines_in(const char *buf, size_t n)
{
    uint64_t k = 0;
    for (const char *p = buf, *end = buf + n; (p = memchr(p, '\n', (size_t)(end - p))); p++)
        k++;
    return k;
}

enum logfile_result logfile_write_lines(struct logfile *lf, const char *buf, size_t len,
                                        uint64_t nlines, int *err, uint64_t *lost)
{
    if (atomic_load_explicit(&lf->failing, memory_order_relaxed) &&
        clock_now_ms() < atomic_load_explicit(&lf->retry_at, memory_order_relaxed)) {
        atomic_fetch_add(&lf->lost, nlines); /* a full disk costs a line nothing but this */
        return LOGFILE_LOST;
    }
    bool plain = atomic_load_explicit(&lf->plain, memory_order_relaxed);
    if (!plain) {
        uint64_t end = atomic_fetch_add(&lf->end, len) + len;
        if (end + SLACK > atomic_load(&lf->reserved)) {
            pthread_mutex_lock(&lf->lock);
            int rc = reserve(lf, end);
            pthread_mutex_unlock(&lf->lock);
            if (rc < 0) {
                atomic_fetch_sub(&lf->end, len);
                return dropped(lf, nlines, -rc, err);
            }
        }
    }
    ssize_t n = write(lf->fd, buf, len);
    if (n == (ssize_t)len)
        return written(lf, err, lost);
    /* Not reserved (plain), or something the reservation does not cover (an I/O error, the
     * file truncated under us). A short write tears the line it stops in; the lines before it
     * are written, that one and the rest are counted lost. */
    int e = n < 0 ? errno : ENOSPC;
    size_t done = n > 0 ? (size_t)n : 0;
    if (!plain)
        atomic_fetch_sub(&lf->end, len - done);
    uint64_t whole = lines_in(buf, done);
    return dropped(lf, nlines > whole ? nlines - whole : 0, e, err);
}
