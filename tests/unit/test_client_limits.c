/* test_client_limits.c — unit tests for conn/client_limits.c: the client key (IPv6 by /64),
 * the rate syntax, the token bucket (GCRA), and the table: slots, buckets, logging once a
 * minute, eviction of idle entries, fail-open when every entry is in use, concurrency — and
 * that none of the table's operations allocates (the Makefile links this test with
 * --wrap=malloc,calloc,realloc,aligned_alloc: every allocation of the library is counted). */
#include "conn/client_limits.h"
#include "conf/directives.h"
#include "test.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- counting allocations: alloc_count.h -------------------------------------------------- */

#include "alloc_count.h"

/* ---- helpers ------------------------------------------------------------------------------- */

#define S UINT64_C(1000000000)

static struct in6_addr addr(const char *s)
{
    return test_addr(s);
}

static struct in6_addr key(const char *s)
{
    struct in6_addr a = addr(s), k;
    limit_key(&a, &k);
    return k;
}

static bool same_key(const char *a, const char *b)
{
    struct in6_addr x = key(a), y = key(b);
    return !memcmp(&x, &y, sizeof(x));
}

/* The n-th of many distinct IPv4 clients: 10.x.y.z. */
static struct in6_addr nth(unsigned n)
{
    struct in6_addr a = addr("10.0.0.0");
    a.s6_addr[13] = (uint8_t)(n >> 16);
    a.s6_addr[14] = (uint8_t)(n >> 8);
    a.s6_addr[15] = (uint8_t)n;
    return a;
}

static uint64_t entries(struct limit_table *t)
{
    struct limit_stats s;
    limit_table_stats(t, &s);
    return s.entries;
}

/* ---- the pure parts -------------------------------------------------------------------------- */

static void test_keys(void)
{
    ok(same_key("2001:db8::1", "2001:db8::2"), "IPv6: one /64 is one client");
    ok(same_key("2001:db8:0:0:ffff:1:2:3", "2001:db8::"), "IPv6: the interface bits are cleared");
    ok(!same_key("2001:db8::1", "2001:db8:0:1::1"), "IPv6: another /64 is another client");
    ok(!same_key("2001:db8::1", "2001:db9::1"), "IPv6: another prefix");
    ok(!same_key("127.0.0.2", "127.0.0.3"), "IPv4: per address (not grouped by the /64 rule)");
    ok(same_key("192.0.2.7", "192.0.2.7"), "IPv4: the same address");
    struct in6_addr k = key("192.0.2.7"), a = addr("192.0.2.7");
    ok(!memcmp(&k, &a, sizeof(k)), "IPv4: the key is the (v4-mapped) address");
    ok(!same_key("::ffff:192.0.2.7", "::ffff:192.0.2.8"), "v4-mapped IPv6 text is IPv4");
}

