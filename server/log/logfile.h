/* logfile.h — appending whole lines to a log file that may fail: a full disk, an I/O error.
 *
 * Both logs write each line with one write(2) to an O_APPEND descriptor, from any pool thread,
 * without a lock. That keeps lines from interleaving, but not from being torn: on a file system
 * that runs out of space in the middle of a line, write() writes what fits and returns short,
 * and whatever is appended once there is room again continues the torn line. So for a regular
 * file, space is reserved ahead (fallocate, FALLOC_FL_KEEP_SIZE: the file's size does not
 * change) and a line is written only if it fits in what is reserved, with a margin for what
 * the estimate cannot see (another writer, a reopen). When no more can be reserved, lines are
 * dropped whole, and counted: a fault episode, which ends with the first line written again.
 * Reservations are retried at most every LOGFILE_RETRY_MS meanwhile, so a full disk costs
 * the request path nothing but a counter.
 *
 * A target that cannot reserve (a pipe, a terminal, /dev/full, a file system without
 * fallocate) is written plainly; a failed write then also drops the line and starts an
 * episode. The caller reports episodes (logfile_write's result): one line when one begins, one
 * when it ends, never one per lost line. */
#ifndef LF_LOGFILE_H
#define LF_LOGFILE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOGFILE_RETRY_MS 250

enum logfile_result {
    LOGFILE_WRITTEN = 0,  /* the line is in the file */
    LOGFILE_LOST,         /* dropped, in an episode already reported */
    LOGFILE_FAILING,      /* dropped, and it begins an episode: report `err` once */
    LOGFILE_RECOVERED,    /* written, and it ends an episode: report `lost` lines once */
};

struct logfile {
    int fd;                        /* written with O_APPEND; a reopen dup2()s onto it */
    _Atomic bool plain;            /* cannot reserve: plain writes */
    _Atomic uint64_t end;          /* estimate of the file's end: its size when last looked at,
                                      plus every line counted since (in flight or written) */
    _Atomic uint64_t reserved;     /* space is allocated up to here */
    _Atomic bool failing;          /* in a fault episode: lines are being dropped */
    _Atomic uint64_t lost;         /* lines dropped in this episode */
    _Atomic int err;               /* the errno that began it */
    _Atomic int64_t retry_at;      /* while failing: no new attempt before (monotonic ms) */
    pthread_mutex_t lock;          /* reserving, and the start and end of an episode */
    /* Who says what a write's result means (the error log's lines for the access log's
     * episodes), for writes made away from the line's own request (access_buffer.h); NULL:
     * nobody. `report_arg` is passed along. */
    void (*report)(const void *arg, enum logfile_result r, int err, uint64_t lost);
    const void *report_arg;
};

/* Start accounting for `fd` (its current size). */
void logfile_init(struct logfile *lf, int fd);
void logfile_destroy(struct logfile *lf);
/* A new file was dup2()ed onto the descriptor (SIGUSR1): start over from its size. */
void logfile_reopened(struct logfile *lf);
/* Append one whole line (with its newline) or nothing. `err` and `lost` are set for
 * LOGFILE_FAILING and LOGFILE_RECOVERED. Thread-safe; no lock on the common path. */
enum logfile_result logfile_write(struct logfile *lf, const char *line, size_t len, int *err,
                                  uint64_t *lost);
/* The same for `nlines` whole lines at once (a buffer of them, access_buffer.h): one write(),
 * space reserved for all of them, and when they cannot all be written, every line not written
 * whole is counted lost (`nlines` when nothing was written). */
enum logfile_result logfile_write_lines(struct logfile *lf, const char *buf, size_t len,
                                        uint64_t nlines, int *err, uint64_t *lost);

#endif
