/* fmt.c — see fmt.h. */
#include "base/fmt.h"

#define DECIMAL 10

size_t fmt_u64(char *out, uint64_t v)
{
    char tmp[FMT_U64_MAX];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % DECIMAL);
        v /= DECIMAL;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}