static void test_rates(void)
{
    uint64_t iv = 0;
    ok(directive_parse_rate("10r/s", &iv) == 0 && iv == S / 10, "10r/s: 100 ms apart");
    ok(directive_parse_rate("600r/m", &iv) == 0 && iv == S / 10, "600r/m: 100 ms apart");
    ok(directive_parse_rate("1r/m", &iv) == 0 && iv == 60 * S, "1r/m: a minute apart");
    ok(directive_parse_rate("1000000r/s", &iv) == 0 && iv == 1000, "1000000r/s: 1 us apart");
    const char *bad[] = { "", "r/s", "0r/s", "10", "10r", "10r/h", "10 r/s", "10r/s ", "-1r/s",
                          "+1r/s", "1000001r/s", "99999999999999999999r/s", "10R/S", "1.5r/s" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ok(directive_parse_rate(bad[i], &iv) < 0, "rate '%s' is refused", bad[i]);
}

static void test_gcra(void)
{
    uint64_t tat = 0, wait = 0, t0 = 1000 * S, iv = 60 * S;
    int passed = 0;
    for (int i = 0; i < 5; i++)
        passed += limit_gcra(&tat, t0, iv, 5, &wait);
    is_int(passed, 5, "burst 5: five requests at once pass");
    ok(!limit_gcra(&tat, t0, iv, 5, &wait), "burst 5: the sixth within the minute is refused");
    is_int(wait, iv, "... and waits one interval for a token");
    is_int(limit_retry_after(wait), 60, "Retry-After: 60 for 1r/m");
    ok(!limit_gcra(&tat, t0 + iv - 1, iv, 5, &wait) && wait == 1, "one ns before the token");
    ok(limit_gcra(&tat, t0 + iv, iv, 5, &wait), "one token after one interval");
    ok(!limit_gcra(&tat, t0 + iv, iv, 5, &wait), "and only one");
    uint64_t refused_tat = tat;
    ok(!limit_gcra(&tat, t0 + iv, iv, 5, &wait) && tat == refused_tat,
       "a refused request takes nothing");
    ok(limit_gcra(&tat, t0 + 100 * iv, iv, 5, &wait), "a full bucket after a long pause");
    passed = 1;
    for (int i = 0; i < 10; i++)
        passed += limit_gcra(&tat, t0 + 100 * iv, iv, 5, &wait);
    is_int(passed, 5, "which holds no more than the burst");
    tat = 0;
    ok(limit_gcra(&tat, t0, S / 10, 1, &wait), "burst 1: the first passes");
    ok(!limit_gcra(&tat, t0 + S / 20, S / 10, 1, &wait) && wait == S / 20,
       "burst 1: requests closer than the rate are refused");
    ok(limit_gcra(&tat, t0 + S / 10, S / 10, 1, &wait), "burst 1: at the rate they pass");
    is_int(limit_retry_after(0), 1, "Retry-After at least 1");
    is_int(limit_retry_after(1), 1, "Retry-After rounds up");
    is_int(limit_retry_after(S), 1, "Retry-After 1 s");
    is_int(limit_retry_after(S + 1), 2, "Retry-After rounds up to whole seconds");
}

/* ---- the table ------------------------------------------------------------------------------- */

static void test_slots(struct limit_table *t)
{
    struct in6_addr a = key("127.0.0.2"), b = key("127.0.0.3");
    uint64_t now = 5000 * S;
    uint32_t s[3];
    bool log;
    ok(limit_acquire(t, &a, 0, 2, now, &s[0], &log) == LIMIT_PASS && s[0] != LIMIT_NONE,
       "first slot");
    ok(limit_acquire(t, &a, 0, 2, now, &s[1], &log) == LIMIT_PASS, "second slot");
    ok(limit_acquire(t, &a, 0, 2, now, &s[2], &log) == LIMIT_OVER && s[2] == LIMIT_NONE && log,
       "over the limit: refused, and logged");
    ok(limit_acquire(t, &a, 0, 2, now + S, &s[2], &log) == LIMIT_OVER && !log,
       "refused again within the minute: not logged again");
    ok(limit_acquire(t, &a, 0, 2, now + 60 * S, &s[2], &log) == LIMIT_OVER && log,
       "a minute later: logged again");
    ok(limit_acquire(t, &b, 0, 2, now, &s[2], &log) == LIMIT_PASS, "another client is not limited");
    limit_release(t, &s[2], now);
    ok(s[2] == LIMIT_NONE, "release clears the slot");
    ok(limit_acquire(t, &a, 7, 1, now, &s[2], &log) == LIMIT_PASS, "another rule: its own count");
    limit_release(t, &s[2], now);
    is_int(entries(t), 1, "one client holds slots");
    limit_release(t, &s[0], now);
    ok(limit_acquire(t, &a, 0, 2, now, &s[0], &log) == LIMIT_PASS, "a released slot is free again");
    limit_release(t, &s[0], now);
    limit_release(t, &s[1], now);
    is_int(entries(t), 0, "released and no bucket state: the entries are freed");
    uint32_t none = LIMIT_NONE;
    limit_release(t, &none, now);
    ok(none == LIMIT_NONE, "releasing nothing is harmless");
}

static void test_buckets(struct limit_table *t)
{
    struct in6_addr a = key("2001:db8::1"), b = key("2001:db8::2"), c = key("2001:db8:1::1");
    uint64_t now = 9000 * S, wait;
    bool log;
    int passed = 0;
    for (int i = 0; i < 3; i++)
        passed += limit_take(t, &a, 42, 60 * S, 3, now, &wait, &log) == LIMIT_PASS;
    is_int(passed, 3, "burst 3 passes");
    ok(limit_take(t, &b, 42, 60 * S, 3, now, &wait, &log) == LIMIT_OVER && log && wait == 60 * S,
       "the same /64 shares the bucket: refused, logged, waits a minute");
    ok(limit_take(t, &c, 42, 60 * S, 3, now, &wait, &log) == LIMIT_PASS,
       "another /64 has its own bucket");
    ok(limit_take(t, &a, 43, 60 * S, 3, now, &wait, &log) == LIMIT_PASS,
       "another rule has its own bucket");
    is_int(entries(t), 3, "three buckets with state");
}

static void test_eviction(void)
{
    struct limit_table *t = limit_table_new(1); /* the smallest: 1024 */
    struct limit_stats st;
    limit_table_stats(t, &st);
    is_int(st.capacity, 1024, "the smallest table holds 1024 entries");
    unsigned passed = 0;
    bool log;
    uint64_t wait, now = 100 * S;
    for (unsigned i = 0; i < 5000; i++) {
        struct in6_addr k = nth(i);
        passed += limit_take(t, &k, 1, 60 * S, 1, now, &wait, &log) == LIMIT_PASS;
    }
    limit_table_stats(t, &st);
    is_int(passed, 5000, "5000 new clients pass");
    ok(st.entries <= st.capacity, "entries stay within the table (%llu)",
       (unsigned long long)st.entries);
    ok(st.evictions >= 5000 - st.capacity, "idle entries were evicted (%llu)",
       (unsigned long long)st.evictions);
    is_int(st.fail_open, 0, "idle entries are evicted, never failed open");
    struct in6_addr last = nth(4999);
    ok(limit_take(t, &last, 1, 60 * S, 1, now, &wait, &log) == LIMIT_OVER,
       "the most recent client is still known");
    limit_table_free(t);
}

static void test_fail_open(void)
{
    struct limit_table *t = limit_table_new(1024);
    static uint32_t held[3000];
    unsigned pass = 0, open = 0, over_n = 0;
    bool log;
    uint64_t now = 100 * S;
    for (unsigned i = 0; i < 3000; i++) {
        struct in6_addr k = nth(i);
        enum limit_result r = limit_acquire(t, &k, 0, 1, now, &held[i], &log);
        pass += r == LIMIT_PASS;
        open += r == LIMIT_FAIL_OPEN;
        over_n += r == LIMIT_OVER;
    }
    is_int(over_n, 0, "3000 new clients: none over its limit");
    struct limit_stats st;
    limit_table_stats(t, &st);
    is_int(pass, 1024, "every entry in use");
    is_int(open, 3000 - 1024, "the rest failed open");
    is_int(st.fail_open, open, "counted");
    is_int(st.evictions, 0, "an entry in use is never evicted");
    unsigned still = 0;
    for (unsigned i = 0; i < 3000; i++) {
        uint32_t s;
        struct in6_addr k = nth(i);
        if (held[i] != LIMIT_NONE)
            still += limit_acquire(t, &k, 0, 1, now, &s, &log) == LIMIT_OVER;
    }
    is_int(still, 1024, "every holder is still counted");
    for (unsigned i = 0; i < 3000; i++)
        limit_release(t, &held[i], now);
    is_int(entries(t), 0, "all released: empty again");
    limit_table_free(t);
}

/* ---- concurrency ----------------------------------------------------------------------------- */

#define THREADS 4
#define ROUNDS 20000
#define MAX_HELD 3

static struct limit_table *shared;
static _Atomic int held_now, held_max, over;

static void *hammer(void *arg)
{
    struct in6_addr k = key("198.51.100.1");
    uintptr_t id = (uintptr_t)arg;
    bool log;
    uint64_t wait;
    for (int i = 0; i < ROUNDS; i++) {
        uint32_t s;
        enum limit_result r = limit_acquire(shared, &k, 0, MAX_HELD, S, &s, &log);
        if (r == LIMIT_PASS) {
            int n = atomic_fetch_add(&held_now, 1) + 1;
            int m = atomic_load(&held_max);
            while (n > m && !atomic_compare_exchange_weak(&held_max, &m, n))
                ;
            atomic_fetch_sub(&held_now, 1);
            limit_release(shared, &s, S);
        } else if (r == LIMIT_OVER) {
            atomic_fetch_add(&over, 1);
        }
        struct in6_addr other = nth((unsigned)(id * ROUNDS + (unsigned)i) % 3000);
        limit_take(shared, &other, 2, S, 2, S + (uint64_t)i, &wait, &log);
    }
    return NULL;
}

static void test_threads(void)
{
    shared = limit_table_new(4096);
    pthread_t th[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, hammer, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    ok(atomic_load(&held_max) <= MAX_HELD, "never more than %d slots held at once (saw %d)",
       MAX_HELD, atomic_load(&held_max));
    struct in6_addr k = key("198.51.100.1");
    uint32_t s[MAX_HELD + 1];
    bool log;
    int pass = 0;
    for (int i = 0; i <= MAX_HELD; i++)
        pass += limit_acquire(shared, &k, 0, MAX_HELD, S, &s[i], &log) == LIMIT_PASS;
    is_int(pass, MAX_HELD, "every slot came back");
    for (int i = 0; i <= MAX_HELD; i++)
        limit_release(shared, &s[i], S);
    limit_table_free(shared);
}

int main(void)
{
    test_keys();
    test_rates();
    test_gcra();
    unsigned long before = atomic_load(&allocations);
    struct limit_table *t = limit_table_new(4096);
    ok(t != NULL, "a table");
    ok(atomic_load(&allocations) > before, "allocations are counted (the --wrap link)");
    before = atomic_load(&allocations);
    test_slots(t);
    test_buckets(t);
    is_int(atomic_load(&allocations) - before, 0, "no allocation after limit_table_new");
    limit_table_free(t);
    before = atomic_load(&allocations);
    test_eviction();
    test_fail_open();
    is_int(atomic_load(&allocations) - before, 2 * 3,
           "evicting and failing open allocate nothing (two tables, three blocks each)");
    test_threads();
    return test_done();
}
