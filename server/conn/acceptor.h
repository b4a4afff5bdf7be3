/* acceptor.h — the listening sockets' event handler.
 *
 * On EPOLLIN the processing thread accepts a few connections at once, registers each in the
 * listener's handle set (the shared one; under reuseport the set of the listener's thread), and
 * re-arms the listener. At the connection limit, or when the process is
 * out of descriptors (EMFILE/ENFILE), the listener is left disarmed ("paused") instead of
 * spinning; a closing connection or the timer re-arms it. */
#ifndef LF_ACCEPTOR_H
#define LF_ACCEPTOR_H

#include <stdbool.h>
#include <sys/socket.h>

struct listener;
struct server;

/* Create, bind (to `bind_to` if not NULL, else to the configured address) and listen, with
 * SO_REUSEPORT when `reuseport`; fills l->url with the bound address. Prints one line and
 * returns -1 on failure. */
int acceptor_open(struct server *srv, struct listener *l, bool reuseport,
                  const struct sockaddr_storage *bind_to);
/* Use a socket systemd passed (systemd.h) as the listener: a duplicate of `fd`, so that the
 * listener owns its descriptor like a bound one. Prints one line and returns -1 on failure. */
int acceptor_adopt(struct server *srv, struct listener *l, int fd);
/* Register a listener in the handle set. Returns 0 or -errno. */
int acceptor_start(struct listener *l);
/* Set what accepted sockets inherit from the listener (TCP_NODELAY), so that accepting costs
 * no call per connection. */
void acceptor_tune(struct listener *l);
/* Re-arm a paused listener if accepting may resume (not draining, below the limit). */
void acceptor_resume(struct listener *l);

#endif
