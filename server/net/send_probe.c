/* send_probe.c — sendfile or copy, asked of the machine at start-up; see send_probe.h. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/send_probe.h"

#include "base/clock.h"

#define CHUNK_SENDFILE (256 * 1024) /* as connection.c's SENDFILE_CHUNK */
#define CHUNK_COPY (64 * 1024)      /* as connection.c's COPY_CHUNK */

struct rig {
    int tx, rx, file;
    char *buf;                      /* the copy's buffer, CHUNK_COPY */
    char *sink;                     /* the receiver's, CHUNK_COPY */
    uint64_t deadline;              /* monotonic ns */
};

/* The receiving end: read what is there (waiting up to 1 ms for the first bytes when
 * `wait`). Returns the bytes read. */
static size_t drain(struct rig *r, bool wait)
{
    size_t got = 0;
    if (wait) {
        struct pollfd p = { .fd = r->rx, .events = POLLIN };
        poll(&p, 1, 1);
    }
    for (;;) {
        ssize_t n = read(r->rx, r->sink, CHUNK_COPY);
        if (n <= 0)
            return got;
        got += (size_t)n;
    }
}

/* Send `size` bytes of the file one way; returns the ns spent in the sending calls, or 0 when
 * the budget ran out or a call failed. The receiver has read everything on return. */
static uint64_t send_once(struct rig *r, size_t size, bool copy)
{
    uint64_t spent = 0;
    size_t sent = 0, read_back = 0;
    while (sent < size) {
        if (clock_exact_ns() > r->deadline)
            return 0;
        ssize_t n;
        uint64_t t0 = clock_exact_ns();
        if (copy) {
            size_t want = size - sent < CHUNK_COPY ? size - sent : CHUNK_COPY;
            n = pread(r->file, r->buf, want, (off_t)sent);
            if (n > 0)
                n = send(r->tx, r->buf, (size_t)n, MSG_NOSIGNAL);
        } else {
            off_t off = (off_t)sent;
            n = sendfile(r->tx, r->file, &off, size - sent < CHUNK_SENDFILE ? size - sent
                                                                          : CHUNK_SENDFILE);
        }
        spent += clock_exact_ns() - t0;
        if (n > 0)
            sent += (size_t)n;
        else if (n == 0 || errno != EAGAIN)
            return 0;
        else
            read_back += drain(r, read_back == sent);
    }
    while (read_back < size && clock_exact_ns() <= r->deadline)
        read_back += drain(r, true);
    return read_back == size ? spent : 0;
}

/* A connected pair of non-blocking stream sockets: loopback TCP, else a UNIX socketpair. */
static const char *connect_pair(struct rig *r)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l >= 0 && bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(l, 1) == 0 &&
        getsockname(l, (struct sockaddr *)&a, &alen) == 0) {
        r->tx = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (r->tx >= 0 && connect(r->tx, (struct sockaddr *)&a, sizeof(a)) == 0)
            r->rx = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    }
    if (l >= 0)
        close(l);
    const char *via = "loopback TCP";
    if (r->rx < 0) {
        if (r->tx >= 0)
            close(r->tx);
        r->tx = -1;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
            return NULL;
        r->tx = sv[0];
        r->rx = sv[1];
        via = "UNIX socketpair";
    }
    int one = 1;
    setsockopt(r->tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* as the listeners */
    fcntl(r->tx, F_SETFL, fcntl(r->tx, F_GETFL) | O_NONBLOCK);
    return via;
}

/* A memory file of `size` bytes, in memory (written, not sparse). -1 on failure. */
static int make_file(char *buf, size_t size)
{
    int fd = memfd_create("lfhttpd-send-probe", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    memset(buf, 'x', CHUNK_COPY);
    for (size_t off = 0; off < size; off += CHUNK_COPY)
        if (pwrite(fd, buf, CHUNK_COPY, (off_t)off) != CHUNK_COPY) {
            close(fd);
            return -1;
        }
    return fd;
}

/* The L3 (or the highest level listed) that cpu0 sees, in KiB; 0 when sysfs does not say. */
static unsigned l3_kib(void)
{
    unsigned best_level = 0, kib = 0;
    for (int i = 0; i < 8; i++) {
        char path[80], text[32];
        unsigned level = 0, size = 0;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "re");
        if (!f)
            break;
        if (fscanf(f, "%u", &level) != 1)
            level = 0;
        fclose(f);
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "re");
        if (f && fgets(text, sizeof(text), f) && sscanf(text, "%u", &size) == 1 &&
            level >= best_level) {
            best_level = level;
            kib = strchr(text, 'M') ? size * 1024 : size;
        }
        if (f)
            fclose(f);
    }
    return kib;
}

