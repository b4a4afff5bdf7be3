/* json.h — JSON string escaping, for the JSON access log and the built-in JSON endpoints. */
#ifndef LF_JSON_H
#define LF_JSON_H

#include <stdbool.h>
#include <stddef.h>

/* Append the inside of a JSON string for s[0..len) at out[*pos], never past out[cap] (*pos <=
 * cap): '"' and '\\' behind a backslash, \n \r \t as such, every other byte below 0x20 or from
 * 0x7f on as \u00XX. One escape per byte, so the output is valid JSON whatever the input's
 * encoding, and each character maps back to one input byte. Stops before the first escape that
 * would not fit (what was written is a prefix of the whole); returns how many bytes of s it
 * took (len: all of them). *pos is advanced past what was written. */
size_t json_escape(char *out, size_t cap, size_t *pos, const char *s, size_t len);

/* All of s or nothing, leaving room for a NUL after it: false when it does not fit (*pos is
 * then unchanged, out[*pos..cap) may have been written). */
static inline bool json_escape_append(char *out, size_t cap, size_t *pos, const char *s,
                                      size_t len)
{
    size_t p = *pos;
    if (json_escape(out, cap ? cap - 1 : 0, &p, s, len) < len)
        return false;
    *pos = p;
    return true;
}

/* A text value, for a JSON document that may also stand inside an HTML <script> (the
 * built-in env handler): UTF-8 kept as it is (JSON is UTF-8), a byte that is not part of valid
 * UTF-8 as \ufffd, control characters, '"' and '\\' as json_escape() writes them, and '<',
 * '>', '&', U+2028 and U+2029 as \u escapes (so that neither "</script>" nor an HTML comment
 * opener can appear, and a line separator cannot end a JavaScript string). All of s or nothing,
 * leaving room for a NUL: false when it does not fit (*pos unchanged). */
bool json_escape_script(char *out, size_t cap, size_t *pos, const char *s, size_t len);

#endif
