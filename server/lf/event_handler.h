/* event_handler.h — the Event Handler participant of Leader/Followers.
 *
 * Every handle in the handle set (listening socket, client connection, a connection's private
 * set of watched pipes, timer, signal) is represented by a struct whose FIRST member is a
 * struct event_handler; epoll's data.ptr points at it. When the leader detects an event it
 * promotes a follower and then calls ops->handle_event on its own thread. The handle set gives
 * a detected handle to one thread at a time and keeps it from the others until the handler
 * releases it (hs_rearm) or closes it, so a handler needs no locks for its own state.
 *
 * What a handler owes, under every strategy:
 *   - never block on a peer;
 *   - before returning, release its handle (hs_rearm) or close it, and not touch `eh` after
 *     the release: another thread may have it from then on.
 * And under leader-followers-edge (handle_set_edge.h), one duty more: its handles are
 * edge-triggered, and an edge comes only when something new arrives. A handler that returns
 * before its handle is drained of what it waits for (a read that filled its buffer, a bounded
 * accept loop, a send budget spent while the socket still has room) must call hs_more() for
 * what is left before it releases the handle, or it is never run for it again. Under
 * EPOLLONESHOT hs_more() costs nothing, so a handler calls it at each early stop whatever the
 * strategy.
 *
 * In this server the event handlers are the acceptor and the connection (server/conn/), the
 * server's own handles and the reload watcher (server/daemon/) and the timer heap (timer.c):
 * they keep that duty. The HTTP handlers (handlers/) are no event handlers: they never see a
 * handle, and the connection does it for the work it runs for them (the sink, server/conn/). */
#ifndef LF_EVENT_HANDLER_H
#define LF_EVENT_HANDLER_H

#include <stdint.h>

struct event_handler;
struct worker;

struct event_handler_ops {
    /* Process `events` (EPOLLIN/EPOLLOUT/EPOLLHUP/EPOLLERR bits) on processing thread `w`. */
    void (*handle_event)(struct event_handler *eh, uint32_t events, struct worker *w);
};

struct event_handler {
    int fd;
    /* The handle set's word for this handle, never the handler's: the textbook set needs none
     * (the kernel keeps EPOLLONESHOT's state), the edge set keeps the ownership word here
     * (handle_set_edge.c). In the padding after fd, so that no handle grows. */
    _Atomic uint32_t hs_word;
    const struct event_handler_ops *ops;
};
_Static_assert(sizeof(struct event_handler) == 8 + sizeof(void *),
               "the handle set's word lives in the padding after fd");

#endif
