/* probe.c — `lfhttpd --probe URL`; see probe.h. Runs instead of the server, single-threaded. */
#include "daemon/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hostport.h"

int probe_requested(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            return 0;
        if (!strcmp(argv[i], "--probe") || !strncmp(argv[i], "--probe=", 8))
            return 1;
    }
    return 0;
}

int probe_parse_url(const char *url, char *host, size_t hostcap, char *port, size_t portcap,
                    const char **path, char *err, size_t errcap)
{
    if (strncmp(url, "http://", 7)) {
        snprintf(err, errcap, "only http:// URLs can be probed");
        return -1;
    }
    const char *p = url + 7;
    const char *end = p + strcspn(p, "/?#");
    struct hostport hp;
    bool well_formed = hostport_split(p, (size_t)(end - p), &hp);
    if (!hp.name.ptr) {
        snprintf(err, errcap, "unterminated [IPv6] address");
        return -1;
    }
    size_t hl = hp.name.len;
    if (!well_formed || hl == 0 || hl >= hostcap)
        goto bad;
    memcpy(host, hp.name.ptr, hl);
    host[hl] = '\0';
    const char *pstart = hp.port.ptr;
    size_t pl = hp.port.len;
    if (pstart && (pl == 0 || pl > 5 || pl >= portcap || strspn(pstart, "0123456789") < pl))
        goto bad;
    if (pstart) {
        memcpy(port, pstart, pl);
        port[pl] = '\0';
        if (atol(port) < 1 || atol(port) > 65535)
            goto bad;
    } else {
        snprintf(port, portcap, "80");
    }
    if (*end == '#') {
        snprintf(err, errcap, "a URL with a fragment");
        return -1;
    }
    *path = *end ? end : "/";
    for (const char *c = *path; *c; c++)
        if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f || *c == '#') {
            snprintf(err, errcap, "the path must be a plain request-target (no spaces, controls "
                                  "or fragment)");
            return -1;
        }
    return 0;
bad:
    snprintf(err, errcap, "expected http://HOST[:PORT]/PATH");
    return -1;
}

/* Wait for `events` on fd until the deadline; 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - clock_exact_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = { .fd = fd, .events = events };
        int n = poll(&pfd, 1, (int)left);
        if (n > 0)
            return 1;
        if (n == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/* Connect to one address before the deadline; the socket, or -1 with errno. */
static int connect_one(const struct addrinfo *ai, int64_t deadline)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return fd;
    if (errno != EINPROGRESS)
        goto fail;
    int w = wait_fd(fd, POLLOUT, deadline);
    if (w <= 0) {
        errno = w == 0 ? ETIMEDOUT : errno;
        goto fail;
    }
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
        goto fail;
    if (soerr) {
        errno = soerr;
        goto fail;
    }
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* Send buf[0..len) before the deadline. 0, or -1 once the reason is reported. */
static int send_all(int fd, const char *buf, size_t len, int64_t deadline, const char *url)
{
    size_t sent = 0;
    while (sent < len) {
        ssize_t w = send(fd, buf + sent, len - sent, MSG_NOSIGNAL);
        if (w > 0) {
            sent += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN && wait_fd(fd, POLLOUT, deadline) > 0)
            continue;
        fprintf(stderr, "lfhttpd: --probe %s: send: %s\n", url,
                w < 0 && errno != EAGAIN ? strerror(errno) : "timed out");
        return -1;
    }
    return 0;
}

static int probe(const char *url)
{
    char host[256], port[8], err[128];
    const char *path;
    if (probe_parse_url(url, host, sizeof(host), port, sizeof(port), &path, err, sizeof(err)) < 0) {
        fprintf(stderr, "lfhttpd: --probe %s: %s\n", url, err);
        return 2;
    }
    int64_t deadline = clock_exact_ms() + PROBE_TIMEOUT_MS;
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai) {
        fprintf(stderr, "lfhttpd: --probe %s: %s: %s\n", url, host, gai_strerror(gai));
        return 1;
    }
    int fd = -1, cerr = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = connect_one(ai, deadline);
        cerr = errno;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "lfhttpd: --probe %s: connect: %s\n", url, strerror(cerr));
        return 1;
    }
    bool v6 = strchr(host, ':') != NULL;
    char request[4096];
    int n = snprintf(request, sizeof(request),
                     "GET %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: lfhttpd-probe\r\n"
                     "Connection: close\r\n\r\n",
                     path, v6 ? "[" : "", host, v6 ? "]" : "", port);
    if (n < 0 || (size_t)n >= sizeof(request)) {
        close(fd);
        fprintf(stderr, "lfhttpd: --probe %s: URL too long\n", url);
        return 2;
    }
    if (send_all(fd, request, (size_t)n, deadline, url) < 0) {
        close(fd);
        return 1;
    }
    /* The status line is all we need: "HTTP/1.x NNN reason\r\n". */
    char line[256];
    size_t got = 0;
    while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
        ssize_t r = recv(fd, line + got, sizeof(line) - 1 - got, 0);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN && wait_fd(fd, POLLIN, deadline) > 0)
            continue;
        fprintf(stderr, "lfhttpd: --probe %s: %s\n", url,
                r == 0 ? "connection closed before a response"
                : errno == EAGAIN ? "no response within 5 s"
                                  : strerror(errno));
        close(fd);
        return 1;
    }
    close(fd);
    line[got] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    int status = 0;
    if (strlen(line) < 12 || strncmp(line, "HTTP/1.", 7) || line[8] != ' ' ||
        sscanf(line + 9, "%3d", &status) != 1 || status < 100 || status > 999) {
        fprintf(stderr, "lfhttpd: --probe %s: not an HTTP response\n", url);
        return 1;
    }
    bool healthy = status >= 200 && status < 400;
    fprintf(healthy ? stdout : stderr, "%s%s: %s\n", healthy ? "" : "lfhttpd: --probe ", url,
            line + 9);
    return healthy ? 0 : 1;
}

int probe_main(int argc, char **argv)
{
    const char *url = NULL;
    if (argc == 3 && !strcmp(argv[1], "--probe"))
        url = argv[2];
    else if (argc == 2 && !strncmp(argv[1], "--probe=", 8))
        url = argv[1] + 8;
    if (!url || !*url) {
        fprintf(stderr, "lfhttpd: --probe takes one URL and no other option: "
                        "lfhttpd --probe http://127.0.0.1:8080/readyz\n");
        return 2;
    }
    return probe(url);
}
