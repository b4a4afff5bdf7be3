/* access_log.h — the access log: Combined Log Format (default) or JSON lines.
 *
 * Logging never serialises the pool: each processing thread formats its line in a buffer on its
 * own stack and writes it with one write(2) to an O_APPEND fd, so lines never interleave and no
 * lock is taken; or, with access_log_buffer, appends it to a buffer of its own, written many
 * lines at a time (access_buffer.h). Request-controlled fields are escaped (CLF: `"`, `\` and bytes outside
 * 0x20..0x7e as \xHH, like nginx; JSON: standard escapes). Reopening (SIGUSR1) dup2()s a fresh
 * file onto the same descriptor number, so a thread writing concurrently writes to the old or
 * the new file, never to a closed or reused descriptor. */
#ifndef LF_ACCESS_LOG_H
#define LF_ACCESS_LOG_H

#include <netinet/in.h>
#include <stdint.h>

#include "base/strview.h"

struct http_request;
struct runtime;

enum access_log_format { ALOG_COMBINED = 0, ALOG_JSON };

/* Open the configured access log (cfg.access_log: a path, "stdout", "stderr" or "off").
 * Prints one line and returns -1 on failure. */
int access_log_open(struct runtime *rt);
/* Reopen the log file (SIGUSR1); 0 or -errno. No-op for stdout/stderr/off. Buffered lines
 * (access_log_buffer) are written to the old file first. */
int access_log_reopen(struct runtime *rt);
/* The server's tick: write the buffered lines that have waited their flush interval. */
void access_log_tick(int64_t now_ms);
/* Write every buffered line now (a reload, the end of a drain). */
void access_log_flush(void);
void access_log_close(struct runtime *rt);

/* What one line says of an answered exchange. */
struct access_entry {
    const struct http_request *req;  /* NULL: a request that failed to parse */
    const struct in6_addr *client;   /* the client (after trusted proxies) */
    struct strview user;             /* Basic authentication's user, or none */
    int status;
    uint64_t body_bytes;
    const char *content_encoding;    /* NULL: none (identity) */
};

/* Log one answered exchange under runtime `rt` (whose access log must be open). */
void access_log_write(const struct runtime *rt, const struct access_entry *e);

#endif
