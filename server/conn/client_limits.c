/* client_limits.c — per-client limits: the table, the token bucket, the checks; see
 * client_limits.h. */
#include "conn/client_limits.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "conf/config.h"
#include "log/log.h"
#include "base/netaddr.h"
#include "conf/runtime.h"
#include "conf/site.h"

#define NIL UINT32_MAX
#define TABLE_MIN 1024
#define TABLE_MAX (1u << 26)

/* ---- pure parts ------------------------------------------------------------------------------ */

void limit_key(const struct in6_addr *addr, struct in6_addr *key)
{
    *key = *addr;
    if (!IN6_IS_ADDR_V4MAPPED(addr))
        memset(&key->s6_addr[8], 0, 8); /* one /64: what one IPv6 client is usually given */
}

bool limit_gcra(uint64_t *tat, uint64_t now, uint64_t interval, unsigned burst, uint64_t *wait)
{
    /* The bucket is full when *tat <= now; every request moves *tat one interval later; a
     * request fits while *tat stays within (burst - 1) intervals of now. */
    uint64_t t = *tat > now ? *tat : now;
    uint64_t tolerance = interval * (burst ? burst - 1 : 0);
    if (t - now > tolerance) {
        *wait = t - now - tolerance;
        return false;
    }
    *tat = t + interval;
    return true;
}

unsigned limit_retry_after(uint64_t wait_ns)
{
    uint64_t s = (wait_ns + CLOCK_NS_PER_S - 1) / CLOCK_NS_PER_S;
    return s < 1 ? 1 : s > 86400 ? 86400 : (unsigned)s;
}

/* ---- the table ------------------------------------------------------------------------------- */

enum { E_FREE = 0, E_IDLE, E_BUSY }; /* idle: in the LRU list; busy: slots in use */

struct limit_entry {
    struct in6_addr key;
    uint32_t rule;
    uint32_t conns;       /* slots in use */
    uint64_t tat;         /* the bucket (limit_gcra); 0: full */
    uint32_t logged;      /* monotonic second + 1 of the last log line; 0: never */
    uint32_t hnext;       /* next in its hash chain */
    uint32_t prev, next;  /* the LRU list (idle), or the free list (next) */
    uint8_t state;        /* E_* */
};

struct limit_shard {
    pthread_mutex_t lock;
    struct limit_entry *e;
    uint32_t *bucket;     /* heads of the hash chains */
    uint32_t mask;        /* buckets - 1 */
    uint32_t free;        /* free entries */
    uint32_t head, tail;  /* idle entries, most recently used first */
    _Atomic uint32_t used;
} __attribute__((aligned(64)));

struct limit_table {
    struct limit_shard shard[LIMIT_SHARDS];
    uint64_t seed;        /* keys the hash, so that nobody can aim addresses at one shard */
    uint32_t per_shard;
    size_t bytes;
    struct limit_entry *entries;
    uint32_t *buckets;
    _Atomic uint64_t evictions, fail_open, conns_refused, requests_conn, requests_rate;
    _Atomic uint64_t fail_open_logged; /* monotonic second + 1 of the last such line */
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    return x ^ (x >> 33);
}

static uint64_t hash_of(const struct limit_table *t, const struct in6_addr *key, uint32_t rule)
{
    uint64_t a, b;
    memcpy(&a, &key->s6_addr[0], 8);
    memcpy(&b, &key->s6_addr[8], 8);
    return mix(mix(t->seed ^ a ^ ((uint64_t)rule << 32)) ^ b);
}

struct limit_table *limit_table_new(unsigned entries)
{
    if (entries < TABLE_MIN)
        entries = TABLE_MIN;
    if (entries > TABLE_MAX)
        entries = TABLE_MAX;
    uint32_t per = (entries + LIMIT_SHARDS - 1) / LIMIT_SHARDS, nb = 1;
    while (nb < per)
        nb <<= 1;
    struct limit_table *t = aligned_alloc(64, sizeof(*t));
    if (!t)
        return NULL;
    memset(t, 0, sizeof(*t));
    t->per_shard = per;
    t->entries = calloc((size_t)per * LIMIT_SHARDS, sizeof(*t->entries));
    t->buckets = malloc((size_t)nb * LIMIT_SHARDS * sizeof(*t->buckets));
    if (!t->entries || !t->buckets) {
        free(t->entries);
        free(t->buckets);
        free(t);
        return NULL;
    }
    t->bytes = sizeof(*t) + (size_t)per * LIMIT_SHARDS * sizeof(*t->entries) +
               (size_t)nb * LIMIT_SHARDS * sizeof(*t->buckets);
    if (getrandom(&t->seed, sizeof(t->seed), GRND_NONBLOCK) != (ssize_t)sizeof(t->seed))
        t->seed = mix((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)t);
    for (unsigned i = 0; i < LIMIT_SHARDS; i++) {
        struct limit_shard *s = &t->shard[i];
        pthread_mutex_init(&s->lock, NULL);
        s->e = t->entries + (size_t)i * per;
        s->bucket = t->buckets + (size_t)i * nb;
        s->mask = nb - 1;
        for (uint32_t b = 0; b < nb; b++)
            s->bucket[b] = NIL;
        for (uint32_t k = 0; k < per; k++)
            s->e[k].next = k + 1 < per ? k + 1 : NIL;
        s->free = 0;
        s->head = s->tail = NIL;
    }
    return t;
}

