/* json.c — see json.h. */
#include "base/json.h"

#include <string.h>

#include "base/hex.h"

#define ESCAPE_MAX 6 /* \u00XX */

/* The escape of one byte into esc[ESCAPE_MAX]; returns its length. */
static size_t escape_byte(unsigned char c, char *esc)
{
    if (c == '"' || c == '\\') {
        esc[0] = '\\';
        esc[1] = (char)c;
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        esc[0] = (char)c;
        return 1;
    }
    if (c == '\n' || c == '\r' || c == '\t') {
        esc[0] = '\\';
        esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        return 2;
    }
    memcpy(esc, "\\u00", 4);
    esc[4] = hex_lower(c >> HEX_DIGIT_BITS);
    esc[5] = hex_lower(c);
    return ESCAPE_MAX;
}

size_t json_escape(char *out, size_t cap, size_t *pos, const char *s, size_t len)
{
    size_t p = *pos, i;
    for (i = 0; i < len; i++) {
        char esc[ESCAPE_MAX];
        size_t n = escape_byte((unsigned char)s[i], esc);
        if (cap - p < n)
            break;
        memcpy(out + p, esc, n);
        p += n;
    }
    *pos = p;
    return i;
}
