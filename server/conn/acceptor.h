/* acceptor.h — the listening sockets' event handler.
 *
 * On EPOLLIN the processing thread accepts a few connections at once, registers each in the
 * listener's handle set (the shared one; under reuseport the set of the listener's thread), and
 * re-arms the listener. At the connection limit, or when the process is
 * out of descriptors (EMFILE/ENFILE), the listener is left disarmed ("paused") instead of
 * spinning; a closing connection or the timer re-arms it. */
#ifndef LF_ACCEPTOR_H
#define LF_ACCEPTOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "lf/event_handler.h"
#include "net/listen.h"

struct conn_list;
struct handle_set;

/* One listening socket. Its slot never moves once published (the daemon keeps them in an
 * array), so connections point at it for as long as they live. */
#define LISTENER_URL_MAX 96
struct listener {
    struct event_handler eh;     /* first member: data.ptr of its epoll registration */
    struct conn_list *conns;     /* where its connections go */
    struct handle_set *hs;       /* the set it is registered in (reuseport: its thread's) */
    unsigned copy;               /* reuseport: which thread's socket for this address */
    struct listen_addr addr;     /* as configured */
    char url[LISTENER_URL_MAX];  /* "http(s)://127.0.0.1:8080", with the bound port */
    _Atomic int paused;          /* 1: not re-armed (connection limit or EMFILE) */
    _Atomic bool closed;         /* removed by a reload: shut down, fd kept until exit */
    bool inherited;              /* a socket from systemd: never shut down (systemd.h) */
};

/* Open l->addr's socket (listen_open: bound to `bind_to` if not NULL, with SO_REUSEPORT when
 * `reuseport`) as a listener whose connections go to `conns`; fills l->url with the bound
 * address. Prints one line and returns -1 on failure. */
int acceptor_open(struct conn_list *conns, struct listener *l, bool reuseport,
                  const struct sockaddr_storage *bind_to);
/* Use a socket systemd passed (systemd.h) as the listener: a duplicate of `fd`, so that the
 * listener owns its descriptor like a bound one. Prints one line and returns -1 on failure. */
int acceptor_adopt(struct conn_list *conns, struct listener *l, int fd);
/* Register a listener in the handle set. Returns 0 or -errno. */
int acceptor_start(struct listener *l);
/* Set what accepted sockets inherit from the listener (TCP_NODELAY), so that accepting costs
 * no call per connection. */
void acceptor_tune(struct listener *l);
/* Re-arm a paused listener if accepting may resume (not draining, below the limit). */
void acceptor_resume(struct listener *l);

#endif
