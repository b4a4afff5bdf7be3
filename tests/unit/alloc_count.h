/* alloc_count.h — counting every allocation a unit test's library makes.
 *
 * Included by one test file, which the Makefile links with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc: each call goes through
 * these wrappers, which count it in `allocations` and hand it on. */
#ifndef LFHTTPD_ALLOC_COUNT_H
#define LFHTTPD_ALLOC_COUNT_H

#include <stdatomic.h>
#include <stddef.h>

static _Atomic unsigned long allocations;

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);

void *__wrap_malloc(size_t n)
{
    atomic_fetch_add(&allocations, 1);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t a, size_t b)
{
    atomic_fetch_add(&allocations, 1);
    return __real_calloc(a, b);
}

void *__wrap_realloc(void *p, size_t n)
{
    atomic_fetch_add(&allocations, 1);
    return __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
    atomic_fetch_add(&allocations, 1);
    return __real_aligned_alloc(a, n);
}

#endif