void limit_table_free(struct limit_table *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < LIMIT_SHARDS; i++)
        pthread_mutex_destroy(&t->shard[i].lock);
    free(t->entries);
    free(t->buckets);
    free(t);
}

void limit_table_stats(struct limit_table *t, struct limit_stats *s)
{
    memset(s, 0, sizeof(*s));
    if (!t)
        return;
    s->capacity = (uint64_t)t->per_shard * LIMIT_SHARDS;
    s->bytes = t->bytes;
    for (unsigned i = 0; i < LIMIT_SHARDS; i++)
        s->entries += atomic_load_explicit(&t->shard[i].used, memory_order_relaxed);
#define LOAD(f) atomic_load_explicit(&t->f, memory_order_relaxed)
    s->evictions = LOAD(evictions);
    s->fail_open = LOAD(fail_open);
    s->conns_refused = LOAD(conns_refused);
    s->requests_conn = LOAD(requests_conn);
    s->requests_rate = LOAD(requests_rate);
#undef LOAD
}

static void count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The LRU list of idle entries (shard lock held). */
static void lru_unlink(struct limit_shard *s, uint32_t i)
{
    struct limit_entry *e = &s->e[i];
    if (e->prev != NIL)
        s->e[e->prev].next = e->next;
    else
        s->head = e->next;
    if (e->next != NIL)
        s->e[e->next].prev = e->prev;
    else
        s->tail = e->prev;
}

static void lru_push(struct limit_shard *s, uint32_t i)
{
    struct limit_entry *e = &s->e[i];
    e->prev = NIL;
    e->next = s->head;
    if (s->head != NIL)
        s->e[s->head].prev = i;
    else
        s->tail = i;
    s->head = i;
}

static void chain_unlink(struct limit_table *t, struct limit_shard *s, uint32_t i)
{
    uint32_t *p = &s->bucket[(hash_of(t, &s->e[i].key, s->e[i].rule) >> 6) & s->mask];
    while (*p != i)
        p = &s->e[*p].hnext;
    *p = s->e[i].hnext;
}

/* The entry of (key, rule): found, or made from a free entry or the least recently used idle
 * one; NIL when every entry is in use. A new entry is idle (in the LRU list). */
static uint32_t entry_get(struct limit_table *t, struct limit_shard *s, uint64_t h,
                          const struct in6_addr *key, uint32_t rule)
{
    uint32_t *head = &s->bucket[(h >> 6) & s->mask];
    for (uint32_t i = *head; i != NIL; i = s->e[i].hnext)
        if (s->e[i].rule == rule && !memcmp(&s->e[i].key, key, sizeof(*key)))
            return i;
    uint32_t i = s->free;
    if (i != NIL) {
        s->free = s->e[i].next;
        atomic_fetch_add_explicit(&s->used, 1, memory_order_relaxed);
    } else if ((i = s->tail) != NIL) {
        lru_unlink(s, i);
        chain_unlink(t, s, i);
        count(&t->evictions);
    } else {
        return NIL;
    }
    struct limit_entry *e = &s->e[i];
    *e = (struct limit_entry){ .key = *key, .rule = rule, .hnext = *head, .state = E_IDLE };
    *head = i;
    lru_push(s, i);
    return i;
}

/* An entry no slot uses and whose bucket is full holds nothing: free it. */
static void entry_settle(struct limit_shard *s, uint32_t i, uint64_t now,
                         struct limit_table *t)
{
    struct limit_entry *e = &s->e[i];
    if (e->conns || e->tat > now)
        return;
    if (e->state == E_IDLE)
        lru_unlink(s, i);
    chain_unlink(t, s, i);
    e->state = E_FREE;
    e->next = s->free;
    s->free = i;
    atomic_fetch_sub_explicit(&s->used, 1, memory_order_relaxed);
}

static bool log_due(uint32_t *logged, uint64_t now)
{
    uint32_t sec = (uint32_t)(now / CLOCK_NS_PER_S) + 1;
    if (*logged && sec - *logged < LIMIT_LOG_INTERVAL_S)
        return false;
    *logged = sec;
    return true;
}

/* The shard of (key, rule), locked, and *i the entry's index in it (found or made; NIL when
 * the shard is full: fail open). The caller unlocks it with shard_unlock(). */
