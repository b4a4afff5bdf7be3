/* systemd.h — the service manager's two protocols: readiness notification and socket activation.
 *
 * Both use Debian's libsystemd (sd_notify, sd_listen_fds_with_names, sd_watchdog_enabled), and
 * both do nothing when lfhttpd was not started by systemd (no NOTIFY_SOCKET, no LISTEN_FDS), so
 * the server behaves the same from a shell, a container or a test.
 *
 * Notification (`Type=notify`): READY=1 once every listener is in the handle set; RELOADING=1
 * with MONOTONIC_USEC when a SIGHUP reload starts and READY=1 when it ends (applied or not);
 * STOPPING=1 when the graceful drain starts; STATUS= a one-line summary with each of those and
 * from the timer tick when it changed; WATCHDOG=1 from the timer tick at half the WatchdogSec
 * interval, so a pool that no longer processes events (the tick is an event like any other)
 * gets the service restarted.
 *
 * Socket activation: the sockets systemd passes (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES) are
 * taken at start-up and kept until exit. A configured listener uses an inherited socket instead
 * of binding when it names it (`listen systemd:NAME`, `tls_listen systemd:NAME`: every socket
 * with that FileDescriptorName=) or when its address is the socket's address. Every inherited
 * socket must be used by a listener: one that is not would leave its clients waiting forever in
 * a backlog nobody accepts from, so start-up fails and a reload is refused instead. With no
 * listener configured at all (neither `listen` nor --listen: the default 0.0.0.0:8080 only),
 * the passed sockets are the listeners, plain HTTP, instead of the default. TCP and Unix-domain
 * stream sockets are taken. */
#ifndef LF_SYSTEMD_H
#define LF_SYSTEMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct listen_addr;

#define SYSTEMD_MAX_SOCKETS 64

/* One socket passed by systemd. */
struct systemd_socket {
    int fd;                      /* kept open until exit; listeners use dup()s of it */
    char name[64];               /* its FileDescriptorName= ("unknown" when systemd gave none) */
    struct sockaddr_storage ss;  /* its bound address */
    socklen_t sslen;
};

/* The process's side of both protocols; a member of struct server. */
struct systemd_state {
    struct systemd_socket sockets[SYSTEMD_MAX_SOCKETS];
    unsigned nsockets;
    bool notify;                 /* NOTIFY_SOCKET is set */
    unsigned watchdog_ticks;     /* ping every this many timer ticks; 0: no watchdog */
    unsigned ticks;              /* timer ticks seen (only the timer handler touches it) */
    char status[160];            /* the last STATUS= sent from the tick */
    char error[256];             /* why systemd_init failed (its first reason) */
    /* Writes the one-line summary STATUS= carries (set by the server before any notification;
     * systemd.c knows nothing of what it summarises). */
    void (*summary)(void *arg, char *out, size_t size);
    void *summary_arg;
};

/* Take the sockets systemd passed (and remove LISTEN_* from the environment, so that no child
 * sees them), read NOTIFY_SOCKET and WatchdogSec. `tick_ms` is the timer's period. Call before
 * any thread starts. Returns -1 when a passed socket cannot be served (not a listening stream
 * socket, too many), the reason in sd->error (one line, no newline): the caller prints it once
 * the error log is open, in its format. */
int systemd_init(struct systemd_state *sd, unsigned tick_ms);
/* Close the inherited sockets. */
void systemd_close(struct systemd_state *sd);

/* Does `la` name this inherited socket (`systemd:NAME`) or is it bound to `la`'s address? */
bool systemd_socket_matches(const struct systemd_socket *s, const struct listen_addr *la);
/* A listener for each inherited socket (by its address) into la[0..cap): how many. */
unsigned systemd_listeners(const struct systemd_state *sd, struct listen_addr *la, unsigned cap);
/* The first inherited socket that none of the `n` listeners in `la` would use, or NULL. */
const struct systemd_socket *systemd_unclaimed(const struct systemd_state *sd,
                                               const struct listen_addr *la, unsigned n);

/* The notifications; each is a no-op without NOTIFY_SOCKET. */
void systemd_ready(struct systemd_state *sd);
void systemd_reloading(const struct systemd_state *sd);
void systemd_stopping(const struct systemd_state *sd, unsigned open_connections);
/* Called by every timer tick: WATCHDOG=1 when due, STATUS= when the summary changed. */
void systemd_tick(struct systemd_state *sd);

#endif
