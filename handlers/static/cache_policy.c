/* cache_policy.c — the content-derived cache policy; see cache_policy.h for the exact rule. */
#include "static/cache_policy.h"

#include <string.h>
#include <strings.h>

#define HASH_MIN 8    /* shortest hash taken: Rollup's, Vite's and esbuild's are 8 characters */
#define HASH_MAX 128  /* longer is not a hash but a name */
#define BASE32_LEN 8  /* esbuild's hashes: 8 characters of [A-Z2-7] */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

static bool is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

/* Is s[0..n) a content hash (cache_policy.h: the kinds of tokens taken)? */
static bool is_hash(const char *s, size_t n)
{
    if (n < HASH_MIN || n > HASH_MAX)
        return false;
    unsigned digits = 0, upper = 0, lower = 0, hex_upper = 0, hex_lower = 0, base32 = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (is_digit(c)) {
            digits++;
            base32 += c >= '2' && c <= '7';
        } else if (is_upper(c)) {
            upper++;
            hex_upper += c <= 'F';
            base32++;
        } else if (is_lower(c)) {
            lower++;
            hex_lower += c <= 'f';
        } else if (c != '-' && c != '_') {
            return false;
        }
    }
    if (!digits || !(upper + lower))
        return false;
    bool hex = (!upper && hex_lower == lower && digits + lower == n) ||
               (!lower && hex_upper == upper && digits + upper == n);
    bool base64 = upper && lower;
    bool b32 = n == BASE32_LEN && base32 == n;
    return hex || base64 || b32;
}

bool cache_name_fingerprinted(const char *name, size_t len)
{
    const char *end = name + len;
    const char *dot = memchr(name, '.', len);
    if (!dot)
        return false; /* no extension: not an asset of a build */
    /* The first part: its tail after the last '-' or '_', and a `[name]-[hash]` of 8. */
    size_t first = (size_t)(dot - name);
    size_t tail = first;
    while (tail > 0 && name[tail - 1] != '-' && name[tail - 1] != '_')
        tail--;
    if (tail > 0 && is_hash(name + tail, first - tail))
        return true;
    if (first > HASH_MIN && name[first - HASH_MIN - 1] == '-' &&
        is_hash(name + first - HASH_MIN, HASH_MIN))
        return true;
    /* The middle parts: name.HASH.ext. */
    const char *p = dot + 1;
    for (;;) {
        const char *next = memchr(p, '.', (size_t)(end - p));
        if (!next)
            return false; /* p is the extension */
        if (is_hash(p, (size_t)(next - p)))
            return true;
        p = next + 1;
    }
}

enum cache_class cache_classify(const char *path, size_t len, const char *type)
{
    if (type && !strncasecmp(type, "text/html", 9))
        return CACHE_REVALIDATE;
    const char *slash = memrchr(path, '/', len);
    const char *name = slash ? slash + 1 : path;
    size_t n = len - (size_t)(name - path);
    return cache_name_fingerprinted(name, n) ? CACHE_IMMUTABLE : CACHE_OTHER;
}