/* Interleaved rounds for both sizes; keeps each way's fastest round. */
static void measure(struct send_probe *p, struct rig *r)
{
    static const size_t sizes[2] = { SEND_PROBE_MID, SEND_PROBE_LARGE };
    send_once(r, SEND_PROBE_MID, false); /* warm both paths (and the socket's buffers) up */
    send_once(r, SEND_PROBE_MID, true);
    for (int s = 0; s < 2; s++) {
        uint64_t best[2] = { UINT64_MAX, UINT64_MAX };
        for (int round = 0; round < SEND_PROBE_ROUNDS; round++)
            for (int k = 0; k < 2; k++) {
                int way = (round + k) % 2; /* alternate which goes first */
                uint64_t t = send_once(r, sizes[s], way == 1);
                if (t && t < best[way])
                    best[way] = t;
            }
        p->done[s] = best[0] != UINT64_MAX && best[1] != UINT64_MAX;
        p->ns[s][0] = best[0];
        p->ns[s][1] = best[1];
    }
}

static bool copy_wins(const struct send_probe *p, int s)
{
    return p->done[s] && p->ns[s][1] * 100 < p->ns[s][0] * (100 - SEND_PROBE_MARGIN_PCT);
}

static struct send_probe result;
static bool ran;

const struct send_probe *send_probe_last(void)
{
    return ran ? &result : NULL;
}

const struct send_probe *send_probe_run(void)
{
    if (ran)
        return &result;
    ran = true;
    uint64_t t0 = clock_exact_ns();
    result.l3_kib = l3_kib();
    result.min_size = 0;
    struct rig r = { .tx = -1, .rx = -1, .file = -1,
                     .deadline = t0 + (uint64_t)SEND_PROBE_BUDGET_MS * 1000000u };
    r.buf = malloc(2 * CHUNK_COPY);
    r.sink = r.buf ? r.buf + CHUNK_COPY : NULL;
    result.via = !r.buf ? "no memory" : (r.file = make_file(r.buf, SEND_PROBE_LARGE)) < 0
                                       ? "no memory file"
                                       : connect_pair(&r);
    if (!result.via)
        result.via = "no socket pair";
    else if (r.file >= 0 && r.rx >= 0)
        measure(&result, &r);
    if (copy_wins(&result, 0))
        result.min_size = copy_wins(&result, 1) ? UINT64_MAX : SEND_PROBE_SPLIT;
    if (r.tx >= 0)
        close(r.tx);
    if (r.rx >= 0)
        close(r.rx);
    if (r.file >= 0)
        close(r.file);
    free(r.buf);
    result.elapsed_ms = (unsigned)((clock_exact_ns() - t0) / CLOCK_NS_PER_MS);
    return &result;
}

static void fmt_size(char *buf, size_t len, uint64_t v)
{
    if (v == UINT64_MAX)
        snprintf(buf, len, "never");
    else if (v && v % (1024 * 1024) == 0)
        snprintf(buf, len, "%llum", (unsigned long long)(v >> 20));
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
}

void send_probe_describe(const struct send_probe *p, char *buf, size_t len)
{
    char choice[24], l3[24];
    fmt_size(choice, sizeof(choice), p->min_size);
    if (p->l3_kib)
        snprintf(l3, sizeof(l3), "%u KiB", p->l3_kib);
    else
        snprintf(l3, sizeof(l3), "unknown");
    int n = snprintf(buf, len, "sendfile_min_size auto: %s (%s probe in %u ms, L3 %s; ",
                     choice, p->via, p->elapsed_ms, l3);
    for (int s = 0; s < 2 && n >= 0 && (size_t)n < len; s++) {
        const char *sep = s ? "; " : "";
        unsigned kib = (s ? SEND_PROBE_LARGE : SEND_PROBE_MID) / 1024;
        if (p->done[s])
            n += snprintf(buf + n, len - (size_t)n, "%s%u KiB: sendfile %llu us, copy %llu us",
                          sep, kib, (unsigned long long)(p->ns[s][0] / 1000),
                          (unsigned long long)(p->ns[s][1] / 1000));
        else
            n += snprintf(buf + n, len - (size_t)n, "%s%u KiB: not measured", sep, kib);
    }
    if (n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ")");
}
