/* systemd.c — readiness notification and socket activation; see systemd.h. */
#include "daemon/systemd.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "conf/config.h"
#include "log/log.h"

/* STATUS= from the tick is rebuilt every this many ticks (once a second at 250 ms) and sent
 * only when it changed. */
#define STATUS_TICKS 4

/* The first reason systemd_init fails, into sd->error. */
static void fail(struct systemd_state *sd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail(struct systemd_state *sd, const char *fmt, ...)
{
    if (sd->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sd->error, sizeof(sd->error), fmt, ap);
    va_end(ap);
}

int systemd_init(struct systemd_state *sd, unsigned tick_ms)
{
    memset(sd, 0, sizeof(*sd));
    sd->notify = getenv("NOTIFY_SOCKET") != NULL;
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        /* Ping at half the interval, as sd_watchdog_enabled(3) advises, in whole ticks. */
        uint64_t ticks = usec / 2 / 1000 / tick_ms;
        sd->watchdog_ticks = ticks ? (unsigned)(ticks > 1000000 ? 1000000 : ticks) : 1;
    }

    char **names = NULL;
    int n = sd_listen_fds_with_names(1, &names);
    if (n < 0) {
        fail(sd, "lfhttpd: sockets passed by systemd: %s", strerror(-n));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        int fd = SD_LISTEN_FDS_START + i;
        const char *name = names && names[i] ? names[i] : "unknown";
        if (rc < 0 || sd->nsockets == SYSTEMD_MAX_SOCKETS) {
            if (rc == 0)
                fail(sd, "lfhttpd: systemd passed %d sockets; at most %d are served", n,
                     SYSTEMD_MAX_SOCKETS);
            rc = -1;
            close(fd);
            continue;
        }
        struct systemd_socket *s = &sd->sockets[sd->nsockets];
        s->fd = fd;
        snprintf(s->name, sizeof(s->name), "%s", name);
        s->sslen = sizeof(s->ss);
        if ((sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0) <= 0 &&
             sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) ||
            getsockname(fd, (struct sockaddr *)&s->ss, &s->sslen) < 0) {
            fail(sd, "lfhttpd: socket %d ('%s') passed by systemd is not a listening stream "
                 "socket (ListenStream= with an address, a port or a path)", fd, name);
            close(fd);
            rc = -1;
            continue;
        }
        /* sd_listen_fds has set FD_CLOEXEC; systemd passes blocking sockets unless the unit
         * says NonBlocking=yes, and the acceptor needs EAGAIN. */
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
            fail(sd, "lfhttpd: socket '%s' passed by systemd: %s", name, strerror(errno));
            close(fd);
            rc = -1;
            continue;
        }
        sd->nsockets++;
    }
    if (names)
        for (int i = 0; i < n; i++)
            free(names[i]);
    free(names);
    return rc;
}

void systemd_close(struct systemd_state *sd)
{
    for (unsigned i = 0; i < sd->nsockets; i++)
        close(sd->sockets[i].fd);
    sd->nsockets = 0;
}

static bool same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const struct sockaddr_in *)(const void *)a;
        const struct sockaddr_in *y = (const struct sockaddr_in *)(const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)(const void *)a;
        const struct sockaddr_in6 *y = (const struct sockaddr_in6 *)(const void *)b;
        return x->sin6_port == y->sin6_port &&
               !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
    }
    if (a->ss_family == AF_UNIX) { /* a path (an abstract name never equals a configured one) */
        const struct sockaddr_un *x = (const struct sockaddr_un *)(const void *)a;
        const struct sockaddr_un *y = (const struct sockaddr_un *)(const void *)b;
        return x->sun_path[0] && !strncmp(x->sun_path, y->sun_path, sizeof(x->sun_path));
    }
    return false;
}

bool systemd_socket_matches(const struct systemd_socket *s, const struct listen_addr *la)
{
    if (la->fdname[0])
        return !strcmp(la->fdname, s->name);
    return same_address(&s->ss, &la->ss);
}

unsigned systemd_listeners(const struct systemd_state *sd, struct listen_addr *la, unsigned cap)
{
    unsigned n = 0;
    for (unsigned i = 0; i < sd->nsockets && n < cap; i++, n++) {
        const struct systemd_socket *s = &sd->sockets[i];
        memset(&la[n], 0, sizeof(la[n]));
        la[n].ss = s->ss; /* matched by its address: names may repeat */
        la[n].sslen = s->sslen;
        snprintf(la[n].text, sizeof(la[n].text), "systemd:%s", s->name);
    }
    return n;
}

const struct systemd_socket *systemd_unclaimed(const struct systemd_state *sd,
                                               const struct listen_addr *la, unsigned n)
{
    for (unsigned i = 0; i < sd->nsockets; i++) {
        bool used = false;
        for (unsigned k = 0; k < n && !used; k++)
            used = systemd_socket_matches(&sd->sockets[i], &la[k]);
        if (!used)
            return &sd->sockets[i];
    }
    return NULL;
}

void systemd_ready(struct systemd_state *sd)
{
    if (!sd->notify)
        return;
    char status[sizeof(sd->status)];
    sd->summary(sd->summary_arg, status, sizeof(status));
    sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void systemd_reloading(const struct systemd_state *sd)
{
    if (!sd->notify)
        return;
    /* MONOTONIC_USEC: when the reload began, on CLOCK_MONOTONIC (sd_notify(3)). */
    sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading the configuration",
               (unsigned long long)(clock_exact_ns() / CLOCK_NS_PER_US));
}

void systemd_stopping(const struct systemd_state *sd, unsigned open_connections)
{
    if (!sd->notify)
        return;
    sd_notifyf(0, "STOPPING=1\nSTATUS=draining: %u connection(s) open", open_connections);
}

void systemd_tick(struct systemd_state *sd)
{
    if (!sd->notify)
        return;
    sd->ticks++;
    bool ping = sd->watchdog_ticks && sd->ticks % sd->watchdog_ticks == 0;
    char status[sizeof(sd->status)];
    bool changed = false;
    if (sd->ticks % STATUS_TICKS == 0) {
        sd->summary(sd->summary_arg, status, sizeof(status));
        changed = strcmp(status, sd->status) != 0;
        if (changed)
            memcpy(sd->status, status, sizeof(status));
    }
    if (ping && changed)
        sd_notifyf(0, "WATCHDOG=1\nSTATUS=%s", status);
    else if (ping)
        sd_notify(0, "WATCHDOG=1");
    else if (changed)
        sd_notifyf(0, "STATUS=%s", status);
}
