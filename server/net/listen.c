/* listen.c — listening sockets; see listen.h. */
#include "net/listen.h"
#include "log/diag.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LISTEN_BACKLOG 4096 /* the kernel caps it at net.core.somaxconn */
#define DEFER_ACCEPT_S 10   /* TCP_DEFER_ACCEPT: how long a silent connection may wait */

void listen_url(int fd, bool tls, char *url, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    memset(&ss, 0, sizeof(ss));
    getsockname(fd, (struct sockaddr *)&ss, &len);
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

int listen_open(const struct listen_addr *la, bool reuseport,
                const struct sockaddr_storage *bind_to)
{
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
