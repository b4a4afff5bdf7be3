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

/* Bytes that stand for themselves. */
static inline bool plain(unsigned char c)
{
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

size_t json_escape(char *out, size_t cap, size_t *pos, const char *s, size_t len)
{
    size_t p = *pos, i = 0;
    while (i < len) {
        /* A run of plain bytes is copied at once: most fields are nothing else. */
        size_t run = i;
        while (run < len && plain((unsigned char)s[run]))
            run++;
        size_t n = run - i < cap - p ? run - i : cap - p;
        memcpy(out + p, s + i, n);
        p += n;
        i += n;
        if (i < run || i == len)
            break; /* out of room, or done */
        char esc[ESCAPE_MAX];
        size_t e = escape_byte((unsigned char)s[i], esc);
        if (cap - p < e)
            break;
        memcpy(out + p, esc, e);
        p += e;
        i++;
    }
    *pos = p;
    return i;
}
