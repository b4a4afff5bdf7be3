/* client_limits.h — per-client limits: connections held, requests in flight, request rate.
 *
 * One process-wide table (the server's; it survives reloads) holds an entry per (client, rule):
 * the client is its address — IPv4 per address, IPv6 grouped by /64 (limit_key) — and the rule
 * is one `limit_conn_per_ip` or `limit_req_per_ip` of the configuration (rule 0: the top
 * level's connection count). An entry holds a count of slots in use and the state of a token
 * bucket (GCRA: one theoretical arrival time).
 *
 * The table is fixed in size: 64 shards, each an array of entries with a hash index and a list
 * of the idle entries (no slot in use) in least-recently-used order, under its own mutex.
 * Nothing is allocated after limit_table_new(). A new client takes a free entry, else evicts
 * the least recently used idle one (its bucket is forgotten: it starts full again); an entry
 * with slots in use is never evicted. When a shard holds nothing but entries in use, a new
 * client is let through without an entry (fail open), counted and logged once a minute.
 *
 * Where the checks run (docs/ARCHITECTURE.md, "Per-client limits"):
 *   - at accept (connection.c), or once the PROXY header gave the address: the top level's
 *     `limit_conn_per_ip` counts the connection (limits_connection_open), unless its peer is
 *     a trusted proxy: then its clients are known only from each request's X-Forwarded-For,
 *     so the count is taken per request instead, for the time the request is in flight;
 *   - per request (exchange.c, after the location is chosen): that count for clients behind a
 *     trusted proxy, the location's `limit_conn_per_ip` (requests in flight) and its
 *     `limit_req_per_ip` (limits_request).
 * Slots are held by the connection (struct conn) and released through limits_release: the
 * connection's at close, a request's once its response is complete. */
#ifndef LF_CLIENT_LIMITS_H
#define LF_CLIENT_LIMITS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

struct loc_conf;
struct runtime;

#define LIMIT_NONE UINT32_MAX     /* no slot held */
#define LIMIT_SHARDS 64
#define LIMIT_LOG_INTERVAL_S 60   /* a client's limit is logged at most this often */
#define LIMIT_REQ_SLOTS 2         /* slots a request may hold (limits_request) */

struct limit_table;

/* What a table operation found. */
enum limit_result {
    LIMIT_PASS = 0,  /* within the limit (a slot is held, or a token was taken) */
    LIMIT_OVER,      /* over the limit: nothing held */
    LIMIT_FAIL_OPEN, /* no entry could be had (every one in use): let through, nothing held */
};

/* Counters and gauges (/metrics, /server-status), read without stopping anything. */
struct limit_stats {
    uint64_t capacity;         /* entries the table can hold */
    uint64_t bytes;            /* the table's memory (allocated once) */
    uint64_t entries;          /* entries in use: clients with slots held or bucket state */
    uint64_t evictions;        /* idle entries reused for another client */
    uint64_t fail_open;        /* clients let through because no entry could be had */
    uint64_t conns_refused;    /* connections refused by the top level's limit_conn_per_ip */
    uint64_t requests_conn;    /* requests answered 429 by a limit_conn_per_ip */
    uint64_t requests_rate;    /* requests answered 429 by a limit_req_per_ip */
};

/* ---- pure parts ------------------------------------------------------------------------------ */

/* The key of an address: IPv4 (v4-mapped) as it is, IPv6 with its last 64 bits cleared. */
void limit_key(const struct in6_addr *addr, struct in6_addr *key);
/* The generic cell rate algorithm: a bucket of `burst` requests that refills one request per
 * `interval` ns. *tat is the bucket's state (0: full). Returns true and advances *tat when a
 * request at `now` fits; false with *wait (ns until one would fit) when not. */
bool limit_gcra(uint64_t *tat, uint64_t now, uint64_t interval, unsigned burst, uint64_t *wait);
/* Retry-After for a wait: whole seconds, rounded up, at least 1. */
unsigned limit_retry_after(uint64_t wait_ns);

/* ---- the table ------------------------------------------------------------------------------- */

/* A table of `entries` (rounded up to a multiple of LIMIT_SHARDS; at least 1024). NULL when out
 * of memory. */
struct limit_table *limit_table_new(unsigned entries);
void limit_table_free(struct limit_table *t);
void limit_table_stats(struct limit_table *t, struct limit_stats *s);

/* Take one of `max` slots of (key, rule). PASS: *slot is held until limit_release. *log is set
 * when this is OVER and the client's last line for this rule is LIMIT_LOG_INTERVAL_S old. */
enum limit_result limit_acquire(struct limit_table *t, const struct in6_addr *key, uint32_t rule,
                                unsigned max, uint64_t now_ns, uint32_t *slot, bool *log);
/* Give back a slot (LIMIT_NONE: nothing) and set *slot to LIMIT_NONE. */
void limit_release(struct limit_table *t, uint32_t *slot, uint64_t now_ns);
/* Take a token of (key, rule)'s bucket (limit_gcra). OVER: *wait_ns until one is there. */
enum limit_result limit_take(struct limit_table *t, const struct in6_addr *key, uint32_t rule,
                             uint64_t interval_ns, unsigned burst, uint64_t now_ns,
                             uint64_t *wait_ns, bool *log);

/* ---- the server's checks --------------------------------------------------------------------- */

/* CLOCK_MONOTONIC_COARSE in ns. */
uint64_t limits_now(void);
/* A connection from `peer` (after the PROXY header, if any) under `rt`. Returns 0 to serve it
 * (*slot: the slot it holds, or LIMIT_NONE; *at_request: count its clients per request — the
 * peer is a trusted proxy), or -EBUSY to refuse it. */
int limits_connection_open(const struct runtime *rt, const struct in6_addr *peer, uint32_t *slot,
                           bool *at_request);
/* A request of `client` to location `lc`; `at_request` as limits_connection_open said. Returns
 * 0 to serve it (held[]: the slots it holds until its response is complete, LIMIT_NONE when
 * none), or -EBUSY: answer 429 with `Retry-After: *retry_after` (nothing held). */
int limits_request(const struct runtime *rt, const struct loc_conf *lc,
                   const struct in6_addr *client, bool at_request,
                   uint32_t held[LIMIT_REQ_SLOTS], unsigned *retry_after);
/* Release a slot taken by the two above (no-op for LIMIT_NONE); *slot becomes LIMIT_NONE. */
void limits_release(const struct runtime *rt, uint32_t *slot);

#endif
