/* hex.h — hexadecimal digits, both ways: for escapes (%XX, \xXX, \u00XX) and digests, and
 * for decoding percent-escapes. Inline: most callers run once per byte. (Whole numbers in hex,
 * for chunk sizes: fmt.h.) */
#ifndef LF_HEX_H
#define LF_HEX_H

#include <stdbool.h>
#include <string.h>

#define HEX_DIGIT_BITS 4
#define HEX_DIGIT_MASK 15

/* The digit of v's low four bits: '0'-'9', 'a'-'f'. */
static inline char hex_lower(unsigned v)
{
    return "0123456789abcdef"[v & HEX_DIGIT_MASK];
}

/* The same, 'A'-'F' (percent-encoding's preferred case, RFC 3986 2.1). */
static inline char hex_upper(unsigned v)
{
    return "0123456789ABCDEF"[v & HEX_DIGIT_MASK];
}

/* The value of a hex digit of either case, or -1. */
static inline int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static inline bool hex_is_digit(unsigned char c)
{
    return hex_value(c) >= 0;
}

/* The byte of the two hex digits at p ("%XX" without its '%'), or -1 when either is not one. */
static inline int hex_pair(const char *p)
{
    int hi = hex_value((unsigned char)p[0]), lo = hex_value((unsigned char)p[1]);
    return hi < 0 || lo < 0 ? -1 : hi << HEX_DIGIT_BITS | lo;
}

/* Percent-encoding (RFC 3986 section 2.1), one byte at a time, for every writer of a URI (a
 * redirect's Location, a rule's target, a listing's links): does `c` stay as it is, being
 * unreserved (ALPHA, DIGIT, '-', '.', '_', '~') or one of `also` (the caller's delimiters that
 * mean nothing where it writes)? */
static inline bool hex_pct_keeps(unsigned char c, const char *also)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && (strchr("-._~", c) || strchr(also, c)));
}

/* The escape of a byte that does not stay: "%XX", upper-case digits, into out[0..3). */
static inline void hex_pct(unsigned char c, char out[3])
{
    out[0] = '%';
    out[1] = hex_upper(c >> HEX_DIGIT_BITS);
    out[2] = hex_upper(c);
}

#endif
