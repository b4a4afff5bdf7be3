/* handle_set.c — the textbook handle set (EPOLLONESHOT); see handle_set.h. The edge set is
 * handle_set_edge.c. */
#include "lf/handle_set.h"

#include <errno.h>
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

static int oneshot_ctl(struct handle_set *hs, int op, struct event_handler *eh, uint32_t events)
{
    struct epoll_event ev = { .events = events | EPOLLONESHOT, .data.ptr = eh };
    return epoll_ctl(hs->epfd, op, eh->fd, &ev) < 0 ? -errno : 0;
}

static int oneshot_add(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
    return oneshot_ctl(hs, EPOLL_CTL_ADD, eh, events);
}

static int oneshot_rearm(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
#if HS_TSAN
    struct epoll_event ev = { .events = events | EPOLLONESHOT, .data.ptr = eh };
    int fd = eh->fd; /* the last touch of *eh: after the release another thread may free it */
    int epfd = hs->epfd;
    __tsan_release(hs);
    return syscall(SYS_epoll_ctl, epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
#else
    return oneshot_ctl(hs, EPOLL_CTL_MOD, eh, events);
#endif
}

static int oneshot_del(struct handle_set *hs, struct event_handler *eh)
{
    return epoll_ctl(hs->epfd, EPOLL_CTL_DEL, eh->fd, NULL) < 0 ? -errno : 0;
}

/* The kernel keeps the one-owner rule and level-triggering reports what is left: nothing to
 * record (more) and nothing to take out before a close (forget). */
static const struct hs_ops oneshot_ops = {
    .add = oneshot_add,
    .rearm = oneshot_rearm,
    .del = oneshot_del,
};

int hs_init(struct handle_set *hs)
{
    hs->ops = &oneshot_ops;
    hs->epfd = epoll_create1(EPOLL_CLOEXEC);
    return hs->epfd < 0 ? -errno : 0;
}

void hs_close(struct handle_set *hs)
{
    if (hs->epfd >= 0)
        close(hs->epfd);
    hs->epfd = -1;
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
