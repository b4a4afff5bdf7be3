/* hex.c — see hex.h. */
#include "base/hex.h"

size_t hex_format_u64(uint64_t v, char *out)
{
    char tmp[HEX_U64_MAX];
    size_t n = 0;
    do {
        tmp[n++] = hex_lower((unsigned)v);
        v >>= HEX_DIGIT_BITS;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}
