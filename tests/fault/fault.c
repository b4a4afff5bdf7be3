/* fault.c — fault injection for lfhttpd's tests: an LD_PRELOAD library that makes chosen calls
 * fail, controlled at run time by the test through a shared control file.
 *
 *   LD_PRELOAD=build/fault/libfault.so LFHTTPD_FAULT=/path/to/ctl lfhttpd ...
 *
 * The control file (struct fault_ctl below; tests/lib/fault.py writes it) is mapped shared: the
 * test arms fault points and picks a mode while the server runs, and reads back how many armed
 * calls were seen and how many were failed. Without LFHTTPD_FAULT, or with nothing armed, every
 * call goes straight to the next definition (libc's, or a sanitizer's interceptor).
 *
 * Fault points, and how a failure looks to the caller:
 *   malloc, calloc, realloc, memalign (posix_memalign, aligned_alloc, memalign, valloc,
 *   pvalloc): NULL / ENOMEM, for sizes >= min_size;
 *   open (open, openat, their 64 and fortified forms, openat2 through syscall()): -1 EMFILE;
 *   accept (accept, accept4): -1 EMFILE, the connection left in the backlog;
 *   pipe (pipe, pipe2): -1 EMFILE;
 *   epoll_ctl (also through syscall()): EPOLL_CTL_ADD only, -1 ENOMEM (the kernel's memory for
 *   a registration; a re-arm, EPOLL_CTL_MOD, allocates nothing and cannot fail that way);
 *   spawn (posix_spawn, posix_spawnp): EAGAIN, nothing started;
 *   pread (pread, pread64), of regular files only: one byte short of what the file holds at
 *   the offset, as when it changed under the reader (the open-file cache's snapshot).
 * Modes: off; always (every armed call fails); random (ppm failures per million armed calls,
 * a xorshift generator per thread); countdown (the Nth armed call from now fails, once; the
 * mode then goes back to off by itself); from (the Nth armed call from now and every one after
 * it fail: the mode turns into always at the Nth).
 *
 * The allocator is found with dlsym(RTLD_NEXT); allocations made while dlsym itself runs come
 * from a small static arena and are never freed.
 *
 * One event besides failures: LFHTTPD_FAULT_RENAME="NAME FROM TO [SKIP]" renames FROM to TO
 * (once) just before an openat() of a file called NAME returns, the first after SKIP such
 * calls (default 0): a deploy's symlink swap landing at that instant (the site rules' reading
 * of `_headers`, say).
 *
 * To find which call a failure hit: LFHTTPD_FAULT_TRACE=1 prints the stack of every failed call
 * on stderr (backtrace_symbols_fd: no allocation; run with addr2line or gdb on the binary). */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum point {
    P_MALLOC, P_CALLOC, P_REALLOC, P_MEMALIGN, P_OPEN, P_ACCEPT, P_PIPE, P_EPOLL_CTL, P_SPAWN,
    P_PREAD, NPOINTS
};
enum mode { M_OFF = 0, M_ALWAYS, M_RANDOM, M_COUNTDOWN, M_FROM };

#define FAULT_MAGIC 0x4946464cu /* "LFFI" */
#define FAULT_VERSION 1

/* The shared control block: little-endian, no padding (tests/lib/fault.py: "<6IQ16Q16Q"). */
struct fault_ctl {
    uint32_t magic;
    uint32_t version;
    uint32_t armed;          /* bit (1 << point) per armed point */
    uint32_t mode;           /* enum mode */
    uint32_t ppm;            /* M_RANDOM: failures per million armed calls */
    uint32_t countdown;      /* M_COUNTDOWN, M_FROM: armed calls until (and including) the
                                (first) failing one */
    uint64_t min_size;       /* allocation points: smaller requests never fail */
    uint64_t calls[16];      /* armed calls seen, per point (while the mode is not off) */
    uint64_t failed[16];     /* calls made to fail, per point */
};

static struct fault_ctl *ctl;
static bool trace;

/* ---- the next definitions -------------------------------------------------------------------- */

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_open_2)(const char *, int);
static int (*real_openat_2)(int, const char *, int);
static long (*real_syscall)(long, ...);
static int (*real_accept)(int, struct sockaddr *, socklen_t *);
static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);
static int (*real_pipe)(int[2]);
static int (*real_pipe2)(int[2], int);
static int (*real_epoll_ctl)(int, int, int, struct epoll_event *);
static int (*real_posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                               const posix_spawnattr_t *, char *const[], char *const[]);
static int (*real_posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                                const posix_spawnattr_t *, char *const[], char *const[]);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pread64)(int, void *, size_t, off_t);

