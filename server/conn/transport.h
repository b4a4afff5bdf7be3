/* transport.h — how the connection state machine moves bytes: plain sockets or TLS.
 *
 * The connection code and the handlers never call read(2)/send(2)/OpenSSL directly; they go
 * through the connection's transport. All operations are non-blocking and return the number
 * of bytes moved, or -errno (-EAGAIN when the socket is not ready: the caller re-arms the
 * handle for the interest the transport asks for and returns).
 *
 * The interest: with -EAGAIN a transport may store in conn.tp_want the events it needs before
 * the operation can progress (TLS: a read that must first write a handshake message wants
 * EPOLLOUT); conn_try_park() uses them instead of its own. 0 means "the caller's interest".
 *
 * Retry contract of writev/sendfile: bytes not reported as written must be offered again, the
 * same bytes from the same position, by the next write on the connection (the connection parks
 * them in its carry buffer, or keeps the file offset). TLS relies on it: a record that OpenSSL
 * has encrypted but not yet sent is completed by retrying the write with those bytes. */
#ifndef LF_TRANSPORT_H
#define LF_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct conn;

/* conn.tp_flags bits the connection may read (the others are the transport's own). */
enum {
    TP_HANDSHAKING = 0x80, /* a TLS handshake is not finished: timeout_handshake applies */
    TP_EDGE = 0x40,        /* the handle is edge-triggered (leader-followers-edge): a read that
                            * returns less than asked for has drained the socket, as it does on
                            * a plain socket (TLS reads on until OpenSSL wants the network) */
    TP_EOF = 0x20,         /* edge mode: the peer has half-closed (or the socket failed), and
                            * the edge that said so may be the one that brought the last bytes:
                            * a short read no longer means drained, read until 0 or EAGAIN */
};

struct transport_ops {
    const char *name;
    ssize_t (*read)(struct conn *c, void *buf, size_t len);
    /* `more`: further data follows at once (MSG_MORE: let the kernel coalesce segments). */
    ssize_t (*writev)(struct conn *c, const struct iovec *iov, int iovcnt, bool more);
    /* Send `len` bytes of file `fd` from *off, advancing *off. */
    ssize_t (*sendfile)(struct conn *c, int fd, off_t *off, size_t len);
    /* Half-close the sending side (a TLS close_notify first). */
    void (*shutdown)(struct conn *c);
    /* Free the transport's per-connection state before the fd is closed (NULL: nothing). */
    void (*release)(struct conn *c);
};

struct tls_ctx;

extern const struct transport_ops transport_plain;
extern const struct transport_ops transport_tls;

/* Make `c` a TLS connection (server side, handshake pending) using context `t`.
 * Returns 0 or -ENOMEM. */
int transport_tls_attach(struct conn *c, struct tls_ctx *t);

#endif
