/* handle_set.c — epoll wrapper; see handle_set.h. */
#include "lf/handle_set.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ThreadSanitizer and the EPOLLONESHOT hand-off.
 *
 * Thread A re-arms a handle (EPOLL_CTL_MOD) and never touches it again; thread B, which gets
 * the next event from epoll_wait, may then close it. The kernel orders the two (the event
 * cannot be delivered before the re-arm took effect), but TSan's epoll_ctl interceptor records
 * an access to the fd and models a release only for EPOLL_CTL_ADD, so it reports the close as
 * racing with the re-arm. Under TSan the re-arm therefore publishes a release on the handle
 * set first and enters the kernel directly, and hs_wait() acquires it: exactly the
 * happens-before edge the kernel provides, and no more. */
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define HS_TSAN 1
#else
#define HS_TSAN 0
#endif

int hs_init(struct handle_set *hs)
{
    hs->epfd = epoll_create1(EPOLL_CLOEXEC);
    hs->edge = false; /* EPOLLONESHOT unless the caller says otherwise */
    return hs->epfd < 0 ? -errno : 0;
}

void hs_close(struct handle_set *hs)
{
    if (hs->epfd >= 0)
        close(hs->epfd);
    hs->epfd = -1;
}

static int hs_ctl(struct handle_set *hs, int op, struct event_handler *eh, uint32_t events)
{
    struct epoll_event ev = { .events = events | EPOLLONESHOT, .data.ptr = eh };
    return epoll_ctl(hs->epfd, op, eh->fd, &ev) < 0 ? -errno : 0;
}

/* ---- edge mode: the ownership word -------------------------------------------------------- */

/* event_handler.own: "more" (event bits recorded for the owner, epoll's own values), the
 * interest registered with the kernel (IN, OUT, RDHUP shifted up), whether the handle is in the
 * set, and whether a thread owns it. */
#define OWN_MORE (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLRDHUP)
#define OWN_INTEREST_SHIFT 16
#define OWN_WANTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP)
#define OWN_INTEREST ((uint32_t)OWN_WANTS << OWN_INTEREST_SHIFT)
#define OWN_REG (1u << 30)
#define OWN_BUSY (1u << 31)
_Static_assert((OWN_MORE & OWN_INTEREST) == 0 && (OWN_INTEREST & (OWN_REG | OWN_BUSY)) == 0,
               "the fields of the ownership word do not overlap");

static inline uint32_t interest_of(uint32_t events)
{
    return (events & OWN_WANTS) << OWN_INTEREST_SHIFT;
}

static _Thread_local struct hs_again *tl_again;

void hs_again_attach(struct hs_again *a)
{
    tl_again = a;
}

static bool again_push(struct hs_again *a, struct event_handler *eh, uint32_t events)
{
    if (a->n == a->cap) {
        unsigned cap = a->cap ? a->cap * 2 : 64;
        struct hs_pending *v = malloc(cap * sizeof(*v));
        if (!v)
            return false;
        for (unsigned i = 0; i < a->n; i++)
            v[i] = a->v[(a->head + i) % a->cap];
        free(a->v);
        a->v = v;
        a->head = 0;
        a->cap = cap;
    }
    a->v[(a->head + a->n++) % a->cap] = (struct hs_pending){ eh, events };
    return true;
}

bool hs_again_pop(struct hs_again *a, struct hs_pending *out)
{
    if (a->n == 0)
        return false;
    *out = a->v[a->head];
    a->head = (a->head + 1) % a->cap;
    a->n--;
    return true;
}

void hs_again_free(struct hs_again *a)
{
    free(a->v);
    *a = (struct hs_again){ 0 };
}

bool hs_take(struct event_handler *eh, uint32_t events)
{
    uint32_t old = atomic_load_explicit(&eh->own, memory_order_relaxed);
    for (;;) {
        uint32_t next = old & OWN_BUSY ? old | (events & OWN_MORE) : old | OWN_BUSY;
        if (next == old)
            return false; /* owned, and these events are recorded already */
        if (atomic_compare_exchange_weak_explicit(&eh->own, &old, next, memory_order_acq_rel,
                                                  memory_order_relaxed))
            return !(old & OWN_BUSY);
    }
}

/* Register `fd` for `eh`, edge-triggered. A handle nobody owns yet (a new one) is live from the
 * ADD on; an owner adding its handle back releases it as hs_rearm does. */
