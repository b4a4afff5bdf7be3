/* transport.h — how the connection state machine moves bytes: plain sockets or TLS.
 *
 * The connection code and the handlers never call read(2)/send(2)/OpenSSL directly; they go
 * through the connection's transport. All operations are non-blocking and return the number
 * of bytes moved, or -errno (-EAGAIN when the socket is not ready: the caller re-arms the
 * handle for the interest the transport asks for and returns). */
#ifndef LF_TRANSPORT_H
#define LF_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct conn;

struct transport_ops {
    const char *name;
    ssize_t (*read)(struct conn *c, void *buf, size_t len);
    /* `more`: further data follows at once (MSG_MORE: let the kernel coalesce segments). */
    ssize_t (*writev)(struct conn *c, const struct iovec *iov, int iovcnt, bool more);
    /* Send `len` bytes of file `fd` from *off, advancing *off. */
    ssize_t (*sendfile)(struct conn *c, int fd, off_t *off, size_t len);
    /* Half-close the sending side (a TLS close_notify first). */
    void (*shutdown)(struct conn *c);
};

extern const struct transport_ops transport_plain;

#endif
