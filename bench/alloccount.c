/* alloccount.c — an LD_PRELOAD library that counts heap allocation calls, for bench/bench.py.
 *
 *   cc -O2 -shared -fPIC -o alloccount.so bench/alloccount.c
 *   ALLOCCOUNT_FILE=/tmp/x LD_PRELOAD=./alloccount.so lfhttpd ...
 *
 * Counts the calls of malloc, calloc, realloc, reallocarray, posix_memalign, aligned_alloc,
 * memalign, valloc and pvalloc (the set the callgrind phase counts) and of free, and forwards
 * each to glibc's own implementation (__libc_malloc and friends: no dlsym, so no bootstrap
 * problem). The counters live in a shared mapping of ALLOCCOUNT_FILE (created, 4 KiB), which
 * the harness reads before and after a run: no signal, no thread, nothing in the server changes
 * but one relaxed atomic increment per call. Without ALLOCCOUNT_FILE it counts into a private
 * array nobody reads.
 *
 * File layout: little-endian uint64 at offset 0 = allocation calls, at offset 8 = free calls,
 * at offset 16 = the magic 0x616c6c6f63636e74 ("allocnt"), written once mapped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

static uint64_t local_counts[4];
static uint64_t *counts = local_counts;

__attribute__((constructor)) static void alloccount_init(void)
{
    const char *path = getenv("ALLOCCOUNT_FILE");
    if (!path || !*path)
        return;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (ftruncate(fd, 4096) == 0) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) {
            uint64_t *c = p;
            __atomic_fetch_add(&c[0], __atomic_load_n(&local_counts[0], __ATOMIC_RELAXED),
                               __ATOMIC_RELAXED);
            __atomic_fetch_add(&c[1], __atomic_load_n(&local_counts[1], __ATOMIC_RELAXED),
                               __ATOMIC_RELAXED);
            c[2] = 0x616c6c6f63636e74ull;
            __atomic_store_n(&counts, c, __ATOMIC_RELEASE);
        }
    }
    close(fd);
}

static inline void count_alloc(void)
{
    __atomic_fetch_add(&__atomic_load_n(&counts, __ATOMIC_ACQUIRE)[0], 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
    count_alloc();
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    count_alloc();
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    count_alloc();
    return __libc_realloc(p, n);
}

void *reallocarray(void *p, size_t a, size_t b)
{
    count_alloc();
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}

void free(void *p)
{
    if (p)
        __atomic_fetch_add(&__atomic_load_n(&counts, __ATOMIC_ACQUIRE)[1], 1, __ATOMIC_RELAXED);
    __libc_free(p);
}

void *memalign(size_t al, size_t n)
{
    count_alloc();
    return __libc_memalign(al, n);
}

void *aligned_alloc(size_t al, size_t n)
{
    count_alloc();
    return __libc_memalign(al, n);
}

int posix_memalign(void **out, size_t al, size_t n)
{
    count_alloc();
    if (al < sizeof(void *) || (al & (al - 1)) != 0)
        return EINVAL;
    void *p = __libc_memalign(al, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n)
{
    count_alloc();
    return __libc_valloc(n);
}

void *pvalloc(size_t n)
{
    count_alloc();
    return __libc_pvalloc(n);
}