#define TLS __attribute__((tls_model("initial-exec"))) __thread
static TLS int resolving; /* inside dlsym: serve allocations from the arena */
static TLS uint64_t rng;

/* ---- the arena for allocations made while resolving ----------------------------------------- */

static _Alignas(16) char arena[256 * 1024];
static size_t arena_used; /* only the thread resolving (the first to allocate) touches it */

static bool in_arena(const void *p)
{
    return (const char *)p >= arena && (const char *)p < arena + sizeof(arena);
}

static void *arena_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t start = (arena_used + 16 + align - 1) & ~(align - 1); /* room for the size before */
    if (start + n > sizeof(arena))
        abort();
    memcpy(arena + start - 16, &n, sizeof(n));
    arena_used = start + n;
    return arena + start;
}

static size_t arena_size(const void *p)
{
    size_t n;
    memcpy(&n, (const char *)p - 16, sizeof(n));
    return n;
}

#define RESOLVE(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)

static void resolve(void)
{
    if (real_malloc && real_syscall)
        return;
    resolving = 1;
    RESOLVE(malloc);
    RESOLVE(calloc);
    RESOLVE(realloc);
    RESOLVE(free);
    RESOLVE(posix_memalign);
    RESOLVE(aligned_alloc);
    RESOLVE(memalign);
    RESOLVE(valloc);
    RESOLVE(pvalloc);
    RESOLVE(open);
    RESOLVE(openat);
    real_open_2 = (__typeof__(real_open_2))dlsym(RTLD_NEXT, "__open_2");
    real_openat_2 = (__typeof__(real_openat_2))dlsym(RTLD_NEXT, "__openat_2");
    RESOLVE(accept);
    RESOLVE(accept4);
    RESOLVE(pipe);
    RESOLVE(pipe2);
    RESOLVE(epoll_ctl);
    RESOLVE(posix_spawn);
    RESOLVE(posix_spawnp);
    RESOLVE(pread);
    RESOLVE(pread64);
    RESOLVE(syscall);
    resolving = 0;
}

/* LFHTTPD_FAULT_RENAME: the file name that triggers it, and the rename's two paths. */
static char rename_on[256], rename_from[4096], rename_to[4096];
static int rename_seen, rename_skip;

static void rename_init(void)
{
    const char *r = getenv("LFHTTPD_FAULT_RENAME");
    int n = r ? sscanf(r, "%255s %4095s %4095s %d", rename_on, rename_from, rename_to,
                       &rename_skip) : 0;
    if (n < 3)
        rename_on[0] = '\0';
}

/* The deploy that lands while `path` is being opened (LFHTTPD_FAULT_RENAME). */
static void rename_if(const char *path)
{
    if (!rename_on[0] || strcmp(path, rename_on) != 0 ||
        __atomic_fetch_add(&rename_seen, 1, __ATOMIC_ACQ_REL) != rename_skip)
        return;
    rename(rename_from, rename_to);
}