static struct limit_shard *shard_lock(struct limit_table *t, const struct in6_addr *key,
                                      uint32_t rule, uint32_t *i)
{
    uint64_t h = hash_of(t, key, rule);
    struct limit_shard *s = &t->shard[h & (LIMIT_SHARDS - 1)];
    pthread_mutex_lock(&s->lock);
    *i = entry_get(t, s, h, key, rule);
    return s;
}

/* Unlock the shard and count a failure to open an entry; returns r. */
static enum limit_result shard_unlock(struct limit_table *t, struct limit_shard *s,
                                      enum limit_result r)
{
    pthread_mutex_unlock(&s->lock);
    if (r == LIMIT_FAIL_OPEN)
        count(&t->fail_open);
    return r;
}

enum limit_result limit_acquire(struct limit_table *t, const struct in6_addr *key, uint32_t rule,
                                unsigned max, uint64_t now_ns, uint32_t *slot, bool *log)
{
    enum limit_result r = LIMIT_PASS;
    *slot = LIMIT_NONE;
    *log = false;
    uint32_t i;
    struct limit_shard *s = shard_lock(t, key, rule, &i);
    if (i == NIL) {
        r = LIMIT_FAIL_OPEN;
    } else if (s->e[i].conns >= max) {
        r = LIMIT_OVER;
        *log = log_due(&s->e[i].logged, now_ns);
    } else {
        struct limit_entry *e = &s->e[i];
        if (e->conns++ == 0) {
            lru_unlink(s, i); /* in use: never evicted */
            e->state = E_BUSY;
        }
        *slot = (uint32_t)(s - t->shard) * t->per_shard + i;
    }
    if (i != NIL && r == LIMIT_OVER)
        entry_settle(s, i, now_ns, t); /* max 0 on a new entry: keep nothing */
    return shard_unlock(t, s, r);
}

void limit_release(struct limit_table *t, uint32_t *slot, uint64_t now_ns)
{
    if (*slot == LIMIT_NONE)
        return;
    struct limit_shard *s = &t->shard[*slot / t->per_shard];
    uint32_t i = *slot % t->per_shard;
    *slot = LIMIT_NONE;
    pthread_mutex_lock(&s->lock);
    struct limit_entry *e = &s->e[i];
    if (--e->conns == 0) {
        e->state = E_IDLE;
        lru_push(s, i);
        entry_settle(s, i, now_ns, t);
    }
    pthread_mutex_unlock(&s->lock);
}

enum limit_result limit_take(struct limit_table *t, const struct in6_addr *key, uint32_t rule,
                             uint64_t interval_ns, unsigned burst, uint64_t now_ns,
                             uint64_t *wait_ns, bool *log)
{
    enum limit_result r = LIMIT_PASS;
    *log = false;
    *wait_ns = 0;
    uint32_t i;
    struct limit_shard *s = shard_lock(t, key, rule, &i);
    if (i == NIL) {
        r = LIMIT_FAIL_OPEN;
    } else {
        struct limit_entry *e = &s->e[i];
        if (e->state == E_IDLE && s->head != i) {
            lru_unlink(s, i);
            lru_push(s, i);
        }
        if (!limit_gcra(&e->tat, now_ns, interval_ns, burst, wait_ns)) {
            r = LIMIT_OVER;
            *log = log_due(&e->logged, now_ns);
        }
    }
    return shard_unlock(t, s, r);
}

/* ---- the server's checks --------------------------------------------------------------------- */

uint64_t limits_now(void)
{
    return clock_now_ns();
}

/* A client's key as text: "192.0.2.7", "2001:db8:1:2::/64". */
static const char *key_text(const struct in6_addr *key, char *buf, size_t cap)
{
    size_t n = netaddr_format(key, buf, cap);
    if (!IN6_IS_ADDR_V4MAPPED(key) && n + 4 < cap)
        memcpy(buf + n, "/64", 4);
    return buf;
}

/* Fail open: let the client through, one line a minute for the whole table. */
static void note_fail_open(struct limit_table *t, uint64_t now)
{
    uint64_t sec = now / CLOCK_NS_PER_S + 1, last = atomic_load_explicit(&t->fail_open_logged,
                                                                  memory_order_relaxed);
    if (last && sec - last < LIMIT_LOG_INTERVAL_S)
        return;
    if (atomic_compare_exchange_strong(&t->fail_open_logged, &last, sec))
        log_warn("limits: a shard of the table (%llu entries) is full of clients with "
                 "connections or requests in flight: new clients there are not limited "
                 "(limit_table_size; logged once a minute)",
                 (unsigned long long)t->per_shard * LIMIT_SHARDS);
}

