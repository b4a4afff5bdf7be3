/* event_handler.h — the Event Handler participant of Leader/Followers.
 *
 * Every handle in the handle set (listening socket, client connection, timer, signal, CGI
 * pipe) is represented by a struct whose FIRST member is a struct event_handler; epoll's
 * data.ptr points at it. When the leader detects an event it promotes a follower and then calls
 * ops->handle_event on its own thread. Because every handle is registered EPOLLONESHOT, the
 * handle stays deactivated until the handler re-arms it (hs_rearm) or closes it, so exactly one
 * thread at a time runs a given handler: handlers need no locks for their own state.
 *
 * Under leader-followers-edge the kernel keeps no such guarantee (handles are edge-triggered,
 * without EPOLLONESHOT): `own`, the handle's ownership word, keeps it instead (handle_set.h).
 * Handlers see no difference: hs_rearm is still their release, and they still must not touch
 * `eh` after it. */
#ifndef LF_EVENT_HANDLER_H
#define LF_EVENT_HANDLER_H

#include <stdint.h>

struct event_handler;
struct worker;

struct event_handler_ops {
    /* Process `events` (EPOLLIN/EPOLLOUT/EPOLLHUP/EPOLLERR bits) on processing thread `w`.
     * Must never block on a peer. Before returning, the handler either re-arms its handle or
     * releases it; it must not touch `eh` after releasing it. */
    void (*handle_event)(struct event_handler *eh, uint32_t events, struct worker *w);
};

struct event_handler {
    int fd;
    _Atomic uint32_t own; /* leader-followers-edge only (handle_set.c's OWN_*): in the padding
                           * after fd, so that no handle grows; 0 under the other strategies */
    const struct event_handler_ops *ops;
};
_Static_assert(sizeof(struct event_handler) == 8 + sizeof(void *),
               "the ownership word lives in the padding after fd");

#endif
