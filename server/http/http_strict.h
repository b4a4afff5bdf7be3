/* http_strict.h — RFC 9110/9112 request checks that llhttp (even in strict mode) leaves to us.
 *
 * llhttp, compiled with LLHTTP_STRICT_MODE=1 (see the Makefile), rejects bare CR, whitespace
 * in or before field names, control bytes, malformed Content-Length, CL together with TE and a
 * non-final chunked. What it accepts and we must not:
 *   - obs-fold (a field line continued on the next line with SP/HTAB), RFC 9112 5.2;
 *   - an invalid Host (or absolute-form authority), RFC 9112 3.2 / RFC 3986 3.2.2;
 * and where its error codes are too coarse, we classify ourselves:
 *   - an unsupported but well-formed HTTP-version (505) versus a malformed one (400).
 *
 * All functions are pure: no allocation, no global state, safe from any thread. */
#ifndef LF_HTTP_STRICT_H
#define LF_HTTP_STRICT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Does the request head data[0..len) contain an obs-fold: a line feed followed by SP or HTAB?
 * (The request line cannot start with whitespace either, so any such pair is an error.) */
bool http_has_obs_fold(const char *data, size_t len);

/* Is h[0..len) a valid Host field value / authority without userinfo: empty, or uri-host
 * (reg-name with pct-encoding, IPv4, or a bracketed IPv6 literal) with an optional ":port"? */
bool http_host_valid(const char *h, size_t len);

/* Is s[0..len) a token (RFC 9110 5.6.2): one or more tchar? Field names, media types. */
bool http_token_valid(const char *s, size_t len);

/* One tchar: a letter, a digit or one of !#$%&'*+-.^_`|~ (never NUL). */
static inline bool http_is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* May s[0..len) be a field value we send (RFC 9110 5.5): no control byte but HTAB, no DEL?
 * (Bytes from 0x80 on are obs-text, passed through.) */
bool http_field_value_valid(const char *s, size_t len);

/* Status for a request line llhttp rejected as HPE_INVALID_VERSION: 505 when the line ends
 * in a well-formed "HTTP/D.D" other than 1.0/1.1, else 400. data[0..len) starts at the method. */
int http_version_error_status(const char *data, size_t len);

#endif
