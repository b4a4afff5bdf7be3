/* acceptor.h — the listening sockets' event handler.
 *
 * On EPOLLIN the processing thread accepts a few connections at once, registers each in the
 * shared handle set, and re-arms the listener. At the connection limit, or when the process is
 * out of descriptors (EMFILE/ENFILE), the listener is left disarmed ("paused") instead of
 * spinning; a closing connection or the timer re-arms it. */
#ifndef LF_ACCEPTOR_H
#define LF_ACCEPTOR_H

struct listener;
struct server;

/* Create, bind and listen; fills l->url with the bound address. Prints one line and returns -1
 * on failure. */
int acceptor_open(struct server *srv, struct listener *l);
/* Register a listener in the handle set. Returns 0 or -errno. */
int acceptor_start(struct listener *l);
/* Re-arm a paused listener if accepting may resume (not draining, below the limit). */
void acceptor_resume(struct listener *l);

#endif
