/* builtin.h — shared pieces of the built-in handlers (builtin_status.c, test_endpoints.c). */
#ifndef LF_BUILTIN_H
#define LF_BUILTIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compress.h"

struct http_exchange;
struct response;
struct runtime;
struct server;

/* The /server-status page (status_page.c). */
extern const char status_page_html[];
extern const size_t status_page_html_len;

/* A consistent-enough snapshot of the server's counters, taken without stopping anything:
 * per-thread counters are relaxed atomics summed here; connections are classified by one pass
 * over the connection list under its lock. */
#define SNAP_MAX_WORKERS 64
struct server_snapshot {
    int64_t uptime;
    bool ready;                       /* what /readyz answers (server_ready) */
    bool draining;
    const char *concurrency;          /* the strategy's name (thread_pool.h) */
    unsigned threads;                 /* every pool thread, the HS/HA reactor included */
    const char *threads_reason;       /* how the count was chosen (config.h), owned by rt */
    unsigned role[3];                 /* enum worker_role: following, leading, processing */
    uint64_t events, waits, promotions, no_follower, requests, bytes_out, accepted;
    unsigned conns_open;
    unsigned conns[6];                /* reading, writing, idle, handler, closing, active */
    unsigned cgi_running, cgi_max;
    uint64_t cgi_started, cgi_rejected, cgi_timeouts, cgi_failed;
    unsigned timers;
    uint64_t fc_hits, fc_misses, fc_revalidations, fc_evictions, fc_entries, fc_bytes;
    struct compress_stats cz;         /* compression on the fly (compress.h) */
    unsigned nworkers;                /* detail kept for the first SNAP_MAX_WORKERS threads */
    struct {
        int role;
        uint64_t events, requests, bytes_out, promotions, no_follower;
    } worker[SNAP_MAX_WORKERS];
};
extern const char *const snapshot_conn_states[6];
extern const char *const snapshot_role_names[3];

void server_snapshot(struct server *srv, const struct runtime *rt, struct server_snapshot *s);

/* Add the location's `add_header` lines (and nothing else) to a response head. */
void builtin_add_location_headers(struct response *r, const struct http_exchange *ex);

/* Append `s` (len bytes) to out[*pos..cap) as the inside of a JSON string: quotes,
 * backslashes and control characters escaped; bytes >= 0x80 as \u00XX (a byte each, so any
 * byte string round-trips). Returns false when it did not fit. */
bool json_escape_append(char *out, size_t cap, size_t *pos, const char *s, size_t len);

#endif