int limits_connection_open(const struct runtime *rt, const struct in6_addr *peer, uint32_t *slot,
                           bool *at_request)
{
    const struct config *cfg = &rt->cfg;
    *slot = LIMIT_NONE;
    /* Behind a trusted proxy the clients are known per request only (X-Forwarded-For). */
    *at_request = cidr_list_match(&cfg->trusted_proxies, peer);
    if (!rt->limits || !cfg->limit_conn_per_ip || *at_request || netaddr_is_unix(peer) ||
        cidr_list_match(&cfg->limit_allow, peer))
        return 0;
    struct in6_addr key;
    limit_key(peer, &key);
    uint64_t now = limits_now();
    bool log;
    enum limit_result r =
        limit_acquire(rt->limits, &key, 0, cfg->limit_conn_per_ip, now, slot, &log);
    if (r == LIMIT_FAIL_OPEN)
        note_fail_open(rt->limits, now);
    if (r != LIMIT_OVER)
        return 0;
    count(&rt->limits->conns_refused);
    char a[INET6_ADDRSTRLEN + 4];
    if (log)
        log_warn("limit_conn_per_ip: %s holds %u connections: more are refused (logged once "
                 "a minute per client and limit)",
                 key_text(&key, a, sizeof(a)), cfg->limit_conn_per_ip);
    return -EBUSY;
}

/* A request over a limit: count it, log it when due, let go of what it took. */
static int refuse(const struct runtime *rt, const struct loc_conf *lc,
                  const struct in6_addr *key, bool rate, bool log,
                  uint32_t held[LIMIT_REQ_SLOTS], uint64_t now)
{
    struct limit_table *t = rt->limits;
    count(rate ? &t->requests_rate : &t->requests_conn);
    for (int k = 0; k < LIMIT_REQ_SLOTS; k++)
        limit_release(t, &held[k], now);
    if (log) {
        char a[INET6_ADDRSTRLEN + 4];
        const char *where = lc->prefix ? lc->prefix : lc->ext ? lc->ext : NULL;
        log_warn("%s: %s is over the limit%s%s: answered 429 (logged once a minute per client "
                 "and limit)",
                 rate ? "limit_req_per_ip" : "limit_conn_per_ip", key_text(key, a, sizeof(a)),
                 where ? " of location " : "", where ? where : "");
    }
    return -EBUSY;
}

/* One concurrency slot of (key, rule), or a refusal. */
static int take_slot(const struct runtime *rt, const struct loc_conf *lc,
                     const struct in6_addr *key, uint32_t rule, unsigned max,
                     uint32_t held[LIMIT_REQ_SLOTS], int k, uint64_t now)
{
    bool log;
    enum limit_result r = limit_acquire(rt->limits, key, rule, max, now, &held[k], &log);
    if (r == LIMIT_FAIL_OPEN)
        note_fail_open(rt->limits, now);
    return r == LIMIT_OVER ? refuse(rt, lc, key, false, log, held, now) : 0;
}

int limits_request(const struct runtime *rt, const struct loc_conf *lc,
                   const struct in6_addr *client, bool at_request,
                   uint32_t held[LIMIT_REQ_SLOTS], unsigned *retry_after)
{
    const struct config *cfg = &rt->cfg;
    for (int k = 0; k < LIMIT_REQ_SLOTS; k++)
        held[k] = LIMIT_NONE;
    *retry_after = 1;
    bool conns = at_request && cfg->limit_conn_per_ip;
    if (!rt->limits || (!conns && lc->limit_conn <= 0 && !lc->limit_req_interval) ||
        netaddr_is_unix(client) || cidr_list_match(&cfg->limit_allow, client))
        return 0;
    struct in6_addr key;
    limit_key(client, &key);
    uint64_t now = limits_now();
    /* The client's connections, when its connection could not count them (behind a proxy),
     * then its requests in flight in this location, then its request rate. */
    if (conns && take_slot(rt, lc, &key, 0, cfg->limit_conn_per_ip, held, 0, now) < 0)
        return -EBUSY;
    if (lc->limit_conn > 0 &&
        take_slot(rt, lc, &key, lc->limit_conn_rule, (unsigned)lc->limit_conn, held, 1, now) < 0)
        return -EBUSY;
    if (!lc->limit_req_interval)
        return 0;
    uint64_t wait;
    bool log;
    enum limit_result r = limit_take(rt->limits, &key, lc->limit_req_rule,
                                     lc->limit_req_interval, (unsigned)lc->limit_req_burst, now,
                                     &wait, &log);
    if (r == LIMIT_FAIL_OPEN)
        note_fail_open(rt->limits, now);
    if (r != LIMIT_OVER)
        return 0;
    *retry_after = limit_retry_after(wait);
    return refuse(rt, lc, &key, true, log, held, now);
}

void limits_release(const struct runtime *rt, uint32_t *slot)
{
    if (*slot != LIMIT_NONE)
        limit_release(rt->limits, slot, limits_now());
}
