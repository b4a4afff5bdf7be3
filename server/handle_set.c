/* handle_set.c — epoll wrapper; see handle_set.h. */
#include "handle_set.h"

#include <errno.h>
#include <unistd.h>

int hs_init(struct handle_set *hs)
{
    hs->epfd = epoll_create1(EPOLL_CLOEXEC);
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
    struct epoll_event ev = { .events = events | EPOLLONESHOT | EPOLLRDHUP, .data.ptr = eh };
    return epoll_ctl(hs->epfd, op, eh->fd, &ev) < 0 ? -errno : 0;
}

int hs_add(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
    return hs_ctl(hs, EPOLL_CTL_ADD, eh, events);
}

int hs_rearm(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
    return hs_ctl(hs, EPOLL_CTL_MOD, eh, events);
}

int hs_del(struct handle_set *hs, struct event_handler *eh)
{
    return epoll_ctl(hs->epfd, EPOLL_CTL_DEL, eh->fd, NULL) < 0 ? -errno : 0;
}

int hs_wait(struct handle_set *hs, struct epoll_event *evs, int max, int timeout_ms)
{
    int n = epoll_wait(hs->epfd, evs, max, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    return n;
}
