/* accept_encoding.h — what a client's Accept-Encoding (RFC 9110 12.5.3) accepts. Pure: no
 * state, no allocation (tests/unit/test_accept_encoding.c). */
#ifndef LF_ACCEPT_ENCODING_H
#define LF_ACCEPT_ENCODING_H

#include "base/strview.h"
#include "compress/coding.h"

/* q-values in thousandths per coding (br, zstd, gzip: 0 = not acceptable) and for identity
 * (unlisted identity is 1: still acceptable, but below any coding the client listed). Absent
 * header: identity only. */
struct accept_enc {
    int q[CODING_COUNT];
    int identity;
};
void compress_accept_parse(struct strview hdr, struct accept_enc *ae);

/* q-value of one Accept-Encoding element's parameters (from its first ';' to `end`), in
 * thousandths (1000 when absent); -1 when malformed. */
int accept_parse_q(const char *p, const char *end);

#endif
