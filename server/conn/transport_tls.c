/* transport_tls.c — the TLS transport: OpenSSL over a non-blocking socket; see transport.h.
 *
 * The handshake lives inside the connection's reads: while TP_HANDSHAKING is set in conn.tp_flags, read()
 * first advances SSL_do_handshake, and a handshake that needs the network returns -EAGAIN with
 * conn.tp_want set to the direction it waits for (a server flight that did not fit in the
 * socket buffer waits for EPOLLOUT). No call here ever waits: the socket is non-blocking and
 * OpenSSL reports SSL_ERROR_WANT_READ / WANT_WRITE, which become -EAGAIN.
 *
 * Reads take records while OpenSSL holds more (SSL_has_pending), so when a read returns,
 * nothing is left inside OpenSSL: the connection may re-arm without another read, as for
 * plain sockets (decrypted or buffered bytes left in OpenSSL would wait for an epoll event
 * that never comes), and bytes still in the kernel wake the level-triggered handle at once.
 * One record per request thus costs one SSL_read and one read(2), not a second that only
 * finds EAGAIN.
 *
 * Writes go out one TLS record (at most 16 KiB of plaintext) per SSL_write. With
 * SSL_MODE_ENABLE_PARTIAL_WRITE each successful SSL_write has sent whole records; one that
 * fails with WANT_WRITE leaves a record encrypted but partly unsent inside OpenSSL, and its
 * bytes are not counted as written. The connection keeps unreported bytes and offers them again
 * (transport.h's retry contract): the carry buffer holds unsent response bytes, a file keeps its
 * offset and is read again into this thread's stack. Because every write slices its input the
 * same way (the next min(remaining, 16 KiB) bytes), the retry starts with exactly the bytes of
 * the pending record, which OpenSSL then finishes sending (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER:
 * the retry may come from another buffer, even another thread's stack). */
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/netaddr.h"
#include "conn/connection.h"
#include "log/log.h"
#include "log/metrics.h"
#include "net/tls.h"
#include "conn/transport.h"

#define TLS_RECORD (16 * 1024) /* plaintext per record (the TLS maximum) */

enum {
    TLS_FAILED = 1,         /* fatal TLS or socket error: no close_notify, drop the session */
};

static void log_failure(struct conn *c, const char *what, int ssl_err, int sys_err)
{
    char addr[INET6_ADDRSTRLEN];
    netaddr_format(&c->peer_addr, addr, sizeof(addr));
    unsigned long e = ERR_peek_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    log_info("tls %s from %s failed: %s", what, addr,
             reason            ? reason
             : ssl_err == SSL_ERROR_SYSCALL && sys_err ? strerror(sys_err)
             : ssl_err == SSL_ERROR_SYSCALL            ? "connection closed"
                                                       : "protocol error");
}

/* Turn a failed SSL_* call into -EAGAIN (recording the wanted events), 0 (the peer closed) or
 * -errno. Clears this thread's OpenSSL error queue, which other connections share. */
static ssize_t tls_fail(struct conn *c, int ret, const char *what)
{
    int sys_err = errno;
    int e = SSL_get_error(c->ssl, ret);
    ssize_t rc;
    switch (e) {
    case SSL_ERROR_WANT_READ:
        c->tp_want = EPOLLIN;
        rc = -EAGAIN;
        break;
    case SSL_ERROR_WANT_WRITE:
        c->tp_want = EPOLLOUT;
        rc = -EAGAIN;
        break;
    case SSL_ERROR_ZERO_RETURN:
        rc = 0; /* close_notify, or EOF (SSL_OP_IGNORE_UNEXPECTED_EOF) */
        break;
    case SSL_ERROR_SYSCALL:
        c->tp_flags |= TLS_FAILED;
        if (c->tp_flags & TP_HANDSHAKING)
            log_failure(c, what, e, sys_err);
        rc = sys_err ? -sys_err : -ECONNRESET;
        break;
    default:
        c->tp_flags |= TLS_FAILED;
        log_failure(c, what, e, 0);
        rc = -EPROTO;
        break;
    }
    ERR_clear_error();
    return rc;
}

static ssize_t tls_read(struct conn *c, void *buf, size_t len)
{
    c->tp_want = 0;
    if (c->tp_flags & TP_HANDSHAKING) {
        ERR_clear_error();
        int r = SSL_do_handshake(c->ssl);
        if (r != 1)
            return tls_fail(c, r, "handshake");
        c->tp_flags &= (uint8_t)~TP_HANDSHAKING;
        mx_count_tls(SSL_session_reused(c->ssl) == 1);
        if (tls_ssl_acme_challenge(c->ssl))
            return 0; /* a TLS-ALPN-01 validation: the handshake was all of it, no HTTP */
    }
    /* The error queue is clear from here on: a successful SSL_read_ex or one that wants the
     * network adds nothing to it, and tls_fail() clears what a failure added. (Each clear costs
     * a thread-local lookup in OpenSSL 3: ~800 instructions, once per read, not per record.) */
    ERR_clear_error();
    size_t got = 0;
    do {
        size_t n;
        int r = SSL_read_ex(c->ssl, (char *)buf + got, len - got, &n);
        if (r != 1) {
            if (got == 0)
                return tls_fail(c, r, "read");
            /* Return the data now; an error or EOF will be reported again by the next read.
             * Only a wanted write must be remembered: no epoll event would announce it. */
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_WRITE)
                c->tp_want = EPOLLIN | EPOLLOUT;
            else if (e != SSL_ERROR_WANT_READ)
                ERR_clear_error();
            break;
        }
        got += n;
        /* Go on only while OpenSSL itself holds more: what is still in the kernel wakes the
         * re-armed (level-triggered) handle, so a read that would only find EAGAIN is saved.
         * An edge-triggered handle is not woken for bytes that were there before: read on
         * until OpenSSL finds the socket empty (WANT_READ). */
    } while (got < len && (SSL_has_pending(c->ssl) || (c->tp_flags & TP_EDGE)));
    return (ssize_t)got;
}

