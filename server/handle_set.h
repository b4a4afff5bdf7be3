/* handle_set.h — the Handle Set participant: one epoll instance shared by all pool threads.
 *
 * All handles are registered with EPOLLONESHOT: when epoll reports an event for a handle, the
 * kernel disables it until hs_rearm() is called, so no other thread can be handed the same
 * handle while one is processing it. Level-triggered: re-arming a handle that already has data
 * reports it again at once, so nothing is lost between the last read and the re-arm. */
#ifndef LF_HANDLE_SET_H
#define LF_HANDLE_SET_H

#include <stdint.h>
#include <sys/epoll.h>

#include "event_handler.h"

struct handle_set {
    int epfd;
};

/* All return 0 or -errno. */
int hs_init(struct handle_set *hs);
void hs_close(struct handle_set *hs);
/* Register eh->fd for `events` (EPOLLIN, EPOLLOUT, EPOLLRDHUP: exactly what the handler waits
 * for; EPOLLHUP and EPOLLERR always come); EPOLLONESHOT is added. A half-closed peer keeps
 * EPOLLRDHUP ready, so a handle that asks for it while it only waits to write would be
 * reported again at every re-arm. */
int hs_add(struct handle_set *hs, struct event_handler *eh, uint32_t events);
/* Re-activate a handle deactivated by a detected event, with a (possibly new) interest. */
int hs_rearm(struct handle_set *hs, struct event_handler *eh, uint32_t events);
int hs_del(struct handle_set *hs, struct event_handler *eh);
/* Wait for up to `max` events; returns their count, 0 on EINTR, or -errno. */
int hs_wait(struct handle_set *hs, struct epoll_event *evs, int max, int timeout_ms);

#endif
