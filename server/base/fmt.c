/* fmt.c — see fmt.h. */
#include "base/fmt.h"

#include "base/hex.h"

#define DECIMAL 10
#define HEXADECIMAL 16

/* v in `base` (at most 16), most significant digit first. Inlined with a constant base, so the
 * divisions become multiplications and shifts. */
static inline size_t fmt_digits(char *out, uint64_t v, unsigned base)
{
    char tmp[FMT_U64_MAX];
    size_t n = 0;
    do {
        tmp[n++] = hex_lower((unsigned)(v % base));
        v /= base;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

size_t fmt_u64(char *out, uint64_t v)
{
    return fmt_digits(out, v, DECIMAL);
}

size_t fmt_hex_u64(char *out, uint64_t v)
{
    return fmt_digits(out, v, HEXADECIMAL);
}