/* One SSL_write of at most one record; returns bytes written or what tls_fail() says. */
static ssize_t tls_write_record(struct conn *c, const void *p, size_t n)
{
    size_t w;
    int r = SSL_write_ex(c->ssl, p, n, &w);
    return r == 1 ? (ssize_t)w : tls_fail(c, r, "write");
}

static ssize_t tls_writev(struct conn *c, const struct iovec *iov, int iovcnt, bool more)
{
    char stage[TLS_RECORD]; /* coalesces small iovecs (head + small body) into one record */
    size_t total = 0, off = 0;
    int i = 0;
    (void)more;
    c->tp_want = 0;
    ERR_clear_error(); /* once per call: see tls_read() */
    for (;;) {
        while (i < iovcnt && off == iov[i].iov_len) {
            i++;
            off = 0;
        }
        if (i == iovcnt)
            break;
        /* The next slice: min(remaining, TLS_RECORD) bytes, from the iovec itself when it holds
         * them all, else gathered into `stage`. */
        const char *p = (const char *)iov[i].iov_base + off;
        size_t n = iov[i].iov_len - off;
        if (n >= TLS_RECORD) {
            n = TLS_RECORD;
        } else if (i + 1 < iovcnt) {
            n = 0;
            for (int j = i; j < iovcnt && n < TLS_RECORD; j++) {
                size_t from = j == i ? off : 0;
                size_t take = iov[j].iov_len - from;
                if (take > TLS_RECORD - n)
                    take = TLS_RECORD - n;
                memcpy(stage + n, (const char *)iov[j].iov_base + from, take);
                n += take;
            }
            p = stage;
        }
        ssize_t w = tls_write_record(c, p, n);
        if (w <= 0)
            return total ? (ssize_t)total : (w == 0 ? -EPIPE : w);
        total += (size_t)w;
        /* advance (i, off) by w */
        for (size_t adv = (size_t)w; adv > 0;) {
            size_t step = iov[i].iov_len - off;
            if (step > adv)
                step = adv;
            off += step;
            adv -= step;
            if (off == iov[i].iov_len && adv > 0) {
                i++;
                off = 0;
            }
        }
    }
    return (ssize_t)total;
}

/* A file over TLS: pread into this thread's stack, one record at a time. A record that could
 * not be sent whole is not counted, so the caller's offset still points at its first byte and
 * the next call reads the same bytes again. */
static ssize_t tls_sendfile(struct conn *c, int fd, off_t *off, size_t len)
{
    char buf[TLS_RECORD];
    size_t total = 0;
    c->tp_want = 0;
    ERR_clear_error(); /* once per call: see tls_read() */
    while (total < len) {
        size_t n = len - total < TLS_RECORD ? len - total : TLS_RECORD;
        ssize_t got = pread(fd, buf, n, *off);
        if (got < 0)
            return total ? (ssize_t)total : -errno;
        if (got == 0)
            break; /* the file shrank: the caller sees a short count */
        ssize_t w = tls_write_record(c, buf, (size_t)got);
        if (w <= 0)
            return total ? (ssize_t)total : (w == 0 ? -EPIPE : w);
        *off += w;
        total += (size_t)w;
    }
    return (ssize_t)total;
}

/* Send close_notify once (best effort: a full socket buffer is not waited for). */
static void tls_close_notify(struct conn *c)
{
    if ((c->tp_flags & (TP_HANDSHAKING | TLS_FAILED)) ||
        (SSL_get_shutdown(c->ssl) & SSL_SENT_SHUTDOWN))
        return;
    ERR_clear_error();
    SSL_shutdown(c->ssl);
    ERR_clear_error();
}

static void tls_shutdown(struct conn *c)
{
    tls_close_notify(c);
    shutdown(c->eh.fd, SHUT_WR);
}

/* A connection that ends cleanly keeps its session resumable (OpenSSL drops the cached session
 * of an SSL freed without a close_notify sent); a failed one does not. */
static void tls_release(struct conn *c)
{
    if (!c->ssl)
        return;
    tls_close_notify(c);
    tls_ssl_free(c->ssl);
    c->ssl = NULL;
}

const struct transport_ops transport_tls = {
    .name = "tls",
    .read = tls_read,
    .writev = tls_writev,
    .sendfile = tls_sendfile,
    .shutdown = tls_shutdown,
    .release = tls_release,
};

int transport_tls_attach(struct conn *c, struct tls_ctx *t)
{
    c->ssl = tls_ssl_new(t, c->eh.fd);
    if (!c->ssl)
        return -ENOMEM;
    c->tp = &transport_tls;
    c->tp_flags |= TP_HANDSHAKING;
    return 0;
}