static int edge_add(struct handle_set *hs, struct event_handler *eh, int fd, uint32_t events)
{
    uint32_t old = atomic_load_explicit(&eh->own, memory_order_relaxed);
    if (!(old & OWN_BUSY)) {
        /* Published before the ADD: the thread that takes the first event acquires it. */
        atomic_store_explicit(&eh->own, OWN_REG | interest_of(events), memory_order_release);
    }
    struct epoll_event ev = { .events = events | EPOLLET, .data.ptr = eh };
    if (epoll_ctl(hs->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int err = errno;
        if (!(old & OWN_BUSY))
            atomic_store_explicit(&eh->own, 0, memory_order_relaxed);
        return -err;
    }
    if (!(old & OWN_BUSY))
        return 0;
    atomic_fetch_and_explicit(&eh->own, ~OWN_INTEREST, memory_order_relaxed);
    atomic_fetch_or_explicit(&eh->own, OWN_REG | interest_of(events), memory_order_relaxed);
    return hs_rearm_fd(hs, eh, fd, events);
}

/* The release: see handle_set.h. */
static int edge_release(struct handle_set *hs, struct event_handler *eh, int fd,
                        uint32_t events)
{
    uint32_t old = atomic_load_explicit(&eh->own, memory_order_relaxed);
    if (!(old & OWN_REG))
        return -ENOENT; /* not in the set (any more): the caller still owns it */
    uint32_t want = interest_of(events);
    if ((old & OWN_INTEREST) != want) {
        struct epoll_event ev = { .events = events | EPOLLET, .data.ptr = eh };
        if (epoll_ctl(hs->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
            return -errno;
    }
    for (;;) {
        uint32_t more = old & OWN_MORE & (events | EPOLLERR | EPOLLHUP);
        uint32_t keep = (old & ~(OWN_MORE | OWN_INTEREST)) | want;
        struct hs_again *a = tl_again;
        uint32_t next = more ? keep | (a ? 0 : (old & OWN_MORE)) : keep & ~OWN_BUSY;
        if (!atomic_compare_exchange_weak_explicit(&eh->own, &old, next, memory_order_acq_rel,
                                                   memory_order_relaxed))
            continue;
        if (!more)
            return 0;
        if (!a)
            return HS_KEPT; /* "more" stays recorded for the pool thread it goes to */
        if (!again_push(a, eh, more))
            eh->ops->handle_event(eh, more, a->w); /* no memory for the list: run it now */
        return 0;
    }
}

/* ---- the operations ------------------------------------------------------------------------- */

int hs_add(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
    if (hs->edge)
        return edge_add(hs, eh, eh->fd, events);
    return hs_ctl(hs, EPOLL_CTL_ADD, eh, events);
}

int hs_add_fd(struct handle_set *hs, struct event_handler *eh, int fd, uint32_t events)
{
    return edge_add(hs, eh, fd, events);
}

int hs_rearm(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
    if (hs->edge)
        return edge_release(hs, eh, eh->fd, events);
#if HS_TSAN
    struct epoll_event ev = { .events = events | EPOLLONESHOT, .data.ptr = eh };
    int fd = eh->fd; /* the last touch of *eh: after the release another thread may free it */
    int epfd = hs->epfd;
    __tsan_release(hs);
    return syscall(SYS_epoll_ctl, epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
#else
    return hs_ctl(hs, EPOLL_CTL_MOD, eh, events);
#endif
}

int hs_rearm_fd(struct handle_set *hs, struct event_handler *eh, int fd, uint32_t events)
{
    return edge_release(hs, eh, fd, events);
}

int hs_del_fd(struct handle_set *hs, struct event_handler *eh, int fd)
{
    int rc = epoll_ctl(hs->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 ? -errno : 0;
    if (hs->edge)
        atomic_fetch_and_explicit(&eh->own, ~(OWN_REG | OWN_INTEREST), memory_order_relaxed);
    return rc;
}

int hs_del(struct handle_set *hs, struct event_handler *eh)
{
    return hs_del_fd(hs, eh, eh->fd);
}

void hs_forget(struct handle_set *hs, struct event_handler *eh)
{
    if (hs->edge && (atomic_load_explicit(&eh->own, memory_order_relaxed) & OWN_REG))
        hs_del(hs, eh);
}

int hs_wait(struct handle_set *hs, struct epoll_event *evs, int max, int timeout_ms)
{
    int n = epoll_wait(hs->epfd, evs, max, timeout_ms);
#if HS_TSAN
    __tsan_acquire(hs);
#endif
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    return n;
}
