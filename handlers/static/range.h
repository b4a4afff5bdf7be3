/* range.h — byte ranges (RFC 9110 14): parsing a Range header (pure:
 * tests/unit/test_range.c) and the multipart/byteranges answer (range.c). */
#ifndef LF_RANGE_H
#define LF_RANGE_H

#include <stdint.h>

#include "base/strview.h"

/* More range specs than this: the header is ignored (a client asking for many small ranges
 * would make us do a lot for little). */
#define RANGE_MAX 16

struct range {
    uint64_t first, last; /* inclusive */
};

/* Parse a Range header against a representation of `size` bytes into out[RANGE_MAX]. Returns
 * the number of satisfiable ranges (overlapping and adjacent ones coalesced), 0 when none is
 * satisfiable (416), or -1 when the header is to be ignored (malformed, another unit, too many
 * ranges: RFC 9110 14.2 lets a server ignore Range). */
int range_parse(struct strview hdr, uint64_t size, struct range *out);

struct exchange;
struct fc_entry;
/* Write a multipart/byteranges body (RFC 9110 14.6) of `n` ranges of `e` into an anonymous
 * file and send it. Returns 0 or -errno (ex_send's). */
int range_send_multipart(struct exchange *ex, struct fc_entry *e, const struct range *rg,
                         int n);

#endif
