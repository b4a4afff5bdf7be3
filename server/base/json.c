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

/* The length of the valid UTF-8 sequence of two to four bytes at s[0..len) and its code point,
 * or 0 (overlong forms, surrogates and code points past U+10FFFF are not valid). */
static size_t utf8_sequence(const unsigned char *s, size_t len, unsigned *cp)
{
    size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4 || n > len)
        return 0;
    unsigned v = s[0] & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3fu);
    }
    static const unsigned least[] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (v < least[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

bool json_escape_script(char *out, size_t cap, size_t *pos, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t p = *pos;
    for (size_t i = 0; i < len;) {
        char esc[ESCAPE_MAX];
        const char *piece = esc;
        size_t n, take = 1;
        unsigned cp = 0;
        if (u[i] == '<' || u[i] == '>' || u[i] == '&') {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex_lower(u[i] >> HEX_DIGIT_BITS);
            esc[5] = hex_lower(u[i]);
            n = ESCAPE_MAX;
        } else if (u[i] < 0x80) {
            n = escape_byte(u[i], esc);
        } else if ((take = utf8_sequence(u + i, len - i, &cp)) == 0) {
            piece = "\\ufffd";
            n = ESCAPE_MAX;
            take = 1;
        } else if (cp == 0x2028 || cp == 0x2029) {
            piece = cp == 0x2028 ? "\\u2028" : "\\u2029";
            n = ESCAPE_MAX;
        } else {
            piece = s + i;
            n = take;
        }
        if (cap - p <= n) /* and room for the NUL */
            return false;
        memcpy(out + p, piece, n);
        p += n;
        i += take;
    }
    *pos = p;
    return true;
}
