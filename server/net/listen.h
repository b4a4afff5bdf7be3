/* listen.h — listening sockets: what a configured address is, and opening one.
 *
 * Socket-level only: the acceptor (conn/acceptor.h) makes a listener of the socket, and the
 * configuration (config.h) parses addresses into a struct listen_addr. */
#ifndef LF_LISTEN_H
#define LF_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* One address to listen on (listen, tls_listen, admin_listen, --listen). */
struct listen_addr {
    struct sockaddr_storage ss;
    socklen_t sslen;
    char text[80];          /* as given, for messages */
    bool proxy_protocol;    /* connections start with a PROXY protocol header */
    bool tls;               /* a TLS listener (tls_listen / --tls-listen) */
    bool admin;             /* admin_listen: the built-ins only (health, status, metrics) */
    unsigned line;          /* line in config_file it came from; 0: the command line */
    char fdname[64];        /* `systemd:NAME`: the sockets systemd passed under that name
                               (systemd.h); ss is then unset */
    /* `unix:/path` (ss is AF_UNIX): the socket file's permissions (0: as the umask makes
     * them), owner and group ((uid_t)-1, (gid_t)-1: the server's) */
    unsigned mode;
    uid_t uid;
    gid_t gid;
};

/* Create, bind (to `bind_to` if not NULL, else to la's address) and listen, non-blocking,
 * with SO_REUSEPORT when `reuseport`. Returns the socket, or -1 with one line printed.
 * A Unix-domain address: a stale socket file there (one nobody accepts on) is replaced, any
 * other file is refused; the new file gets la's mode, owner and group before it listens. */
int listen_open(const struct listen_addr *la, bool reuseport,
                const struct sockaddr_storage *bind_to);
/* Parse "unix:/absolute/path" into `la`. Returns 0 or -EINVAL. */
int listen_parse_unix(const char *s, struct listen_addr *la);
/* Remove a Unix-domain listener's socket file (at exit; nothing for other addresses). */
void listen_unlink(const struct listen_addr *la);
/* Is there a file at `la`'s Unix-domain path that is not a socket (it would be refused)? */
bool listen_unix_blocked(const struct listen_addr *la);
/* The socket's bound address as a URL ("https://[::1]:8443"; https when `tls`), or
 * "unix:/path" (with " (TLS)" when `tls`). */
void listen_url(int fd, bool tls, char *url, size_t cap);

#endif
