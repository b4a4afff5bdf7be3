/* carry.c — size-classed free lists of carry buffers; see carry.h.
 *
 * Carry buffers are needed only when a request or response spans events, which is rare on the
 * steady-state path, so one mutex per class is enough. Each free list keeps at most
 * CARRY_CACHE buffers; the rest go back to malloc. */
#include "base/carry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifndef CARRY_CACHE
#define CARRY_CACHE 256 /* fuzz builds define 0: every released buffer is freed */
#endif

static const uint32_t class_size[] = { 2048, 16384, CARRY_MAX };
#define NCLASS (sizeof(class_size) / sizeof(class_size[0]))

static struct {
    pthread_mutex_t lock;
    struct carry *free;
    unsigned nfree;
} pool[NCLASS] = {
    { PTHREAD_MUTEX_INITIALIZER, NULL, 0 },
    { PTHREAD_MUTEX_INITIALIZER, NULL, 0 },
    { PTHREAD_MUTEX_INITIALIZER, NULL, 0 },
};

struct carry *carry_get(size_t need)
{
    unsigned cls = 0;
    while (cls < NCLASS && class_size[cls] < need)
        cls++;
    if (cls == NCLASS) {
        if (need > UINT32_MAX - sizeof(struct carry))
            return NULL;
        struct carry *big = malloc(sizeof(*big) + need); /* one-off, never pooled */
        if (!big)
            return NULL;
        big->cap = (uint32_t)need;
        big->cls = NCLASS;
        big->next = NULL;
        big->len = 0;
        big->off = 0;
        return big;
    }
    pthread_mutex_lock(&pool[cls].lock);
    struct carry *c = pool[cls].free;
    if (c) {
        pool[cls].free = c->next;
        pool[cls].nfree--;
    }
    pthread_mutex_unlock(&pool[cls].lock);
    if (!c) {
        c = malloc(sizeof(*c) + class_size[cls]);
        if (!c)
            return NULL;
        c->cap = class_size[cls];
        c->cls = (uint8_t)cls;
    }
    c->next = NULL;
    c->len = 0;
    c->off = 0;
    return c;
}

void carry_put(struct carry *c)
{
    if (!c)
        return;
    unsigned cls = c->cls;
    if (cls == NCLASS) {
        free(c);
        return;
    }
    pthread_mutex_lock(&pool[cls].lock);
    if (pool[cls].nfree < CARRY_CACHE) {
        c->next = pool[cls].free;
        pool[cls].free = c;
        pool[cls].nfree++;
        c = NULL;
    }
    pthread_mutex_unlock(&pool[cls].lock);
    free(c);
}

struct carry *carry_dup(const void *data, size_t len)
{
    struct carry *c = carry_get(len);
    if (c) {
        memcpy(c->data, data, len);
        c->len = (uint32_t)len;
    }
    return c;
}

void carry_pool_release(void)
{
    for (unsigned cls = 0; cls < NCLASS; cls++) {
        pthread_mutex_lock(&pool[cls].lock);
        struct carry *c = pool[cls].free;
        pool[cls].free = NULL;
        pool[cls].nfree = 0;
        pthread_mutex_unlock(&pool[cls].lock);
        while (c) {
            struct carry *next = c->next;
            free(c);
            c = next;
        }
    }
}
