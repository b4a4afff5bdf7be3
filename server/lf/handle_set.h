/* handle_set.h — the Handle Set participant: one epoll instance shared by all pool threads.
 *
 * The textbook set (hs_init): every handle is registered with EPOLLONESHOT. When epoll reports
 * an event for a handle, the kernel disables it until hs_rearm() is called, so no other thread
 * can be handed the same handle while one is processing it. Level-triggered: re-arming a
 * handle that already has data reports it again at once, so nothing is lost between the last
 * read and the re-arm.
 *
 * The set's operations go through `ops`, chosen once when the set is created: the textbook's
 * (handle_set.c), or leader-followers-edge's (handle_set_edge.h: edge-triggered, the one-owner
 * rule kept by each handle's ownership word instead of the kernel). Handlers call the same
 * functions under both; what the edge set asks of them in addition is hs_more() (below and
 * event_handler.h). */
#ifndef LF_HANDLE_SET_H
#define LF_HANDLE_SET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "lf/event_handler.h"

struct handle_set;

/* What a kind of set does (all return 0 or -errno, rearm also HS_KEPT). */
struct hs_ops {
    int (*add)(struct handle_set *hs, struct event_handler *eh, uint32_t events);
    int (*rearm)(struct handle_set *hs, struct event_handler *eh, uint32_t events);
    int (*del)(struct handle_set *hs, struct event_handler *eh);
    void (*more)(struct event_handler *eh, uint32_t events); /* NULL: nothing to record */
    void (*forget)(struct handle_set *hs, struct event_handler *eh); /* NULL: nothing to do */
    bool edge;                       /* the edge set (handle_set_edge.h) */
};

struct handle_set {
    int epfd;
    const struct hs_ops *ops;
};

/* hs_rearm of the edge set off the pool (handle_set_edge.h): events are pending, the caller
 * still owns the handle and must hand it to a pool thread (which calls hs_rearm again). Never
 * returned by the textbook set, nor on a pool thread. */
#define HS_KEPT 1

/* Create the textbook (EPOLLONESHOT) set. 0 or -errno; hs_close is safe either way. */
int hs_init(struct handle_set *hs);
void hs_close(struct handle_set *hs);

/* Register eh->fd for `events` (EPOLLIN, EPOLLOUT, EPOLLRDHUP: exactly what the handler waits
 * for; EPOLLHUP and EPOLLERR always come). A half-closed peer keeps EPOLLRDHUP ready, so a
 * handle that asks for it while it only waits to write would be reported again at every
 * re-arm. */
static inline int hs_add(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
    return hs->ops->add(hs, eh, events);
}

/* Release a handle detected by an event: re-activate it with a (possibly new) interest. The
 * handler's last touch of `eh`: another thread may have it from here on. */
static inline int hs_rearm(struct handle_set *hs, struct event_handler *eh, uint32_t events)
{
    return hs->ops->rearm(hs, eh, events);
}

static inline int hs_del(struct handle_set *hs, struct event_handler *eh)
{
    return hs->ops->del(hs, eh);
}

/* The owner stops before `eh` is drained of `events` (a read that filled its buffer, a bounded
 * accept loop, a send budget spent while the socket still has room): run it again when it is
 * released. Required by the edge set, where no new edge would come for what is left; nothing
 * under EPOLLONESHOT, whose level-triggered re-arm reports it anyway. Call it before the
 * release. */
static inline void hs_more(const struct handle_set *hs, struct event_handler *eh,
                           uint32_t events)
{
    if (hs->ops->more)
        hs->ops->more(eh, events);
}

/* The owner is about to close eh->fd for good. Nothing under EPOLLONESHOT; the edge set takes
 * the handle out first (handle_set_edge.h). */
static inline void hs_forget(struct handle_set *hs, struct event_handler *eh)
{
    if (hs->ops->forget)
        hs->ops->forget(hs, eh);
}

/* The edge set: its handlers owe hs_more(), and a few of its users (the connection's private
 * set of watched handles) register differently (handle_set_edge.h). */
static inline bool hs_edge(const struct handle_set *hs)
{
    return hs->ops->edge;
}

/* Wait for up to `max` events; returns their count, 0 on EINTR, or -errno. */
int hs_wait(struct handle_set *hs, struct epoll_event *evs, int max, int timeout_ms);

#endif
