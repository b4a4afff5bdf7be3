/* carry.h — pooled carry buffers: the only per-connection memory a request may borrow.
 *
 * A request is read and answered from the processing thread's stack. Only when a request head
 * or a response spans events (slow client, full socket buffer) are the bytes that must survive
 * copied into a carry buffer, borrowed from a free list and given back when the request or the
 * response completes. Size classes keep small leftovers small. */
#ifndef LF_CARRY_H
#define LF_CARRY_H

#include <stddef.h>
#include <stdint.h>

struct carry {
    struct carry *next;  /* free-list link */
    uint32_t cap;        /* capacity of data[] */
    uint32_t len;        /* bytes held */
    uint32_t off;        /* bytes already consumed from the front */
    uint8_t cls;         /* size class */
    char data[];
};

#define CARRY_MAX (64 * 1024)

/* A buffer with at least `need` bytes of capacity, or NULL on ENOMEM. Above CARRY_MAX it is a
 * one-off buffer, freed when put back (only a response parked behind pipelined responses
 * gathered for one write can need more than CARRY_MAX: connection.c). */
struct carry *carry_get(size_t need);
/* Give a buffer back (NULL is allowed). */
void carry_put(struct carry *c);
/* Copy `len` bytes into a new carry buffer; NULL on ENOMEM. */
struct carry *carry_dup(const void *data, size_t len);
/* Free the pooled buffers (at exit, for leak checkers). */
void carry_pool_release(void);

#endif
