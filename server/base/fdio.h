/* fdio.h — writing a whole buffer to a file descriptor. */
#ifndef LF_FDIO_H
#define LF_FDIO_H

#include <stddef.h>

/* Write all `len` bytes of `buf` to `fd` (a file or a blocking descriptor), retrying short
 * writes and EINTR. Returns 0, or -errno (-EIO when write wrote nothing without an error). */
int fd_write_all(int fd, const void *buf, size_t len);

#endif
