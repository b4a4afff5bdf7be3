/* listen.c — listening sockets; see listen.h. */
#include "net/listen.h"
#include "log/diag.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define LISTEN_BACKLOG 4096 /* the kernel caps it at net.core.somaxconn */
#define DEFER_ACCEPT_S 10   /* TCP_DEFER_ACCEPT: how long a silent connection may wait */

int listen_parse_unix(const char *s, struct listen_addr *la)
{
    const char *path = s + 5; /* after "unix:" */
    struct sockaddr_un *un = (struct sockaddr_un *)(void *)&la->ss;
    size_t n = strlen(path);
    if (strncmp(s, "unix:", 5) || path[0] != '/' || n >= sizeof(un->sun_path))
        return -EINVAL;
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path, path, n + 1);
    la->sslen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    la->uid = (uid_t)-1;
    la->gid = (gid_t)-1;
    return 0;
}

static const char *unix_path(const struct listen_addr *la)
{
    return ((const struct sockaddr_un *)(const void *)&la->ss)->sun_path;
}

void listen_unlink(const struct listen_addr *la)
{
    if (la->ss.ss_family == AF_UNIX)
        unlink(unix_path(la)); /* may fail once privileges are dropped: then it stays stale */
}

bool listen_unix_blocked(const struct listen_addr *la)
{
    struct stat st;
    return la->ss.ss_family == AF_UNIX && lstat(unix_path(la), &st) == 0 &&
           !S_ISSOCK(st.st_mode);
}

/* A file at the socket's path: a socket nobody accepts on (a server that died) is removed;
 * one that accepts is another server's, and anything else is not ours to remove. Returns 0
 * (the path is free) or -1 (message printed). */
static int unix_clear_stale(const struct listen_addr *la)
{
    const char *path = unix_path(la);
    struct stat st;
    if (lstat(path, &st) < 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        diag("lfhttpd: listen %s: the file exists and is not a socket\n", la->text);
        return -1;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) {
        diag("lfhttpd: listen %s: socket: %s\n", la->text, strerror(errno));
        return -1;
    }
    int rc = connect(probe, (const struct sockaddr *)&la->ss, la->sslen);
    int err = errno;
    close(probe);
    if (rc == 0) {
        diag("lfhttpd: listen %s: another server accepts on this socket\n", la->text);
        return -1;
    }
    if (err != ECONNREFUSED && err != ENOENT) {
        diag("lfhttpd: listen %s: %s\n", la->text, strerror(err));
        return -1;
    }
    if (unlink(path) < 0 && errno != ENOENT) {
        diag("lfhttpd: listen %s: removing the stale socket: %s\n", la->text, strerror(errno));
        return -1;
    }
    return 0;
}

/* Between bind() and listen(): nobody can connect yet, so the mode and owner are in place
 * before the first client can use the socket. */
static int unix_set_owner(const struct listen_addr *la)
{
    const char *path = unix_path(la);
    if (la->mode && chmod(path, (mode_t)la->mode) < 0) {
        diag("lfhttpd: listen %s: mode %04o: %s\n", la->text, la->mode, strerror(errno));
        return -1;
    }
    if ((la->uid != (uid_t)-1 || la->gid != (gid_t)-1) && chown(path, la->uid, la->gid) < 0) {
        diag("lfhttpd: listen %s: owner: %s\n", la->text, strerror(errno));
        return -1;
    }
    return 0;
}

void listen_url(int fd, bool tls, char *url, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    memset(&ss, 0, sizeof(ss));
    getsockname(fd, (struct sockaddr *)&ss, &len);
    if (ss.ss_family == AF_UNIX) {
        const struct sockaddr_un *un = (const struct sockaddr_un *)(const void *)&ss;
        snprintf(url, cap, "unix:%s%s", un->sun_path, tls ? " (TLS)" : "");
        return;
    }
    const char *scheme = tls ? "https" : "http";
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)&ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
        port = ntohs(s6->sin6_port);
        snprintf(url, cap, "%s://[%s]:%u", scheme, host, port);
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)&ss;
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
        port = ntohs(s4->sin_port);
        snprintf(url, cap, "%s://%s:%u", scheme, host, port);
    }
}

/* A Unix-domain listener: the stale file replaced, the new one's mode and owner set. */
static int listen_open_unix(const struct listen_addr *la)
{
    if (unix_clear_stale(la) < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        diag("lfhttpd: listen %s: socket: %s\n", la->text, strerror(errno));
        return -1;
    }
    if (bind(fd, (const struct sockaddr *)&la->ss, la->sslen) < 0) {
        diag("lfhttpd: listen %s: %s\n", la->text, strerror(errno));
        close(fd);
        return -1;
    }
    if (unix_set_owner(la) < 0)
        goto unbind;
    if (listen(fd, LISTEN_BACKLOG) < 0) {
        diag("lfhttpd: listen %s: %s\n", la->text, strerror(errno));
        goto unbind;
    }
    return fd;
unbind:
    unlink(unix_path(la));
    close(fd);
    return -1;
}

int listen_open(const struct listen_addr *la, bool reuseport,
                const struct sockaddr_storage *bind_to)
{
    if (la->ss.ss_family == AF_UNIX)
        return listen_open_unix(la);
    int fd = socket(la->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        diag("lfhttpd: listen %s: socket: %s\n", la->text, strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (la->ss.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) {
        diag("lfhttpd: listen %s: SO_REUSEPORT: %s\n", la->text, strerror(errno));
        close(fd);
        return -1;
    }
    if (bind(fd, (const struct sockaddr *)(bind_to ? bind_to : &la->ss), la->sslen) < 0 ||
        listen(fd, LISTEN_BACKLOG) < 0) {
        diag("lfhttpd: listen %s: %s\n", la->text, strerror(errno));
        close(fd);
        return -1;
    }
    /* Wake only when the client has sent something (its request or TLS hello). */
    int defer = DEFER_ACCEPT_S;
    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof(defer));
    return fd;
}
