/* send_probe.h — how this machine sends a file fastest: sendfile(2) or a copy through a buffer.
 *
 * Which of the two costs a server less CPU per byte depends on the machine (docs/PERFORMANCE.md,
 * "Run 6": on one 2-core machine a 256 KiB response by sendfile cost half of a copy, on another
 * 1.7 times as much). `sendfile_min_size auto` therefore asks the machine, once per process, at
 * start-up: over a loopback TCP connection (a UNIX socketpair where there is no loopback), it
 * sends the same bytes of a memory file both ways, a few rounds interleaved, and times only the
 * sending calls (pread + write against sendfile; the receiving end is drained in between, not
 * timed). Two sizes, one of each size class that can go either way: SEND_PROBE_MID (a 256 KiB
 * response) and SEND_PROBE_LARGE (a multi-megabyte one). Bounded: it stops at
 * SEND_PROBE_BUDGET_MS whatever it has, and an incomplete or failed probe keeps sendfile. */
#ifndef LF_SEND_PROBE_H
#define LF_SEND_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEND_PROBE_MID (256 * 1024)
#define SEND_PROBE_LARGE (2 * 1024 * 1024)
#define SEND_PROBE_ROUNDS 3
#define SEND_PROBE_BUDGET_MS 50
/* A copy must be cheaper than sendfile by this share before it is chosen (noise and a busy
 * machine at start-up then leave the zero-copy path in place). */
#define SEND_PROBE_MARGIN_PCT 10
/* The threshold chosen when a copy wins for the middle class only: files from this size on
 * go out by sendfile. */
#define SEND_PROBE_SPLIT (1024 * 1024)

struct send_probe {
    uint64_t ns[2][2];      /* [size: 0 mid, 1 large][0 sendfile, 1 copy]: the fastest round */
    bool done[2];           /* that size was measured both ways */
    uint64_t min_size;      /* the choice: files of at least this go by sendfile (UINT64_MAX:
                               never) */
    unsigned l3_kib;        /* the last-level cache cpu0 sees (sysfs), 0 when unknown */
    unsigned elapsed_ms;
    const char *via;        /* "loopback TCP", "UNIX socketpair", or why it failed */
};

/* Measure (the first call; later calls return the first result). Never fails: a probe that
 * could not run chooses sendfile and says why in `via`. */
const struct send_probe *send_probe_run(void);

/* The result of send_probe_run(), or NULL when it has not run in this process. */
const struct send_probe *send_probe_last(void);

/* The probe's result as one line for the log: "sendfile_min_size auto: 1m (...)". */
void send_probe_describe(const struct send_probe *p, char *buf, size_t len);

#endif