/* Map the control file named by LFHTTPD_FAULT (once, early: before any thread exists). */
__attribute__((constructor)) static void fault_init(void)
{
    resolve();
    rename_init();
    const char *t = getenv("LFHTTPD_FAULT_TRACE");
    if (t && *t && *t != '0') {
        void *frames[2];
        backtrace(frames, 2); /* loads what it needs now, not inside a failing malloc */
        trace = true;
    }
    const char *path = getenv("LFHTTPD_FAULT");
    if (!path || !*path)
        return;
    int fd = (int)real_syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return;
    void *m = mmap(NULL, sizeof(struct fault_ctl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    struct fault_ctl *c = m;
    if (c->magic == FAULT_MAGIC && c->version == FAULT_VERSION)
        __atomic_store_n(&ctl, c, __ATOMIC_RELEASE);
    else
        munmap(m, sizeof(*c));
}

/* ---- the decision ------------------------------------------------------------------------------ */

static uint32_t next_random(void)
{
    if (!rng)
        rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)real_syscall(SYS_gettid) * 0xbf58476d1ce4e5b9ull;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

/* Whether point p is armed and a mode is on: the test a caller may make before doing work
 * of its own to decide whether a call is one the point covers. */
static bool point_on(enum point p)
{
    struct fault_ctl *c = __atomic_load_n(&ctl, __ATOMIC_ACQUIRE);
    return c && (__atomic_load_n(&c->armed, __ATOMIC_RELAXED) & (1u << p)) &&
           __atomic_load_n(&c->mode, __ATOMIC_RELAXED) != M_OFF;
}

static bool should_fail(enum point p, size_t size)
{
    if (!point_on(p))
        return false;
    struct fault_ctl *c = __atomic_load_n(&ctl, __ATOMIC_ACQUIRE);
    uint32_t mode = __atomic_load_n(&c->mode, __ATOMIC_RELAXED);
    if (mode == M_OFF)
        return false; /* switched off in between */
    if (p <= P_MEMALIGN && size < __atomic_load_n(&c->min_size, __ATOMIC_RELAXED))
        return false;
    __atomic_fetch_add(&c->calls[p], 1, __ATOMIC_RELAXED);
    bool fail = false;
    if (mode == M_ALWAYS) {
        fail = true;
    } else if (mode == M_RANDOM) {
        fail = next_random() % 1000000u < __atomic_load_n(&c->ppm, __ATOMIC_RELAXED);
    } else if (mode == M_COUNTDOWN || mode == M_FROM) {
        uint32_t v = __atomic_load_n(&c->countdown, __ATOMIC_RELAXED);
        while (v > 0 && !__atomic_compare_exchange_n(&c->countdown, &v, v - 1, false,
                                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
        if (v == 1) {
            fail = true;
            __atomic_store_n(&c->mode, mode == M_FROM ? M_ALWAYS : M_OFF, __ATOMIC_RELAXED);
        } else if (v == 0 && mode == M_FROM) {
            fail = true; /* past the Nth while another thread switches to always */
        }
    }
    if (fail) {
        __atomic_fetch_add(&c->failed[p], 1, __ATOMIC_RELAXED);
        if (trace) {
            static const char *const names[NPOINTS] = { "malloc", "calloc", "realloc",
                                                        "memalign", "open", "accept", "pipe",
                                                        "epoll_ctl", "spawn" };
            void *frames[32];
            int n = backtrace(frames, 32);
            char line[64];
            int len = snprintf(line, sizeof(line), "fault: %s failed here:\n", names[p]);
            ssize_t w = write(2, line, (size_t)len);
            (void)w;
            backtrace_symbols_fd(frames, n, 2);
        }
    }
    return fail;
}

/* ---- allocation -------------------------------------------------------------------------------- */

void *malloc(size_t n)
{
    if (!real_malloc) {
        if (resolving)
            return arena_alloc(n, 16);
        resolve();
    }
    if (should_fail(P_MALLOC, n)) {
        errno = ENOMEM;
        return NULL;
    }
    return real_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (!real_calloc) {
        if (resolving) {
            if (size && n > SIZE_MAX / size)
                return NULL;
            return arena_alloc(n * size, 16); /* the arena is zeroed and never reused */
        }
        resolve();
    }
    if (should_fail(P_CALLOC, size && n > SIZE_MAX / size ? SIZE_MAX : n * size)) {
        errno = ENOMEM;
        return NULL;
    }
    return real_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (p && in_arena(p)) {
        void *q = malloc(n);
        if (q) {
            size_t old = arena_size(p);
            memcpy(q, p, old < n ? old : n);
        }
        return q;
    }
    if (!real_realloc) {
        if (resolving)
            return arena_alloc(n, 16);
        resolve();
    }
    if (should_fail(P_REALLOC, n)) {
        errno = ENOMEM;
        return NULL;
    }
    return real_realloc(p, n);
}

void free(void *p)
{
    if (!p || in_arena(p))
        return;
    if (!real_free)
        resolve();
    real_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (!real_posix_memalign) {
        if (resolving) {
            *out = arena_alloc(n, align);
            return 0;
        }
        resolve();
    }
    if (should_fail(P_MEMALIGN, n))
        return ENOMEM;
    return real_posix_memalign(out, align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    if (!real_aligned_alloc) {
        if (resolving)
            return arena_alloc(n, align);
        resolve();
    }
    if (should_fail(P_MEMALIGN, n)) {
        errno = ENOMEM;
        return NULL;
    }
    return real_aligned_alloc(align, n);
}

void *memalign(size_t align, size_t n)
{
    if (!real_memalign) {
        if (resolving)
            return arena_alloc(n, align);
        resolve();
    }
    if (should_fail(P_MEMALIGN, n)) {
        errno = ENOMEM;
        return NULL;
    }
    return real_memalign(align, n);
}

void *valloc(size_t n)
{
    if (!real_valloc)
        resolve();
    if (should_fail(P_MEMALIGN, n)) {
        errno = ENOMEM;
        return NULL;
    }
    return real_valloc(n);
}

void *pvalloc(size_t n)
{
    if (!real_pvalloc)
        resolve();
    if (should_fail(P_MEMALIGN, n)) {
        errno = ENOMEM;
        return NULL;
    }
    return real_pvalloc(n);
}

/* ---- descriptors --------------------------------------------------------------------------------- */

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    if (!real_syscall)
        resolve();
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    if (should_fail(P_OPEN, 0)) {
        errno = EMFILE;
        return -1;
    }
    return real_open(path, flags, m);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int dir, const char *path, int flags, ...)
{
    if (!real_syscall)
        resolve();
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    if (should_fail(P_OPEN, 0)) {
        errno = EMFILE;
        return -1;
    }
    int fd = real_openat(dir, path, flags, m);
    rename_if(path);
    return fd;
}

int openat64(int dir, const char *path, int flags, ...) __attribute__((alias("openat")));

int __open_2(const char *path, int flags);
int __open_2(const char *path, int flags)
{
    if (!real_syscall)
        resolve();
    if (should_fail(P_OPEN, 0)) {
        errno = EMFILE;
        return -1;
    }
    return real_open_2 ? real_open_2(path, flags) : real_open(path, flags);
}

int __openat_2(int dir, const char *path, int flags);
int __openat_2(int dir, const char *path, int flags)
{
    if (!real_syscall)
        resolve();
    if (should_fail(P_OPEN, 0)) {
        errno = EMFILE;
        return -1;
    }
    int fd = real_openat_2 ? real_openat_2(dir, path, flags) : real_openat(dir, path, flags);
    rename_if(path);
    return fd;
}

long syscall(long n, ...)
{
    va_list ap;
    va_start(ap, n);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long); /* the kernel takes six: read them all, like libc does */
    va_end(ap);
    if (!real_syscall)
        resolve();
    if ((n == SYS_openat2 && should_fail(P_OPEN, 0)) ||
        (n == SYS_epoll_ctl && a[1] == EPOLL_CTL_ADD && should_fail(P_EPOLL_CTL, 0))) {
        errno = n == SYS_openat2 ? EMFILE : ENOMEM;
        return -1;
    }
    return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    if (!real_syscall)
        resolve();
    if (should_fail(P_ACCEPT, 0)) {
        errno = EMFILE;
        return -1;
    }
    return real_accept(fd, addr, len);
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    if (!real_syscall)
        resolve();
    if (should_fail(P_ACCEPT, 0)) {
        errno = EMFILE;
        return -1;
    }
    return real_accept4(fd, addr, len, flags);
}

int pipe(int fds[2])
{
    if (!real_syscall)
        resolve();
    if (should_fail(P_PIPE, 0)) {
        errno = EMFILE;
        return -1;
    }
    return real_pipe(fds);
}

int pipe2(int fds[2], int flags)
{
    if (!real_syscall)
        resolve();
    if (should_fail(P_PIPE, 0)) {
        errno = EMFILE;
        return -1;
    }
    return real_pipe2(fds, flags);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    if (!real_syscall)
        resolve();
    if (op == EPOLL_CTL_ADD && should_fail(P_EPOLL_CTL, 0)) {
        errno = ENOMEM;
        return -1;
    }
    return real_epoll_ctl(epfd, op, fd, ev);
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    if (!real_syscall)
        resolve();
    if (should_fail(P_SPAWN, 0))
        return EAGAIN;
    return real_posix_spawn(pid, path, fa, attr, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    if (!real_syscall)
        resolve();
    if (should_fail(P_SPAWN, 0))
        return EAGAIN;
    return real_posix_spawnp(pid, file, fa, attr, argv, envp);
}

/* A short read: what the caller asked for, less one byte, where the file held it all. */
static ssize_t short_pread(ssize_t (*real)(int, void *, size_t, off_t), int fd, void *buf,
                           size_t n, off_t off)
{
    struct stat st;
    /* fstat only while the point is on: otherwise every read the server makes pays for it */
    if (n > 0 && point_on(P_PREAD) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_size > off && should_fail(P_PREAD, 0)) {
        ssize_t got = real(fd, buf, n, off);
        return got > 0 ? got - 1 : got;
    }
    return real(fd, buf, n, off);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    if (!real_syscall)
        resolve();
    return short_pread(real_pread, fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
    if (!real_syscall)
        resolve();
    return short_pread(real_pread64, fd, buf, n, off);
}
