/* handle_set.h — the Handle Set participant: one epoll instance shared by all pool threads.
 *
 * All handles are registered with EPOLLONESHOT: when epoll reports an event for a handle, the
 * kernel disables it until hs_rearm() is called, so no other thread can be handed the same
 * handle while one is processing it. Level-triggered: re-arming a handle that already has data
 * reports it again at once, so nothing is lost between the last read and the re-arm. */
#ifndef LF_HANDLE_SET_H
#define LF_HANDLE_SET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include <stdatomic.h>

#include "lf/event_handler.h"

/* leader-followers-edge (`edge`): handles are registered EPOLLET without EPOLLONESHOT, so the
 * kernel may report a handle again while a thread processes it. The handle's ownership word
 * (event_handler.own) keeps the one-owner rule instead:
 *
 *   take     the thread that gets an event for a handle takes it (hs_take: idle -> owned), or,
 *            finding it owned, records the event bits as "more" in the word and moves on;
 *   release  hs_rearm: the owner's last touch, as under EPOLLONESHOT. If "more" was recorded
 *            (for what the handle now waits for), the owner keeps the handle and the events
 *            go on its thread's "again" list, which the dispatch loop drains after the handler
 *            returns: they are processed before anyone else can have the handle. Off the pool
 *            (a handler's own thread giving an exchange back) there is no dispatch loop:
 *            hs_rearm returns HS_KEPT and the caller hands the handle to a pool thread.
 *   interest the word records the interest registered with the kernel; hs_rearm calls
 *            EPOLL_CTL_MOD only when it changes (MOD re-evaluates readiness, so nothing that
 *            became ready meanwhile is missed). An unchanged interest costs no system call.
 *   unread   an edge comes only when something new arrives: a handler that stops before its
 *            handle is drained (a read that filled the buffer, a bounded accept loop, a send
 *            budget spent while the socket still has room) says so with hs_more() before it
 *            releases, and is run again.
 *
 * A handle that is closed is never released: its word stays owned, so a stale event another
 * thread still holds for it is recorded as "more" and dropped. Its memory must outlive such
 * events: the pool frees closed connections only after every thread has finished the batch it
 * held at the close (tp_retire, thread_pool.h). */
struct handle_set {
    int epfd;
    bool edge;
};

/* hs_rearm under leader-followers-edge, off the pool: events are pending, the caller still owns
 * the handle and must hand it to a pool thread (which calls hs_rearm again). */
#define HS_KEPT 1

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
/* The same for a descriptor that stands for `eh` in the set (a connection's private set of
 * watched handles, whose events are the connection's: edge mode only). */
int hs_add_fd(struct handle_set *hs, struct event_handler *eh, int fd, uint32_t events);
int hs_rearm_fd(struct handle_set *hs, struct event_handler *eh, int fd, uint32_t events);
int hs_del_fd(struct handle_set *hs, struct event_handler *eh, int fd);
/* The owner stops before `eh` is drained of `events`: run it again when it is released (edge
 * mode; nothing under EPOLLONESHOT, whose level-triggered re-arm reports what is left). */
static inline void hs_more(const struct handle_set *hs, struct event_handler *eh,
                           uint32_t events)
{
    if (hs->edge)
        atomic_fetch_or_explicit(&eh->own, events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP),
                                 memory_order_relaxed);
}

/* The owner is about to close eh->fd for good (edge mode; nothing under EPOLLONESHOT). A
 * closed descriptor leaves the set only with its last reference, and a child process may hold
 * one for a moment (posix_spawn, between its clone and its exec): an enabled edge-triggered
 * registration could then still report the closed handle. Deleted first if registered. */
void hs_forget(struct handle_set *hs, struct event_handler *eh);

/* ---- the pool's side of edge mode ---------------------------------------------------------- */

/* Take `eh` for an event (true: the caller owns it and runs it), or record the events for its
 * owner (false). */
bool hs_take(struct event_handler *eh, uint32_t events);
/* A pool thread's list of handles it owns and must run again. */
struct hs_pending {
    struct event_handler *eh;
    uint32_t events;
};
struct hs_again {
    struct hs_pending *v;
    unsigned head, n, cap;
    struct worker *w;        /* the thread's context (the handlers' argument) */
};
/* Make `a` the calling thread's list (NULL: none, the thread is not a pool thread). */
void hs_again_attach(struct hs_again *a);
bool hs_again_pop(struct hs_again *a, struct hs_pending *out);
void hs_again_free(struct hs_again *a);
/* Wait for up to `max` events; returns their count, 0 on EINTR, or -errno. */
int hs_wait(struct handle_set *hs, struct epoll_event *evs, int max, int timeout_ms);

#endif
