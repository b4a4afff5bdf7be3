/* digest.h — a short content hash, in hex: what handlers use for validators and cache names,
 * without reaching for the TLS library themselves (OpenSSL's SHA-256 underneath). */
#ifndef LF_DIGEST_H
#define LF_DIGEST_H

#include <stdbool.h>
#include <stddef.h>

/* The first `nhex` hex digits (at most 64) of the SHA-256 of data[0..len), NUL-terminated in
 * out[nhex + 1]. Returns false when the hash could not be computed. */
bool digest_hex(const void *data, size_t len, char *out, size_t nhex);

#endif
