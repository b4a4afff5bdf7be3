/* transport_plain.c — the plain-socket transport; see transport.h. */
#include <errno.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn/connection.h"
#include "conn/transport.h"

static ssize_t plain_read(struct conn *c, void *buf, size_t len)
{
    ssize_t n = read(c->eh.fd, buf, len);
    return n < 0 ? -errno : n;
}

static ssize_t plain_writev(struct conn *c, const struct iovec *iov, int iovcnt, bool more)
{
    struct msghdr mh = { .msg_iov = (struct iovec *)(uintptr_t)iov, .msg_iovlen = (size_t)iovcnt };
    ssize_t n = sendmsg(c->eh.fd, &mh, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
    return n < 0 ? -errno : n;
}

static ssize_t plain_sendfile(struct conn *c, int fd, off_t *off, size_t len)
{
    ssize_t n = sendfile(c->eh.fd, fd, off, len);
    return n < 0 ? -errno : n;
}

static void plain_shutdown(struct conn *c)
{
    shutdown(c->eh.fd, SHUT_WR);
}

const struct transport_ops transport_plain = {
    .name = "plain",
    .read = plain_read,
    .writev = plain_writev,
    .sendfile = plain_sendfile,
    .shutdown = plain_shutdown,
};
