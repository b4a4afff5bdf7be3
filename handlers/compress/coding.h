/* coding.h — the content codings lfhttpd compresses into (RFC 9110 8.4.1), in the order of
 * preference when a client's q-values tie: Brotli, zstd, gzip. */
#ifndef LF_CODING_H
#define LF_CODING_H

enum coding { CODING_BR = 0, CODING_ZSTD, CODING_GZIP, CODING_COUNT };
/* Content-Encoding names, by enum coding: "br", "zstd", "gzip". */
extern const char *const coding_names[CODING_COUNT];

#endif
