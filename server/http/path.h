/* path.h — request-target path decoding and normalisation.
 *
 * All functions are pure: no allocation, no global state, safe to call
 * concurrently from any number of threads.
 */
#ifndef LFHTTPD_PATH_H
#define LFHTTPD_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* Percent-decode and normalise the path part of a request target (no query string; the caller
 * strips '?...' and '#...').
 *
 * in/len: raw bytes, must start with '/'. out/cap: output buffer; on success out holds a
 * NUL-terminated normalised path starting with '/', *out_len its length (excluding the NUL).
 *
 * %XX escapes (hex, either case) are decoded first, then the decoded bytes are normalised:
 * repeated '/' are collapsed, '.' segments removed, '..' segments resolved. A decoded %2F is a
 * separator like '/'. A trailing '/' is kept if the decoded input ended with '/', '/.' or '/..'
 * (and the result is not just "/").
 *
 * Returns 0 on success, -EINVAL if the input does not start with '/', has an invalid or
 * truncated escape, decodes to a NUL, a byte < 0x20, 0x7f or a backslash, or if a '..' would
 * climb above the root; -ENAMETOOLONG if the result plus its NUL does not fit in cap. On error
 * the contents of out are unspecified. Never reads beyond in + len.
 */
int path_normalize(const char *in, size_t len, char *out, size_t cap, size_t *out_len);
/* path_normalize, and *plain (if not NULL) set to true when the input was already its own
 * normal form with no segment starting with '.' (so path_has_hidden_segment() is false), as
 * most request paths are; false when it took the full normaliser. */
int path_normalize_plain(const char *in, size_t len, char *out, size_t cap, size_t *out_len,
                         bool *plain);

/* True if any segment of the normalised path path/len starts with '.' (hidden files and
 * directories, e.g. "/.git/config", "/a/.env"). */
bool path_has_hidden_segment(const char *path, size_t len);

/* Percent-decode in/len (a query component or similar) into out/cap, NUL-terminated, with
 * *out_len set to the decoded length. '+' is left alone. Returns 0, -EINVAL on an invalid or
 * truncated escape or on a decoded NUL (%00; callers treat the result as a C string), or
 * -ENAMETOOLONG if the result plus its NUL does not fit in cap. in and out must not overlap.
 */
int path_percent_decode(const char *in, size_t len, char *out, size_t cap, size_t *out_len);

#endif /* LFHTTPD_PATH_H */
