/* test_carry.c — unit tests for server/base/carry.c: size classes, one-off buffers, reuse, and
 * borrowing from several threads at once (each buffer has one holder at a time). */
#include "base/carry.h"
#include "test.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 20000

static bool all_bytes(const struct carry *c, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)c->data[i] != v)
            return false;
    return true;
}

/* Each thread borrows buffers of every class, fills them with its own byte, gives the thread a
 * chance to be preempted, and checks that nobody else wrote into them meanwhile. */
struct borrower {
    unsigned id;
    unsigned bad;      /* buffers found changed while held */
    unsigned short_cap;/* buffers smaller than asked */
};

static void *borrow_loop(void *arg)
{
    struct borrower *b = arg;
    static const size_t sizes[] = { 1, 100, 2048, 2049, 9000, 16384, 16385, 40000, CARRY_MAX };
    unsigned char mark = (unsigned char)(0x40 + b->id);
    uint32_t x = 2463534242u + b->id;
    for (unsigned r = 0; r < ROUNDS; r++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        struct carry *held[3];
        size_t len[3];
        for (int k = 0; k < 3; k++) {
            len[k] = sizes[(x >> (4 * k)) % (sizeof(sizes) / sizeof(sizes[0]))];
            held[k] = carry_get(len[k]);
            if (!held[k]) {
                b->bad++;
                continue;
            }
            if (held[k]->cap < len[k] || held[k]->len != 0 || held[k]->off != 0)
                b->short_cap++;
            /* Touch only the start and the end: the whole buffer would make this slow. */
            size_t n = len[k] < 64 ? len[k] : 64;
            memset(held[k]->data, mark, n);
            memset(held[k]->data + len[k] - n, mark, n);
        }
        if ((r & 63) == 0)
            sched_yield();
        for (int k = 0; k < 3; k++) {
            if (!held[k])
                continue;
            size_t n = len[k] < 64 ? len[k] : 64;
            struct carry *c = held[k];
            if (!all_bytes(c, n, mark))
                b->bad++;
            else {
                bool tail_ok = true;
                for (size_t i = len[k] - n; i < len[k]; i++)
                    tail_ok &= (unsigned char)c->data[i] == mark;
                b->bad += !tail_ok;
            }
            carry_put(c);
        }
    }
    return NULL;
}

int main(void)
{
    /* Size classes: the smallest class that holds the request. */
    static const struct { size_t need; uint32_t cap; } classes[] = {
        { 0, 2048 }, { 1, 2048 }, { 2048, 2048 }, { 2049, 16384 }, { 16384, 16384 },
        { 16385, CARRY_MAX }, { CARRY_MAX, CARRY_MAX },
    };
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        struct carry *c = carry_get(classes[i].need);
        ok(c && c->cap == classes[i].cap && c->len == 0 && c->off == 0,
           "need %zu: a buffer of %u bytes, empty (cap %u)", classes[i].need, classes[i].cap,
           c ? c->cap : 0);
        carry_put(c);
    }

    /* Above CARRY_MAX: a one-off buffer of exactly the size asked, freed when put back. */
    struct carry *big = carry_get(CARRY_MAX + 1);
    ok(big && big->cap == CARRY_MAX + 1, "need CARRY_MAX+1: a one-off buffer of that size");
    if (big) {
        memset(big->data, 'b', CARRY_MAX + 1); /* the whole capacity is usable */
        big->len = CARRY_MAX + 1;
    }
    carry_put(big);
    big = carry_get(1u << 20);
    ok(big && big->cap == 1u << 20, "need 1 MiB: a one-off buffer of 1 MiB");
    carry_put(big);
    ok(carry_get((size_t)UINT32_MAX) == NULL, "a size that does not fit the header: NULL");
    ok(carry_get(SIZE_MAX) == NULL, "SIZE_MAX: NULL, no overflow");

    /* A buffer given back is handed out again, reset. */
    struct carry *a = carry_get(100);
    a->len = 50;
    a->off = 20;
    memset(a->data, 'x', 50);
    carry_put(a);
    struct carry *a2 = carry_get(2000);
    ok(a2 == a, "the last buffer given back to a class is the next one lent");
    ok(a2->len == 0 && a2->off == 0, "lent again with len and off reset");
    struct carry *a3 = carry_get(100);
    ok(a3 != a2, "a buffer still held is never lent twice");
    carry_put(a2);
    carry_put(a3);

    /* carry_dup copies. */
    static const char text[] = "GET / HTTP/1.1\r\nHost: a\r\n";
    struct carry *d = carry_dup(text, sizeof(text) - 1);
    ok(d && d->len == sizeof(text) - 1 && d->off == 0 && !memcmp(d->data, text, d->len),
       "carry_dup: the bytes, len set, off 0");
    carry_put(d);
    d = carry_dup("", 0);
    ok(d && d->len == 0, "carry_dup of nothing: an empty buffer");
    carry_put(d);
    carry_put(NULL); /* allowed: a connection without a buffer gives back NULL */

    /* Many held at once: all distinct. */
    enum { N = 300 };
    static struct carry *many[N];
    bool distinct = true;
    for (int i = 0; i < N; i++) {
        many[i] = carry_get(3000);
        for (int j = 0; j < i && distinct; j++)
            distinct = many[i] && many[i] != many[j];
    }
    ok(distinct, "%d buffers held at once are %d different buffers", N, N);
    for (int i = 0; i < N; i++)
        carry_put(many[i]);

    /* Several threads borrowing and giving back at once. */
    pthread_t t[THREADS];
    struct borrower b[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        b[i] = (struct borrower){ .id = i };
        pthread_create(&t[i], NULL, borrow_loop, &b[i]);
    }
    unsigned bad = 0, short_cap = 0;
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        bad += b[i].bad;
        short_cap += b[i].short_cap;
    }
    is_int(bad, 0, "threads: no buffer changed while its holder had it (and none was NULL)");
    is_int(short_cap, 0, "threads: every buffer lent big enough and reset");

    /* Releasing the pool leaves it usable. */
    carry_pool_release();
    struct carry *after = carry_get(10);
    ok(after && after->cap == 2048, "after carry_pool_release, buffers are lent again");
    carry_put(after);
    carry_pool_release();
    return test_done();
}
