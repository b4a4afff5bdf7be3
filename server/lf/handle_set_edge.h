/* handle_set_edge.h — leader-followers-edge: the edge set, and the pool's side of it
 * (handle_set_edge.c).
 *
 * Handles are registered EPOLLET without EPOLLONESHOT, so the kernel may report a handle again
 * while a thread processes it. The handle's ownership word (event_handler.hs_word) keeps the
 * one-owner rule instead:
 *
 *   take     the thread that gets an event for a handle takes it (hs_take: idle -> owned), or,
 *            finding it owned, records the event bits as "more" in the word and moves on;
 *   release  hs_rearm: the owner's last touch, as under EPOLLONESHOT. If "more" was recorded
 *            (for what the handle now waits for), the owner keeps the handle and the events
 *            go on its thread's "again" list, which the pool drains after the handler
 *            returns: they are processed before anyone else can have the handle. Off the pool
 *            (a handler's own thread giving an exchange back) there is no such list: hs_rearm
 *            returns HS_KEPT and the caller hands the handle to a pool thread.
 *   interest the word records the interest registered with the kernel; hs_rearm calls
 *            EPOLL_CTL_MOD only when it changes (MOD re-evaluates readiness, so nothing that
 *            became ready meanwhile is missed). An unchanged interest costs no system call.
 *   unread   an edge comes only when something new arrives: a handler that stops before its
 *            handle is drained says so with hs_more() before it releases, and is run again.
 *            This is what the edge set asks of its handlers beyond the textbook's contract
 *            (event_handler.h).
 *
 * A handle that is closed is never released: its word stays owned, so a stale event another
 * thread still holds for it is recorded as "more" and dropped. Its memory must outlive such
 * events: the pool frees closed handles only after every thread has finished the batch it
 * held at the close (tp_retire): each thread publishes a counter, odd from the moment it enters
 * epoll_wait until it has run the whole batch (and its again list), even otherwise; a handle
 * retired at time T is freed once every thread that was odd at T has changed it since. The
 * descriptor number may be reused at once: stale events are recognised by the handle's pointer
 * and its word, never by the fd. The leader may sleep in epoll_wait with an odd counter; the
 * server's 250 ms tick bounds how long a retired handle waits. */
#ifndef LF_HANDLE_SET_EDGE_H
#define LF_HANDLE_SET_EDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "lf/handle_set.h"

struct worker;

/* Create an edge set. 0 or -errno; hs_close is safe either way. */
int hs_init_edge(struct handle_set *hs);

/* hs_add, hs_rearm, hs_del for a descriptor that stands for `eh` in the set (a connection's
 * private set of watched handles, whose events are the connection's): edge sets only. */
int hs_add_fd(struct handle_set *hs, struct event_handler *eh, int fd, uint32_t events);
int hs_rearm_fd(struct handle_set *hs, struct event_handler *eh, int fd, uint32_t events);
int hs_del_fd(struct handle_set *hs, struct event_handler *eh, int fd);

/* ---- the pool's side ------------------------------------------------------------------------ */

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
    struct worker *w;                /* the thread's context (the handlers' argument) */
};
/* Make `a` the calling thread's list (NULL: none, the thread is not a pool thread). */
void hs_again_attach(struct hs_again *a);
bool hs_again_pop(struct hs_again *a, struct hs_pending *out);
void hs_again_free(struct hs_again *a);

#endif
