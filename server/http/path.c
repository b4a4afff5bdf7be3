/* path.c — request-target path decoding and normalisation.
 *
 * path_normalize works in two passes over the raw input, without any scratch buffer:
 *
 *  1. A forward pass validates the escapes and every decoded byte.
 *  2. A backward pass walks the decoded segments from right to left, counting pending '..'
 *     segments and writing every surviving segment right-aligned into the output buffer.
 *     Once written, a segment is final (only segments to its left can still be cancelled), so
 *     running out of room is an exact -ENAMETOOLONG (reported only after the scan finishes, so
 *     that a '..' climbing above the root is always -EINVAL). The result is then moved to the
 *     front.
 *
 * The backward pass can decode escapes from the right because after pass 1 every '%' starts
 * a valid three-byte escape and hex digits are never '%': a '%' two bytes before the current
 * end is always the start of an escape ending there.
 */
#include "http/path.h"

#include <errno.h>
#include <string.h>

#include "base/hex.h"

/* Decode the escape at in[i] ('%' already seen) if in[i+1], in[i+2] exist and are hex digits.
 * Returns the byte value or -EINVAL. */
static int path_decode_escape(const char *in, size_t len, size_t i)
{
    if (len - i < 3)
        return -EINVAL;
    int c = hex_pair(in + i + 1);
    return c < 0 ? -EINVAL : c;
}

/* True if decoded byte c may appear in a path. */
static bool path_byte_allowed(unsigned char c)
{
    return c >= 0x20 && c != 0x7f && c != '\\';
}

/* Pass 1: 0 if in/len starts with '/', has only valid escapes and only allowed bytes. */
static int path_validate(const char *in, size_t len)
{
    if (len == 0 || in[0] != '/')
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)in[i];

        if (c == '%') {
            c = path_decode_escape(in, len, i);
            if (c < 0)
                return c;
            i += 2;
        }
        if (!path_byte_allowed((unsigned char)c))
            return -EINVAL;
    }
    return 0;
}

/* Step back over one decoded byte ending at in[*end - 1]; *end must be > 0 and in must be
 * valid (pass 1). Returns the decoded byte. */
static unsigned char path_prev_byte(const char *in, size_t *end)
{
    size_t e = *end;

    if (e >= 3 && in[e - 3] == '%') {
        *end = e - 3;
        return (unsigned char)hex_pair(in + e - 2);
    }
    *end = e - 1;
    return (unsigned char)in[e - 1];
}

/* Scan back from *end over one decoded segment (stopping before its leading separator, which
 * is left unconsumed). Sets *start to the raw offset where the segment begins, *dlen to its
 * decoded length and *dots to 1 or 2 for a "." or ".." segment, else 0. */
static void path_scan_segment(const char *in, size_t end, size_t *start, size_t *dlen, int *dots)
{
    size_t pos = end, n = 0;
    bool all_dots = true;

    while (pos > 0) {
        size_t prev = pos;
        unsigned char c = path_prev_byte(in, &prev);

        if (c == '/')
            break;
        if (c != '.')
            all_dots = false;
        n++;
        pos = prev;
    }
    *start = pos;
    *dlen = n;
    *dots = all_dots && (n == 1 || n == 2) ? (int)n : 0;
}

/* Bytes that need no look at their neighbours in a clean path: not a control byte, DEL, '%',
 * '\\' or '/'. A table: this runs for every byte of every request path. */
#define PP(c) ((c) >= 0x20 && (c) != 0x7f && (c) != '%' && (c) != '\\' && (c) != '/')
#define PP4(c) PP(c), PP((c) + 1), PP((c) + 2), PP((c) + 3)
#define PP16(c) PP4(c), PP4((c) + 4), PP4((c) + 8), PP4((c) + 12)
#define PP64(c) PP16(c), PP16((c) + 16), PP16((c) + 32), PP16((c) + 48)
static const bool path_plain[256] = { PP64(0), PP64(64), PP64(128), PP64(192) };

/* Most request paths need no work: nothing to decode, no empty or dot segment, no byte the
 * normaliser refuses. Such a path is its own normal form. */
static bool path_is_clean(const char *in, size_t len)
{
    if (len == 0 || in[0] != '/')
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (!path_plain[c]) {
            if (c != '/')
                return false;
            if (i + 1 < len && (in[i + 1] == '/' || in[i + 1] == '.'))
                return false;
        }
    }
    return true;
}

int path_normalize(const char *in, size_t len, char *out, size_t cap, size_t *out_len)
{
    return path_normalize_plain(in, len, out, cap, out_len, NULL);
}

int path_normalize_plain(const char *in, size_t len, char *out, size_t cap, size_t *out_len,
                         bool *plain)
{
    if (path_is_clean(in, len)) {
        if (len + 1 > cap)
            return -ENAMETOOLONG;
        memcpy(out, in, len);
        out[len] = '\0';
        *out_len = len;
        if (plain)
            *plain = true;
        return 0;
    }
    if (plain)
        *plain = false;
    size_t pos = len, w, pending = 0, n;
    bool trailing = false, wrote_any = false, too_long = false;
    int rc;

    rc = path_validate(in, len);
    if (rc < 0)
        return rc;
    if (cap < 2) {
        too_long = true; /* not even "/" fits; still scan so that -EINVAL wins */
        w = 0;
    } else {
        w = cap - 1;
        out[w] = '\0';
    }
    while (pos > 0) {
        size_t start, dlen, p;
        int dots;

        path_scan_segment(in, pos, &start, &dlen, &dots);
        if (pos == len)
            trailing = dlen == 0 || dots != 0; /* last segment: "", "." or ".." */
        if (dots == 2) {
            pending++;
        } else if (dlen > 0 && dots == 0) {
            if (pending > 0) {
                pending--;
            } else if (!too_long) {
                /* room for the segment, the '/' in front of it and maybe a trailing '/' */
                if (w < dlen + 1 + (trailing && !wrote_any)) {
                    too_long = true; /* keep scanning: a climb above '/' takes precedence */
                } else {
                    if (trailing && !wrote_any)
                        out[--w] = '/';
                    p = pos;
                    while (p > start)
                        out[--w] = (char)path_prev_byte(in, &p);
                    out[--w] = '/';
                    wrote_any = true;
                }
            }
        }
        /* consume the separator in front of the segment (always present: in[0] == '/') */
        pos = start;
        if (pos > 0)
            (void)path_prev_byte(in, &pos);
    }
    if (pending > 0)
        return -EINVAL;
    if (too_long)
        return -ENAMETOOLONG;
    if (!wrote_any) {
        if (w < 1)
            return -ENAMETOOLONG;
        out[--w] = '/';
    }
    n = cap - 1 - w;
    memmove(out, out + w, n + 1);
    *out_len = n;
    return 0;
}

bool path_has_hidden_segment(const char *path, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (path[i] == '/' && path[i + 1] == '.')
            return true;
    }
    return len > 0 && path[0] == '.';
}

int path_percent_decode(const char *in, size_t len, char *out, size_t cap, size_t *out_len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)in[i];

        if (c == '%') {
            c = path_decode_escape(in, len, i);
            if (c <= 0)
                return -EINVAL;
            i += 2;
        }
        if (n + 1 >= cap)
            return -ENAMETOOLONG;
        out[n++] = (char)c;
    }
    if (cap == 0)
        return -ENAMETOOLONG;
    out[n] = '\0';
    *out_len = n;
    return 0;
}
